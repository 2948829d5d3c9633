"""Single sign-on with OpenID Connect, against a real provider on a local port (fake_oidc).

Every sign-in here goes the whole way: the dashboard redirects to the provider, the provider
redirects back with a code, and the dashboard exchanges it over HTTP, checks the signed ID
token against the provider's published key and reads the user-info endpoint.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlparse

import pytest
import requests
from django.contrib.auth.models import User
from django.core.exceptions import ImproperlyConfigured
from django.test import Client

from dashboard import services
from dashboard.access import sso
from dashboard.models import AuditEntry, SingleSignOnIdentity
from tests.helpers.fake_oidc import FakeProvider, running_provider

pytestmark = pytest.mark.django_db
ROOT = Path(__file__).resolve().parents[3]

ROLES = ["platform-admins=Admin", "payments-ops=Operator", "finance=Approver", "staff=Viewer"]
ANA = {
    "sub": "00u-ana-1",
    "email": "ana@acme.example",
    "preferred_username": "ana",
    "given_name": "Ana",
    "family_name": "Lima",
    "groups": ["staff", "payments-ops"],
}


@pytest.fixture
def provider(settings: Any) -> Iterator[FakeProvider]:
    with running_provider() as fake:
        for name, value in fake.settings().items():
            setattr(settings, name, value)
        settings.SUPERSTEP_OIDC_ROLES = ROLES
        settings.SUPERSTEP_OIDC_DEFAULT_ROLE = ""
        yield fake


def sign_in(
    client: Client, provider: FakeProvider, account: dict[str, Any], next_url: str = "/runs/"
) -> Any:
    """Click "Sign in with Acme ID", let the provider answer, follow it back; the dashboard's
    last answer."""
    provider.next_account = account
    start = client.get("/oidc/authenticate/", {"next": next_url})
    assert start.status_code == 302, start.content
    assert start["Location"].startswith(provider.base_url + "/authorize?")
    at_provider = requests.get(start["Location"], allow_redirects=False, timeout=5)
    assert at_provider.status_code == 302
    back = urlparse(at_provider.headers["Location"])
    return client.get(f"{back.path}?{back.query}")


def login_page_error(client: Client) -> str:
    page = client.get("/login/")
    assert page.status_code == 200
    text = page.content.decode()
    if 'id="sso-error"' not in text:
        return ""
    return text.split('id="sso-error">', 1)[1].split("</div>", 1)[0]


def roles(user: User) -> list[str]:
    return sorted(user.groups.values_list("name", flat=True))


def test_a_new_account_signs_in_with_the_roles_its_groups_map_to(
    client: Client, provider: FakeProvider
) -> None:
    answer = sign_in(client, provider, ANA, next_url="/approvals/")

    assert answer.status_code == 302 and answer["Location"] == "/approvals/"
    user = User.objects.get(sso_identity__subject="00u-ana-1")
    assert (user.username, user.email, user.first_name, user.last_name) == (
        "ana",
        "ana@acme.example",
        "Ana",
        "Lima",
    )
    assert roles(user) == ["Operator", "Viewer"]
    assert not user.has_usable_password() and not user.is_staff and not user.is_superuser
    assert client.get("/").status_code == 200
    entry = AuditEntry.objects.get(action="sso_sign_in")
    assert entry.actor == user and entry.outcome == AuditEntry.OK
    assert entry.details["roles"] == ["Viewer", "Operator"]


def test_the_provider_decides_the_roles_again_at_every_sign_in(
    client: Client, provider: FakeProvider
) -> None:
    sign_in(client, provider, {**ANA, "groups": ["platform-admins"]})
    user = User.objects.get(username="ana")
    assert roles(user) == ["Admin"] and user.is_staff and not user.is_superuser

    client.logout()
    # A new e-mail address, the same account: matched on (issuer, sub).
    sign_in(client, provider, {**ANA, "email": "ana.lima@acme.example", "groups": ["finance"]})
    user.refresh_from_db()
    assert roles(user) == ["Approver"] and not user.is_staff
    assert user.email == "ana.lima@acme.example"
    assert User.objects.count() == 1 and SingleSignOnIdentity.objects.count() == 1


def test_an_email_address_never_hands_over_a_local_account(
    client: Client, provider: FakeProvider
) -> None:
    local = User.objects.create_user("ana", email="ana@acme.example", password="local-pass-123")

    sign_in(client, provider, ANA)

    newcomer = User.objects.get(sso_identity__subject="00u-ana-1")
    assert newcomer != local and newcomer.username == "ana-2"
    local.refresh_from_db()
    assert local.check_password("local-pass-123") and roles(local) == []


def test_someone_in_no_mapped_group_is_refused_and_no_account_is_made(
    client: Client, provider: FakeProvider
) -> None:
    answer = sign_in(client, provider, {**ANA, "groups": ["marketing"]})

    assert answer.status_code == 302 and answer["Location"] == "/login/"
    assert "_auth_user_id" not in client.session
    assert not User.objects.exists()
    assert "no role in this dashboard" in login_page_error(client)
    assert login_page_error(client) == ""  # said once
    refusal = AuditEntry.objects.get(action="sso_sign_in")
    assert refusal.outcome == AuditEntry.DENIED and refusal.details["provider_groups"] == [
        "marketing"
    ]


def test_someone_removed_from_every_mapped_group_loses_their_roles(
    client: Client, provider: FakeProvider
) -> None:
    sign_in(client, provider, ANA)
    client.logout()

    sign_in(client, provider, {**ANA, "groups": []})

    user = User.objects.get(username="ana")
    assert roles(user) == [] and "_auth_user_id" not in client.session
    assert [e.outcome for e in AuditEntry.objects.order_by("pk")] == [
        AuditEntry.OK,
        AuditEntry.DENIED,
    ]


def test_a_default_role_lets_everyone_else_in(
    client: Client, provider: FakeProvider, settings: Any
) -> None:
    settings.SUPERSTEP_OIDC_DEFAULT_ROLE = "Viewer"

    sign_in(client, provider, {**ANA, "groups": ["marketing"]})

    assert roles(User.objects.get(username="ana")) == ["Viewer"]


@pytest.mark.parametrize(
    ("misbehave", "says"),
    [
        ("wrong_audience", "issued to another application"),
        ("wrong_issuer", "not issued by the configured provider"),
        ("other_sub", "described a different account"),
        ("bad_signature", "could not be verified"),
        ("garbage_token", "could not be verified"),
        ("token_500", "did not answer as expected"),
        ("slow_token", "did not answer as expected"),
        ("deny", "The user said no"),
    ],
)
def test_a_provider_that_misbehaves_gets_nobody_in_and_the_user_a_sentence(
    client: Client, provider: FakeProvider, misbehave: str, says: str
) -> None:
    provider.misbehave = misbehave

    answer = sign_in(client, provider, ANA)

    assert answer.status_code == 302 and answer["Location"] == "/login/"
    assert "_auth_user_id" not in client.session
    assert says in login_page_error(client)
    assert not User.objects.exists()


def test_a_provider_that_is_down_is_a_sentence_not_a_500(
    client: Client, provider: FakeProvider, settings: Any
) -> None:
    settings.OIDC_OP_TOKEN_ENDPOINT = "http://127.0.0.1:9/token"  # nothing listens there

    answer = sign_in(client, provider, ANA)

    assert answer.status_code == 302
    assert "Acme ID did not answer as expected" in login_page_error(client)


def test_a_callback_replayed_or_forged_signs_nobody_in(
    client: Client, provider: FakeProvider
) -> None:
    provider.next_account = ANA
    start = client.get("/oidc/authenticate/")
    back = urlparse(
        requests.get(start["Location"], allow_redirects=False, timeout=5).headers["Location"]
    )
    assert client.get(f"{back.path}?{back.query}")["Location"] == "/"
    client.logout()

    replay = client.get(f"{back.path}?{back.query}")
    forged = client.get("/oidc/callback/?code=x&state=%ED%A0%80%ED%A0%80")
    no_state = client.get("/oidc/callback/", {"code": "x"})

    for answer in (replay, forged, no_state):
        assert answer.status_code == 302 and answer["Location"] == "/login/"
    assert "_auth_user_id" not in client.session


def test_next_never_leads_off_the_site(client: Client, provider: FakeProvider) -> None:
    answer = sign_in(client, provider, ANA, next_url="https://evil.example/steal")

    assert answer.status_code == 302 and answer["Location"] == "/"


def test_passwords_still_work_beside_single_sign_on(client: Client, provider: FakeProvider) -> None:
    User.objects.create_user("local-admin", password="a-long-local-pass")
    sign_in(client, provider, ANA)
    client.logout()

    page = client.get("/login/").content.decode()
    assert "Sign in with Acme ID" in page and 'name="password"' in page
    assert client.login(username="local-admin", password="a-long-local-pass")
    client.logout()
    # An SSO account has no password to guess.
    assert not client.login(username="ana", password="")


def test_without_configuration_there_is_no_single_sign_on(client: Client, settings: Any) -> None:
    settings.SUPERSTEP_OIDC_ENABLED = False

    assert client.get("/oidc/authenticate/").status_code == 404
    assert client.get("/oidc/callback/", {"code": "x", "state": "y"}).status_code == 404
    assert "Sign in with" not in client.get("/login/").content.decode()


@pytest.mark.parametrize(
    ("items", "default"),
    [(["staff"], ""), (["staff=Superuser"], ""), (["=Viewer"], ""), (["staff=Viewer"], "Root")],
)
def test_a_role_map_that_does_not_parse_is_refused_with_its_item(
    settings: Any, items: list[str], default: str
) -> None:
    settings.SUPERSTEP_OIDC_ROLES = items
    settings.SUPERSTEP_OIDC_DEFAULT_ROLE = default

    with pytest.raises(ImproperlyConfigured, match="SUPERSTEP_OIDC_"):
        sso.role_map()


def test_the_role_map_reads_like_its_setting(settings: Any) -> None:
    settings.SUPERSTEP_OIDC_ROLES = ROLES
    settings.SUPERSTEP_OIDC_DEFAULT_ROLE = ""

    assert sso.role_map().roles_for(["finance", "staff", "unknown"]) == ["Viewer", "Approver"]
    assert sso.role_map().roles_for([]) == []


def test_the_callback_state_is_kept_per_attempt(client: Client, provider: FakeProvider) -> None:
    """Two tabs start signing in; each finishes with its own state."""
    provider.next_account = ANA
    first = client.get("/oidc/authenticate/")
    second = client.get("/oidc/authenticate/")
    states = [parse_qs(urlparse(r["Location"]).query)["state"][0] for r in (first, second)]
    assert states[0] != states[1]

    back = urlparse(
        requests.get(first["Location"], allow_redirects=False, timeout=5).headers["Location"]
    )
    assert client.get(f"{back.path}?{back.query}")["Location"] == "/"
    assert "_auth_user_id" in client.session


@pytest.mark.parametrize(
    ("extra", "says"),
    [
        (
            {"SUPERSTEP_OIDC_ROLES": "staff=Superuser"},
            "SUPERSTEP_OIDC_ROLES item 'staff=Superuser'",
        ),
        ({"SUPERSTEP_OIDC_ROLES": "staff=Viewer@"}, "SUPERSTEP_OIDC_ROLES item 'staff=Viewer@'"),
        ({"SUPERSTEP_OIDC_ISSUER": ""}, "also needs SUPERSTEP_OIDC_ISSUER"),
    ],
)
def test_a_process_with_single_sign_on_misconfigured_does_not_start(
    extra: dict[str, str], says: str
) -> None:
    env = {
        **os.environ,
        "SUPERSTEP_OIDC_CLIENT_ID": "dashboard",
        "SUPERSTEP_OIDC_CLIENT_SECRET": "secret",
        "SUPERSTEP_OIDC_ISSUER": "https://id.example",
        "SUPERSTEP_OIDC_AUTHORIZATION_URL": "https://id.example/authorize",
        "SUPERSTEP_OIDC_TOKEN_URL": "https://id.example/token",
        "SUPERSTEP_OIDC_USERINFO_URL": "https://id.example/userinfo",
        "SUPERSTEP_OIDC_JWKS_URL": "https://id.example/jwks",
        "SUPERSTEP_OIDC_ROLES": "staff=Viewer",
        "DJANGO_SETTINGS_MODULE": "dashboard.config.settings",
        **extra,
    }
    done = subprocess.run(
        [sys.executable, "manage.py", "check"],
        check=False,
        env=env,
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )

    assert done.returncode != 0
    assert says in done.stderr


def test_a_group_can_map_to_a_role_for_one_workflow_only(
    client: Client, provider: FakeProvider, settings: Any
) -> None:
    settings.SUPERSTEP_OIDC_ROLES = [
        *ROLES,
        "payments-ops=Operator@squares",
        "finance=Approver@return-replace",
    ]

    sign_in(client, provider, {**ANA, "groups": ["payments-ops"]})

    user = User.objects.get(username="ana")
    assert roles(user) == ["Operator"]  # the role for every workflow, kept beside the scoped one
    assert sorted(user.workflow_grants.values_list("role__name", "workflow_name")) == [
        ("Operator", "squares")
    ]

    client.logout()
    settings.SUPERSTEP_OIDC_ROLES = ["payments-ops=Operator@squares"]
    sign_in(client, provider, {**ANA, "groups": ["payments-ops"]})
    user.refresh_from_db()
    assert roles(user) == [] and "_auth_user_id" in client.session
    assert sso.role_map().grants_for(["payments-ops"]) == [("Operator", "squares")]
    assert services.visible_workflows(User.objects.get(pk=user.pk)) == frozenset({"squares"})


@pytest.fixture
def discovered(provider: FakeProvider, settings: Any) -> FakeProvider:
    """The provider configured by its issuer alone: the endpoints are discovered."""
    for name, value in provider.discovery_settings().items():
        setattr(settings, name, value)
    return provider


def test_discovery_finds_the_endpoints_from_the_issuer_once_per_process(
    client: Client, discovered: FakeProvider
) -> None:
    answer = sign_in(client, discovered, ANA, next_url="/approvals/")
    client.logout()
    again = sign_in(client, discovered, ANA)

    assert answer.status_code == again.status_code == 302
    assert answer["Location"] == "/approvals/"
    assert roles(User.objects.get(sso_identity__subject="00u-ana-1")) == ["Operator", "Viewer"]
    assert discovered.discovery_requests == 1
    assert discovered.token_requests == 2


def test_discovery_is_skipped_when_every_endpoint_is_given(
    client: Client, provider: FakeProvider
) -> None:
    sign_in(client, provider, ANA)

    assert "_auth_user_id" in client.session
    assert provider.discovery_requests == 0


def test_an_endpoint_given_explicitly_wins_over_the_discovered_one(
    client: Client, discovered: FakeProvider, settings: Any
) -> None:
    settings.OIDC_OP_TOKEN_ENDPOINT = "http://127.0.0.1:9/token"  # nothing listens there

    sign_in(client, discovered, ANA)

    assert "Acme ID did not answer as expected" in login_page_error(client)
    assert discovered.discovery_requests == 1 and discovered.token_requests == 0


@pytest.mark.parametrize("misbehave", ["discovery_other_issuer", "discovery_500"])
def test_a_discovery_document_that_fails_or_names_another_issuer_starts_no_sign_in(
    client: Client, discovered: FakeProvider, misbehave: str
) -> None:
    discovered.misbehave = misbehave

    start = client.get("/oidc/authenticate/", {"next": "/runs/"})

    assert start.status_code == 302 and start["Location"] == "/login/"
    assert "Acme ID failed: it did not answer as expected" in login_page_error(client)
    assert discovered.token_requests == 0


def test_a_provider_at_an_address_the_server_does_not_call_signs_nobody_in(
    client: Client, provider: FakeProvider, settings: Any
) -> None:
    settings.SUPERSTEP_OUTBOUND_ALLOW = []  # the provider listens on 127.0.0.1: now refused

    answer = sign_in(client, provider, ANA)

    assert answer.status_code == 302 and answer["Location"] == "/login/"
    assert "at an address this server does not call" in login_page_error(client)
    assert provider.token_requests == 0  # refused before the library sent the code


def test_the_provider_is_called_through_the_guarded_client_only(
    client: Client, provider: FakeProvider, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The token, user-info and key endpoints are called through ``dashboard.outbound``,
    which connects to the address it checked: the library's own requests calls, which would
    resolve the name again, are never made."""
    import mozilla_django_oidc.auth as library

    class NoRequests:
        @staticmethod
        def get(*args: Any, **kwargs: Any) -> Any:
            raise AssertionError(f"the library called the provider with requests: {args}")

        post = get

    monkeypatch.setattr(library, "requests", NoRequests)
    answer = sign_in(client, provider, ANA)
    assert answer.status_code == 302 and User.objects.filter(username="ana").exists()
