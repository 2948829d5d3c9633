"""Every live element is true: two operators in two browser profiles, one acting, the other
watching a page that never reloads. The watcher's header actions, status, superstep, durations,
graph colours, runs list rows, toasts and open approval form follow what the other one did, and
an action that raced with it gets an answer in words, in place."""

from __future__ import annotations

import re
import time
from collections.abc import Callable
from typing import Any

import pytest

from tests.browser.deadlines import ms
from tests.browser.pages import approve_in_inbox, reject_in_inbox

pytestmark = [pytest.mark.browser, pytest.mark.slow]

RUN_URL = re.compile(r"/runs/[0-9a-f-]{36}/$")
NO_RELOAD = "window.__stillTheSamePage = true"
SAME_PAGE = "window.__stillTheSamePage === true"
# Chromium logs the answer to a refused (stale) action; that one line is expected.
CONFLICT_LOG = ("status of 409 (Conflict)",)
# The header's own buttons (the dialogs inside #run-actions have buttons too).
HEADER_ACTIONS = """() => Array.from(
  document.querySelectorAll('#run-actions > form button[type=submit]'),
  b => b.textContent.trim())"""
# Closing a page's socket for good, as a network that dropped it would leave the page: the
# page keeps what it showed last, which is how an operator ends up with a stale button.
CUT_SOCKET = "(id) => document.getElementById(id).remove()"
# From the Details card's "Started" to its "Finished", in seconds.
WALL_CLOCK_SECONDS = (
    r"""() => {
  const [created, started, finished] = Array.from(
    document.querySelectorAll('#run-details time.timestamp'), """
    r"""t => Date.parse(t.dateTime.replace(/(\.\d{3})\d+/, "$1")));
  return (finished - started) / 1000;
}"""
)


def start_run(page: Any, workflow: str, **fields: object) -> str:
    page.goto(f"/runs/start/?workflow={workflow}")
    for name, value in fields.items():
        page.fill(f"#id_input-{name}", str(value))
    page.click("form .card-footer button[type=submit]")
    page.wait_for_url(RUN_URL)
    return str(page.url).rstrip("/").rsplit("/", 1)[-1]


def header_offers(page: Any, *labels: str, timeout: float = 30_000) -> None:
    """Wait until the run header offers exactly these actions (in order); ``timeout`` in ms
    on a quiet machine."""
    from playwright.sync_api import TimeoutError as PlaywrightTimeout

    try:
        page.wait_for_function(
            f"(want) => JSON.stringify(({HEADER_ACTIONS})()) === JSON.stringify(want)",
            arg=list(labels),
            timeout=ms(timeout),
        )
    except PlaywrightTimeout:
        raise AssertionError(
            f"header offers {page.evaluate(HEADER_ACTIONS)}, expected {list(labels)}"
        ) from None


def pill(page: Any, where: str, status: str, timeout: float = 30_000) -> None:
    page.wait_for_selector(f"{where} .pill.status-{status}", timeout=ms(timeout))


def node_state(page: Any, executor: str) -> str:
    classes = page.get_attribute(f'#run-graph g.node[data-executor="{executor}"]', "class")
    return str(classes).replace("node state-", "")


def confirm(page: Any, dialog: str) -> None:
    page.fill(f"{dialog}-reason", "checking")  # every action says why
    page.locator(f"{dialog} button[value=confirm]").click()


def superstep_in_header(page: Any) -> int:
    found = re.search(r"superstep (\d+)", page.inner_text("#run-header"))
    return int(found.group(1)) if found else -1


def retry_until_it_runs_past(page: Any, run_id: str, step: int) -> None:
    """Retry a fail-at-step run until its simulated outage is over (it is measured from the
    run's start, which this test does not control to the second)."""
    for _ in range(10):
        page.goto(f"/runs/{run_id}/")
        page.locator("#run-actions > form button:has-text('Retry')").click()
        confirm(page, "#retry-dialog")
        page.wait_for_selector("#run-header .pill:not(.status-failed)")  # the retry was taken
        page.wait_for_function(
            "(step) => document.querySelector('#run-header .pill.status-failed')"
            " || +(/superstep (\\d+)/.exec(document.getElementById('run-header').textContent)"
            " || [0, -1])[1] > step",
            arg=step,
            timeout=ms(60_000),
        )
        if superstep_in_header(page) > step:
            return
        time.sleep(1)  # still inside the outage: give it a moment before asking again
    raise AssertionError("the run never got past its simulated outage")


