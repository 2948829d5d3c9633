"""The inbox as a work list, in Chromium: the question in the list, requests picked and decided
together (after a review of each answer) while the list keeps updating, a request assigned from
the page, seen live in a second approver's browser; and deciding without surprises: Reject asks
for a reason and a confirmation, a claim someone else holds turns the buttons off (live) until
it is taken over, the decision bar stays on screen, keys, and approvers landing on the inbox."""

from __future__ import annotations

import re
import uuid
from collections.abc import Callable
from typing import Any
from urllib.parse import urlsplit

import pytest

from tests.browser.deadlines import ms
from tests.browser.pages import NO_RELOAD, SAME_PAGE, start_waiting_run
from tests.browser.servers import PASSWORD

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
    item(inbox, orders[3]).wait_for(timeout=ms(15_000))
    assert inbox.evaluate(SAME_PAGE)
    assert item(inbox, orders[0]).locator(".request-pick").is_checked()
    assert item(inbox, orders[1]).locator(".request-pick").is_checked()
    assert not item(inbox, orders[2]).locator(".request-pick").is_checked()
    assert inbox.inner_text("#bulk-decide [data-pick-count]") == "2 picked"

    inbox.fill("#bulk-reason", "Kettle recall, batch approved")
    inbox.click("#bulk-decide button[value=approve]")
    inbox.click("#bulk-decide-confirm button[type=submit]")  # the review of each answer
    inbox.wait_for_selector("#toasts :text('Approved 2 of 2 requests.')")
    assert item(inbox, orders[0]).count() == 0 and item(inbox, orders[1]).count() == 0
    assert item(inbox, orders[2]).count() == 1

    # The other approver's list follows without a reload.
    item(other, orders[0]).wait_for(state="detached", timeout=ms(15_000))
    item(other, orders[1]).wait_for(state="detached", timeout=ms(15_000))
    assert other.evaluate(SAME_PAGE)

    # Assigned from the panel: the other approver's list says so, live.
    # The panel of the request picked, not the one shown before (it has an #assignee too, and
    # may be the same request: the page opens on the first one), so wait for its answer.
    with inbox.expect_response(lambda r: "request=" in r.url and r.request.method == "GET"):
        item(inbox, orders[2]).locator("a.request-item").click()
    inbox.locator("#approval-panel", has_text=f"on order {orders[2]}?").wait_for()
    # The bulk decision's toast lies over the page's foot: closed if it has not left by itself
    # yet (it does after 6 s, which a busy machine can take to get here).
    inbox.locator("#toasts .toast-close").evaluate_all("(all) => all.forEach((b) => b.click())")
    inbox.select_option("#assignee", label="approver2")
    with inbox.expect_navigation():
        inbox.click(".assign-form button[type=submit]")
    inbox.wait_for_selector("#toasts :text('Assigned to approver2.')")
    item(other, orders[2]).locator(":text('assigned to approver2')").wait_for(timeout=ms(15_000))
    assert other.evaluate(SAME_PAGE)
    assert problems.all() == []


def sign_in(page: Any, username: str, path: str = "/login/") -> str:
    """Sign in through the form at ``path`` (a ``?next=`` in it, or none); the path landed on."""
    page.goto(path)
    page.fill("#id_username", username)
    page.fill("#id_password", PASSWORD)
    page.click("form button[type=submit]")
    page.wait_for_url(lambda url: "/login/" not in url)
    return str(urlsplit(page.url).path)


def test_approvers_land_on_the_inbox_and_others_on_the_runs_list(
    new_context: Callable[..., Any], problems: Any
) -> None:
    approver = new_context().new_page()
    operator = new_context().new_page()

    assert sign_in(approver, "approver2") == "/approvals/"
    assert approver.locator("h1", has_text="Approvals").is_visible()
    assert sign_in(operator, "ops") == "/"
    # The runs list itself still opens for an approver, and an explicit next wins.
    assert approver.goto("/").status == 200
    approver.context.clear_cookies()
    assert sign_in(approver, "approver2", "/login/?next=/schedules/") == "/schedules/"
    assert problems.all() == []


