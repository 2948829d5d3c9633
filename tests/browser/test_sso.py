"""Single sign-on in Chromium against a real server: "Sign in with Acme ID" goes to the
provider (tests/helpers/fake_oidc.py, a real OpenID Connect endpoint on a local port) and
back, signed in with the roles the provider's groups map to; a refused account reads why on
the sign-in page; passwords still work beside it."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from tests.helpers.fake_oidc import CLIENT_ID, CLIENT_SECRET, running_provider

pytestmark = [pytest.mark.browser, pytest.mark.slow]


def test_an_operator_signs_in_with_the_company_account(
    deployment: Callable[..., Any],
    new_context: Callable[..., Any],
    login_as: Callable[..., None],
    problems: Any,
) -> None:
    with running_provider() as provider:
        server = deployment(
            SUPERSTEP_OIDC_CLIENT_ID=CLIENT_ID,
            SUPERSTEP_OIDC_CLIENT_SECRET=CLIENT_SECRET,
            SUPERSTEP_OIDC_ISSUER=provider.issuer,
            SUPERSTEP_OIDC_AUTHORIZATION_URL=f"{provider.base_url}/authorize",
            SUPERSTEP_OIDC_TOKEN_URL=f"{provider.base_url}/token",
            SUPERSTEP_OIDC_USERINFO_URL=f"{provider.base_url}/userinfo",
            SUPERSTEP_OIDC_JWKS_URL=f"{provider.base_url}/jwks",
            SUPERSTEP_OIDC_PROVIDER_NAME="Acme ID",
            SUPERSTEP_OIDC_ROLES="payments-ops=Operator,staff=Viewer",
        )
        page = new_context(base_url=server.url).new_page()

        provider.next_account = {
            "sub": "u-1",
            "preferred_username": "ines",
            "email": "ines@acme.example",
            "given_name": "Ines",
            "groups": ["payments-ops"],
        }
        page.goto("/approvals/")
        page.click("#sso-sign-in")
        page.wait_for_url(f"{server.url}/approvals/")
        assert "ines" in page.inner_text("header")
        page.goto("/runs/start/")
        assert (
            page.locator("form .card-footer button[type=submit]").count() == 1
        )  # Operator may start

        page.context.clear_cookies()
        provider.next_account = {"sub": "u-2", "preferred_username": "max", "groups": ["marketing"]}
        page.goto("/login/")
        page.click("#sso-sign-in")
        page.wait_for_url(f"{server.url}/login/")
        assert "no role in this dashboard" in page.inner_text("#sso-error")

        # The password form is still there, and works.
        login_as(page, "ops")
        assert "/login/" not in page.url
    assert problems.all() == []
