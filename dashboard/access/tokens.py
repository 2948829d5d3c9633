"""API tokens: ``Authorization: Bearer <token>`` for scripts and other services.

Only a SHA-256 of each token is stored; the token itself is shown once, when it is created
(``manage.py create_api_token <username>``). Token requests are not cookie-authenticated, so
CSRF does not apply to them.
"""

from __future__ import annotations

import hashlib
import secrets
from collections.abc import Callable

from django.http import HttpRequest, HttpResponse, JsonResponse
from django.utils import timezone

__all__ = ["TokenAuthenticationMiddleware", "create_token", "hash_token"]

PREFIX = "sst_"


def hash_token(token: str) -> str:
    return hashlib.sha256(token.encode("utf-8")).hexdigest()


def create_token(user: object, name: str = "") -> str:
    """Create a token for ``user`` and return it; it cannot be recovered later."""
    from dashboard.models import ApiToken

    token = PREFIX + secrets.token_urlsafe(32)
    ApiToken.objects.create(user=user, name=name[:100], key_hash=hash_token(token))
    return token


class TokenAuthenticationMiddleware:
    """Sits after AuthenticationMiddleware: a valid bearer token replaces the session user."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        header = request.headers.get("Authorization", "")
        if header.startswith("Bearer "):
            from dashboard.models import ApiToken

            token = header[len("Bearer ") :].strip()
            found = (
                ApiToken.objects.select_related("user")
                .filter(key_hash=hash_token(token), revoked_at__isnull=True, user__is_active=True)
                .first()
            )
            if found is None:
                return JsonResponse({"error": "invalid or revoked API token"}, status=401)
            ApiToken.objects.filter(pk=found.pk).update(last_used_at=timezone.now())
            request.user = found.user
            # The token, not a cookie, authenticates this request: CSRF cannot apply.
            request._dont_enforce_csrf_checks = True  # type: ignore[attr-defined]
        return self.get_response(request)
