"""API tokens: ``Authorization: Bearer <token>`` for scripts and other services.

Only a SHA-256 of each token is stored; the token itself is shown once, when it is created (on
the Tokens page, or ``manage.py create_api_token <username>``). Tokens authenticate JSON API
requests only: the API's ``dashboard.api.auth.BearerToken`` is the one reader, so a token opens
no page, admin view or websocket. Token requests are not cookie-authenticated, so CSRF does not
apply to them.

A token has scopes, each a set of actions (``ACTION_SCOPES``): ``read`` (every token has it),
``operate`` (start, resume, fork, cancel, retry, migrate, schedules), ``decide`` (approve,
reject, claim, assign), ``admin`` (retention, holds, alert rules, prices) and ``reveal`` (a
masked field's value, ``dashboard.access.masking``). What a token may do is what its scopes
name *and* what its user's roles allow at the moment of use: the user loaded for a token
carries the token's scopes (``with_scopes``), and ``authz.can`` refuses an action outside
them, so every service, whatever calls it, holds a token to both.

Every token created since expiry existed has ``expires_at``; one created before (migration
0024) has none and every scope, as it had then. An expired or revoked token is refused, and
the attempt is recorded in the audit log as a denied ``token_use``.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import secrets
from collections.abc import Iterable

from django.conf import settings
from django.contrib.auth.models import User
from django.utils import timezone

from dashboard.access import audit
from dashboard.core.types import Actor
from dashboard.models import ApiToken, AuditEntry

__all__ = [
    "ACTION_SCOPES",
    "SCOPES",
    "TokenRefused",
    "authenticate",
    "create_token",
    "hash_token",
    "max_days",
    "missing_scope",
    "scopes_of",
    "with_scopes",
]

PREFIX = "sst_"

SCOPES: dict[str, str] = {
    "read": "see runs, checkpoints, events and requests",
    "operate": "start, resume, fork, cancel, retry and migrate runs; manage schedules",
    "decide": "approve, reject, claim and assign approval requests",
    "admin": "retention, holds, alert rules and model prices",
    "reveal": "reveal sensitive fields, one at a time (audited)",
}

ACTION_SCOPES: dict[str, str] = {
    "view": "read",
    "reveal": "reveal",
    **dict.fromkeys(("start", "resume", "fork", "cancel", "retry", "migrate"), "operate"),
    **dict.fromkeys(("schedule_change", "schedule_trigger"), "operate"),
    **dict.fromkeys(("approve", "reject", "claim", "assign", "override"), "decide"),
    **dict.fromkeys(
        (
            "prune",
            "hold",
            "release",
            "policy_change",
            "alert_change",
            "price_change",
            "token_admin",
        ),
        "admin",
    ),
}

_SCOPES_ATTR = "_superstep_token_scopes"  # set on the user a token authenticated


class TokenRefused(Exception):
    """The token authenticates no one; ``str()`` says why in a sentence."""


def hash_token(token: str) -> str:
    return hashlib.sha256(token.encode("utf-8")).hexdigest()


def max_days() -> int:
    """The longest a token may live, in days (``SUPERSTEP_TOKEN_MAX_DAYS``)."""
    return max(1, int(settings.SUPERSTEP_TOKEN_MAX_DAYS))


def create_token(
    user: User, name: str = "", *, scopes: Iterable[str] | None = None, days: int | None = None
) -> str:
    """Create a token for ``user`` and return it; it cannot be recovered later.

    ``scopes`` defaults to all of them (``read`` is always added); ``days`` to the longest
    allowed. Checking what the caller may ask for is ``services.tokens.token_create``'s job.
    """
    token = PREFIX + secrets.token_urlsafe(32)
    chosen = set(SCOPES if scopes is None else scopes) | {"read"}
    ApiToken.objects.create(
        user=user,
        name=name[:100],
        key_hash=hash_token(token),
        scopes=[scope for scope in SCOPES if scope in chosen],
        expires_at=timezone.now() + dt.timedelta(days=max_days() if days is None else days),
    )
    return token


def authenticate(token: str) -> User:
    """The active user of a live token, carrying its scopes, noting that it was used.

    Raises:
        TokenRefused: no such token, its user is inactive, or it is revoked or expired (these
            two recorded in the audit log).
    """
    found = ApiToken.objects.select_related("user").filter(key_hash=hash_token(token)).first()
    if found is None or not found.user.is_active:
        raise TokenRefused("invalid API token")
    now = timezone.now()
    if found.revoked_at is not None:
        _refuse(found, "revoked", f"API token {found.name!r} was revoked")
    if found.expires_at is not None and found.expires_at <= now:
        _refuse(found, "expired", f"API token {found.name!r} expired")
    ApiToken.objects.filter(pk=found.pk).update(last_used_at=now)
    return with_scopes(found.user, found.scopes)


def _refuse(token: ApiToken, reason: str, message: str) -> None:
    audit.record(
        token.user,
        "token_use",
        outcome=AuditEntry.DENIED,
        target=f"API token {token.name!r}",
        details={"token": token.pk, "reason": reason},
    )
    raise TokenRefused(message)


def with_scopes(user: User, scopes: Iterable[str]) -> User:
    """``user``, from now on limited to what ``scopes`` allow (``authz.can`` checks)."""
    setattr(user, _SCOPES_ATTR, frozenset(scopes))
    return user


def scopes_of(user: Actor) -> frozenset[str] | None:
    """The scopes of the token ``user`` came with; None when no token limits them."""
    scopes: frozenset[str] | None = getattr(user, _SCOPES_ATTR, None)
    return scopes


def missing_scope(user: Actor, action: str) -> str | None:
    """The scope ``action`` needs that ``user``'s token lacks; None when nothing is missing.

    An action no scope names needs ``admin``: a new action is closed to narrower tokens until
    it is given a scope.
    """
    scopes = scopes_of(user)
    if scopes is None:
        return None
    needed = ACTION_SCOPES.get(action, "admin")
    return None if needed in scopes else needed
