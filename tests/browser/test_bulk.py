"""Acting on many runs in Chromium: tick rows (or take every run matching the filter), review
what will change and what is skipped, confirm, watch the progress; another operator's runs list
follows without a reload."""

from __future__ import annotations

import re
import uuid
from collections.abc import Callable
from typing import Any

import pytest

from tests.browser.deadlines import ms
from tests.browser.pages import NO_RELOAD, SAME_PAGE, start_waiting_run

pytestmark = [pytest.mark.browser, pytest.mark.slow]

BULK_URL = re.compile(r"/runs/bulk/[0-9a-f-]{36}/$")


def row(page: Any, run_id: str) -> Any:
    return page.locator("#runs-table tbody tr", has=page.locator(f'input[value="{run_id}"]'))


def test_two_runs_cancelled_at_once_and_every_match_reviewed(
    new_context: Callable[..., Any], login_as: Callable[..., None], problems: Any
) -> None:
    tag = f"ORD-BULK-{uuid.uuid4().hex[:6].upper()}"
    ops = new_context().new_page()
    login_as(ops, "ops")
    runs = [start_waiting_run(ops, f"{tag}-{n}") for n in range(3)]

    watcher = new_context().new_page()
    login_as(watcher, "approver2")
    watcher.goto(f"/?q={tag}")
    watcher.evaluate(NO_RELOAD)
    for run_id in runs:
        row(watcher, run_id).wait_for()

    ops.goto(f"/?q={tag}")
    row(ops, runs[0]).locator("input[data-pick]").check()
    row(ops, runs[1]).locator("input[data-pick]").check()
    assert ops.inner_text("#bulk-runs [data-pick-count]") == "2 picked"
    ops.select_option("#bulk-action", "cancel")
    ops.click("#bulk-runs button[type=submit]")
    assert "Cancel: 2 of 2 runs" in ops.inner_text("h1")
    ops.fill("#bulk-reason", "duplicates of another order")
    ops.click("#bulk-confirm-form button[type=submit]")
    ops.wait_for_url(BULK_URL)
    ops.wait_for_selector("#bulk-counts:has-text('finished')", timeout=ms(30_000))
    assert "2 done · 0 skipped" in ops.inner_text("#bulk-counts")

    # The other operator's list shows both cancelled, the third still waiting, no reload.
    for run_id in runs[:2]:
        row(watcher, run_id).locator(
            ".status-pill:has-text('Cancelled'), .pill:has-text('Cancelled'), :text-is('Cancelled')"
        ).first.wait_for(timeout=ms(15_000))
    assert "aiting" in row(watcher, runs[2]).inner_text()
    assert watcher.evaluate(SAME_PAGE)

    # Every run matching the filter: the review says which are skipped, and why.
    ops.goto(f"/?q={tag}")
    ops.check("#bulk-runs input[name=all_matching]")
    ops.select_option("#bulk-action", "cancel")
    ops.click("#bulk-runs button[type=submit]")
    assert "Cancel: 1 of 3 runs" in ops.inner_text("h1")
    assert "2 already cancelled" in ops.inner_text("#bulk-skips").replace("\n", " ")
    assert problems.all() == []
