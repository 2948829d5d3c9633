"""A sub-workflow asking for approval, end to end in Chromium: the ``expense-claim`` demo's
manager review is a workflow of its own (MAF's ``WorkflowExecutor`` with
``propagate_request=True``). Start it, find the inner request in the inbox, approve it, watch
the run complete without a reload, then open the sub-workflow node onto its inner graph."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from typing import Any

import pytest

from tests.browser.deadlines import ms
from tests.browser.pages import approve_in_inbox, open_in_inbox

pytestmark = [pytest.mark.browser, pytest.mark.slow]

NO_RELOAD = "window.__stillTheSamePage = true"
SAME_PAGE = "window.__stillTheSamePage === true"


def start_expense_claim(page: Any, employee: str) -> str:
    page.goto("/runs/start/")
    page.select_option("#start-workflow", "expense-claim")
    page.wait_for_selector("#id_input-employee")  # htmx swapped the workflow's fields in
    page.fill("#id_input-employee", employee)
    page.fill("#id_input-amount", "640")
    page.fill("#id_input-work_ms", "150")
    page.click("form .card-footer button[type=submit]")
    page.wait_for_url(re.compile(r"/runs/[0-9a-f-]{36}/$"))
    return page.url.rstrip("/").rsplit("/", 1)[-1]


def test_inner_approval_from_the_inbox_completes_the_outer_run(
    new_context: Callable[..., Any],
    login_as: Callable[..., None],
    problems: Any,
    screenshot: Callable[[Any, str], Any],
) -> None:
    context = new_context()
    page = context.new_page()
    login_as(page, "ops")

    run_id = start_expense_claim(page, "Robin")
    page.wait_for_selector("#run-header .pill.status-waiting", timeout=ms(30_000))
    sub_node = '#run-graph g.node[data-executor="manager-review"]'
    assert page.get_attribute(sub_node, "data-kind") == "subworkflow"
    assert "sub-workflow: manager-review" in page.inner_text("#run-graph")

    # Opening the sub-workflow node shows the inner graph and the inner workflow's state.
    page.click(f"{sub_node} a.node-link")
    page.wait_for_url(re.compile(r"\?sub=manager-review#subworkflow-0$"))
    details = page.locator("#subworkflow-0")
    assert details.get_attribute("open") is not None
    inner = "#subworkflow-0-graph g.node"
    approval_node = f'{inner}[data-inner-executor="manager-approval"]'
    assert page.get_attribute(approval_node, "class") == "node state-waiting"
    assert page.get_attribute(f'{inner}[data-inner-executor="policy-check"]', "class") == (
        "node state-done"
    )
    assert "waits for 1 answer" in details.inner_text()
    page.wait_for_selector("#subworkflow-0-state + .json-tree .json-leaf")
    assert "category_limit" in details.inner_text()
    page.evaluate(NO_RELOAD)

    # The inbox shows the inner workflow's question, asked through the sub-workflow node.
    inbox = context.new_page()
    # Filtered to its workflow: the session's other tests leave many requests pending, and the
    # list shows the oldest first, a page at a time.
    open_in_inbox(inbox, run_id, "?workflow=expense-claim")
    panel = inbox.inner_text("#approval-panel")
    assert "Approve Robin's travel claim of 640.00?" in panel
    assert "manager-review" in panel
    inbox.fill("#id_response-note", "Receipts attached")
    inbox.fill("#id_reason", "Within the travel budget")
    approve_in_inbox(inbox)
    inbox.close()

    # The decision resumes the inner workflow; the outer run completes, live, and the open
    # panel follows: the inner approval step is done and the sub-workflow finished.
    page.wait_for_selector("#run-header .pill.status-completed", timeout=ms(30_000))
    page.wait_for_selector("#run-output-json + .json-tree .json-leaf", timeout=ms(10_000))
    output = json.loads(page.text_content("#run-output-json") or "{}")
    assert output["status"] == "paid" and output["note"] == "Receipts attached"
    assert output["reviewed_by"] == "manager"
    page.wait_for_function(
        "() => document.querySelector('#run-graph g.node[data-executor=\"payout\"]')"
        ".classList.contains('state-done')"
    )
    page.wait_for_function(
        "() => document.querySelector('#subworkflow-0-graph"
        " g.node[data-inner-executor=\"manager-approval\"]').classList.contains('state-done')",
        timeout=ms(10_000),
    )
    assert "finished" in details.inner_text()
    intermediates = page.inner_text("#run-intermediate-outputs")
    assert "intake" in intermediates and "manager-review" in intermediates
    assert page.evaluate(SAME_PAGE), "the page reloaded instead of updating live"
    screenshot(page, "run-subworkflow")

    # Keyboard: the panel's summary toggles it.
    page.focus("#subworkflow-0 > summary")
    page.keyboard.press("Enter")
    assert details.get_attribute("open") is None
    assert problems.all() == []
