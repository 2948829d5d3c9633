"""Triage at a glance, in Chromium: while one operator's run fails, another's runs list counts
it under "Failed" and shows its error's first line, live; the failed run's page names the
workflow's own frame first, folds the full traceback and links to the full event log. The
runs list and the run page are photographed at 1280×800 and 390×844 on the way."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from tests.browser.conftest import PHONE
from tests.browser.deadlines import ms
from tests.browser.pages import NO_RELOAD, SAME_PAGE, start_run

pytestmark = [pytest.mark.browser, pytest.mark.slow]


def failed_chip(page: Any) -> int:
    chip = page.locator(".status-chips .status-chip[data-status=failed] .chip-count")
    return int(chip.inner_text()) if chip.count() else 0


def test_a_failure_is_counted_and_explained_live_and_its_page_shows_the_user_frame(
    new_context: Callable[..., Any],
    login_as: Callable[..., None],
    screenshot: Callable[[Any, str], Any],
    problems: Any,
) -> None:
    listing = new_context().new_page()
    login_as(listing, "admin")
    listing.goto("/")
    before = failed_chip(listing)
    listing.evaluate(NO_RELOAD)
    actor = new_context().new_page()
    login_as(actor, "ops")

    run_id = start_run(actor, "fail-at-step", steps=3, fail_at=1, outage_seconds=600, work_ms=0)
    actor.wait_for_selector("#run-header .pill.status-failed", timeout=ms(60_000))

    # The other operator's list counts it and says why, without a reload.
    row = f'#runs-table tr:has(a[href="/runs/{run_id}/"])'
    listing.wait_for_selector(f"{row} .run-error", timeout=ms(20_000))
    assert "simulated outage at step 1" in listing.inner_text(f"{row} .run-error")
    listing.wait_for_function(
        "(n) => +(document.querySelector("
        "'.status-chips .status-chip[data-status=failed] .chip-count') || {}).textContent > n",
        arg=before,
    )
    assert listing.evaluate(SAME_PAGE), "the runs list reloaded instead of updating live"
    listing.click(".status-chips .status-chip[data-status=failed]")
    listing.wait_for_url("**/?status=failed*")
    assert listing.locator(".status-chips .status-chip.is-active[data-status=failed]").count()
    screenshot(listing, "triage-runs-list")

    # The run page: the workflow's own frame first, the traceback folded, the event log linked.
    actor.reload()
    frame = actor.inner_text("#run-outcome .user-frame, .card-failed .user-frame")
    assert "dashboard/demo/workflows.py" in frame and "in count" in frame, frame
    assert "raise RuntimeError(" in frame
    assert actor.locator(".card-failed details.traceback-details").get_attribute("open") is None
    screenshot(actor, "triage-run-page")
    actor.click(".card-failed a.full-event-log")
    actor.wait_for_url(f"**/runs/{run_id}/events/")

    # The same pages on a phone.
    phone = new_context(viewport=PHONE).new_page()
    login_as(phone, "ops")
    phone.goto("/")
    screenshot(phone, "triage-runs-list")
    phone.goto(f"/runs/{run_id}/")
    phone.wait_for_selector(".card-failed .user-frame")
    screenshot(phone, "triage-run-page")
    assert problems.all() == []
