"""Schedules in the dashboard's own pages, in Chromium (issue 16): an Operator creates a
schedule through the form, sees it fire on its own (the server's embedded ``fire-schedules``
thread), follows the run it started and back to the schedule, pauses it, and triggers it by
hand after a confirmation; a refused expression is shown beside its field.

On a server of its own: a schedule that fires every few seconds must not add runs to the
other tests' lists.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

import pytest

from tests.browser.deadlines import ms, wait_until

pytestmark = [pytest.mark.browser, pytest.mark.slow]

SCHEDULE_ROW = 'tr[data-schedule="squares every 5 s"]'


def test_an_operator_schedules_a_workflow_sees_it_fire_pauses_and_triggers_it(
    deployment: Callable[..., Any],
    new_context: Callable[..., Any],
    login_as: Callable[..., None],
    problems: Any,
    screenshot: Callable[[Any, str], Any],
) -> None:
    server = deployment()
    page = new_context(base_url=server.url).new_page()
    login_as(page, "ops")

    page.goto("/schedules/")
    assert "No schedules" in page.inner_text("#schedules")
    page.click("text=New schedule")
    page.fill("#id_name", "squares every 5 s")
    page.select_option("#id_workflow_name", "squares")
    page.fill("#id_input", '{"limit": 2, "work_ms": 0}')

    # A cron hour that does not exist is refused beside the field, nothing saved.
    page.fill("#id_cron", "0 24 * * *")
    page.click("#schedule-form button[type=submit]")
    assert "hour: 24 is outside 0-23" in page.inner_text("#id_cron_error")

    page.select_option("#id_kind", "interval")
    page.fill("#id_cron", "")
    page.fill("#id_every", "5")
    page.select_option("#id_unit", "seconds")
    page.select_option("#id_time_zone", "Europe/Paris")
    screenshot(page, "schedule-form")
    page.click("#schedule-form button[type=submit]")
    page.wait_for_url(re.compile(r"/schedules/$"))
    row = page.locator('tr[data-schedule="squares every 5 s"]')
    assert "every 5 seconds" in row.inner_text() and "Active" in row.inner_text()
    assert re.search(r"\d{4}-\d\d-\d\d \d\d:\d\d CES?T", row.locator(".schedule-next").inner_text())

    # It fires on its own: the page, reloaded, links the run its last tick started.
    def fired() -> bool:
        page.reload()
        return bool(page.locator(f"{SCHEDULE_ROW} .schedule-last a.run-id").count())

    wait_until(fired, timeout=30, what="a run started by the schedule", every=0.5)
    row = page.locator(SCHEDULE_ROW)
    screenshot(page, "schedules-fired")  # "schedules" is the screenshot test's
    row.locator(".schedule-last a.run-id").click()
    page.wait_for_url(re.compile(r"/runs/[0-9a-f-]{36}/$"))
    page.wait_for_selector("#run-header .pill.status-completed", timeout=ms(120_000))
    page.click("a[data-schedule-link]")
    page.wait_for_url(re.compile(r"/schedules/#schedule-\d+$"))

    # Paused, it has no next tick; "Trigger now" still starts a run, after a confirmation.
    row = page.locator('tr[data-schedule="squares every 5 s"]')
    row.locator("button:has-text('Pause')").click()
    page.wait_for_selector("#toasts >> text=paused")
    row = page.locator('tr[data-schedule="squares every 5 s"]')
    assert "Paused" in row.inner_text() and "None while paused" in row.inner_text()
    row.locator("button:has-text('Trigger now')").click()
    assert "Start a run now?" in page.locator("dialog[open]").inner_text()
    page.locator("dialog[open] button[value=confirm]").click()
    page.wait_for_url(re.compile(r"/runs/[0-9a-f-]{36}/$"))
    page.wait_for_selector("#run-header .pill.status-completed", timeout=ms(120_000))
    assert page.inner_text("a[data-schedule-link]") == "squares every 5 s"
    assert problems.all(allow=("status of 422",)) == []  # the refused cron above