def two_operators(
    new_context: Callable[..., Any], login_as: Callable[..., None], other: str = "admin"
) -> tuple[Any, Any]:
    watcher = new_context().new_page()
    login_as(watcher, "ops")
    actor = new_context().new_page()
    login_as(actor, other)
    return watcher, actor


def test_header_actions_follow_failure_and_retry_and_a_stale_cancel_is_answered_in_place(
    new_context: Callable[..., Any], login_as: Callable[..., None], problems: Any
) -> None:
    watcher, actor = two_operators(new_context, login_as)
    run_id = start_run(
        watcher, "fail-at-step", steps=300, fail_at=3, outage_seconds=8, work_ms=1200
    )
    watcher.evaluate(NO_RELOAD)
    header_offers(watcher, "Cancel run")

    # It fails while the page is open: Cancel goes, Retry comes.
    pill(watcher, "#run-header", "failed")
    header_offers(watcher, "Retry")

    # Another operator retries it: Retry goes, Cancel comes back, the superstep moves on.
    retry_until_it_runs_past(actor, run_id, 3)
    pill(watcher, "#run-header", "running")
    header_offers(watcher, "Cancel run")
    watcher.wait_for_function(
        "() => +/superstep (\\d+)/.exec(document.getElementById('run-header').textContent)[1] > 3"
    )

    # The watcher's socket drops; the other operator cancels; the watcher's Cancel is stale.
    watcher.evaluate(CUT_SOCKET, "run-live")
    actor.goto(f"/runs/{run_id}/")
    actor.locator("#run-actions > form button:has-text('Cancel run')").click()
    confirm(actor, "#cancel-dialog")
    pill(actor, "#run-header", "cancelled")
    assert watcher.locator("#run-header .pill.status-running").count() == 1

    watcher.locator("#run-actions > form button:has-text('Cancel run')").click()
    confirm(watcher, "#cancel-dialog")
    error = watcher.locator("#toasts .toast-error")
    error.wait_for()
    assert re.fullmatch(
        r"admin cancelled this run (just now|\d+ seconds? ago)\.",
        error.locator(".toast-text").inner_text(),
    ), error.inner_text()
    # Still on the run page, with its header as it is now.
    assert RUN_URL.search(watcher.url) and watcher.evaluate(SAME_PAGE)
    pill(watcher, "#run-header", "cancelled", timeout=5_000)
    header_offers(watcher, timeout=5_000)
    # An error waits for the operator: it has a close button, and goes when that is pressed.
    assert error.locator("button.toast-close").is_visible()
    error.locator("button.toast-close").click()
    assert watcher.locator("#toasts .toast-error").count() == 0
    assert problems.all(allow=CONFLICT_LOG) == []


def test_a_cancelled_run_reads_cancelled_everywhere_without_a_reload(
    new_context: Callable[..., Any], login_as: Callable[..., None], problems: Any
) -> None:
    watcher, actor = two_operators(new_context, login_as)
    run_id = start_run(watcher, "squares", limit=900, work_ms=400)
    listing = watcher.context.new_page()
    listing.goto("/")
    listing.evaluate(NO_RELOAD)
    watcher.evaluate(NO_RELOAD)
    pill(watcher, "#run-header", "running")
    watcher.wait_for_function(
        "() => document.querySelector('#run-graph g.node[data-executor=\"worker\"]')"
        ".classList.contains('state-running')"
    )

    actor.goto(f"/runs/{run_id}/")
    actor.locator("#run-actions > form button:has-text('Cancel run')").click()
    confirm(actor, "#cancel-dialog")

    pill(watcher, "#run-header", "cancelled")
    header_offers(watcher)
    # The executor that was at work was stopped: it did not finish.
    watcher.wait_for_function(
        "() => document.querySelector('#run-graph g.node[data-executor=\"worker\"]')"
        ".classList.contains('state-cancelled')"
    )
    assert node_state(watcher, "start") == "done"
    outcome = watcher.inner_text("#run-outcome")
    assert re.search(r"This run was cancelled (just now|\d+ s ago)\. Resume it", outcome), outcome
    row = f'#runs-table tr:has(a[href="/runs/{run_id}/"])'
    pill(listing, row, "cancelled")
    assert watcher.evaluate(SAME_PAGE) and listing.evaluate(SAME_PAGE)
    assert problems.all() == []


