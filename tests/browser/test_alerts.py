"""Alerts in the dashboard's own pages, in Chromium (issue 16): an admin creates an alert rule
through the form (a refused URL shown beside its field), a run fails, the server's embedded
``evaluate-alerts`` thread opens an incident and a signed webhook reaches a receiver here with
a link back to the run; the run page shows the alert; a retry that succeeds resolves it, and
the receiver hears that too.

On a server of its own, deployed with ``SUPERSTEP_BASE_URL`` naming it (the links must be
absolute), whose failed run must not show in the other tests' lists.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable
from typing import Any

import pytest

from tests.browser.deadlines import ms
from tests.browser.receivers import SECRET, Receiver
from tests.browser.servers import Deployment

pytestmark = [pytest.mark.browser, pytest.mark.slow]

RUN_URL = re.compile(r"/runs/[0-9a-f-]{36}/$")


def test_an_admin_sets_an_alert_that_fires_on_a_failed_run_and_resolves_on_its_retry(
    deployment: Deployment,
    new_context: Callable[..., Any],
    login_as: Callable[..., None],
    problems: Any,
    screenshot: Callable[[Any, str], Any],
    receiver: Receiver,
) -> None:
    server = deployment(SUPERSTEP_BASE_URL=deployment.url)  # links name this server
    page = new_context(base_url=server.url).new_page()
    login_as(page, "admin")

    page.goto("/alerts/")
    assert "No alert rules" in page.inner_text("#alert-rules")
    page.click("text=New alert rule")
    page.fill("#id_name", "fail-at-step failures")
    page.select_option("#id_condition", "run_failed")
    page.select_option("#id_workflow_name", "fail-at-step")
    page.fill("#id_webhook_url", "ftp://example.com/hook")
    page.click("#alert-rule-form button[type=submit]")
    assert "An http:// or https:// URL" in page.inner_text("#id_webhook_url_error")

    page.fill("#id_webhook_url", receiver.url)
    page.fill("#id_webhook_secret", SECRET)
    screenshot(page, "alert-rule-form")
    page.click("#alert-rule-form button[type=submit]")
    page.wait_for_url(re.compile(r"/alerts/$"))
    row = page.locator('tr[data-alert-rule="fail-at-step failures"]')
    assert "Run failed" in row.inner_text() and "webhook (signed)" in row.inner_text()

    # A run that fails at its second step while a 12-second outage lasts.
    page.goto("/runs/start/?workflow=fail-at-step")
    for name, value in {"steps": 3, "fail_at": 2, "outage_seconds": 12, "work_ms": 0}.items():
        page.fill(f"#id_input-{name}", str(value))
    page.click("form .card-footer button[type=submit]")
    page.wait_for_url(RUN_URL)
    run_id = page.url.rstrip("/").rsplit("/", 1)[-1]
    page.wait_for_selector("#run-header .pill.status-failed", timeout=ms(60_000))

    opened = receiver.wait_for("alert_opened")
    assert opened["run_id"] == run_id and opened["url"] == f"{server.url}/runs/{run_id}/"
    assert opened["rule"] == "fail-at-step failures" and "failed" in opened["summary"]
    page.reload()
    page.wait_for_selector('#run-alerts [data-alert-state="delivered"]')
    assert "fail-at-step failures" in page.inner_text("#run-alerts")

    # Retried once the outage is over, it completes: the incident is resolved and told so.
    time.sleep(max(0.0, 13 - (time.time() - _started(opened))))
    page.locator("#run-actions > form button:has-text('Retry')").click()
    page.fill("#retry-dialog-reason", "the outage is over")
    page.locator("#retry-dialog button[value=confirm]").click()
    page.wait_for_selector("#run-header .pill.status-completed", timeout=ms(60_000))
    resolved = receiver.wait_for("alert_resolved")
    assert resolved["incident_id"] == opened["incident_id"] and resolved["resolved_at"]

    page.goto("/alerts/")
    incident = page.locator(f'#alert-incidents tr[data-incident="{opened["incident_id"]}"]')
    assert "resolved" in incident.inner_text()
    screenshot(page, "alerts-incident-resolved")  # "alerts" is the screenshot test's
    assert [p["event"] for p in receiver.payloads] == ["alert_opened", "alert_resolved"]
    assert problems.all(allow=("status of 422",)) == []  # the refused URL above


def _started(opened: dict[str, Any]) -> float:
    """When the incident opened, in Unix seconds (the run failed just before)."""
    from datetime import datetime

    return datetime.fromisoformat(opened["opened_at"]).timestamp()
