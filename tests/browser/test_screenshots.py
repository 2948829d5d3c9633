"""Screenshots of every page at 1280×800 and 390×844, into test-artifacts/screenshots/.

They are for people to look at (alignment, readability, narrow screens); the test checks that
each page rendered its one heading, that nothing is wider than the screen (no sideways scroll
of the whole page) and that nothing broke while it did (console errors, CSP, dialogs).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

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


def shoot_page(page: Any, name: str, screenshot: Callable[[Any, str], Path]) -> None:
    page.wait_for_load_state("networkidle")
    page.wait_for_timeout(300)  # JSON trees and relative times render after load
    assert page.locator("main h1").count() == 1, name
    screenshot(page, name)
    too_wide = page.evaluate(OVERFLOW)
    if too_wide:
        width = page.viewport_size["width"]
        OVERFLOWING.append(f"{name} at {width}px: {too_wide}")


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
    page.wait_for_selector("#bulk-counts:has-text('finished')", timeout=30_000)
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
    setup.wait_for_selector("#run-header .pill.status-waiting", timeout=30_000)
    middle = setup.get_attribute("#run-timeline .timeline-card:has-text('Superstep 3')", "href")
    request = setup.get_attribute("#run-outcome a:has-text('Decide in the inbox')", "href")
    done = start_run(setup, "fan-out-fan-in", destination="Porto", work_ms=0)
    setup.wait_for_selector("#run-header .pill.status-completed", timeout=30_000)
    failed = start_run(setup, "fail-at-step", steps=4, fail_at=2, outage_seconds=600, work_ms=0)
    setup.wait_for_selector("#run-header .pill.status-failed", timeout=30_000)
    # One decision for the archive.
    other = start_run(setup, "return-replace", order_id="ORD-2049", work_ms=0)
    setup.wait_for_selector("#run-header .pill.status-waiting", timeout=30_000)
    setup.click("#run-outcome a:has-text('Decide in the inbox')")
    setup.fill("#id_response-discount_percent", "10")
    setup.fill("#id_reason", "Customer has been waiting two weeks")
    setup.click("#approval-panel button[value=approve]")
    setup.wait_for_selector("#approval-panel .decided-summary")
    # A fuller runs list, a run per viewport for the bulk pages, a pinned saved view.
    for n in range(20):
        start_by_api(setup, "return-replace", order_id=f"ORD-{3000 + n}", work_ms=0)
    for width in (DESKTOP["width"], PHONE["width"]):
        start_by_api(setup, "return-replace", order_id=f"ORD-SHOT-{width}", work_ms=0)
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
    for viewport in (DESKTOP, PHONE):
        anonymous = new_context(viewport).new_page()
        anonymous.goto("/login/")
        shoot_page(anonymous, "login", screenshot)
        page = new_context(viewport).new_page()
        login_as(page, "admin")
        for name, url in pages.items():
            page.goto(url)
            shoot_page(page, name, screenshot)
        bulk_cancel(page, f"ORD-SHOT-{viewport['width']}", "bulk", screenshot)
        page.goto("/?density=normal")  # the density is remembered per browser
    assert OVERFLOWING == []
    assert problems.all() == []