def test_the_runs_list_moves_with_every_superstep_without_a_storm_of_requests(
    new_context: Callable[..., Any], login_as: Callable[..., None], problems: Any
) -> None:
    watcher, actor = two_operators(new_context, login_as)
    watcher.goto("/")
    watcher.evaluate(NO_RELOAD)
    reloads: list[str] = []
    watcher.on(
        "request",
        lambda request: (
            reloads.append(request.url)
            if request.headers.get("hx-target") == "runs-table"
            else None
        ),
    )
    began = time.monotonic()
    run_id = start_run(actor, "squares", limit=12, work_ms=700)
    row = f'#runs-table tr:has(a[href="/runs/{run_id}/"])'
    pill(watcher, row, "running")
    # The superstep moves while the run is still running, not only when it finishes.
    watcher.wait_for_function(
        "(row) => { const tr = document.querySelector(row);"
        " return tr && tr.querySelector('.pill.status-running')"
        " && +tr.querySelector('td[data-label=Superstep]').textContent >= 4; }",
        arg=row,
        timeout=ms(30_000),
    )
    pill(watcher, row, "completed", timeout=60_000)
    pill(actor, "#run-header", "completed")
    final = watcher.inner_text(f"{row} td[data-label=Superstep]").strip()
    assert final == str(superstep_in_header(actor)), final
    elapsed = time.monotonic() - began
    # At most one reload a second, however many supersteps and runs there were.
    assert len(reloads) <= elapsed + 2, (len(reloads), elapsed)
    assert watcher.evaluate(SAME_PAGE)
    assert problems.all() == []


def test_toasts_leave_by_themselves(
    new_context: Callable[..., Any], login_as: Callable[..., None], problems: Any
) -> None:
    page = new_context().new_page()
    login_as(page, "ops")
    start_run(page, "squares", limit=2, work_ms=0)
    queued = page.locator("#toasts .toast", has_text="is queued")
    assert queued.is_visible()
    queued.wait_for(state="detached", timeout=ms(20_000))
    assert page.locator("#toasts .toast").count() == 0
    assert problems.all() == []


def test_a_request_decided_elsewhere_closes_the_open_form_and_says_who_and_why(
    new_context: Callable[..., Any], login_as: Callable[..., None], problems: Any
) -> None:
    watcher, actor = two_operators(new_context, login_as, other="approver2")
    run_id = start_run(watcher, "return-replace", order_id="ORD-ELSEWHERE", work_ms=0)
    pill(watcher, "#run-header", "waiting")
    header_offers(watcher, "Cancel run")
    watcher.evaluate(NO_RELOAD)
    link = str(watcher.get_attribute("#run-outcome a:has-text('Decide in the inbox')", "href"))
    inbox = watcher.context.new_page()
    inbox.goto(link)
    inbox.evaluate(NO_RELOAD)
    inbox.fill("#id_reason", "I was about to")

    actor.goto(link)
    actor.fill("#id_reason", "Within policy")
    approve_in_inbox(actor)

    # The open form is gone, and says who decided, when and why.
    inbox.wait_for_selector("#approval-panel .decided-summary", timeout=ms(15_000))
    assert inbox.locator("#approval-panel button[value=approve]").count() == 0
    summary = inbox.inner_text("#approval-panel .decided-summary")
    assert re.search(
        r"Approved by approver2 (just now|\d+ s ago) — reason “Within policy”", summary
    ), summary
    # The run page tells the same, and follows the run to its end.
    watcher.wait_for_selector("#run-outcome :text('Approved by approver2')")
    pill(watcher, "#run-header", "completed")
    header_offers(watcher)
    assert watcher.evaluate(SAME_PAGE) and inbox.evaluate(SAME_PAGE)
    assert f"/runs/{run_id}/" in watcher.url
    assert problems.all() == []


