"""The Tokens page in Chromium (issue 27): a user opens it from the account menu, creates a
token and sees its text once, uses it on the API, revokes it, and the API refuses it after."""

from __future__ import annotations

import uuid
from collections.abc import Callable
from typing import Any

import pytest

pytestmark = [pytest.mark.browser, pytest.mark.slow]


def test_a_user_creates_uses_and_revokes_a_token(
    new_context: Callable[..., Any],
    login_as: Callable[..., None],
    screenshot: Callable[..., Any],
    problems: Any,
) -> None:
    page = new_context().new_page()
    login_as(page, "ops")
    name = f"script {uuid.uuid4().hex[:6]}"

    page.click("details.user-menu summary")
    page.click("details.user-menu a:has-text('API tokens')")
    page.wait_for_url("**/tokens/")
    page.fill("#id_name", name)
    page.fill("#id_days", "7")
    page.check("input[name=scopes][value=operate]")
    page.click("#token-form button[type=submit]")

    text = page.inner_text("#new-token").strip()
    assert text.startswith("sst_")
    row = f"tr[data-token='{name}']"
    assert page.get_attribute(row, "data-token-status") == "active"
    assert "read, operate" in page.inner_text(row)
    screenshot(page, "tokens-created")

    bearer = {"Authorization": f"Bearer {text}"}
    assert page.request.get("/api/runs/", headers=bearer).status == 200

    page.goto("/tokens/")  # shown once: not on the page again
    assert page.locator("#new-token").count() == 0 and text not in page.content()

    page.click(f"{row} button:has-text('Revoke')")
    page.wait_for_selector(f"{row}[data-token-status='revoked']")
    refused = page.request.get("/api/runs/", headers=bearer)
    assert refused.status == 401 and "revoked" in refused.json()["error"]
    assert problems.all(allow=("401", "Unauthorized")) == []
