"""Keeping API tokens (dashboard/services/tokens.py, dashboard/selectors/tokens.py): created
with scopes the roles give and an expiry within the maximum, revoked by their owner or an
Admin, listed with their status; every change audited."""

from __future__ import annotations

import datetime as dt
from typing import Any

import pytest
from django.utils import timezone

from dashboard import selectors, services
from dashboard.access import tokens
from dashboard.models import ApiToken, AuditEntry


@pytest.fixture(autouse=True)
def database(services_db: str) -> str:
    return services_db


def create(owner: Any, **changes: Any) -> tuple[ApiToken, str]:
    spec = {"name": "nightly export", "scopes": ["read"], "days": 30, "user": owner} | changes
    return services.token_create(owner, **spec)


def test_token_create_returns_the_text_once_and_stores_its_hash(operator_user: Any) -> None:
    token, text = create(operator_user, scopes=["operate"])

    assert token.key_hash == tokens.hash_token(text) and text not in str(token.__dict__)
    assert token.scopes == ["read", "operate"]
    assert token.expires_at is not None
    assert abs(token.expires_at - (timezone.now() + dt.timedelta(days=30))) < dt.timedelta(
        minutes=1
    )
    entry = AuditEntry.objects.get(action="token_create")
    assert entry.actor == operator_user and entry.details["scopes"] == ["read", "operate"]
    assert tokens.authenticate(text) == operator_user


def test_token_create_refuses_an_expiry_beyond_the_maximum(
    operator_user: Any, settings: Any
) -> None:
    settings.SUPERSTEP_TOKEN_MAX_DAYS = 10

    for days in (11, 0, -1):
        with pytest.raises(services.InvalidInput) as refused:
            create(operator_user, days=days)
        assert refused.value.errors == {
            "days": "A token lives 1 to 10 days (the longest an Admin allows)."
        }
    assert create(operator_user, days=10)[0].expires_at is not None


def test_token_create_refuses_scopes_beyond_the_owners_roles(
    viewer_user: Any, operator_user: Any
) -> None:
    with pytest.raises(services.InvalidInput) as refused:
        create(viewer_user, scopes=["operate", "decide"])
    assert refused.value.errors["scopes"] == (
        "Your roles do not allow operate, decide: a token cannot do more than you."
    )
    with pytest.raises(services.InvalidInput) as unknown:
        create(operator_user, scopes=["root"])
    assert unknown.value.errors["scopes"] == "No such scope: root."
    assert services.allowed_scopes(viewer_user) == ["read"]
    assert not ApiToken.objects.exists()


def test_token_create_needs_a_name(operator_user: Any) -> None:
    with pytest.raises(services.InvalidInput) as refused:
        create(operator_user, name="  ")
    assert "name" in refused.value.errors


def test_token_create_is_for_ones_own_tokens(operator_user: Any, admin_role_user: Any) -> None:
    with pytest.raises(services.Forbidden):
        services.token_create(operator_user, name="x", scopes=[], days=1, user=admin_role_user)


def test_token_revoke_by_its_owner_then_twice_is_a_no_op(operator_user: Any) -> None:
    token, text = create(operator_user)

    services.token_revoke(token.pk, user=operator_user)
    again = services.token_revoke(token.pk, user=operator_user)

    assert again.revoked_at is not None and again.revoked_by == operator_user
    assert AuditEntry.objects.filter(action="token_revoke").count() == 1
    with pytest.raises(tokens.TokenRefused, match="revoked"):
        tokens.authenticate(text)


def test_token_revoke_of_anothers_token_is_not_found_unless_admin(
    operator_user: Any, viewer_user: Any, admin_role_user: Any
) -> None:
    token, _ = create(operator_user)

    with pytest.raises(services.NotFound):
        services.token_revoke(token.pk, user=viewer_user)
    assert ApiToken.objects.get().revoked_at is None

    services.token_revoke(token.pk, user=admin_role_user)
    assert ApiToken.objects.get().revoked_by == admin_role_user
    entry = AuditEntry.objects.get(action="token_revoke")
    assert entry.actor == admin_role_user and "of olga" in entry.target


def test_token_rows_are_ones_own_or_everyones_for_an_admin(
    operator_user: Any, viewer_user: Any, admin_role_user: Any
) -> None:
    create(operator_user, name="mine")
    theirs, _ = create(viewer_user, name="theirs")
    old, _ = create(viewer_user, name="old")
    ApiToken.objects.filter(pk=old.pk).update(expires_at=timezone.now() - dt.timedelta(days=1))
    services.token_revoke(theirs.pk, user=viewer_user)

    assert [row.token.name for row in selectors.token_rows(operator_user)] == ["mine"]
    everyone = {row.token.name: row.status for row in selectors.token_rows(admin_role_user)}
    assert everyone == {"mine": "active", "theirs": "revoked", "old": "expired"}
    assert selectors.token_rows(None) == []
