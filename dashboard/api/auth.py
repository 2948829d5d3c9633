"""Who may call the JSON API: a bearer token or a signed-in session, then ``admit``.

django-ninja tries ``AUTH`` in order on every operation, before it reads parameters or the
body. A request carrying ``Authorization: Bearer …`` is judged by its token alone: a bad one is
a 401 even beside a valid session cookie. Otherwise the session counts, and an unsafe method
must pass Django's CSRF check (ninja exempts its views from the middleware's check and leaves
it to cookie authentication, which is here). Tokens are read nowhere else, so they open
nothing outside ``/api/``.

``admit`` then applies what every API request needs whatever the operation: no NUL characters
in the path (404) or the query (400), since PostgreSQL cannot store them, and the ``view``
permission (403, recorded in the audit log), and the rate limits per token and per user (429
with ``Retry-After``, ``dashboard.access.rate_limits``).
"""

from __future__ import annotations

from django.conf import settings
from django.contrib.auth.models import User
from django.http import HttpRequest
from ninja.security import APIKeyCookie, HttpBearer
from ninja.utils import check_csrf

from dashboard import services
from dashboard.access import rate_limits
from dashboard.access.tokens import token_user
from dashboard.api.errors import CsrfRefused, NotAuthenticated

__all__ = ["AUTH", "BearerToken", "SessionCookie", "admit"]

SCHEME = "Bearer "


class BearerToken(HttpBearer):
    """``Authorization: Bearer <token>``, the scheme spelled exactly so as before (ninja's
    ``HttpBearer.__call__`` would take any case, and log the header under DEBUG)."""

    def __call__(self, request: HttpRequest) -> User | None:
        header = request.headers.get("Authorization", "")
        if not header.startswith(SCHEME):
            return None
        return self.authenticate(request, header[len(SCHEME) :].strip())

    def authenticate(self, request: HttpRequest, token: str) -> User | None:
        # Counted before the token is checked: a loop with a wrong token is refused too.
        rate_limits.hit("api-token", token, "SUPERSTEP_RATE_API_TOKEN", "requests with this token")
        user = token_user(token)
        if user is None:
            raise NotAuthenticated("invalid or revoked API token")
        return admit(request, user)


class SessionCookie(APIKeyCookie):
    """The dashboard's login session; unsafe methods need the CSRF token too."""

    param_name = settings.SESSION_COOKIE_NAME

    def __call__(self, request: HttpRequest) -> User | None:
        user = request.user
        # Anonymous callers are told to authenticate, not that their CSRF token is missing.
        if not isinstance(user, User) or not user.is_authenticated:
            return None
        refusal = check_csrf(request)
        if refusal is not None:
            raise CsrfRefused(refusal)
        return self.authenticate(request, None)

    def authenticate(self, request: HttpRequest, key: str | None) -> User | None:
        assert isinstance(request.user, User)
        return admit(request, request.user)


def admit(request: HttpRequest, user: User) -> User:
    """Checks for every API request once its caller is known.

    Raises:
        NotFound: the path holds a NUL character.
        InvalidInput: a query parameter holds one (``errors`` names it).
        Forbidden: ``user`` has no role that may view.
    """
    # Services, the audit log and the views read the caller from here, token or session.
    request.user = user
    rate_limits.hit("api-user", str(user.pk), "SUPERSTEP_RATE_API_USER", "API requests from you")
    if "\x00" in request.path:
        raise services.NotFound("no such resource (the path contains a NUL character)")
    for key, value in request.GET.items():
        if "\x00" in key or "\x00" in value:
            raise services.InvalidInput(
                "parameters may not contain NUL characters",
                errors={key.replace("\x00", "") or "query": "contains a NUL character"},
            )
    services.require(user, "view", target=request.path)
    return user


AUTH = [BearerToken(), SessionCookie()]
