"""The operator's journey in Chromium: start a run, watch it reach the approval gate live,
approve it with a discount from the inbox, see it complete live, read a checkpoint diff,
resume from it, fork with edited state, and find the fork as a new run. Plus two operators
deciding the same request."""

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


def start_return_replace(page: Any, order_id: str, *, work_ms: int = 250) -> str:
    """Start a return-replace run through the form; returns the run id from the page URL."""
    page.goto("/runs/start/")
    page.select_option("#start-workflow", "return-replace")
    page.wait_for_selector("#id_input-order_id")  # htmx swapped the workflow's fields in
    page.fill("#id_input-order_id", order_id)
    page.fill("#id_input-work_ms", str(work_ms))
    page.click("form .card-footer button[type=submit]")
    page.wait_for_url(re.compile(r"/runs/[0-9a-f-]{36}/$"))
    return page.url.rstrip("/").rsplit("/", 1)[-1]


def node_state(page: Any, executor: str) -> str:
    classes = page.get_attribute(f'#run-graph g.node[data-executor="{executor}"]', "class")
    return str(classes).replace("node state-", "")


def test_operator_journey(
    new_context: Callable[..., Any], login_as: Callable[..., None], problems: Any
) -> None:
    context = new_context()
    page = context.new_page()
    login_as(page, "ops")

    # A runs list stays open in another tab: the new run must appear there by itself.
    listing = context.new_page()
    listing.goto("/")
    listing.evaluate(NO_RELOAD)

    # Start the return-replace demo and watch it reach the approval gate without a reload.
    run_id = start_return_replace(page, "ORD-JOURNEY")
    page.evaluate(NO_RELOAD)
    page.wait_for_selector("#run-header .pill.status-waiting", timeout=ms(30_000))
    # Functions, not expression strings: Playwright polls those with eval, which the CSP blocks.
    page.wait_for_function(
        "() => document.querySelector('#run-graph g.node[data-executor=\"hitl-gate\"]')"
        ".classList.contains('state-waiting')"
    )
    assert (
        node_state(page, "check-eligibility") == "done" and node_state(page, "finalize") == "idle"
    )
    assert page.locator("#event-log-rows .event-row").count() >= 20
    assert page.locator("#run-timeline .timeline-item").count() == 5
    assert page.evaluate(SAME_PAGE), "the page reloaded instead of updating live"
    assert page.locator("#live-indicator[data-state=live]").is_visible()
    row = f'#runs-table tr:has(a[href="/runs/{run_id}/"])'
    listing.wait_for_selector(f"{row} .pill.status-waiting", timeout=ms(10_000))
    assert "hitl-gate" in listing.inner_text(row)  # the "waiting on" column
    assert listing.evaluate(SAME_PAGE), "the runs list reloaded instead of updating live"
    listing.close()

    # Approve it from the inbox, in a second tab, with a discount; the run page completes live.
    inbox = context.new_page()
    open_in_inbox(inbox, run_id)
    assert "ORD-JOURNEY" in inbox.inner_text("#approval-panel")
    inbox.fill("#id_response-discount_percent", "20")
    inbox.fill("#id_response-note", "Sorry about the kettle")
    inbox.fill("#id_reason", "Within policy")
    approve_in_inbox(inbox)  # the panel goes on to the next request and says it was approved
    assert "approved" in inbox.inner_text("#decide-notice")
    page.wait_for_selector("#run-header .pill.status-completed", timeout=ms(30_000))
    page.wait_for_selector("#run-output-json + .json-tree .json-leaf", timeout=ms(10_000))
    output = json.loads(page.text_content("#run-output-json") or "{}")
    assert output["discount_percent"] == 20 and output["final_amount"] == 39.92
    assert node_state(page, "finalize") == "done"
    assert page.evaluate(SAME_PAGE)
    inbox.close()

    # Open a middle checkpoint and read its diff against the previous one.
    page.click('#run-timeline .timeline-card:has-text("Superstep 2")')
    page.wait_for_selector("#checkpoint-diff .diff-table")
    diff = page.inner_text("#checkpoint-diff")
    assert "From superstep 1 (the previous checkpoint) to superstep 2" in diff
    assert "$.messages[0].from" in diff and "initiate-return" in diff
    # Compare with another checkpoint: the diff swaps in place.
    entry = page.locator("#compare-select option", has_text="Superstep 0").get_attribute("value")
    page.select_option("#compare-select", value=entry)
    page.wait_for_selector("#checkpoint-diff >> text=From superstep 0 to superstep 2")
    assert "compare=" in page.url

    # Resume from it: the dialog says what re-runs; the run goes round again to the gate.
    page.click("button:has-text('Resume from here')")
    dialog = page.locator("#resume-dialog")
    assert dialog.is_visible()
    assert "Supersteps 3–7 will run again" in dialog.inner_text()
    assert "search-replacements, hitl-gate, apply-discount, finalize" in dialog.inner_text()
    page.fill("#resume-dialog-reason", "ask the approver again")
    dialog.locator("button[value=confirm]").click()
    page.wait_for_url(f"**/runs/{run_id}/")
    page.wait_for_selector("#run-header .pill.status-waiting", timeout=ms(30_000))
    page.wait_for_selector(
        "#run-timeline .timeline-branch-label:has-text('Resumed from superstep 2')"
    )

    # Fork from the new gate checkpoint with edited state: a refund of 100 instead of 49.9.
    page.locator("#run-timeline .timeline-branch .timeline-card:has-text('Superstep 4')").click()
    page.wait_for_selector("#fork")
    page.click("#fork summary")
    refund = page.locator(
        '#fork-editor [data-fork-field^="state."][data-fork-field$=".refund_amount"]'
    )
    assert refund.input_value() == "49.9"  # the parked ReturnState's field, by name
    refund.fill("100")
    page.click("#fork-form button[data-fork-review]")
    dialog = page.locator("#fork-dialog[open]")
    assert "refund_amount: 49.9 → 100.0" in dialog.inner_text()
    page.fill("#fork-reason", "try a bigger refund")
    dialog.locator("button[data-fork-confirm-button]").click()
    page.wait_for_url(lambda url: f"/runs/{run_id}/" not in url and "/checkpoints/" not in url)
    fork_id = page.url.rstrip("/").rsplit("/", 1)[-1]
    assert fork_id != run_id
    assert "Forked from" in page.inner_text("#run-details")
    assert "with edited values" in page.inner_text("#toasts")
    try:
        page.wait_for_selector("#run-header .pill.status-waiting", timeout=ms(30_000))
    except Exception:
        print("\n".join(page.evaluate("window.__superstepMessages")))
        print(page.get_attribute("#run-live", "data-last-seq"))
        raise

    # The fork is a new run in the list, and a branch on its parent's timeline.
    page.goto("/")
    assert page.locator(f'#runs-table a[href="/runs/{fork_id}/"]').count() == 1
    assert "fork" in page.locator(f'#runs-table tr:has(a[href="/runs/{fork_id}/"])').inner_text()
    page.goto(f"/runs/{run_id}/")
    assert page.locator(f'#run-timeline .timeline-fork a[href="/runs/{fork_id}/"]').count() == 1
    assert problems.all() == []


