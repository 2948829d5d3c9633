"""How often one caller may knock: per API token and per user on the JSON API, per address and
per account on the sign-in page, so that one script's loop cannot starve every operator and a
password cannot be guessed at speed.

A limit is a count per period (``"600/min"``) read from settings at each request, so an
operator's change takes effect without a restart and tests can narrow one. Counters live in
Django's cache: Redis in production, shared by every web process on every machine; the
process's own memory in the embedded mode, which has one process. Each period is a fixed
window counted with the cache's atomic ``incr`` (``add`` opens a window), and a caller refused
is told when the window ends (``Retry-After``). Callers are keyed by a
digest, so the cache never holds a token or a user name.
"""

from __future__ import annotations

import hashlib
import math
import re
import time
from dataclasses import dataclass

from django.conf import settings
from django.core.cache import cache
from django.core.exceptions import ImproperlyConfigured

__all__ = ["Limit", "RateLimited", "parse_rate", "hit"]

_RATE = re.compile(r"^\s*(\d+)\s*/\s*(\d*)\s*(s|sec|second|m|min|minute|h|hour|d|day)\s*$")
_SECONDS = {"s": 1, "sec": 1, "second": 1, "m": 60, "min": 60, "minute": 60}
_SECONDS |= {"h": 3600, "hour": 3600, "d": 86400, "day": 86400}


@dataclass(frozen=True, slots=True)
class Limit:
    count: int
    seconds: int


class RateLimited(Exception):
    """Refused: too many requests from this caller in this period."""

    def __init__(self, what: str, retry_after: int) -> None:
        self.what = what
        self.retry_after = retry_after
        super().__init__(f"too many {what}; try again in {retry_after} s")


def parse_rate(text: str, setting: str = "the rate") -> Limit | None:
    """``"600/min"``, ``"5/10s"``; empty or ``"off"``: no limit."""
    if not text or text.strip().lower() in ("off", "none", "0"):
        return None
    found = _RATE.match(text)
    if found is None:
        raise ImproperlyConfigured(
            f"{setting}={text!r} is not a rate such as 600/min, 10/s or 100/5min"
        )
    count, multiple, unit = found.groups()
    return Limit(int(count), int(multiple or 1) * _SECONDS[unit])


def hit(scope: str, caller: str, setting: str, what: str) -> None:
    """Count one request from ``caller`` against the limit ``settings.<setting>`` names;
    ``RateLimited`` once it is over."""
    limit = parse_rate(str(getattr(settings, setting, "") or ""), setting)
    if limit is None:
        return
    moment = time.time()
    window = int(moment // limit.seconds)
    digest = hashlib.blake2b(caller.encode("utf-8", "surrogatepass"), digest_size=12).hexdigest()
    key = f"superstep:rate:{scope}:{digest}:{window}"
    try:
        count = cache.incr(key)  # the common case: the window is open already
    except ValueError:  # this request opens it, unless a concurrent one just did
        count = 1 if cache.add(key, 1, timeout=limit.seconds + 1) else cache.incr(key)
    if count > limit.count:
        left = (window + 1) * limit.seconds - moment
        raise RateLimited(what, max(1, math.ceil(left)))