def open_request(page: Any, order_id: str) -> None:
    """Select the request of ``order_id`` in the inbox list and wait for the panel to show it."""
    item(page, order_id).locator("a.request-item").click()
    page.locator("#approval-panel", has_text=f"on order {order_id}?").wait_for()


def bar_button(page: Any, decision: str) -> Any:
    return page.locator(f"#decision-bar button[data-decision={decision}]")


def both_on_one_request(new_context: Callable[..., Any], login: Callable[..., None]) -> Any:
    """A new request, open in the inbox of ops (who started its run) and of approver2."""
    order = f"ORD-{uuid.uuid4().hex[:6].upper()}"
    pages = [new_context().new_page(), new_context().new_page()]
    login(pages[0], "ops")
    start_waiting_run(pages[0], order)
    login(pages[1], "approver2")
    for page in pages:
        page.goto("/approvals/")
        open_request(page, order)
    return pages


def test_reject_asks_for_a_reason_and_a_confirmation_and_an_edited_approve_confirms(
    new_context: Callable[..., Any], login_as: Callable[..., None], problems: Any
) -> None:
    ops, approver = both_on_one_request(new_context, login_as)
    ops.evaluate(NO_RELOAD)

    # An edited answer is confirmed before it is sent, saying what changed; cancelled, nothing is.
    approver.fill("#id_response-discount_percent", "15")
    bar_button(approver, "approve").click()
    approve_dialog = approver.locator("#approve-dialog")
    approve_dialog.wait_for()
    assert "15" in approve_dialog.locator("[data-edited-list]").inner_text()
    approve_dialog.locator("button[value=cancel]").click()
    approve_dialog.wait_for(state="hidden")

    # Reject: the reason is asked for, marked required, and an empty one is not sent.
    bar_button(approver, "reject").click()
    dialog = approver.locator("#reject-dialog")
    dialog.wait_for()
    label = dialog.locator("label[for=reject-reason]").inner_text()
    assert "*" in label and "required" in label
    dialog.locator("button[value=confirm]").click()
    assert dialog.is_visible()
    assert approver.evaluate("document.getElementById('reject-reason').validationMessage")
    dialog.locator("button[value=cancel]").click()
    dialog.wait_for(state="hidden")
    assert approver.locator("#approval-status", has_text="Pending").count() == 1

    bar_button(approver, "reject").click()
    dialog.locator("#reject-reason").fill("Replacement out of stock")
    dialog.locator("button[value=confirm]").click()
    approver.wait_for_selector("#decide-notice:has-text('Request rejected')")

    # The other browser sees the decision, by whom and why, without a reload.
    decided = ops.locator("#approval-decision", has_text="Rejected by approver2")
    decided.wait_for(timeout=ms(15_000))
    assert "Replacement out of stock" in decided.inner_text()
    assert bar_button(ops, "approve").count() == 0 or not bar_button(ops, "approve").is_visible()
    assert ops.evaluate(SAME_PAGE)
    assert problems.all() == []


def test_a_claim_held_by_another_approver_turns_the_buttons_off_live_until_taken_over(
    new_context: Callable[..., Any], login_as: Callable[..., None], problems: Any
) -> None:
    ops, approver = both_on_one_request(new_context, login_as)
    approver.evaluate(NO_RELOAD)
    assert bar_button(approver, "approve").is_enabled()

    ops.click("#approval-claim button:text('Claim')")
    ops.wait_for_selector("#toasts :text('Request claimed')")

    # The second browser follows: who holds it, the buttons off, the keys too, a take-over.
    approver.locator("#decision-bar button[data-decision=approve][disabled]").wait_for(
        timeout=ms(15_000)
    )
    assert bar_button(approver, "reject").is_disabled()
    assert "Claimed by ops" in approver.inner_text("#decision-bar")
    assert "claimed by ops" in approver.inner_text("#approval-claim")
    assert approver.evaluate(SAME_PAGE)
    approver.keyboard.press("a")
    assert approver.locator("dialog[open]").count() == 0

    approver.click("#take-over")
    approver.locator("#take-over-dialog button[value=confirm]").click()
    approver.wait_for_selector("#toasts :text('You took the request over from ops')")
    assert bar_button(approver, "approve").is_enabled()
    assert "claimed by approver2" in approver.inner_text("#approval-claim")

    # The previous holder's page turns off in turn; a decision sent anyway is refused.
    ops.locator("#decision-bar button[data-decision=approve][disabled]").wait_for(
        timeout=ms(15_000)
    )
    assert "Claimed by approver2" in ops.inner_text("#decision-bar")
    ops.evaluate(
        "document.querySelector('#decision-bar button[data-decision=approve]')"
        ".removeAttribute('disabled')"
    )
    bar_button(ops, "approve").click()
    refused = ops.locator("#decide-error")
    refused.wait_for()
    assert "claimed by approver2" in refused.inner_text()
    assert "take it over" in refused.inner_text()
    assert problems.all(allow=("409",)) == []


