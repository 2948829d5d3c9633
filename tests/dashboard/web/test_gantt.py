"""The run page's executor timeline: bars per invocation in their superstep's column, sized by
how long they took, waits for a decision shown as such, each bar a link to its checkpoint."""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable
from typing import Any

import pytest
from django.test import Client

from dashboard import services
from dashboard.models import RunEvent, WorkflowRun
from dashboard.renderers.gantt import BAR_MIN, WIDTH
from dashboard.web.live import fragments as live_fragments
from dashboard.web.run_page import gantt

T0 = 1_800_000_000.0


class Log:
    """Events written for one run, as the worker and the services would store them."""

    def __init__(self, run: WorkflowRun) -> None:
        self.run = run
        self.seq = 0

    def add(self, type: str, at: float | None = None, **data: Any) -> None:
        self.seq += 1
        if at is not None:
            data["at"] = at
        RunEvent.objects.create(
            run=self.run,
            seq=self.seq,
            type=type,
            data={"type": type, **data},
            created_at=dt.datetime.fromtimestamp(at or T0, tz=dt.UTC),
        )

    def superstep(
        self,
        n: int,
        start: float,
        calls: list[tuple[str, float, float | None, bool]],
        end: float,
        checkpoint: str,
    ) -> None:
        self.add("superstep_started", start, iteration=n)
        for executor, begin, _, _ in calls:
            self.add("executor_invoked", begin, executor_id=executor, iteration=n)
        for executor, _, finish, failed in calls:
            if finish is not None:
                self.add(
                    "executor_failed" if failed else "executor_completed",
                    finish,
                    executor_id=executor,
                    iteration=n,
                )
        self.add(
            "superstep_completed",
            None,
            iteration=n,
            checkpoint_id=checkpoint,
            kind="superstep",
            size_bytes=100,
            pending_requests=0,
        )
        RunEvent.objects.filter(run=self.run, seq=self.seq).update(
            created_at=dt.datetime.fromtimestamp(end, tz=dt.UTC)
        )


@pytest.fixture
def run(make_run: Callable[..., WorkflowRun]) -> WorkflowRun:
    return make_run(status="completed")


pytestmark = pytest.mark.django_db


def test_bars_sit_in_their_superstep_sized_by_how_long_they_took(run: WorkflowRun) -> None:
    log = Log(run)
    log.superstep(1, T0, [("fetch", T0, T0 + 1.0, False)], T0 + 1.0, "cp-1")
    log.superstep(
        2,
        T0 + 1.0,
        [("left", T0 + 1.0, T0 + 1.5, False), ("right", T0 + 1.0, T0 + 3.0, False)],
        T0 + 3.0,
        "cp-2",
    )

    chart = gantt.build(run)

    assert chart is not None and chart.executors == ["fetch", "left", "right"]
    first, second = chart.columns
    assert (first.label, second.label) == ("1", "2")
    assert second.width > first.width  # two seconds against one
    assert first.href.endswith("/checkpoints/cp-1/") and second.href.endswith("/checkpoints/cp-2/")
    bars = {bar.executor: bar for bar in chart.bars}
    assert bars["left"].x == pytest.approx(bars["right"].x)  # started together
    assert bars["left"].width == pytest.approx(bars["right"].width / 4, rel=0.05)
    assert bars["right"].x + bars["right"].width == pytest.approx(second.x + second.width)
    assert bars["right"].href == second.href
    assert "right · superstep 2 · took 2 s" == bars["right"].title


def test_a_failed_invocation_and_one_cut_short_say_so(run: WorkflowRun) -> None:
    log = Log(run)
    log.superstep(
        1,
        T0,
        [("ok", T0, T0 + 0.2, False), ("boom", T0, T0 + 0.1, True), ("cut", T0, None, False)],
        T0 + 0.2,
        "cp-1",
    )

    states = {bar.executor: bar.state for bar in gantt.build(run).bars}  # type: ignore[union-attr]

    assert states == {"ok": "done", "boom": "failed", "cut": "failed"}


def test_waiting_for_a_decision_is_a_column_of_its_own_with_its_length(run: WorkflowRun) -> None:
    log = Log(run)
    log.superstep(1, T0, [("gate", T0, T0 + 0.1, False)], T0 + 0.1, "cp-1")
    log.add(
        "request_info",
        T0 + 0.05,
        executor_id="gate",
        source_executor_id="gate",
        request_id="req-1",
        iteration=1,
    )
    # Decided two hours later; the run goes on.
    log.add(
        "approval_decided",
        None,
        request_id=f"{run.engine_run_id}:req-1",
        decision="approved",
        by="ana",
    )
    RunEvent.objects.filter(run=run, seq=log.seq).update(
        created_at=dt.datetime.fromtimestamp(T0 + 7200.1, tz=dt.UTC)
    )
    log.superstep(2, T0 + 7200.2, [("apply", T0 + 7200.2, T0 + 7200.3, False)], T0 + 7200.3, "cp-2")

    chart = gantt.build(run)

    assert chart is not None
    assert [c.label for c in chart.columns] == ["1", "waited 2 h 00 min", "2"]
    wait = next(b for b in chart.bars if b.state == "waiting")
    assert wait.executor == "gate" and "waited 2 h 00 min" in wait.title
    # The wait does not squeeze the work: both supersteps keep real widths.
    assert chart.columns[0].width > 100 and chart.columns[2].width > 100


