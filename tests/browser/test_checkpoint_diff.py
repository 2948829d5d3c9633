"""The checkpoint diff in Chromium (issue 15, problem 3): a list losing its first item is one
removed row on a short page, a later checkpoint chosen from an earlier one still reads older
to newer, no codec tag shows, and one value opens side by side under its row."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

import pytest

from tests.browser.deadlines import ms

pytestmark = [pytest.mark.browser, pytest.mark.slow]


def start(page: Any, workflow: str, **fields: str) -> str:
    """Start a run through the form; returns its id."""
    page.goto("/runs/start/")
    page.select_option("#start-workflow", workflow)
    page.wait_for_selector(f"#id_input-{next(iter(fields))}")  # the workflow's fields swapped in
    for name, value in fields.items():
        page.fill(f"#id_input-{name}", value)
    page.click("form .card-footer button[type=submit]")
    page.wait_for_url(re.compile(r"/runs/[0-9a-f-]{36}/$"))
    return str(page.url.rstrip("/").rsplit("/", 1)[-1])


def checkpoints(page: Any, run_id: str) -> dict[int, str]:
    """Superstep → inspector URL, from the run's whole timeline."""
    page.goto(f"/runs/{run_id}/?timeline=all")
    cards = page.locator("#run-timeline a.timeline-card").evaluate_all(
        "cards => cards.map(c => [c.querySelector('.timeline-title').textContent,"
        " c.getAttribute('href')])"
    )
    found: dict[int, str] = {}
    for title, href in cards:
        match = re.search(r"Superstep (\d+)", title)
        if match and href:
            found.setdefault(int(match.group(1)), href)
    return found


def test_a_list_losing_its_first_item_is_one_row_and_a_later_checkpoint_reads_older_to_newer(
    new_context: Callable[..., Any],
    login_as: Callable[..., None],
    screenshot: Callable[[Any, str], Any],
    problems: Any,
) -> None:
    page = new_context().new_page()
    login_as(page, "ops")
    run_id = start(page, "squares", limit="89", work_ms="0")
    page.wait_for_selector("#run-header .pill.status-completed", timeout=ms(120_000))
    urls = checkpoints(page, run_id)

    # Superstep 2 popped the first of 89 numbers from the message's work list.
    page.goto(urls[2])
    page.wait_for_selector("#checkpoint-diff .diff-table")
    diff = page.locator("#checkpoint-diff")
    assert "From superstep 1 (the previous checkpoint) to superstep 2" in diff.inner_text()
    removed = diff.locator("tr.diff-row.diff-removed")
    assert removed.count() == 1
    assert "$.messages[0].data.remaining[0]" in removed.inner_text()
    assert diff.locator("tr.diff-row.diff-changed").count() == 2  # the sender, the superstep
    assert "88 unchanged items" in diff.inner_text()
    box = diff.bounding_box()
    assert box is not None and box["height"] < 1_200, box  # 89 positional rows were > 5,000 px
    screenshot(page, "checkpoint-diff-one-removed")

    # From superstep 3, choose superstep 15: the older one still comes first.
    page.goto(urls[3])
    later = urls[15].rstrip("/").rsplit("/", 1)[-1]
    page.select_option("#compare-select", value=later)
    page.wait_for_selector(
        "#checkpoint-diff >> text=From superstep 3 (this checkpoint) to superstep 15"
    )
    assert f"compare={later}" in page.url
    section = page.locator('#checkpoint-diff tbody[data-section="executor_states"]')
    assert section.locator("tr.diff-row.diff-added").count() == 12  # 3² … 14² arrived
    assert section.locator("tr.diff-row.diff-removed").count() == 0
    messages = page.locator('#checkpoint-diff tbody[data-section="messages"]')
    assert messages.locator("tr.diff-row.diff-removed").count() == 12

    # Int keys read as ints, in the diff and in the state tree: no codec tag anywhere.
    assert "results[3]" in section.inner_text()
    page.wait_for_selector('[data-json-tree="executor-states-json"] .json-key')
    shown = page.inner_text("#checkpoint-diff") + page.inner_text(
        '[data-json-tree="executor-states-json"]'
    )
    assert "$t" not in shown and "$keys" not in shown
    screenshot(page, "checkpoint-diff-older-to-newer")
    page.set_viewport_size({"width": 390, "height": 844})
    shot = screenshot(page, "checkpoint-diff-older-to-newer")
    page.locator("#checkpoint-diff").screenshot(path=str(shot.parent / "checkpoint-diff-390.png"))
    assert problems.all() == []


def test_one_value_opens_side_by_side_under_its_row(
    new_context: Callable[..., Any],
    login_as: Callable[..., None],
    screenshot: Callable[[Any, str], Any],
    problems: Any,
) -> None:
    page = new_context().new_page()
    login_as(page, "ops")
    run_id = start(page, "return-replace", order_id="ORD-SIDE", work_ms="0")
    page.wait_for_selector("#run-header .pill.status-waiting", timeout=ms(60_000))
    urls = checkpoints(page, run_id)
    first = urls[1].rstrip("/").rsplit("/", 1)[-1]
    page.goto(f"{urls[4]}?compare={first}")
    page.wait_for_selector("#checkpoint-diff .diff-table")
    page.evaluate("window.__stillTheSamePage = true")

    row = page.locator("#checkpoint-diff tr.diff-row:has-text('$.state[\"pending:ORD-SIDE\"]')")
    row.get_by_role("link", name=re.compile("Side by side")).click()
    side = page.locator("#checkpoint-diff tr.diff-side-row")
    side.wait_for()
    assert page.evaluate("window.__stillTheSamePage === true"), "htmx swapped it in, no reload"
    old = side.locator("td.diff-side-old").all_inner_texts()
    new = side.locator("td.diff-side-new").all_inner_texts()
    assert old[0] == "(absent)"
    assert new[0] == "ReturnState(" and '    order_id="ORD-SIDE",' in new
    assert (
        "Superstep 1 · before" in side.inner_text() and "Superstep 4 · after" in side.inner_text()
    )
    assert "$t" not in side.inner_text()
    shot = screenshot(page, "checkpoint-diff-side-by-side")
    page.set_viewport_size({"width": 390, "height": 844})
    side.screenshot(path=str(shot.parent / "checkpoint-diff-side-by-side-row-390.png"))
    page.set_viewport_size({"width": 1280, "height": 800})

    # Widen to the whole shared state, then fold the view away.
    side.get_by_role("link", name="$.state", exact=True).click()
    summary = page.locator("#checkpoint-diff tr.diff-side-row summary")
    summary.filter(has_text=re.compile(r"^Side by side: \$\.state$")).wait_for()
    side = page.locator("#checkpoint-diff tr.diff-side-row")
    assert side.locator("td.diff-side-old").first.inner_text() == "{}"
    summary.click()
    assert not side.locator(".diff-side-table").is_visible()
    assert problems.all() == []
