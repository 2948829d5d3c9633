"""Sensitive fields in Chromium (issue 27): a card dispute's customer details are masked on
every page for everyone; a user with the Sensitive data role reveals one field, by a click
that is audited, while a viewer in another browser context still sees only the mask. Every
response and websocket frame of both pages is scanned for the values (``problems``)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from tests.browser.pages import RUN_URL
from tests.helpers import sensitive_scan

pytestmark = [pytest.mark.browser, pytest.mark.slow]

EMAIL = "noor.haddad@example.net"
PHONE = "+44 7700 900777"
CARD = "5577"
PHONE_ROW = "tr[data-masked-path='$.state.contact.phone']"


def test_an_allowed_user_reveals_a_field_while_a_viewer_still_sees_its_mask(
    new_context: Callable[..., Any],
    login_as: Callable[..., None],
    screenshot: Callable[..., Any],
    problems: Any,
) -> None:
    sensitive_scan.in_play(EMAIL, PHONE, CARD)
    ops = new_context().new_page()
    login_as(ops, "ops")
    ops.goto("/runs/start/?workflow=card-dispute")
    ops.fill("#id_input-customer", "Noor Haddad")
    ops.fill("#id_input-email", EMAIL)
    ops.fill("#id_input-phone", PHONE)
    ops.fill("#id_input-card_last4", CARD)
    ops.click("form .card-footer button[type=submit]")
    ops.wait_for_url(RUN_URL)
    ops.wait_for_selector("#run-outcome a:has-text('Decide in the inbox')", timeout=30_000)
    run_id = str(ops.url).rstrip("/").rsplit("/", 1)[-1]
    # The run page: the input's marked fields are masked and listed.
    assert ops.locator("tr[data-masked-path='$.input.email'] .mask").count() == 1
    checkpoint = ops.request.get(f"/api/runs/{run_id}/").json()["latest_checkpoint_id"]
    url = f"/runs/{run_id}/checkpoints/{checkpoint}/"

    viewer = new_context().new_page()
    login_as(viewer, "viewer")
    viewer.goto(url)
    mask = viewer.inner_text(f"{PHONE_ROW} .mask").strip()
    assert mask.startswith("••••••")
    assert viewer.locator(f"{PHONE_ROW} button:has-text('Reveal')").count() == 0
    assert "needs the Sensitive data role" in viewer.inner_text("#masked-fields")

    steward = new_context().new_page()
    login_as(steward, "steward")
    steward.goto(url)
    assert steward.inner_text(f"{PHONE_ROW} .mask").strip() == mask  # one mask for everyone
    steward.click(f"{PHONE_ROW} button:has-text('Reveal')")
    steward.wait_for_selector(f"{PHONE_ROW} .revealed-value")
    assert steward.inner_text(f"{PHONE_ROW} .revealed-value").strip() == f'"{PHONE}"'
    screenshot(steward, "masked-field-revealed")

    # The viewer's page, live and reloaded, still shows the mask and nothing else.
    assert viewer.inner_text(f"{PHONE_ROW} .mask").strip() == mask
    viewer.reload()
    assert viewer.inner_text(f"{PHONE_ROW} .mask").strip() == mask
    assert PHONE not in viewer.content()

    admin = new_context().new_page()
    login_as(admin, "admin")
    admin.goto("/audit/?action=reveal")
    assert "steward" in admin.inner_text("main") and "$.state.contact.phone" in admin.content()
    assert problems.all() == []
