"""Issue 16's end-to-end check, in Chromium, through the pages alone: an admin sets an alert
rule and a schedule; the schedule fires on its own (the server's embedded scheduler thread),
the run it started fails, and the alert reaches the rule's signed webhook with a link to that
run, which names its schedule."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

import pytest

from tests.browser.deadlines import ms
from tests.browser.pages import save_schedule
from tests.browser.receivers import SECRET, Receiver
from tests.browser.servers import Deployment

pytestmark = [pytest.mark.browser, pytest.mark.slow]


def test_a_scheduled_run_that_fails_raises_the_alert_set_beside_it(
    deployment: Deployment,
    new_context: Callable[..., Any],
    login_as: Callable[..., None],
    problems: Any,
    receiver: Receiver,
) -> None:
    server = deployment(SUPERSTEP_BASE_URL=deployment.url)
    page = new_context(base_url=server.url).new_page()
    login_as(page, "admin")

    page.goto("/alerts/new/")
    page.fill("#id_name", "scheduled step failures")
    page.select_option("#id_condition", "run_failed")
    page.select_option("#id_workflow_name", "fail-at-step")
    page.fill("#id_webhook_url", receiver.url)
    page.fill("#id_webhook_secret", SECRET)
    page.click("#alert-rule-form button[type=submit]")
    page.wait_for_url(re.compile(r"/alerts/$"))

    failing = '{"steps": 2, "fail_at": 1, "outage_seconds": 3600, "work_ms": 0}'
    save_schedule(page, "failing every 5 s", "fail-at-step", failing, every=5)

    opened = receiver.wait_for("alert_opened", timeout=90)
    run_id = opened["run_id"]
    assert opened["rule"] == "scheduled step failures"
    assert opened["url"] == f"{server.url}/runs/{run_id}/"

    page.goto(opened["url"])
    assert "failing every 5 s" in page.inner_text("#run-details")  # started by the schedule
    page.wait_for_selector('#run-alerts [data-alert-state="delivered"]', timeout=ms(30_000))

    # Stop it: no more runs, and the page says so.
    page.goto("/schedules/")
    row = page.locator('tr[data-schedule="failing every 5 s"]')
    row.locator("button:has-text('Pause')").click()
    page.locator('tr[data-schedule="failing every 5 s"]', has_text="None while paused").wait_for()
    assert problems.all() == []
