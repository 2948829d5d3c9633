"""What the dashboard refuses, and what it does not offer, in Chromium (issue 28): unknown
input fields at start, in a schedule and in a response; an answer contradicting its button;
an action without its reason; a bulk cancel of running runs that takes effect at once while
the embedded pool is busy with them; and each role (viewer, operator, approver, admin)
offered only what it may do. Two browser contexts each: one acts, the other watches or plays
another role."""

from __future__ import annotations

import json
import re
import uuid
from collections.abc import Callable
from typing import Any

import pytest

from tests.browser.deadlines import ms
from tests.browser.pages import RUN_URL, approve_in_inbox, start_waiting_run

pytestmark = [pytest.mark.browser, pytest.mark.slow]

BULK_URL = re.compile(r"/runs/bulk/[0-9a-f-]{36}/$")


def start_json(page: Any, workflow: str, value: dict[str, Any]) -> None:
    page.goto(f"/runs/start/?workflow={workflow}&mode=json")
    page.fill("#id_input-json", json.dumps(value))
    page.click("form .card-footer button[type=submit]")


def run_id(page: Any) -> str:
    return str(page.url).rstrip("/").rsplit("/", 1)[-1]


def test_unknown_fields_are_refused_at_start_in_a_schedule_and_in_a_response(
    new_context: Callable[..., Any], login_as: Callable[..., None], problems: Any
) -> None:
    ops = new_context().new_page()
    login_as(ops, "ops")

    start_json(ops, "squares", {"limit": 2, "extra": 1})
    ops.wait_for_selector(".alert-error:has-text('unknown field')")
    assert "'extra'" in ops.inner_text(".alert-error") and "did you mean" in ops.inner_text("body")
    assert "/runs/start/" in ops.url  # no run was started

    ops.goto("/schedules/new/")
    ops.fill("#id_name", f"bogus {uuid.uuid4().hex[:6]}")
    ops.select_option("#id_workflow_name", "squares")
    ops.fill("#id_input", '{"limit": 2, "bogus": true}')
    ops.fill("#id_cron", "0 * * * *")
    ops.click("#schedule-form button[type=submit]")
    ops.wait_for_selector(".field-errors:has-text('unknown field'), .alert:has-text('bogus')")
    assert "bogus" in ops.inner_text("body") and "/schedules/new/" in ops.url

    # A response with a misspelt field, from the approver's own browser.
    waiting = start_waiting_run(ops, f"ORD-UNK-{uuid.uuid4().hex[:6]}")
    approver = new_context().new_page()
    login_as(approver, "approver2")
    request_link = str(ops.get_attribute("#run-outcome a:has-text('Decide in the inbox')", "href"))
    approver.goto(f"{request_link}&mode=json")
    approver.fill("#id_response-json", '{"discount_percent": 5, "notes": "typo"}')
    approve_in_inbox(approver, then="#approval-panel :text(\"did you mean 'note'\")")
    ops.goto(f"/runs/{waiting}/")
    assert "Waiting for a decision" in ops.inner_text("#run-outcome")
    assert problems.all(allow=("422", "Unprocessable")) == []


def test_an_answer_contradicting_its_button_is_refused(
    new_context: Callable[..., Any], login_as: Callable[..., None], problems: Any
) -> None:
    ops = new_context().new_page()
    login_as(ops, "ops")
    waiting = start_waiting_run(ops, f"ORD-BTN-{uuid.uuid4().hex[:6]}")
    request_link = str(ops.get_attribute("#run-outcome a:has-text('Decide in the inbox')", "href"))

    approver = new_context().new_page()
    login_as(approver, "approver2")
    approver.goto(f"{request_link}&mode=json")
    approver.fill("#id_response-json", '{"approved": false, "discount_percent": 5}')
    approve_in_inbox(approver, then="#approval-panel :text('the button pressed was Approve')")
    ops.goto(f"/runs/{waiting}/")
    assert "Waiting for a decision" in ops.inner_text("#run-outcome")
    assert problems.all(allow=("422", "Unprocessable")) == []


def test_a_cancel_without_a_reason_is_refused_in_the_dialog(
    new_context: Callable[..., Any], login_as: Callable[..., None], problems: Any
) -> None:
    ops = new_context().new_page()
    login_as(ops, "ops")
    waiting = start_waiting_run(ops, f"ORD-WHY-{uuid.uuid4().hex[:6]}")
    watcher = new_context().new_page()
    login_as(watcher, "approver2")
    watcher.goto(f"/runs/{waiting}/")

    ops.click("#cancel-form button[type=submit]")
    dialog = ops.locator("#cancel-dialog")
    assert "required" in dialog.locator("label").inner_text()
    dialog.locator("button[value=confirm]").click()

    message = dialog.locator("#cancel-dialog-reason-error")
    message.wait_for(state="visible")
    assert "a reason is required" in message.inner_text()
    assert dialog.evaluate("d => d.open")
    dialog.locator("textarea").fill("the customer withdrew")
    assert not message.is_visible()
    dialog.locator("button[value=confirm]").click()
    watcher.wait_for_selector("#run-outcome:has-text('This run was cancelled')", timeout=ms(15_000))
    assert problems.all() == []


