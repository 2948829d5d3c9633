"""API tokens: ``Authorization: Bearer <token>`` for scripts and other services.

Only a SHA-256 of each token is stored; the token itself is shown once, when it is created
(``manage.py create_api_token <username>``). Tokens authenticate JSON API requests only: the
API's ``dashboard.api.auth.BearerToken`` is the one reader, so a token opens no page, admin
view or websocket. Token requests are not cookie-authenticated, so CSRF does not apply to them.
"""

from __future__ import annotations

import hashlib
import secrets

from django.contrib.auth.models import User
from django.utils import timezone

from dashboard.models import ApiToken

__all__ = ["create_token", "hash_token", "token_user"]

PREFIX = "sst_"


def hash_token(token: str) -> str:
    return hashlib.sha256(token.encode("utf-8")).hexdigest()


def create_token(user: User, name: str = "") -> str:
    """Create a token for ``user`` and return it; it cannot be recovered later."""
    token = PREFIX + secrets.token_urlsafe(32)
    ApiToken.objects.create(user=user, name=name[:100], key_hash=hash_token(token))
    return token


def token_user(token: str) -> User | None:
    """The active user of a live (unrevoked) token, noting that it was used; None otherwise."""
    found = (
        ApiToken.objects.select_related("user")
        .filter(key_hash=hash_token(token), revoked_at__isnull=True, user__is_active=True)
        .first()
    )
    if found is None:
        return None
    ApiToken.objects.filter(pk=found.pk).update(last_used_at=timezone.now())
    return found.user
