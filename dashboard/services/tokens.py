"""API tokens a user keeps for themselves: created with scopes and an expiry, and revoked; an
Admin may revoke anyone's. Every change is audited.

A token's scopes are checked against its owner's roles twice: here, so no one is handed a
scope their roles do not give, and at each use (``authz.can``), so a token loses what its
owner loses later.
"""

from __future__ import annotations

from collections.abc import Iterable

from django.contrib.auth.models import User
from django.db import transaction
from django.utils import timezone

from dashboard.access import audit, authz, tokens
from dashboard.core.errors import Forbidden, InvalidInput, NotFound
from dashboard.core.types import Actor, is_user
from dashboard.models import ApiToken

__all__ = ["allowed_scopes", "token_create", "token_revoke"]

_NAME_LIMIT = ApiToken._meta.get_field("name").max_length or 100


def allowed_scopes(owner: User) -> list[str]:
    """The scopes ``owner``'s roles give now: a scope counts when any of its actions is allowed."""
    return [
        scope
        for scope in tokens.SCOPES
        if any(
            authz.can(owner, action)
            for action, needed in tokens.ACTION_SCOPES.items()
            if needed == scope
        )
    ]


def token_create(
    owner: User, *, name: str, scopes: Iterable[str], days: int, user: Actor
) -> tuple[ApiToken, str]:
    """Create a token for ``owner`` and return it with its text, which is never shown again.

    ``user`` is who asks: ``owner`` themselves, or None for the system (``create_api_token``).

    Raises:
        Forbidden: ``user`` is someone other than ``owner``.
        InvalidInput: no name, an unknown scope or one ``owner``'s roles do not give, or an
            expiry outside 1 to ``SUPERSTEP_TOKEN_MAX_DAYS`` days (one message per field).
    """
    if is_user(user) and user.pk != owner.pk:
        raise Forbidden("a token is created by its own user")
    errors: dict[str, str] = {}
    name = name.strip()
    if not name:
        errors["name"] = "Name the token after what will use it (e.g. nightly export)."
    elif len(name) > _NAME_LIMIT:
        errors["name"] = f"At most {_NAME_LIMIT} characters (this is {len(name)})."
    chosen = set(scopes) | {"read"}
    unknown = sorted(chosen - set(tokens.SCOPES))
    allowed = allowed_scopes(owner)
    beyond = [scope for scope in tokens.SCOPES if scope in chosen and scope not in allowed]
    if unknown:
        errors["scopes"] = f"No such scope: {', '.join(unknown)}."
    elif beyond:
        errors["scopes"] = (
            f"Your roles do not allow {', '.join(beyond)}: a token cannot do more than you."
        )
    limit = tokens.max_days()
    if not 1 <= days <= limit:
        errors["days"] = f"A token lives 1 to {limit} days (the longest an Admin allows)."
    if errors:
        raise InvalidInput("The token was not created.", errors=errors)
    with transaction.atomic():
        text = tokens.create_token(owner, name, scopes=chosen, days=days)
        token = ApiToken.objects.get(key_hash=tokens.hash_token(text))
        audit.record(
            owner,
            "token_create",
            target=f"API token {token.name!r}",
            details={"token": token.pk, "scopes": token.scopes, "days": days},
        )
    return token, text


def token_revoke(token_id: int, *, user: Actor) -> ApiToken:
    """Revoke a token: its owner's own, or anyone's for an Admin. Revoking twice is a no-op.

    Raises:
        NotFound: no such token, or one of another user's for someone who is not an Admin
            (they are not told it exists).
    """
    with transaction.atomic():
        token = ApiToken.objects.select_for_update().filter(pk=token_id).first()
        mine = token is not None and is_user(user) and token.user_id == user.pk
        if token is None or not (mine or authz.can(user, "token_admin")):
            raise NotFound(f"No token has the id {token_id}.")
        if token.revoked_at is None:
            token.revoked_at = timezone.now()
            token.revoked_by = user if is_user(user) else None
            token.save(update_fields=["revoked_at", "revoked_by"])
            audit.record(
                user,
                "token_revoke",
                target=f"API token {token.name!r} of {token.user.get_username()}",
                details={"token": token.pk},
            )
    return token
