"""Tool approvals in Chromium, each against the embedded worker and the demo's local model:
an approver edits a refund's arguments in the inbox and approves it while an operator watches
the run page (the request appears, is decided and the agent's answer comes, no reload); and
three refunds rejected at once, each run going on to read the reason."""

from __future__ import annotations

import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.browser.deadlines import ms
from tests.browser.pages import NO_RELOAD, SAME_PAGE, approve_in_inbox, start_run

pytestmark = [pytest.mark.browser, pytest.mark.slow]


# The support agent's requests only: the whole suite leaves more requests pending than one
# page of the inbox holds, oldest first.
INBOX = "/approvals/?workflow=support-refund"


def start_refund(page: Any, prompt: str) -> str:
    """Start a support-refund run with the customer's message; its id."""
    return start_run(page, "support-refund", json=prompt)


def row(page: Any, run_id: str) -> Any:
    return page.locator(".request-row", has_text=f"run {run_id[:8]}")


def test_an_approver_edits_a_tools_arguments_and_the_agent_uses_them(
    new_context: Callable[..., Any],
    login_as: Callable[..., None],
    problems: Any,
    screenshot: Callable[[Any, str], Path],
) -> None:
    operator = new_context().new_page()
    login_as(operator, "operator")
    approver = new_context(viewport={"width": 1280, "height": 800}).new_page()
    login_as(approver, "approver2")
    order = f"R-{uuid.uuid4().hex[:6].upper()}"

    run_id = start_refund(operator, f"Please refund order {order}, it arrived broken")
    operator.evaluate(NO_RELOAD)
    # The agent's call to the refund tool waits for a person: the run page says so, live.
    operator.wait_for_selector("#run-outcome .waiting-alert", timeout=ms(30_000))

    approver.goto(INBOX)
    entry = row(approver, run_id)
    entry.wait_for(timeout=ms(15_000))
    assert "Call refund_order" in entry.inner_text()
    with approver.expect_response(lambda r: "request=" in r.url and r.request.method == "GET"):
        entry.locator("a.request-item").click()
    approver.wait_for_selector("#tool-call")
    assert approver.inner_text("#approval-panel .card-title") == "support asks to call refund_order"
    assert "Refund an order." in approver.inner_text("#tool-description")
    assert order in approver.inner_text("#approval-panel .conversation")
    assert approver.input_value("#id_arguments-amount") == "1"
    screenshot(approver, "inbox-tool-call")

    approver.fill("#id_arguments-order", order)
    approver.fill("#id_arguments-amount", "19.99")
    approve_in_inbox(approver, then="#decide-notice:has-text('approved')")

    # The operator's page, never reloaded: the decision, then the agent's answer from the tool
    # run with the approver's arguments.
    operator.wait_for_selector(
        "#run-outcome .decision-line:has-text('Approved by approver2')", timeout=ms(30_000)
    )
    operator.wait_for_selector("#run-header .pill.status-completed", timeout=ms(60_000))
    chat = operator.locator(".conversation[data-executor=support]")
    chat.locator(f".chat-text:has-text('refunded 19.99 EUR on order {order}')").wait_for(
        timeout=ms(30_000)
    )
    assert "with edited arguments" in chat.inner_text()
    assert operator.evaluate(SAME_PAGE)
    assert problems.all() == []


def test_three_tool_calls_rejected_at_once_each_read_the_reason(
    new_context: Callable[..., Any], login_as: Callable[..., None], problems: Any
) -> None:
    page = new_context().new_page()
    login_as(page, "ops")
    tag = uuid.uuid4().hex[:6].upper()
    runs = [start_refund(page, f"Please refund order B-{tag}-{n}, it broke") for n in (1, 2, 3)]

    page.goto(INBOX)
    page.evaluate(NO_RELOAD)
    for run_id in runs:
        row(page, run_id).wait_for(timeout=ms(30_000))  # the list follows as they arrive
        row(page, run_id).locator(".request-pick").check()
    assert page.inner_text("#bulk-decide [data-pick-count]") == "3 picked"
    page.fill("#bulk-reason", "refunds are paused today")
    page.click("#bulk-decide button[value=reject]")
    # The review shows each answer before it is sent.
    page.locator(".response-preview").first.wait_for()
    assert page.locator(".response-preview", has_text='function: "refund_order"').count() == 3
    page.click("#bulk-decide-confirm button[type=submit]")
    page.wait_for_selector("#toasts :text('Rejected 3 of 3 requests.')", timeout=ms(30_000))

    for run_id in runs:
        page.goto(f"/runs/{run_id}/")
        page.wait_for_selector("#run-header .pill.status-completed", timeout=ms(60_000))
        chat = page.locator(".conversation[data-executor=support]")
        chat.locator(".chat-reason:has-text('refunds are paused today')").wait_for(
            timeout=ms(30_000)
        )
        answer = chat.locator(".chat-text", has_text="was rejected: refunds are paused today")
        answer.wait_for(timeout=ms(30_000))
        assert "Tool call invocation was rejected by user" in answer.inner_text()
    assert problems.all() == []
