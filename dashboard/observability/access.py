"""Who may read the metrics: the bearer-token half, shared by the ``/metrics`` view and the
exporter of a host that runs only workers (``manage.py serve_metrics``). The token is compared
in constant time; each refusal says what is missing in plain text, which a scraper logs."""

from __future__ import annotations

import hmac
import logging
from typing import NamedTuple

__all__ = ["CHALLENGE", "Refusal", "token_refusal"]

logger = logging.getLogger(__name__)

# Sent with every 401, so a client knows which credentials to bring.
CHALLENGE = 'Bearer realm="metrics"'


class Refusal(NamedTuple):
    status: int  # 401: bring credentials; 403: these credentials are not enough
    message: str


def token_refusal(header: str, expected: str) -> Refusal | None:
    """None when ``header`` (an ``Authorization`` value) carries the token ``expected``."""
    scheme, _, token = header.strip().partition(" ")
    token = token.strip()
    if scheme.lower() != "bearer" or not token:
        return Refusal(401, "the Authorization header must be: Bearer <token>")
    if not expected:
        return Refusal(403, "no metrics token is configured (SUPERSTEP_METRICS_TOKEN)")
    if not hmac.compare_digest(token.encode(), expected.encode()):
        logger.warning("metrics: a scrape with a wrong token was refused")
        return Refusal(403, "wrong metrics token")
    return None
