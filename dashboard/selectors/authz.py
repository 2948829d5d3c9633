"""Who may read what: the permission check consumers make before streaming a run."""

from __future__ import annotations

from typing import Any

from dashboard.services.authz import can

__all__ = ["user_can_view"]


def user_can_view(user: Any) -> bool:
    """Whether the user may look at runs at all (every role can; a user with no role cannot)."""
    return user is not None and can(user, "view")

