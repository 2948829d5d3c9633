"""The run page's per-executor timeline: each executor invocation a bar in its superstep's
column, waiting for a person shown as waiting, each bar a link to the checkpoint its superstep
wrote. Built from the events the run already stored (``RunEvent``), placed by
``dashboard.renderers.gantt`` and drawn as SVG (``components/gantt.html``: attributes, not
inline styles, which the CSP refuses).

Time: the worker stamps the engine's executor and superstep events with the moment it saw them
(``at``, Unix seconds); events without a stamp (older runs, the services' own) fall back to
their commit time, which places them at their superstep's boundaries.
"""

from __future__ import annotations

import datetime as dt
from typing import Any

from django.urls import reverse
from django.utils import timezone

from dashboard import catalog
from dashboard.models import RunEvent, WorkflowRun
from dashboard.renderers.gantt import Gantt, Step, mark_superseded, place
from dashboard.web.timefmt import duration_text as _duration

__all__ = ["build", "gantt_context"]

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


def _steps(events: list[RunEvent]) -> tuple[list[Step], dict[str, float]]:
    """Supersteps in the order they ran (a resume from an earlier checkpoint runs a number
    again: a new column), and when each request was decided."""
    steps: list[Step] = []
    decided: dict[str, float] = {}
    for event in events:
        data = event.data if isinstance(event.data, dict) else {}
        when = _at(event)
        if event.type == "superstep_started":
            # Numbered as its events name it (the checkpoint list's number), not by position.
            number = data.get("iteration")
            if not isinstance(number, int) or isinstance(number, bool):
                number = (steps[-1].number or 0) + 1 if steps else 1
            steps.append(Step(started=when, number=number))
        elif event.type == "approval_decided":
            # The dashboard's request id is "<engine run>:<engine request>".
            decided[str(data.get("request_id", "")).rsplit(":", 1)[-1]] = when
        elif not steps:
            continue  # before the first superstep shown
        elif event.type == "superstep_completed":
            steps[-1].ended = when
            steps[-1].checkpoint_id = str(data.get("checkpoint_id") or "")
        elif event.type == "executor_invoked":
            steps[-1].invocations.append(
                {"executor": str(data.get("executor_id") or ""), "start": when}
            )
        elif event.type in ("executor_completed", "executor_failed"):
            executor = str(data.get("executor_id") or "")
            for call in steps[-1].invocations:
                if call["executor"] == executor and "end" not in call:
                    call["end"] = when
                    call["failed"] = event.type == "executor_failed"
                    break
        elif event.type == "request_info":
            steps[-1].requests.append(
                (
                    str(data.get("source_executor_id") or data.get("executor_id") or ""),
                    str(data.get("request_id") or ""),
                )
            )
    mark_superseded(steps)
    return steps, decided


def build(run: WorkflowRun, *, now: dt.datetime | None = None) -> Gantt | None:
    """The timeline of ``run``'s latest supersteps; None before its first superstep."""
    events, hidden = _events(run)
    steps, decided = _steps(events)
    return place(
        steps,
        decided,
        live=run.status in ("queued", "running"),
        clock=(now or timezone.now()).timestamp(),
        hidden=hidden,
        href=lambda checkpoint_id: reverse(
            "dashboard:checkpoint_detail", args=[run.pk, checkpoint_id]
        ),
        said=duration_text,
    )


def gantt_context(run: WorkflowRun) -> dict[str, Any]:
    # A functional run has no supersteps: its step list (run_page.steps) shows its timing. The
    # card stays in the page, hidden, for the live updates that redraw it.
    if catalog.is_functional(run.workflow_name):
        return {"gantt": None, "gantt_hidden": True}
    return {"gantt": build(run), "gantt_hidden": False}
