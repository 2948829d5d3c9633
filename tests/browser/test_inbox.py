"""The inbox as a work list, in Chromium: the question in the list, requests picked and decided
together while the list keeps updating, and a request assigned from the page, seen live in a
second approver's browser."""

from __future__ import annotations

import uuid
from collections.abc import Callable
from typing import Any

import pytest

from tests.browser.pages import NO_RELOAD, SAME_PAGE, start_waiting_run

pytestmark = [pytest.mark.browser, pytest.mark.slow]

def item(page: Any, order_id: str) -> Any:
    return page.locator(".request-row", has_text=f"on order {order_id}?")


def test_requests_are_picked_and_decided_together_while_the_list_stays_live(
    new_context: Callable[..., Any], login_as: Callable[..., None], problems: Any
) -> None:
    tag = uuid.uuid4().hex[:6].upper()
    orders = [f"ORD-{tag}-{n}" for n in range(1, 5)]
    ops = new_context().new_page()
    login_as(ops, "ops")
    for order in orders[:3]:
        start_waiting_run(ops, order)

    other = new_context().new_page()
    login_as(other, "approver2")
    other.goto("/approvals/")
    other.evaluate(NO_RELOAD)
    for order in orders[:3]:
        item(other, order).wait_for()

    inbox = ops.context.new_page()
    inbox.goto("/approvals/")
    inbox.evaluate(NO_RELOAD)
    # The question itself, and the request's other fields, are in the list.
    first = item(inbox, orders[0])
    assert f"Ship a replacement for KETTLE-2L on order {orders[0]}?" in first.inner_text()
    assert "KETTLE-2L-V2" in first.inner_text()
    first.locator(".request-pick").check()
    item(inbox, orders[1]).locator(".request-pick").check()

    # A new request arrives while two are picked: the list redraws, the picks stay.
    start_waiting_run(ops, orders[3])
    item(inbox, orders[3]).wait_for(timeout=15_000)
    assert inbox.evaluate(SAME_PAGE)
    assert item(inbox, orders[0]).locator(".request-pick").is_checked()
    assert item(inbox, orders[1]).locator(".request-pick").is_checked()
    assert not item(inbox, orders[2]).locator(".request-pick").is_checked()
    assert inbox.inner_text("#bulk-decide [data-pick-count]") == "2 picked"

    inbox.fill("#bulk-reason", "Kettle recall, batch approved")
    inbox.click("#bulk-decide button[value=approve]")
    inbox.wait_for_selector("#toasts :text('Approved 2 of 2 requests.')")
    assert item(inbox, orders[0]).count() == 0 and item(inbox, orders[1]).count() == 0
    assert item(inbox, orders[2]).count() == 1

    # The other approver's list follows without a reload.
    item(other, orders[0]).wait_for(state="detached", timeout=15_000)
    item(other, orders[1]).wait_for(state="detached", timeout=15_000)
    assert other.evaluate(SAME_PAGE)

    # Assigned from the panel: the other approver's list says so, live.
    item(inbox, orders[2]).locator("a.request-item").click()
    # The panel of the request picked, not the one shown before (it has an #assignee too).
    inbox.locator("#approval-panel", has_text=f"on order {orders[2]}?").wait_for()
    inbox.select_option("#assignee", label="approver2")
    inbox.click(".assign-form button[type=submit]")
    inbox.wait_for_selector("#toasts :text('Assigned to approver2.')")
    item(other, orders[2]).locator(":text('assigned to approver2')").wait_for(timeout=15_000)
    assert other.evaluate(SAME_PAGE)
    assert problems.all() == []
