"""API tokens as the Tokens page lists them: a user's own, or everyone's for an Admin."""

from __future__ import annotations

import dataclasses
import datetime as dt

from django.db.models import QuerySet
from django.utils import timezone

from dashboard.access import authz
from dashboard.core.types import Actor, is_user
from dashboard.models import ApiToken

__all__ = ["TokenRow", "token_rows"]


@dataclasses.dataclass(frozen=True)
class TokenRow:
    token: ApiToken
    status: str  # "active", "expired" or "revoked"


def _status(token: ApiToken, now: dt.datetime) -> str:
    if token.revoked_at is not None:
        return "revoked"
    if token.expires_at is not None and token.expires_at <= now:
        return "expired"
    return "active"


def token_rows(user: Actor) -> list[TokenRow]:
    """``user``'s tokens, or every user's for an Admin; newest first."""
    if not is_user(user):
        return []
    found: QuerySet[ApiToken] = ApiToken.objects.select_related("user").order_by(
        "-created_at", "-pk"
    )
    if not authz.can(user, "token_admin"):
        found = found.filter(user=user)
    now = timezone.now()
    return [TokenRow(token, _status(token, now)) for token in found]