def test_a_request_still_open_is_waiting(make_run: Callable[..., WorkflowRun]) -> None:
    run = make_run(status="waiting")
    log = Log(run)
    log.superstep(1, T0, [("gate", T0, T0 + 0.1, False)], T0 + 0.1, "cp-1")
    log.add(
        "request_info",
        T0 + 0.05,
        executor_id="gate",
        source_executor_id="gate",
        request_id="r",
        iteration=1,
    )

    chart = gantt.build(run, now=dt.datetime.fromtimestamp(T0 + 300, tz=dt.UTC))

    assert chart is not None and chart.columns[-1].label == "waiting 4 min 59 s"


def test_events_without_a_time_of_their_own_fill_their_superstep(run: WorkflowRun) -> None:
    log = Log(run)
    log.add("superstep_started", None, iteration=1)
    log.add("executor_invoked", None, executor_id="old", iteration=1)
    log.add("executor_completed", None, executor_id="old", iteration=1)
    log.add("superstep_completed", None, iteration=1, checkpoint_id="cp", kind="superstep")

    (bar,) = gantt.build(run).bars  # type: ignore[union-attr]

    assert bar.state == "done" and bar.width >= BAR_MIN


def test_a_long_run_shows_its_latest_supersteps_numbered_as_they_ran(run: WorkflowRun) -> None:
    log = Log(run)
    for n in range(1, 61):
        log.superstep(n, T0 + n, [("loop", T0 + n, T0 + n + 0.5, False)], T0 + n + 0.5, f"cp-{n}")

    chart = gantt.build(run)

    assert chart is not None and chart.hidden_supersteps == 20
    assert [c.label for c in chart.columns] == [str(n) for n in range(21, 61)]
    assert chart.columns[-1].x + chart.columns[-1].width == pytest.approx(WIDTH)


def test_no_superstep_yet_no_chart(run: WorkflowRun) -> None:
    assert gantt.build(run) is None


@pytest.mark.django_db(transaction=True)
def test_the_run_page_draws_a_real_run_and_redraws_it_live(
    client_as: Callable[..., Client], drive: Callable[..., WorkflowRun]
) -> None:
    operator = client_as("Operator")
    run = drive(
        services.run_start,
        workflow_name="return-replace",
        input={"order_id": "ORD-G", "work_ms": 0},
        user=operator.user,
    )  # type: ignore[attr-defined]

    page = operator.get(f"/runs/{run.pk}/").content.decode()
    card = page.split('id="run-gantt"', 1)[1].split("</section>", 1)[0]
    assert "<svg" in card and "/checkpoints/" in card and "hitl-gate" in card
    assert "is-waiting" in card and "waiting" in card
    stamped = RunEvent.objects.filter(run=run, type="executor_invoked")
    assert stamped.exists() and all(isinstance(e.data.get("at"), float) for e in stamped)

    completed = list(RunEvent.objects.filter(run=run, type="superstep_completed").order_by("seq"))[
        -1:
    ]
    redrawn = live_fragments.run_update(run.pk, completed)
    assert (
        '<section id="run-gantt" class="card" aria-labelledby="gantt-title" hx-swap-oob="true">'
        in redrawn
    )


def test_columns_are_numbered_by_superstep_after_a_resume(run: WorkflowRun) -> None:
    log = Log(run)
    for n in (1, 2, 3):  # the first attempt
        log.superstep(n, T0 + n, [("work", T0 + n, T0 + n + 0.5, False)], T0 + n + 0.5, f"a{n}")
    for n in (2, 3):  # resumed from superstep 1's checkpoint
        log.superstep(
            n, T0 + 9 + n, [("work", T0 + 9 + n, T0 + 10 + n, False)], T0 + 10 + n, f"b{n}"
        )

    chart = gantt.build(run)

    assert chart is not None
    assert [(c.label, c.superseded) for c in chart.columns] == [
        ("1", False),
        ("2", True),
        ("3", True),
        ("2", False),
        ("3", False),
    ]
    assert chart.columns[3].href.endswith("/checkpoints/b2/")
    assert chart.columns[1].href.endswith("/checkpoints/a2/")
    assert chart.columns[1].title == "Superstep 2, an earlier attempt"
    (span,) = chart.earlier
    assert span.x == pytest.approx(chart.columns[1].x)
    assert span.end == pytest.approx(chart.columns[2].x + chart.columns[2].width)
    assert "superstep 2 (earlier attempt)" in chart.bars[1].title


def test_a_retry_marks_the_failed_superstep_as_an_earlier_attempt(run: WorkflowRun) -> None:
    log = Log(run)
    log.superstep(1, T0, [("work", T0, T0 + 0.5, False)], T0 + 0.5, "cp-1")
    log.add("superstep_started", T0 + 1, iteration=2)
    log.add("executor_invoked", T0 + 1, executor_id="work", iteration=2)
    log.add("executor_failed", T0 + 1.5, executor_id="work", iteration=2)
    log.superstep(2, T0 + 5, [("work", T0 + 5, T0 + 6, False)], T0 + 6, "cp-2")

    chart = gantt.build(run)

    assert chart is not None
    assert [(c.label, c.superseded) for c in chart.columns] == [
        ("1", False),
        ("2", True),
        ("2", False),
    ]


def test_a_fork_numbers_its_columns_from_its_checkpoint(run: WorkflowRun) -> None:
    log = Log(run)
    for n in (5, 6, 7):
        log.superstep(n, T0 + n, [("work", T0 + n, T0 + n + 0.5, False)], T0 + n + 0.5, f"f{n}")

    chart = gantt.build(run)

    assert chart is not None
    assert [c.label for c in chart.columns] == ["5", "6", "7"]
    assert not chart.earlier and not any(c.superseded for c in chart.columns)