def start_waiting_claim(page: Any, employee: str) -> None:
    """An expense-claim run (another workflow) waiting for its manager's decision."""
    page.goto("/runs/start/")
    page.select_option("#start-workflow", "expense-claim")
    page.wait_for_selector("#id_input-employee")
    page.fill("#id_input-employee", employee)
    page.fill("#id_input-amount", "640")
    page.fill("#id_input-work_ms", "0")
    page.click("form .card-footer button[type=submit]")
    page.wait_for_url(re.compile(r"/runs/[0-9a-f-]{36}/$"))
    page.wait_for_selector("#run-outcome a:has-text('Decide in the inbox')", timeout=ms(30_000))


def test_bulk_decide_previews_each_answer_needs_a_reason_and_warns_of_several_workflows(
    new_context: Callable[..., Any], login_as: Callable[..., None], problems: Any
) -> None:
    tag = uuid.uuid4().hex[:6].upper()
    order, employee = f"ORD-{tag}", f"Robin {tag}"
    ops = new_context().new_page()
    login_as(ops, "ops")
    start_waiting_run(ops, order)
    start_waiting_claim(ops, employee)
    ops.goto("/approvals/")
    ops.evaluate(NO_RELOAD)
    claim_row = ops.locator(".request-row", has_text=employee)
    claim_row.wait_for()

    approver = new_context().new_page()
    login_as(approver, "approver2")
    approver.goto("/approvals/")
    item(approver, order).locator(".request-pick").check()
    approver.locator(".request-row", has_text=employee).locator(".request-pick").check()
    approver.click("#bulk-decide button[value=approve]")

    # The review: each request with its run, workflow and answer; the warning; nothing sent yet.
    warning = approver.locator("#bulk-workflows")
    warning.wait_for()
    assert "2 different workflows" in warning.inner_text()
    assert "expense-claim" in warning.inner_text() and "return-replace" in warning.inner_text()
    rows = approver.locator("#bulk-preview tbody tr")
    assert rows.count() == 2
    replace_row = rows.filter(has_text="return-replace")
    assert "approved" in replace_row.inner_text()
    assert "discount_percent: 0" in replace_row.inner_text()
    assert "note:" in rows.filter(has_text="expense-claim").inner_text()
    assert replace_row.locator("a.run-id").count() == 1
    assert "*" in approver.inner_text("label[for=bulk-review-reason]")
    assert item(ops, order).count() == 1

    approver.click("#bulk-decide-confirm button[type=submit]")
    approver.wait_for_selector("#bulk-review-reason_error")
    assert item(ops, order).count() == 1  # refused without a reason: still waiting
    approver.fill("#bulk-review-reason", "Month-end batch")
    approver.click("#bulk-decide-confirm button[type=submit]")
    approver.wait_for_selector("#toasts :text('Approved 2 of 2 requests.')")

    item(ops, order).wait_for(state="detached", timeout=ms(15_000))
    claim_row.wait_for(state="detached", timeout=ms(15_000))
    assert ops.evaluate(SAME_PAGE)
    assert problems.all(allow=("status of 422",)) == []  # the review refused without a reason


IN_VIEW = """(selector) => {
  const box = document.querySelector(selector).getBoundingClientRect();
  const top = document.elementFromPoint(box.left + box.width / 2, box.top + box.height / 2);
  return box.top >= 0 && box.bottom <= window.innerHeight && box.height > 0
    && top !== null && top.closest(selector) !== null;
}"""
APPROVE = "#approval-panel button[value=approve], #decision-bar button[value=approve]"
REJECT = "#approval-panel button[value=reject], #decision-bar button[value=reject]"


