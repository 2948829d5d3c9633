"""The Tokens page (``/tokens/``): a user creates a token and sees its text once, lists and
revokes their own; an Admin sees and revokes everyone's; no one revokes another's otherwise."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

import pytest
from django.test import Client

from dashboard.access import tokens
from dashboard.models import ApiToken, AuditEntry

pytestmark = pytest.mark.django_db


def form(**changes: Any) -> dict[str, Any]:
    return {"name": "nightly export", "scopes": ["read", "operate"], "days": "30"} | changes


def test_a_user_creates_a_token_and_sees_its_text_once(operator_client: Client) -> None:
    created = operator_client.post("/tokens/", form())

    assert created.status_code == 200 and created["Cache-Control"] == "no-store"
    page = created.content.decode()
    shown = re.search(r'<code class="mono" id="new-token" data-token-text>(sst_[^<]+)</code>', page)
    assert shown is not None
    token = ApiToken.objects.get()
    assert token.key_hash == tokens.hash_token(shown[1])
    assert token.scopes == ["read", "operate"] and token.user.username == "olga"
    assert 'data-token="nightly export" data-token-status="active"' in page

    again = operator_client.get("/tokens/").content.decode()
    assert shown[1] not in again and "new-token" not in again
    assert 'data-token="nightly export"' in again and "read, operate" in again
    api = Client().get("/api/runs/", headers={"Authorization": f"Bearer {shown[1]}"})
    assert api.status_code == 200


def test_the_form_refuses_a_longer_expiry_than_the_maximum(
    operator_client: Client, settings: Any
) -> None:
    settings.SUPERSTEP_TOKEN_MAX_DAYS = 14

    refused = operator_client.post("/tokens/", form(days="15"))

    assert refused.status_code == 422
    page = refused.content.decode()
    assert "A token lives 1 to 14 days (the longest an Admin allows)." in page
    assert "At most 14 days" in page and not ApiToken.objects.exists()


def test_the_form_refuses_scopes_beyond_the_users_roles(viewer_client: Client) -> None:
    refused = viewer_client.post("/tokens/", form(scopes=["decide"]))

    assert refused.status_code == 422
    assert "Your roles do not allow decide" in refused.content.decode()
    assert "Your roles allow: read." in refused.content.decode()


def test_a_user_lists_only_their_own_and_revokes_one(
    operator_client: Client, role_user: Callable[..., Any]
) -> None:
    olga = operator_client.user  # type: ignore[attr-defined]
    tokens.create_token(olga, "mine", days=5)
    tokens.create_token(role_user("vic", "Viewer"), "vics", days=5)

    page = operator_client.get("/tokens/").content.decode()
    assert 'data-token="mine"' in page and 'data-token="vics"' not in page
    assert "Your tokens" in page

    mine = ApiToken.objects.get(name="mine")
    revoked = operator_client.post(f"/tokens/{mine.pk}/revoke/")
    assert revoked.status_code == 302 and revoked.url == "/tokens/"
    listed = operator_client.get("/tokens/").content.decode()
    assert 'data-token="mine" data-token-status="revoked"' in listed
    assert AuditEntry.objects.filter(action="token_revoke", actor=olga).count() == 1


def test_a_user_may_not_revoke_anothers_token(
    operator_client: Client, role_user: Callable[..., Any]
) -> None:
    tokens.create_token(role_user("vic", "Viewer"), "vics", days=5)
    theirs = ApiToken.objects.get()

    refused = operator_client.post(f"/tokens/{theirs.pk}/revoke/")

    assert refused.status_code == 404
    assert f"No token has the id {theirs.pk}." in refused.content.decode()
    assert ApiToken.objects.get().revoked_at is None


def test_an_admin_sees_and_revokes_everyones(
    admin_role_client: Client, role_user: Callable[..., Any]
) -> None:
    tokens.create_token(role_user("vic", "Viewer"), "vics", days=5)
    theirs = ApiToken.objects.get()

    page = admin_role_client.get("/tokens/").content.decode()
    assert "Everyone's tokens" in page and 'data-token="vics"' in page and ">vic</td>" in page

    assert admin_role_client.post(f"/tokens/{theirs.pk}/revoke/").status_code == 302
    assert ApiToken.objects.get().revoked_at is not None


def test_the_account_menu_links_the_tokens_page(viewer_client: Client) -> None:
    page = viewer_client.get("/").content.decode()

    assert 'href="/tokens/"' in page


def test_the_tokens_page_needs_a_sign_in() -> None:
    response = Client().get("/tokens/")

    assert response.status_code == 302 and "login" in response.url
