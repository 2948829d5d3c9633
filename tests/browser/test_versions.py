"""Deploying a new version of a workflow while runs of the old one wait for approval, in
Chromium against a real server restarted with new code each time:

1. ``spend`` v1 is deployed; two runs pause for approval;
2. v3 is deployed beside v1: the first run, approved, finishes on v1; a new run starts on v3;
3. v3 alone is deployed (v1 removed). v3 cannot carry the second run's saved state: its page
   says "Needs migration" and what would be lost. An operator migrates it from the run page;
   a second operator's open page of the same run changes without a reload; approved, the run
   finishes on v3.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.browser.deadlines import ms
from tests.browser.pages import approve_in_inbox

pytestmark = [pytest.mark.browser, pytest.mark.slow]

FLOWS = Path(__file__).resolve().parents[1] / "helpers"
NO_RELOAD = "window.__stillTheSamePage = true"
SAME_PAGE = "window.__stillTheSamePage === true"


def deploy_versions(deployment: Callable[..., Any], versions: str) -> Any:
    return deployment(
        SUPERSTEP_WORKFLOWS="versioned_deploy",
        SPEND_VERSIONS=versions,
        SUPERSTEP_DEMO="0",
        PYTHONPATH=str(FLOWS),
    )


def start_spend(page: Any, amount: int) -> str:
    # The workflow in the address, not picked from the menu: the menu reloads the form, and a
    # value typed before that reload lands would be replaced by the default.
    page.goto("/runs/start/?workflow=spend")
    page.wait_for_selector("#id_input-amount")
    page.fill("#id_input-amount", str(amount))
    page.click("form .card-footer button[type=submit]")
    page.wait_for_url(re.compile(r"/runs/[0-9a-f-]{36}/$"))
    page.wait_for_selector("#run-header .pill.status-waiting", timeout=ms(60_000))
    return page.url.rstrip("/").rsplit("/", 1)[-1]


def approve(context: Any, run_id: str) -> None:
    inbox = context.new_page()
    inbox.goto("/approvals/")
    inbox.click(f'.request-item:has-text("{run_id[:8]}")')
    inbox.wait_for_selector(f'#approval-panel a[href="/runs/{run_id}/"]')
    approve_in_inbox(inbox)
    inbox.close()


def version_line(page: Any) -> str:
    return " ".join(page.inner_text("#run-version").split())


def test_a_second_version_runs_beside_the_first_and_a_waiting_run_is_migrated_from_its_page(
    deployment: Callable[..., Any],
    new_context: Callable[..., Any],
    login_as: Callable[..., None],
    problems: Any,
    screenshot: Callable[[Any, str], Any],
) -> None:
    server = deploy_versions(deployment, "v1")
    operator = new_context(base_url=server.url)
    page = operator.new_page()
    login_as(page, "ops")
    first = start_spend(page, 120)
    second = start_spend(page, 80)
    assert version_line(page).endswith("· current")

    # v3 deployed beside v1: the waiting v1 run says it stays on v1, and finishes there.
    deploy_versions(deployment, "v1,v3")
    page.goto(f"/runs/{first}/")
    assert "an earlier version, kept side by side so this run finishes on it" in version_line(page)
    approve(operator, first)
    page.wait_for_selector("#run-header .pill.status-completed", timeout=ms(60_000))
    assert "120 approved" in page.inner_text("#run-outcome")
    third = start_spend(page, 15)
    assert version_line(page).endswith("· current")
    assert third != first

    # v1 removed: the second run cannot continue on v3 as it stands.
    deploy_versions(deployment, "v3")
    page.goto(f"/runs/{second}/")
    panel = version_line(page)
    assert "Needs migration." in panel
    assert "saved state of executor 'counter'" in panel
    screenshot(page, "run-needs-migration")

    # A second operator has the same run open.
    watcher = new_context(base_url=server.url).new_page()
    login_as(watcher, "ops")
    watcher.goto(f"/runs/{second}/")
    watcher.wait_for_selector("#run-version .alert-warning")
    watcher.evaluate(NO_RELOAD)

    # Migrate from the latest checkpoint (the preselected one), discarding the counter's state.
    assert page.locator("#migrate-checkpoint option").count() >= 2
    page.check("#migrate-discard")
    page.click("#migrate-form button[type=submit]")
    dialog = page.locator("#migrate-dialog")
    assert dialog.is_visible()
    dialog.locator("button[value=confirm]").click()
    # The form posts from this very URL and the run already showed "waiting": wait for the
    # answer's own page (its toast), not for a URL or a status that were true before.
    page.wait_for_selector("text=moved to the deployed version", timeout=ms(60_000))
    page.wait_for_url(re.compile(rf"/runs/{second}/$"))
    page.wait_for_selector("#run-header .pill.status-waiting", timeout=ms(60_000))
    assert version_line(page).endswith("· current")
    assert "moved to the deployed version" in page.inner_text("body")

    # The other operator's page followed without a reload.
    watcher.wait_for_function(
        "!document.querySelector('#run-version .alert-warning')", timeout=ms(30_000)
    )
    assert watcher.evaluate(SAME_PAGE)
    assert version_line(watcher).endswith("· current")

    approve(operator, second)
    page.wait_for_selector("#run-header .pill.status-completed", timeout=ms(60_000))
    assert "80 approved" in page.inner_text("#run-outcome")
    # The restarts cut the open pages' sockets (htmx's ws extension logs the error event, then
    # reconnects), and a live region asking for its reload meanwhile finds no server: that is
    # all the console may say.
    assert problems.all(allow=("status of 409",), restarted=server.url) == []
