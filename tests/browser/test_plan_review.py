"""A Magentic plan review in Chromium, against the embedded worker and the local model: the
plan is shown as editable text; an approver's edited plan goes back to the manager, which
replans and asks again, while an operator's run page follows without a reload."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.browser.deadlines import ms
from tests.browser.pages import NO_RELOAD, SAME_PAGE, approve_in_inbox, start_run
from tests.browser.servers import Deployment

pytestmark = [pytest.mark.browser, pytest.mark.slow]


def test_an_approver_edits_a_plan_and_the_manager_replans(
    deployment: Deployment,
    new_context: Callable[..., Any],
    login_as: Callable[..., None],
    problems: Any,
    screenshot: Callable[[Any, str], Path],
) -> None:
    server = deployment(SUPERSTEP_WORKFLOWS="tests.dashboard.services.message_flows")
    operator = new_context(base_url=server.url).new_page()
    login_as(operator, "operator")
    approver = new_context(viewport={"width": 1280, "height": 800}, base_url=server.url).new_page()
    login_as(approver, "approver2")

    run_id = start_run(operator, "signed-off-plan", json="Write a short note about kettles")
    operator.evaluate(NO_RELOAD)
    operator.wait_for_selector("#run-outcome .waiting-alert", timeout=ms(60_000))

    approver.goto("/approvals/")
    entry = approver.locator(".request-row", has_text=f"run {run_id[:8]}")
    entry.wait_for(timeout=ms(15_000))
    with approver.expect_response(lambda r: "request=" in r.url and r.request.method == "GET"):
        entry.locator("a.request-item").click()
    approver.wait_for_selector("#message-request")
    title = approver.inner_text("#approval-panel .card-title")
    assert title == "magentic_orchestrator asks you to sign off the plan"
    assert "researcher: Finds facts." in approver.input_value("#id_response-text")
    screenshot(approver, "inbox-plan-review")

    approver.fill("#id_response-text", "1. Ask the researcher for three kettle prices.")
    approve_in_inbox(approver, then="#decide-notice:has-text('approved')")

    # The manager replans and asks again: a new request on the operator's page, no reload.
    operator.wait_for_selector(
        "#run-outcome .decision-line:has-text('Approved by approver2')", timeout=ms(30_000)
    )
    operator.wait_for_selector(
        "#run-outcome:has(.decision-line) .waiting-alert", timeout=ms(60_000)
    )
    assert operator.evaluate(SAME_PAGE)
    assert problems.all() == []
