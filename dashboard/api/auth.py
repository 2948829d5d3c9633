"""Who may call the JSON API: a bearer token or a signed-in session, then ``admit``.

django-ninja tries ``AUTH`` in order on every operation, before it reads parameters or the
body. A request carrying ``Authorization: Bearer …`` is judged by its token alone: a bad one is
a 401 even beside a valid session cookie. Otherwise the session counts, and an unsafe method
must pass Django's CSRF check (ninja exempts its views from the middleware's check and leaves
it to cookie authentication, which is here). Tokens are read nowhere else, so they open
nothing outside ``/api/``. A token's user comes with the token's scopes, which
``authz.can`` holds every action to (``dashboard.access.tokens``); an expired or revoked token
is a 401 that says so, recorded in the audit log.

``admit`` then applies what every API request needs whatever the operation: no NUL characters
in the path (404) or the query (400), since PostgreSQL cannot store them, and the ``view``
permission (403, recorded in the audit log), and the rate limits per token and per user (429
with ``Retry-After``, ``dashboard.access.rate_limits``).
"""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.contrib.auth.models import User
from django.http import HttpRequest
from ninja.security import APIKeyCookie, HttpBearer
from ninja.utils import check_csrf

from dashboard import services
from dashboard.access import rate_limits, tokens
from dashboard.api.errors import CsrfRefused, NotAuthenticated

__all__ = ["AUTH", "OPERATION_SCOPES", "BearerToken", "SessionCookie", "admit", "describe_scopes"]

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
        try:
            user = tokens.authenticate(token)
        except tokens.TokenRefused as exc:
            raise NotAuthenticated(str(exc)) from exc
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


# The scope each operation needs of a token, by its view's name, for the OpenAPI document
# (``describe_scopes``). The check itself is the services' (``authz.can``); a test holds the
# two to each other, operation by operation.
OPERATION_SCOPES: dict[str, str] = {
    **dict.fromkeys(
        (
            "workflows",
            "run_list",
            "run_detail",
            "run_checkpoints",
            "checkpoint_detail",
            "run_events",
            "approvals",
            "schedule_list",
            "schedule_detail",
            "export",  # the audit log's; its role check (view_auditentry) is its own
        ),
        "read",
    ),
    **dict.fromkeys(
        (
            "run_start",
            "run_resume",
            "run_fork",
            "run_cancel",
            "run_retry",
            "run_migrate",
            "runs_migrate",
            "schedule_create",
            "schedule_update",
            "schedule_delete",
            "schedule_pause",
            "schedule_resume",
            "schedule_trigger",
        ),
        "operate",
    ),
    **dict.fromkeys(("approval_decide", "approval_claim"), "decide"),
    "run_reveal": "reveal",
    **dict.fromkeys(
        (
            "run_hold",
            "retention_prune",
            "alert_rule_list",
            "alert_rule_create",
            "alert_rule_detail",
            "alert_rule_update",
            "alert_rule_delete",
        ),
        "admin",
    ),
}

SCHEME_DESCRIPTION = (
    "An API token (Tokens page, or `manage.py create_api_token`). A token has scopes: "
    + "; ".join(f"`{scope}`: {what}" for scope, what in tokens.SCOPES.items())
    + ". It may do what its scopes name and its user's roles allow when it is used; each "
    "operation's `x-required-scope` names its scope. A refusal for a missing scope is a 403 "
    "naming it; an expired or revoked token is a 401 saying so."
)


def describe_scopes(schema: dict[str, Any]) -> dict[str, Any]:
    """The OpenAPI document with the token scheme's scopes and each operation's scope."""
    for scheme in schema.get("components", {}).get("securitySchemes", {}).values():
        if scheme.get("type") == "http":
            scheme["description"] = SCHEME_DESCRIPTION
    for operations in schema.get("paths", {}).values():
        for operation in operations.values():
            # "dashboard_api_views_run_start": the view's name after its module's.
            name = operation["operationId"].split("_api_", 1)[1].split("_", 1)[1]
            scope = OPERATION_SCOPES[name]
            operation["x-required-scope"] = scope
            needs = f"A token needs the `{scope}` scope."
            operation["description"] = f"{operation.get('description', '')}\n\n{needs}".strip()
    return schema
