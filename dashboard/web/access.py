"""Who may open the dashboard's pages, and how htmx requests learn they must sign in again.

Permission checks happen here, in the view layer, never only in a template. What a user may
*change* is decided by the services (they raise ``ServiceError`` subclasses with an HTTP status,
which the views show as a message).
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any
from urllib.parse import urlencode, urlsplit

from django.conf import settings
from django.contrib.auth.views import redirect_to_login
from django.http import HttpRequest, HttpResponse, HttpResponseNotAllowed

__all__ = ["htmx_target", "is_htmx", "page_view"]

View = Callable[..., HttpResponse]


def is_htmx(request: HttpRequest) -> bool:
    return request.headers.get("HX-Request") == "true"


def htmx_target(request: HttpRequest) -> str:
    """The id of the element an htmx request will swap ("" for a normal request). History
    restores carry the header too but want the whole page."""
    if not is_htmx(request) or request.headers.get("HX-History-Restore-Request") == "true":
        return ""
    return request.headers.get("HX-Target", "")


def page_view(*methods: str) -> Callable[[View], View]:
    """Signed-in users only (the login page otherwise); only the listed HTTP methods.

    An htmx request whose session ended gets ``HX-Redirect`` to the login page, so the whole
    page goes there instead of the login form being swapped into a table cell.
    """

    allowed = methods or ("GET",)

    def wrap(view: View) -> View:
        @functools.wraps(view)
        def inner(request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
            if not _may_view(request):
                if is_htmx(request):
                    return _htmx_login(request)
                return redirect_to_login(request.get_full_path(), settings.LOGIN_URL)
            if request.method not in allowed and not (
                request.method == "HEAD" and "GET" in allowed
            ):
                return HttpResponseNotAllowed(list(allowed))
            return view(request, *args, **kwargs)

        return inner

    return wrap


def _may_view(request: HttpRequest) -> bool:
    """Signed in with a role that may look at runs. A signed-in user without one is refused
    through the services, so the refusal is in the audit log like any other."""
    from dashboard import services

    if not getattr(request.user, "is_authenticated", False):
        return False
    try:
        services.require(request.user, "view", target=f"page {request.path}"[:300])
    except services.Forbidden:
        return False
    return True


def allowed_actions(user: Any) -> dict[str, bool]:
    """What the user's role lets them do, to offer only those buttons (the services check
    again, and their refusal is what counts)."""
    from dashboard import services

    return {
        "start": services.can(user, "start"),
        "operate": services.can(user, "resume"),
        "decide": services.can(user, "approve"),
    }


def _htmx_login(request: HttpRequest) -> HttpResponse:
    current = request.headers.get("HX-Current-URL", "")
    parts = urlsplit(current)
    next_path = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
    response = HttpResponse(status=401)
    response["HX-Redirect"] = f"{settings.LOGIN_URL}?{urlencode({'next': next_path})}"
    return response
