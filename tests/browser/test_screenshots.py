"""Screenshots of every page at 1280×800 and 390×844, into test-artifacts/screenshots/, each
taken once.

They are for people to look at (alignment, readability, narrow screens); the test checks that
each page rendered its one heading, that nothing is wider than the screen (no sideways scroll
of the whole page) and that nothing broke while it did (console errors, CSP, dialogs).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.browser.deadlines import ms
from tests.browser.pages import approve_in_inbox
from tests.browser.test_live_truth import start_run
from tests.browser.test_operator_tools import start_by_api

pytestmark = [pytest.mark.browser, pytest.mark.slow]

# Pages wider than the screen, all reported at the end (one look at every page per run).
OVERFLOWING: list[str] = []
DESKTOP = {"width": 1280, "height": 800}
PHONE = {"width": 390, "height": 844}
# What sticks out past the right edge of the screen, for the failure message.
OVERFLOW = """() => {
  const width = document.documentElement.clientWidth;
  if (document.documentElement.scrollWidth <= width) return [];
  return Array.from(document.querySelectorAll("body *"))
    .filter(e => e.getBoundingClientRect().right > width + 1)
    .filter(e => { // inside a box that scrolls or clips, it is that box's business
      for (let up = e.parentElement; up && up !== document.body; up = up.parentElement) {
        if (getComputedStyle(up).overflowX !== "visible") return false;
      }
      return true;
    })
    .slice(0, 5).map(e => e.tagName.toLowerCase() + (e.id ? "#" + e.id : "") + "." + e.className);
}"""


# Everything the page draws after its load event is in: web fonts, and what app.js renders at
# DOMContentLoaded (JSON trees, relative times) is done by then.
RENDERED = "document.readyState === 'complete' && document.fonts.status === 'loaded'"


def shoot_page(page: Any, name: str, screenshot: Callable[[Any, str], Path]) -> None:
    """``name`` at each width, from one visit: the page resized, not loaded again (what reads
    the width, CSS and app.js's folds, follows a resize)."""
    page.wait_for_load_state("networkidle")
    page.wait_for_function(RENDERED)
    assert page.locator("main h1").count() == 1, name
    for viewport in (DESKTOP, PHONE):
        page.set_viewport_size(viewport)
        screenshot(page, name)
        too_wide = page.evaluate(OVERFLOW)
        if too_wide:
            OVERFLOWING.append(f"{name} at {viewport['width']}px: {too_wide}")
    page.set_viewport_size(DESKTOP)


def bulk_cancel(page: Any, tag: str, name: str, screenshot: Callable[[Any, str], Path]) -> None:
    """The review and progress pages of a bulk cancel of the runs matching ``tag``."""
    page.goto(f"/?q={tag}")
    page.check("#bulk-runs input[name=all_matching]")
    page.select_option("#bulk-action", "cancel")
    page.click("#bulk-runs button[type=submit]")
    page.wait_for_selector("#bulk-confirm-form")
    shoot_page(page, f"{name}-review", screenshot)
    page.fill("#bulk-reason", "screenshots")
    page.click("#bulk-confirm-form button[type=submit]")
    page.wait_for_selector("#bulk-counts:has-text('finished')", timeout=ms(30_000))
    shoot_page(page, f"{name}-progress", screenshot)


def test_screenshots_of_every_page(
    new_context: Callable[..., Any],
    login_as: Callable[..., None],
    screenshot: Callable[[Any, str], Path],
    problems: Any,
) -> None:
    setup = new_context(DESKTOP).new_page()
    login_as(setup, "admin")
    waiting = start_run(setup, "return-replace", order_id="ORD-2048", work_ms=0)
    setup.wait_for_selector("#run-header .pill.status-waiting", timeout=ms(30_000))
    middle = setup.get_attribute("#run-timeline .timeline-card:has-text('Superstep 3')", "href")
    request = setup.get_attribute("#run-outcome a:has-text('Decide in the inbox')", "href")
    done = start_run(setup, "fan-out-fan-in", destination="Porto", work_ms=0)
    setup.wait_for_selector("#run-header .pill.status-completed", timeout=ms(30_000))
    failed = start_run(setup, "fail-at-step", steps=4, fail_at=2, outage_seconds=600, work_ms=0)
    setup.wait_for_selector("#run-header .pill.status-failed", timeout=ms(30_000))
    # One decision for the archive.
    other = start_run(setup, "return-replace", order_id="ORD-2049", work_ms=0)
    setup.wait_for_selector("#run-header .pill.status-waiting", timeout=ms(30_000))
    setup.click("#run-outcome a:has-text('Decide in the inbox')")
    setup.fill("#id_response-discount_percent", "10")
    setup.fill("#id_reason", "Customer has been waiting two weeks")
    approve_in_inbox(setup)
    # A fuller runs list, a run for the bulk pages, a pinned saved view.
    for n in range(20):
        start_by_api(setup, "return-replace", order_id=f"ORD-{3000 + n}", work_ms=0)
    start_by_api(setup, "return-replace", order_id="ORD-SHOT", work_ms=0)
    setup.goto("/?status=waiting")
    setup.click("#save-view")
    setup.fill("#view-name", "Waiting runs")
    setup.click(".save-view-form button[type=submit]")
    setup.locator(".nav-view a", has_text="Waiting runs").wait_for()

    pages = {
        "runs-list": "/?density=normal",
        "runs-list-compact": "/?density=compact",
        "start-run": "/runs/start/?workflow=return-replace",
        "run-waiting": f"/runs/{waiting}/",
        "run-completed": f"/runs/{done}/",
        "run-failed": f"/runs/{failed}/",
        "run-other": f"/runs/{other}/",
        "event-log": f"/runs/{done}/events/",
        "event-log-compact": f"/runs/{done}/events/?density=compact",
        "checkpoint": str(middle),
        "compare": f"/runs/compare/?a={waiting}&b={other}",
        "approval-inbox": str(request),
        "approval-archive": "/approvals/archive/",
        "storage": "/storage/",
        "schedules": "/schedules/",
        "alerts": "/alerts/",
        "retention": "/retention/",
        "audit": "/audit/",
        "saved-views": "/views/",
    }
    anonymous = new_context(DESKTOP).new_page()
    anonymous.goto("/login/")
    shoot_page(anonymous, "login", screenshot)
    page = new_context(DESKTOP).new_page()
    login_as(page, "admin")
    for name, url in pages.items():
        page.goto(url)
        shoot_page(page, name, screenshot)
    bulk_cancel(page, "ORD-SHOT", "bulk", screenshot)
    page.goto("/?density=normal")  # the density is remembered per browser
    assert OVERFLOWING == []
    assert problems.all() == []