@pytest.mark.timeout(240)
def test_a_bulk_cancel_of_running_runs_takes_effect_at_once_with_the_pool_busy(
    deployment: Callable[..., Any], new_context: Callable[..., Any], login_as: Callable[..., None]
) -> None:
    # Its own server: its two embedded workers are busy with the two runs it cancels.
    server = deployment()
    ops = new_context(base_url=server.url).new_page()
    login_as(ops, "ops")
    long_run = {"steps": 500, "fail_at": 0, "outage_seconds": 0, "work_ms": 1000}
    runs = []
    for _ in range(2):
        start_json(ops, "fail-at-step", long_run)
        ops.wait_for_url(RUN_URL)
        runs.append(run_id(ops))
    for run in runs:
        ops.goto(f"/runs/{run}/")
        ops.wait_for_selector(".page-header .pill:has-text('Running')", timeout=ms(30_000))

    watcher = new_context(base_url=server.url).new_page()
    login_as(watcher, "approver2")

    ops.goto("/?status=running")
    for run in runs:
        ops.locator(f'#runs-table input[data-pick][value="{run}"]').check()
    ops.select_option("#bulk-action", "cancel")
    ops.click("#bulk-runs button[type=submit]")
    assert "Cancel: 2 of 2 runs" in ops.inner_text("h1")
    ops.fill("#bulk-reason", "started by mistake")
    ops.click("#bulk-confirm-form button[type=submit]")
    # Done by the time the progress page shows, 2 s at most (scaled with the machine's load):
    # nothing waited for one of the busy workers.
    ops.wait_for_url(BULK_URL, timeout=ms(2_000))
    ops.wait_for_selector("#bulk-counts:has-text('finished')", timeout=ms(2_000))
    assert "2 done · 0 skipped" in ops.inner_text("#bulk-counts")
    # The other operator's browser finds both cancelled, and their workers stopped.
    for run in runs:
        watcher.goto(f"/runs/{run}/")
        assert "Cancelled" in watcher.inner_text(".page-header .pill")


def test_each_role_is_offered_only_what_it_may_do(
    new_context: Callable[..., Any], login_as: Callable[..., None], problems: Any
) -> None:
    ops = new_context().new_page()
    login_as(ops, "ops")
    waiting = start_waiting_run(ops, f"ORD-ROLE-{uuid.uuid4().hex[:6]}")

    seen: dict[str, dict[str, Any]] = {}
    for name in ("viewer", "operator", "approver2", "admin"):
        page = new_context().new_page()
        login_as(page, name)
        page.goto("/")
        start_offered = page.locator("a.btn:has-text('Start run')").count() > 0
        response = page.goto("/runs/start/")
        assert response is not None
        start_status = response.status
        start_text = page.inner_text("main")
        start_button = page.locator("main button:has-text('Start run')").count()
        page.goto(f"/runs/{waiting}/")
        seen[name] = {
            "start": start_offered,
            "start_page": start_status,
            "start_text": start_text,
            "start_button": start_button,
            "cancel": page.locator("#cancel-form button").count() > 0,
            "decide": page.locator("#run-outcome a:has-text('Decide in the inbox')").count() > 0,
            "outcome": page.inner_text("#run-outcome"),
            "actions": page.inner_text("#run-actions"),
        }
        page.context.close()

    viewer, operator, approver, admin = (
        seen[n] for n in ("viewer", "operator", "approver2", "admin")
    )
    assert (viewer["start"], viewer["start_page"], viewer["cancel"], viewer["decide"]) == (
        False,
        403,
        False,
        False,
    )
    assert "may look at runs but not start them" in viewer["start_text"]
    assert viewer["start_button"] == 0 and operator["start_button"] == 1
    assert "not cancel it" in viewer["actions"] and "an approver decides it" in viewer["outcome"]
    assert (operator["start"], operator["start_page"], operator["cancel"]) == (True, 200, True)
    assert not operator["decide"] and "an approver decides it" in operator["outcome"]
    assert (approver["start"], approver["start_page"], approver["cancel"]) == (False, 403, False)
    assert approver["decide"] and "not cancel it" in approver["actions"]
    assert (admin["start"], admin["start_page"], admin["cancel"], admin["decide"]) == (
        True,
        200,
        True,
        True,
    )
    assert problems.all(allow=("403", "Forbidden")) == []
