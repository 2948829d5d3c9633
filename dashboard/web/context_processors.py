"""Template context shared by every page of the dashboard.

Add "dashboard.web.context_processors.pending_approvals" to the template context processors.
"""

from __future__ import annotations

from typing import Any

from django.http import HttpRequest
from django.utils.functional import SimpleLazyObject


def pending_approvals(request: HttpRequest) -> dict[str, object]:
    """``pending_approval_count`` for the nav badge.

    Lazy, so the query runs only on pages that show the badge (not on the login page, the
    JSON downloads or htmx partials), and at most once per render.
    """
    user = getattr(request, "user", None)
    if user is None or not user.is_authenticated:
        return {"pending_approval_count": 0}
    return {"pending_approval_count": SimpleLazyObject(lambda: _count_pending(user))}


def _count_pending(user: Any) -> int:
    # Imported at call time, not module load: the template engine may import this module before
    # the app registry is ready. The selector owns the meaning of "pending" (and its index).
    from dashboard.selectors import pending_approval_count

    return pending_approval_count(user)


def pinned_views(request: HttpRequest) -> dict[str, Any]:
    """``pinned_views``: the saved views the user pinned in the navigation (lazy: read only on
    pages that draw it)."""
    user = getattr(request, "user", None)
    if user is None or not user.is_authenticated:
        return {"pinned_views": []}
    return {"pinned_views": SimpleLazyObject(lambda: _pinned(user))}


def _pinned(user: Any) -> list[Any]:
    from dashboard.services.saved_views import saved_views_for

    return list(saved_views_for(user).filter(owner=user, pinned=True)[:5])
