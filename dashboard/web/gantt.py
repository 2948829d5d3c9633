"""The run page's per-executor timeline: each executor invocation a bar in its superstep's
column, waiting for a person shown as waiting, each bar a link to the checkpoint its superstep
wrote. Built from the events the run already stored (``RunEvent``), drawn as SVG
(``components/gantt.html``: attributes, not inline styles, which the CSP refuses).

Time: the worker stamps the engine's executor and superstep events with the moment it saw them
(``at``, Unix seconds); events without a stamp (older runs, the services' own) fall back to
their commit time, which places them at their superstep's boundaries. Columns are as wide as
their superstep lasted, with a minimum so that a 1 ms superstep stays clickable; a wait for a
decision gets a fixed width however long it took, its length said in words, so two days of
waiting do not squeeze the work into a hairline.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
from typing import Any

from django.urls import reverse
from django.utils import timezone

from dashboard.models import RunEvent, WorkflowRun
from dashboard.web.timefmt import duration_text as _duration

__all__ = ["Bar", "Column", "Gantt", "build", "gantt_context"]

SHOWN_SUPERSTEPS = 40
TYPES = (
    "superstep_started",
    "superstep_completed",
    "executor_invoked",
    "executor_completed",
    "executor_failed",
    "request_info",
    "approval_decided",
)
WIDTH = 1000.0
LABELS = 150.0
ROW = 22.0
AXIS = 20.0
MIN_COLUMN = 8.0
WAIT_COLUMN = 96.0
BAR_MIN = 6.0
# Waits shorter than this are part of the work (a resume picked up at once), not a column.
WAIT_SHOWN_AFTER = 1.0


@dataclasses.dataclass(frozen=True)
class Bar:
    executor: str
    row: int
    x: float
    width: float
    state: str  # done, failed, running, waiting
    title: str
    href: str = ""

    @property
    def y(self) -> float:
        return AXIS + self.row * ROW + 4


@dataclasses.dataclass(frozen=True)
class Column:
    x: float
    width: float
    label: str  # "3" for superstep 3, "waited 2 h" for a wait
    waiting: bool = False
    href: str = ""


@dataclasses.dataclass(frozen=True)
class Gantt:
    executors: list[str]
    columns: list[Column]
    bars: list[Bar]
    hidden_supersteps: int

    @property
    def height(self) -> float:
        return AXIS + len(self.executors) * ROW + 4

    @property
    def rows(self) -> list[tuple[str, float]]:
        return [(name, AXIS + i * ROW + 15) for i, name in enumerate(self.executors)]

    width = WIDTH
    label_width = LABELS


@dataclasses.dataclass
class _Step:
    started: float
    ended: float | None = None
    checkpoint_id: str = ""
    invocations: list[dict[str, Any]] = dataclasses.field(default_factory=list)
    requests: list[tuple[str, str]] = dataclasses.field(default_factory=list)  # (executor, request)


def duration_text(seconds: float) -> str:
    return _duration(dt.timedelta(seconds=seconds))


def _at(event: RunEvent) -> float:
    data = event.data if isinstance(event.data, dict) else {}
    stamp = data.get("at")
    if isinstance(stamp, int | float) and not isinstance(stamp, bool):
        return float(stamp)
    return event.created_at.timestamp()


def _events(run: WorkflowRun) -> tuple[list[RunEvent], int]:
    """The events of the last SHOWN_SUPERSTEPS supersteps (and the decisions after them), and
    how many supersteps came before those."""
    starts = RunEvent.objects.filter(run=run, type="superstep_started").order_by("-seq")
    total = starts.count()
    first = starts.values_list("seq", flat=True)[SHOWN_SUPERSTEPS - 1 : SHOWN_SUPERSTEPS].first()
    rows = RunEvent.objects.filter(run=run, type__in=TYPES)
    if first is not None:
        rows = rows.filter(seq__gte=first)
    return list(rows.order_by("seq")), max(0, total - SHOWN_SUPERSTEPS)


def _steps(events: list[RunEvent]) -> tuple[list[_Step], dict[str, float]]:
    """Supersteps in the order they ran (a resume from an earlier checkpoint runs a number
    again: a new column), and when each request was decided."""
    steps: list[_Step] = []
    decided: dict[str, float] = {}
    for event in events:
        data = event.data if isinstance(event.data, dict) else {}
        when = _at(event)
        if event.type == "superstep_started":
            steps.append(_Step(started=when))
        elif event.type == "approval_decided":
            # The dashboard's request id is "<engine run>:<engine request>".
            decided[str(data.get("request_id", "")).rsplit(":", 1)[-1]] = when
        elif not steps:
            continue  # before the first superstep shown
        elif event.type == "superstep_completed":
            steps[-1].ended = when
            steps[-1].checkpoint_id = str(data.get("checkpoint_id") or "")
        elif event.type == "executor_invoked":
            steps[-1].invocations.append({"executor": str(data.get("executor_id") or ""), "start": when})
        elif event.type in ("executor_completed", "executor_failed"):
            executor = str(data.get("executor_id") or "")
            for call in steps[-1].invocations:
                if call["executor"] == executor and "end" not in call:
                    call["end"] = when
                    call["failed"] = event.type == "executor_failed"
                    break
        elif event.type == "request_info":
            steps[-1].requests.append(
                (str(data.get("source_executor_id") or data.get("executor_id") or ""),
                 str(data.get("request_id") or ""))
            )
    return steps, decided


def build(run: WorkflowRun, *, now: dt.datetime | None = None) -> Gantt | None:
    """The timeline of ``run``'s latest supersteps; None before its first superstep."""
    events, hidden = _events(run)
    steps, decided = _steps(events)
    if not steps:
        return None
    clock = (now or timezone.now()).timestamp()
    live = run.status in ("queued", "running")
    executors: list[str] = []
    for step in steps:
        for call in step.invocations:
            if call["executor"] not in executors:
                executors.append(call["executor"])
        for executor, _ in step.requests:
            if executor not in executors:
                executors.append(executor)
    if not executors:
        return None

    # Columns in order: ("step", superstep, its seconds, "") or ("wait", the superstep that
    # asked, seconds waited, what to say).
    plan: list[tuple[str, _Step, float, str]] = []
    for i, step in enumerate(steps):
        last_end = max([c.get("end", step.started) for c in step.invocations] + [step.started])
        end = step.ended or (clock if live and i == len(steps) - 1 else last_end)
        step.ended = max(end, step.started)
        plan.append(("step", step, max(step.ended - step.started, 1e-6), ""))
        if step.requests:
            following = steps[i + 1].started if i + 1 < len(steps) else None
            answered = [decided[r] for _, r in step.requests if r in decided]
            until = following or (max(answered) if answered else clock)
            waited = until - step.ended
            if waited >= WAIT_SHOWN_AFTER or following is None:
                pending = following is None and not answered
                text = f"{'waiting' if pending else 'waited'} {duration_text(max(waited, 0))}"
                plan.append(("wait", step, waited, text))

    work = sum(seconds for kind, _, seconds, _ in plan if kind == "step")
    waits = sum(1 for kind, *_ in plan if kind == "wait")
    room = WIDTH - LABELS - waits * WAIT_COLUMN
    steps_count = len(steps)
    # Every superstep gets its minimum; the rest of the room goes by duration.
    share = max(room - steps_count * MIN_COLUMN, 0.0)
    x = LABELS
    columns: list[Column] = []
    bars: list[Bar] = []
    row_of = {name: i for i, name in enumerate(executors)}
    for kind, step, seconds, text in plan:
        if kind == "wait":
            columns.append(Column(x, WAIT_COLUMN, text, waiting=True))
            for executor, _ in step.requests:
                bars.append(Bar(executor, row_of[executor], x + 2, WAIT_COLUMN - 4, "waiting",
                                f"{executor} {text} for a decision"))
            x += WAIT_COLUMN
            continue
        width = MIN_COLUMN + (share * seconds / work if work > 0 else share / steps_count)
        href = (
            reverse("dashboard:checkpoint_detail", args=[run.pk, step.checkpoint_id])
            if step.checkpoint_id else ""
        )
        number = len([c for c in columns if not c.waiting]) + 1 + hidden
        columns.append(Column(x, width, str(number), href=href))
        span = seconds
        for call in step.invocations:
            start = call["start"]
            end = call.get("end")
            state = "failed" if call.get("failed") else "done" if end is not None else (
                "running" if live else "failed"
            )
            finish: float = end if end is not None else (step.ended or step.started)
            left = x + (start - step.started) / span * width if span > 0 else x
            right = x + (finish - step.started) / span * width if span > 0 else x + width
            left = min(max(left, x), x + width - BAR_MIN)
            length = max(min(right, x + width) - left, BAR_MIN)
            took = f"{(finish - start) * 1000:.0f} ms" if finish - start < 1 else duration_text(finish - start)
            verb = {"done": "took", "failed": "failed after", "running": "running for"}[state]
            bars.append(Bar(call["executor"], row_of[call["executor"]], left, length, state,
                            f"{call['executor']} · superstep {number} · {verb} {took}", href))
        x += width
    return Gantt(executors, columns, bars, hidden)


def gantt_context(run: WorkflowRun) -> dict[str, Any]:
    return {"gantt": build(run)}