def test_a_second_approver_is_told_the_request_was_already_decided(
    new_context: Callable[..., Any], login_as: Callable[..., None], problems: Any
) -> None:
    first = new_context().new_page()
    login_as(first, "ops")
    run_id = start_return_replace(first, "ORD-RACE", work_ms=0)
    first.wait_for_selector("#run-header .pill.status-waiting", timeout=ms(30_000))
    request_link = first.get_attribute("#run-outcome a:has-text('Decide in the inbox')", "href")

    second = new_context().new_page()
    login_as(second, "approver2")
    second.goto(str(request_link))
    first.goto(str(request_link))
    assert run_id[:8] in second.inner_text("#approval-panel")

    second.fill("#id_reason", "I looked at it too")
    approve_in_inbox(first)
    # The second approver's open form gives way to the decision by itself, before they click;
    # a click that still loses the race is told in a sentence (tests/browser/test_live_truth.py).
    second.wait_for_selector("#approval-panel .decided-summary")
    assert "Approved by ops" in second.inner_text("#approval-panel .decided-summary")
    assert second.locator("#approval-panel button[value=reject]").count() == 0
    assert "Approved" in second.inner_text("#approval-status")
    # The list updated live: the decided request left the inbox of the second approver.
    second.wait_for_function(
        f"() => !document.querySelector('#approval-list').textContent.includes('{run_id[:8]}')"
    )
    assert problems.all() == []
