"""Who may read what: the permission check consumers make before streaming a run."""

from __future__ import annotations

from dashboard.access.authz import can
from dashboard.core.types import Actor

__all__ = ["user_can_view"]


def user_can_view(user: Actor) -> bool:
    """Whether the user may look at runs at all (every role can; a user with no role cannot)."""
    return user is not None and can(user, "view")
