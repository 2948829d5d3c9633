"""Who may open the dashboard's pages, and how htmx requests learn they must sign in again.

Permission checks happen here, in the view layer, never only in a template. What a user may
*change* is decided by the services (they raise ``ServiceError`` subclasses with an HTTP status,
which the views show as a message).
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import TYPE_CHECKING, Any
from urllib.parse import urlencode, urlsplit

from django.conf import settings
from django.contrib.auth.views import redirect_to_login
from django.http import HttpRequest, HttpResponse, HttpResponseNotAllowed
from django_htmx.http import HttpResponseClientRedirect
from django_htmx.middleware import HtmxDetails

if TYPE_CHECKING:
    from dashboard.core.types import Actor

__all__ = ["HtmxHttpRequest", "htmx_target", "page_view"]

View = Callable[..., HttpResponse]


class HtmxHttpRequest(HttpRequest):
    """A request that went through django-htmx's middleware: ``request.htmx`` is truthy for an
    htmx request and carries its headers (target, current URL, history restore...)."""

    htmx: HtmxDetails


def htmx_target(request: HtmxHttpRequest) -> str:
    """The id of the element an htmx request will swap ("" for a normal request). History
    restores carry the header too but want the whole page."""
    if not request.htmx or request.htmx.history_restore_request:
        return ""
    return request.htmx.target or ""


def page_view(*methods: str) -> Callable[[View], View]:
    """Signed-in users only (the login page otherwise); only the listed HTTP methods.

    An htmx request whose session ended gets ``HX-Redirect`` to the login page, so the whole
    page goes there instead of the login form being swapped into a table cell.
    """

    allowed = methods or ("GET",)

    def wrap(view: View) -> View:
        @functools.wraps(view)
        def inner(request: HtmxHttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
            if not _may_view(request):
                if request.htmx:
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


def allowed_actions(user: Actor, workflow: str | None = None) -> dict[str, bool]:
    """What the user's role lets them do (on runs of ``workflow``, when given), to offer only
    those buttons (the services check again, and their refusal is what counts)."""
    from dashboard import services

    return {
        "start": services.can(user, "start", workflow),
        "operate": services.can(user, "resume", workflow),
        "decide": services.can(user, "approve", workflow),
    }


def workflow_names(user: Actor, action: str = "view") -> list[str]:
    """The registered workflows ``user`` may ``action`` (a role granted for named workflows
    only shows those), for menus and filters."""
    from dashboard import catalog, services

    visible = services.visible_workflows(user, action)
    return [name for name in catalog.names() if visible is None or name in visible]


def _htmx_login(request: HtmxHttpRequest) -> HttpResponse:
    # Path and query only, whatever host the header names: never a redirect off this site.
    parts = urlsplit(request.htmx.current_url or "")
    next_path = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
    return HttpResponseClientRedirect(
        f"{settings.LOGIN_URL}?{urlencode({'next': next_path})}", status=401
    )
