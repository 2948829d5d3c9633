"""Screenshots of every page at 1280×800 and 390×844, into test-artifacts/screenshots/.

They are for people to look at (alignment, readability, narrow screens); the test only checks
that each page rendered and that nothing broke while it did.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

pytestmark = [pytest.mark.browser, pytest.mark.slow]

DESKTOP = {"width": 1280, "height": 800}
PHONE = {"width": 390, "height": 844}


def start(page: Any, workflow: str, fields: dict[str, str]) -> str:
    page.goto(f"/runs/start/?workflow={workflow}")
    for name, value in fields.items():
        page.fill(f"#id_input-{name}", value)
    page.click("form .card-footer button[type=submit]")
    page.wait_for_url(re.compile(r"/runs/[0-9a-f-]{36}/$"))
    return str(page.url)


@pytest.fixture(scope="module")
def shots() -> dict[str, Path]:
    return {}


def test_screenshots_of_every_page(
    new_context: Callable[..., Any],
    login_as: Callable[..., None],
    screenshot: Callable[[Any, str], Path],
    problems: Any,
) -> None:
    setup = new_context(DESKTOP).new_page()
    login_as(setup, "ops")
    waiting = start(setup, "return-replace", {"order_id": "ORD-2048", "work_ms": "0"})
    setup.wait_for_selector("#run-header .pill.status-waiting", timeout=30_000)
    middle = setup.get_attribute("#run-timeline .timeline-card:has-text('Superstep 3')", "href")
    request = setup.get_attribute("#run-outcome a:has-text('Decide in the inbox')", "href")
    done = start(setup, "fan-out-fan-in", {"destination": "Porto", "work_ms": "0"})
    setup.wait_for_selector("#run-header .pill.status-completed", timeout=30_000)
    failed = start(
        setup,
        "fail-at-step",
        {"steps": "4", "fail_at": "2", "outage_seconds": "600", "work_ms": "0"},
    )
    setup.wait_for_selector("#run-header .pill.status-failed", timeout=30_000)
    # One decision for the archive.
    other = start(setup, "return-replace", {"order_id": "ORD-2049", "work_ms": "0"})
    setup.wait_for_selector("#run-header .pill.status-waiting", timeout=30_000)
    setup.click("#run-outcome a:has-text('Decide in the inbox')")
    setup.fill("#id_response-discount_percent", "10")
    setup.fill("#id_reason", "Customer has been waiting two weeks")
    setup.click("#approval-panel button[value=approve]")
    setup.wait_for_selector("#approval-panel .decided-summary")

    pages = {
        "runs-list": "/",
        "start-run": "/runs/start/?workflow=return-replace",
        "run-waiting": waiting,
        "run-completed": done,
        "run-failed": failed,
        "checkpoint": str(middle),
        "approval-inbox": str(request),
        "approval-archive": "/approvals/archive/",
        "storage": "/storage/",
        "run-other": other,
    }
    for viewport in (DESKTOP, PHONE):
        anonymous = new_context(viewport).new_page()
        anonymous.goto("/login/")
        screenshot(anonymous, "login")
        page = new_context(viewport).new_page()
        login_as(page, "ops")
        for name, url in pages.items():
            page.goto(url)
            page.wait_for_load_state("networkidle")
            page.wait_for_timeout(300)  # JSON trees and relative times render after load
            assert page.locator("main h1").count() == 1, name
            screenshot(page, name)
    assert problems.all() == []
