"""Who acts and which run: the types every service and selector signature uses for them.

``Actor`` is whoever asks for an action: a signed-in user, an anonymous visitor (refused by
every rule, and the refusal recorded) or ``None``, the system itself (workers, the lease
sweeper, scheduled retention). ``RunId`` is a run's primary key as callers hold it: the model's
UUID, or its text from a URL, a form or a task's arguments; text that is no UUID is simply no
run (``NotFound``).
"""

from __future__ import annotations

import uuid
from typing import TypeGuard

from django.contrib.auth.models import AnonymousUser, User

__all__ = ["Actor", "RunId", "is_user", "username"]

# Django's own User is this project's AUTH_USER_MODEL.
type Actor = User | AnonymousUser | None
type RunId = uuid.UUID | str


def is_user(user: Actor) -> TypeGuard[User]:
    """A signed-in user (not an anonymous visitor, not the system)."""
    return user is not None and user.is_authenticated


def username(user: Actor) -> str | None:
    return user.get_username() if is_user(user) else None
