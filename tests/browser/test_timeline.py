"""The run page's executor timeline in Chromium, numbered by superstep: after a retry, a resume
and a fork, each column reads the superstep the checkpoint list calls it by, opens that
checkpoint, and the columns a retry or resume ran again are marked as an earlier attempt; the
run's attempts are counted on its page and in the runs list. A second operator watches while
the first acts."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import pytest

from tests.browser.deadlines import ms, seconds
from tests.browser.pages import start_run

pytestmark = [pytest.mark.browser, pytest.mark.slow]

# (superstep, earlier attempt) per superstep column, left to right, the number as the column's
# tooltip says it ("Superstep 3: open its checkpoint"); waits are left out.
COLUMNS = """() => Array.from(
  document.querySelectorAll('#run-gantt g.gantt-column:not(.is-waiting)'),
  g => [(/Superstep (\\d+)/.exec(g.querySelector('title').textContent) || [0, ''])[1],
        g.classList.contains('is-superseded')])"""


def columns(page: Any) -> list[tuple[str, bool]]:
    return [(label, superseded) for label, superseded in page.evaluate(COLUMNS)]


def current(page: Any) -> list[str]:
    return [label for label, superseded in columns(page) if not superseded]


def earlier(page: Any) -> list[str]:
    return [label for label, superseded in columns(page) if superseded]


def wait_for_status(page: Any, status: str) -> None:
    page.wait_for_selector(f"#run-header .pill.status-{status}", timeout=ms(60_000))


def retry_until_it_completes(page: Any, run_id: str) -> None:
    """Retry a fail-at-step run until its simulated outage (measured from the run's start,
    which the test does not control to the second) is over and it completes."""
    deadline = time.monotonic() + seconds(60)
    while time.monotonic() < deadline:
        before = run_state(page, run_id)["last_event_seq"]
        page.goto(f"/runs/{run_id}/")
        page.locator("#run-actions > form button:has-text('Retry')").click()
        page.fill("#retry-dialog-reason", "the outage may be over")  # every action says why
        page.locator("#retry-dialog button[value=confirm]").click()
        # Asked of the API, not the page's header: on a quick machine the retried run fails
        # again within a frame, and the header's moment as "queued" is never seen.
        state = run_state(page, run_id)
        while time.monotonic() < deadline and not (
            state["last_event_seq"] > before and state["status"] in ("failed", "completed")
        ):
            time.sleep(0.1)
            state = run_state(page, run_id)
        if state["status"] == "completed":
            return
        time.sleep(0.5)  # still inside the outage: give it a moment before asking again
    raise AssertionError("the run never got past its simulated outage")


def run_state(page: Any, run_id: str) -> dict[str, Any]:
    answer = page.request.get(f"/api/runs/{run_id}/")
    assert answer.status == 200, answer.text()
    found: dict[str, Any] = answer.json()
    return found


def open_column(page: Any, superstep: str) -> None:
    """Click the current attempt's column of ``superstep`` and land on its checkpoint."""
    found = columns(page)
    index = next(i for i, shown in enumerate(found) if shown == (superstep, False))
    page.locator("#run-gantt g.gantt-column:not(.is-waiting)").nth(index).locator("a").click()
    page.wait_for_url("**/checkpoints/**")
    assert f"Checkpoint after superstep {superstep}" in page.inner_text("h1")


def test_timeline_columns_read_their_superstep_after_a_retry_a_resume_and_a_fork(
    new_context: Callable[..., Any], login_as: Callable[..., None], problems: Any
) -> None:
    actor = new_context().new_page()
    login_as(actor, "ops")
    watcher = new_context().new_page()
    login_as(watcher, "admin")

    # A run of six steps whose third fails while a two-second outage lasts.
    run_id = start_run(actor, "fail-at-step", steps=6, fail_at=3, outage_seconds=2, work_ms=0)
    wait_for_status(actor, "failed")
    watcher.goto(f"/runs/{run_id}/")
    failed_at = current(watcher)[-1]

    # The retry runs the failed superstep again: its first try is an earlier attempt, and the
    # numbers go on from there instead of counting columns.
    retry_until_it_completes(actor, run_id)
    watcher.reload()
    numbers = current(watcher)
    assert numbers == [str(n) for n in range(1, len(numbers) + 1)], columns(watcher)
    assert failed_at in earlier(watcher), columns(watcher)
    assert "earlier attempt" in watcher.inner_text("#run-gantt")
    last = numbers[-1]

    # Its durations: the active time apart from the time it sat failed, and its attempts.
    attempts = int(watcher.inner_text("#run-details dd.duration-attempts").split()[0])
    assert attempts >= 2 and "retried or resumed" in watcher.inner_text("#run-details")
    watcher.goto("/")
    row = watcher.locator(f'#runs-table tr:has(a[href="/runs/{run_id}/"])')
    assert f"{attempts} attempts" in row.locator("td[data-label=Duration]").inner_text()
    watcher.goto(f"/runs/{run_id}/")

    # Resume from superstep 2, reached through the timeline itself: 3 onwards run again.
    actor.goto(f"/runs/{run_id}/")
    open_column(actor, "2")
    actor.click("button:has-text('Resume from here')")
    actor.fill("#resume-dialog-reason", "run 3 onwards again")
    actor.locator("#resume-dialog button[value=confirm]").click()
    actor.wait_for_url(f"**/runs/{run_id}/")
    wait_for_status(actor, "completed")
    watcher.reload()
    assert current(watcher) == numbers, columns(watcher)
    assert sorted(set(earlier(watcher)), key=int) == numbers[2:], columns(watcher)
    open_column(watcher, last)  # the column of the last superstep opens that checkpoint

    # A fork from superstep 4 starts at 5, not at 1.
    actor.goto(f"/runs/{run_id}/")
    open_column(actor, "4")
    actor.click("#fork summary")
    actor.click("#fork-form button[data-fork-review]")
    actor.fill("#fork-reason", "try it from 4")  # in the review dialog
    actor.locator("#fork-dialog[open] button[data-fork-confirm-button]").click()
    actor.wait_for_url(lambda url: f"/runs/{run_id}/" not in url and "/checkpoints/" not in url)
    fork_id = actor.url.rstrip("/").rsplit("/", 1)[-1]
    wait_for_status(actor, "completed")
    watcher.goto(f"/runs/{fork_id}/")
    assert current(watcher) == [str(n) for n in range(5, int(last) + 1)], columns(watcher)
    assert earlier(watcher) == []
    open_column(watcher, "5")
    assert problems.all() == []