def test_approve_and_reject_stay_on_screen_at_800_px_and_on_a_phone(
    new_context: Callable[..., Any],
    login_as: Callable[..., None],
    problems: Any,
    screenshot: Callable[[Any, str], Any],
) -> None:
    order = f"ORD-{uuid.uuid4().hex[:6].upper()}"
    desktop = new_context().new_page()
    login_as(desktop, "approver2")
    ops = new_context().new_page()
    login_as(ops, "ops")
    start_waiting_run(ops, order)
    desktop.goto("/approvals/")
    open_request(desktop, order)
    desktop.click("#approval-panel .request-raw summary")  # a long panel: the JSON unfolded

    assert desktop.evaluate("document.documentElement.scrollHeight") > 800
    assert desktop.evaluate(IN_VIEW, APPROVE) and desktop.evaluate(IN_VIEW, REJECT)
    desktop.evaluate("window.scrollTo(0, document.body.scrollHeight / 3)")
    assert desktop.evaluate(IN_VIEW, APPROVE) and desktop.evaluate(IN_VIEW, REJECT)
    desktop.evaluate("window.scrollTo(0, 0)")
    screenshot(desktop, "inbox")

    phone = new_context(viewport={"width": 390, "height": 844}).new_page()
    login_as(phone, "approver2")
    phone.goto(desktop.url)
    phone.locator("#approval-panel", has_text=f"on order {order}?").wait_for()
    assert phone.evaluate("window.scrollY") == 0
    assert phone.evaluate(IN_VIEW, APPROVE) and phone.evaluate(IN_VIEW, REJECT)
    assert order in phone.inner_text("#decision-bar") or "Deciding" in phone.inner_text(
        "#decision-bar"
    )
    screenshot(phone, "inbox")
    assert problems.all() == []


def test_keys_move_through_the_list_and_decide_with_a_confirmation(
    new_context: Callable[..., Any], login_as: Callable[..., None], problems: Any
) -> None:
    tag = uuid.uuid4().hex[:6].upper()
    orders = [f"ORD-{tag}-{n}" for n in range(1, 4)]
    ops = new_context().new_page()
    login_as(ops, "ops")
    for order in orders:
        start_waiting_run(ops, order)
    page = new_context().new_page()
    login_as(page, "approver2")
    page.goto("/approvals/")
    open_request(page, orders[0])
    assert "j" in page.inner_text("#inbox-keys") and "r" in page.inner_text("#inbox-keys")

    def shows(order_id: str) -> None:
        page.locator("#approval-panel", has_text=f"on order {order_id}?").wait_for()
        # The list marks its row once htmx has settled the swap, a moment after the panel.
        page.locator("a.request-item.is-selected", has_text=f"on order {order_id}?").wait_for()
        assert page.locator("a.request-item.is-selected").count() == 1

    page.keyboard.press("j")
    shows(orders[1])
    page.keyboard.press("k")
    shows(orders[0])
    page.keyboard.press("j")
    shows(orders[1])
    # Typing in a field is typing, not moving.
    page.click("#id_reason")
    page.keyboard.type("jk")
    page.keyboard.press("Escape")
    page.locator("body").click(position={"x": 5, "y": 5})
    shows(orders[1])

    page.keyboard.press("a")  # asks first, from the keyboard
    dialog = page.locator("#approve-dialog")
    dialog.wait_for()
    dialog.locator("button[value=confirm]").click()
    # Decided: the panel and the list both go on to the next request.
    page.wait_for_selector("#decide-notice:has-text('Request approved')")
    shows(orders[2])
    item(page, orders[1]).wait_for(state="detached", timeout=ms(15_000))
    shows(orders[2])

    page.keyboard.press("r")
    reject = page.locator("#reject-dialog")
    reject.wait_for()
    page.keyboard.type("j")  # into the reason, not a move
    assert page.input_value("#reject-reason") == "j"
    page.fill("#reject-reason", "No stock left")
    reject.locator("button[value=confirm]").click()
    page.wait_for_selector("#decide-notice:has-text('Request rejected')")
    item(page, orders[2]).wait_for(state="detached", timeout=ms(15_000))
    assert problems.all() == []
