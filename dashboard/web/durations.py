"""How long a run has been at work: from its start to its end (or now), less the time it sat
waiting for a person to decide.

A run that waits for an approval is not slow, and an operator comparing durations wants the
time the workflow took. The waiting spells come from the run's ``run_status`` events (from a
"waiting" one to the next status change). Only a run that ever raised a request can have
waited, so only such runs' status events are read: one query for a page of runs.

``components/time.html`` counts a duration from ``since`` to ``until`` (or to now, ticking);
shifting ``since`` forward by the time already waited, and stopping at the moment the current
wait began, makes the one element show the working time live, with no script of its own.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import uuid
from collections.abc import Iterable, Sequence

from dashboard.models import ApprovalRequest, RunEvent, RunStatus, WorkflowRun
from dashboard.web.timefmt import duration_text

__all__ = ["RunDuration", "run_duration", "run_durations", "waiting_spells"]


@dataclasses.dataclass(frozen=True)
class RunDuration:
    since: dt.datetime | None  # the start, moved on by the time spent waiting; None: not started
    until: dt.datetime | None  # the end, or when the current wait began; None: still counting
    waited: dt.timedelta
    waiting_since: dt.datetime | None

    @property
    def waited_text(self) -> str:
        """The time spent waiting, in words ("" when it never waited)."""
        return duration_text(self.waited) if self.waited >= dt.timedelta(seconds=1) else ""


def waiting_spells(
    statuses: Iterable[tuple[dt.datetime, str]],
) -> tuple[dt.timedelta, dt.datetime | None]:
    """From a run's status changes (oldest first): the time its finished waits took, and when
    the wait still going on began (None when it is not waiting)."""
    waited = dt.timedelta(0)
    began: dt.datetime | None = None
    for at, status in statuses:
        if status == RunStatus.WAITING:
            began = began or at
        elif began is not None:
            waited += at - began
            began = None
    return waited, began


def run_durations(runs: Sequence[WorkflowRun]) -> dict[uuid.UUID, RunDuration]:
    """Each run's duration, by id (one query, whatever the number of runs)."""
    ids = [run.pk for run in runs if run.started_at is not None]
    # A plain IN (subquery), so the database goes from the few runs that asked to their events
    # (a run waits only on a request: a waiting run has one too).
    asked = ApprovalRequest.objects.filter(run_id__in=ids).values("run_id")
    statuses: dict[uuid.UUID, list[tuple[dt.datetime, str]]] = {}
    rows = (
        RunEvent.objects.filter(run_id__in=asked, type="run_status")
        .order_by("run_id", "seq")
        .values_list("run_id", "created_at", "data")
    )
    for run_id, created_at, data in rows:
        status = data.get("status") if isinstance(data, dict) else None
        statuses.setdefault(run_id, []).append((created_at, str(status or "")))
    return {run.pk: _duration(run, statuses.get(run.pk, [])) for run in runs}


def run_duration(run: WorkflowRun) -> RunDuration:
    return run_durations([run])[run.pk]


def _duration(run: WorkflowRun, statuses: list[tuple[dt.datetime, str]]) -> RunDuration:
    waited, began = waiting_spells(statuses)
    if run.status != RunStatus.WAITING:
        began = None  # every way out of a wait records its status; an open spell is stale data
    elif began is None:
        # A waiting run without status events (seeded by a benchmark): its time is unknown.
        began = run.started_at
    if run.started_at is None:
        return RunDuration(None, None, waited, began)
    until = run.finished_at if run.finished_at is not None else began
    return RunDuration(run.started_at + waited, until, waited, began)
