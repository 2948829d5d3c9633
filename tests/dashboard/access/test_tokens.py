"""API tokens (dashboard/access/tokens.py): scopes for every action, expiry, revocation, the
audit of refused uses, and ``manage.py create_api_token``."""

from __future__ import annotations

import datetime as dt
import io
from typing import Any

import pytest
from django.core.management import CommandError, call_command
from django.test import Client
from django.utils import timezone

from dashboard.access import authz, tokens
from dashboard.models import ApiToken, AuditEntry

FAST = {"work_ms": 0}


@pytest.fixture(autouse=True)
def database(services_db: str) -> str:
    return services_db


def _get(token: str, path: str = "/api/runs/") -> Any:
    return Client().get(path, headers={"Authorization": f"Bearer {token}"})


def test_every_action_needs_a_known_scope() -> None:
    assert set(authz.ACTION_PERMISSIONS) <= set(tokens.ACTION_SCOPES)
    assert set(tokens.ACTION_SCOPES.values()) == set(tokens.SCOPES)


def test_an_action_no_scope_names_needs_admin(operator_user: Any) -> None:
    assert tokens.missing_scope(operator_user, "something_new") is None  # no token, no limit
    user = tokens.with_scopes(operator_user, ["read", "operate", "decide"])
    assert tokens.missing_scope(user, "something_new") == "admin"


def test_create_token_defaults_to_every_scope_and_the_longest_expiry(
    operator_user: Any, settings: Any
) -> None:
    settings.SUPERSTEP_TOKEN_MAX_DAYS = 7
    before = timezone.now()

    text = tokens.create_token(operator_user, "ci")

    token = ApiToken.objects.get()
    assert text.startswith("sst_") and token.key_hash == tokens.hash_token(text)
    assert token.scopes == list(tokens.SCOPES)
    assert token.expires_at is not None
    assert (
        before + dt.timedelta(days=7) <= token.expires_at <= timezone.now() + dt.timedelta(days=7)
    )


def test_create_token_always_adds_read(operator_user: Any) -> None:
    tokens.create_token(operator_user, scopes=["operate"], days=1)

    assert ApiToken.objects.get().scopes == ["read", "operate"]


def test_an_expired_token_is_refused_with_401_and_audited(operator_user: Any) -> None:
    text = tokens.create_token(operator_user, "old", days=1)
    ApiToken.objects.update(expires_at=timezone.now() - dt.timedelta(seconds=1))

    response = _get(text)

    assert response.status_code == 401
    assert response.json()["error"] == "API token 'old' expired"
    entry = AuditEntry.objects.get(action="token_use")
    assert entry.outcome == AuditEntry.DENIED and entry.actor == operator_user
    assert entry.details["reason"] == "expired"
    assert ApiToken.objects.get().last_used_at is None


def test_a_revoked_token_is_refused_with_401_and_audited_on_every_use(operator_user: Any) -> None:
    text = tokens.create_token(operator_user, "gone")
    ApiToken.objects.update(revoked_at=timezone.now())

    first, second = (
        _get(text),
        Client().post(
            "/api/runs/",
            {},
            content_type="application/json",
            headers={"Authorization": f"Bearer {text}"},
        ),
    )

    assert first.status_code == second.status_code == 401
    assert first.json()["error"] == "API token 'gone' was revoked"
    entries = AuditEntry.objects.filter(action="token_use", outcome=AuditEntry.DENIED)
    assert entries.count() == 2 and {e.details["reason"] for e in entries} == {"revoked"}


def test_an_unknown_token_is_refused_and_names_no_one() -> None:
    response = _get("sst_nothing")

    assert response.status_code == 401 and response.json()["error"] == "invalid API token"
    assert not AuditEntry.objects.filter(action="token_use").exists()


def test_a_token_from_before_expiry_existed_still_works(operator_user: Any) -> None:
    """Migration 0024 leaves existing tokens with every scope and no expiry."""
    text = tokens.create_token(operator_user, "legacy")
    ApiToken.objects.update(expires_at=None)

    assert _get(text).status_code == 200
    assert ApiToken.objects.get().last_used_at is not None


def test_authenticate_gives_the_user_the_tokens_scopes(operator_user: Any) -> None:
    text = tokens.create_token(operator_user, scopes=["read"], days=1)

    user = tokens.authenticate(text)

    assert tokens.scopes_of(user) == {"read"}
    assert authz.can(user, "view") and not authz.can(user, "start")
    assert authz.visible_workflows(user, "start") == frozenset()
    assert authz.can(type(user).objects.get(pk=user.pk), "start")  # the user without the token


def test_create_api_token_command_defaults_and_options(operator_user: Any, settings: Any) -> None:
    settings.SUPERSTEP_TOKEN_MAX_DAYS = 30
    out = io.StringIO()

    call_command("create_api_token", "olga", stdout=out)
    call_command("create_api_token", "olga", "--scopes", "read", "--days", "5", stdout=out)

    first, second = ApiToken.objects.order_by("pk")
    assert first.scopes == ["read", "operate"]  # what an Operator's roles give
    assert second.scopes == ["read"] and second.expires_at is not None
    assert second.expires_at - second.created_at < dt.timedelta(days=5, seconds=5)
    assert all(line.startswith("sst_") for line in out.getvalue().split())


def test_create_api_token_command_refuses_too_long_or_too_much(operator_user: Any) -> None:
    with pytest.raises(CommandError, match="1 to 90 days"):
        call_command("create_api_token", "olga", "--days", "365")
    with pytest.raises(CommandError, match="do not allow admin"):
        call_command("create_api_token", "olga", "--scopes", "admin")
    with pytest.raises(CommandError, match="no active user"):
        call_command("create_api_token", "nobody")
    assert not ApiToken.objects.exists()