def test_a_decision_that_lost_the_race_is_told_in_a_sentence(
    new_context: Callable[..., Any], login_as: Callable[..., None], problems: Any
) -> None:
    watcher, actor = two_operators(new_context, login_as, other="approver2")
    start_run(watcher, "return-replace", order_id="ORD-RACE-2", work_ms=0)
    pill(watcher, "#run-header", "waiting")
    link = str(watcher.get_attribute("#run-outcome a:has-text('Decide in the inbox')", "href"))
    watcher.goto(link)
    watcher.evaluate(CUT_SOCKET, "approvals-live")  # this tab hears nothing from now on

    actor.goto(link)
    approve_in_inbox(actor)

    reject_in_inbox(watcher, "I looked at it too")
    error = watcher.locator("#decide-error")
    error.wait_for()
    message = error.inner_text()
    assert re.search(r"approver2 already approved this (just now|\d+ seconds? ago)\.", message), (
        message
    )
    assert "request '" not in message and not re.search(r"\d{4}-\d\d-\d\dT", message), message
    assert watcher.locator("#approval-panel button[value=reject]").count() == 0
    assert "Approved by approver2" in watcher.inner_text("#approval-panel .decided-summary")
    assert problems.all(allow=CONFLICT_LOG) == []


def test_the_duration_leaves_out_the_time_spent_waiting_for_a_person(
    new_context: Callable[..., Any], login_as: Callable[..., None], problems: Any
) -> None:
    watcher, actor = two_operators(new_context, login_as, other="approver2")
    run_id = start_run(watcher, "return-replace", order_id="ORD-WAITED", work_ms=0)
    pill(watcher, "#run-header", "waiting")
    listing = watcher.context.new_page()
    listing.goto("/")
    row = f'#runs-table tr:has(a[href="/runs/{run_id}/"])'
    frozen_page = watcher.inner_text("#run-details .duration")
    frozen_row = listing.inner_text(f"{row} td[data-label=Duration] .duration")
    time.sleep(4)  # a person takes their time; the run does nothing meanwhile
    assert watcher.inner_text("#run-details .duration") == frozen_page
    assert listing.inner_text(f"{row} td[data-label=Duration] .duration") == frozen_row

    link = str(watcher.get_attribute("#run-outcome a:has-text('Decide in the inbox')", "href"))
    actor.goto(link)
    approve_in_inbox(actor)
    pill(watcher, "#run-header", "completed")
    details = watcher.inner_text("#run-details")
    wall = watcher.evaluate(WALL_CLOCK_SECONDS)
    shown = watcher.inner_text("#run-details .duration")
    seconds = re.fullmatch(r"(\d+) s", shown)
    assert seconds and int(seconds.group(1)) <= wall - 3, (shown, wall)
    assert re.search(r"Waiting time\s+\d+ s for approval", details), details
    assert problems.all() == []


def test_the_fork_link_opens_the_editor(
    new_context: Callable[..., Any], login_as: Callable[..., None], problems: Any
) -> None:
    page = new_context().new_page()
    login_as(page, "ops")
    start_run(page, "squares", limit=2, work_ms=0)
    pill(page, "#run-header", "completed")
    page.click("#run-actions a:has-text('Inspect latest checkpoint')")
    page.click("a:has-text('Fork…')")
    page.wait_for_selector("#fork-form", state="visible", timeout=ms(5_000))
    assert problems.all() == []
