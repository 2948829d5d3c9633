"""How long a run has been at work, how long it waited for a person, and in how many attempts.

A run that waits for an approval is not slow, and neither is one that sat failed for an hour
before someone retried it: an operator comparing durations wants the time the workflow
worked. Both come from the run's ``run_status`` events, one query for a page of runs: the
active time is the sum of its "running" spells (from a "running" one to the next status
change), the waiting time that of its "waiting" spells. Its attempts are its first start
plus every retry and resume (the events' ``action``).

``components/time.html`` counts a duration from ``since`` to ``until`` (or to now, ticking);
putting ``since`` the active time before the moment the current running spell began (or
before a fixed ``until`` when the run is not running) makes the one element show the active
time live, with no script of its own.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import uuid
from collections.abc import Iterable, Sequence

from dashboard.models import RunEvent, RunStatus, WorkflowRun
from dashboard.web.timefmt import duration_text

__all__ = ["RunDuration", "run_duration", "run_durations", "status_spells", "waiting_spells"]

RESTARTS = ("retry", "resume")  # the actions that make another attempt of a run


@dataclasses.dataclass(frozen=True)
class RunDuration:
    since: dt.datetime | None  # the start, moved on by the time spent waiting; None: not started
    until: dt.datetime | None  # the end, or when the current wait began; None: still counting
    waited: dt.timedelta
    waiting_since: dt.datetime | None
    attempts: int = 1

    @property
    def waited_text(self) -> str:
        """The time spent waiting, in words ("" when it never waited)."""
        return duration_text(self.waited) if self.waited >= dt.timedelta(seconds=1) else ""


def waiting_spells(
    statuses: Iterable[tuple[dt.datetime, str]],
) -> tuple[dt.timedelta, dt.datetime | None]:
    """From a run's status changes (oldest first): the time its finished waits took, and when
    the wait still going on began (None when it is not waiting)."""
    return status_spells(statuses, RunStatus.WAITING)


def status_spells(
    statuses: Iterable[tuple[dt.datetime, str]], status: str
) -> tuple[dt.timedelta, dt.datetime | None]:
    """The time a run's finished spells in ``status`` took, from its status changes (oldest
    first), and when the one still going on began (None when it is not in ``status``)."""
    total = dt.timedelta(0)
    began: dt.datetime | None = None
    for at, current in statuses:
        if current == status:
            began = began or at
        elif began is not None:
            total += at - began
            began = None
    return total, began


def run_durations(runs: Sequence[WorkflowRun]) -> dict[uuid.UUID, RunDuration]:
    """Each run's duration, by id (one query, whatever the number of runs)."""
    ids = [run.pk for run in runs if run.started_at is not None]
    statuses: dict[uuid.UUID, list[tuple[dt.datetime, str]]] = {}
    restarts: dict[uuid.UUID, int] = {}
    rows = (
        RunEvent.objects.filter(run_id__in=ids, type="run_status")
        .order_by("run_id", "seq")
        .values_list("run_id", "created_at", "data")
    )
    for run_id, created_at, data in rows:
        data = data if isinstance(data, dict) else {}
        statuses.setdefault(run_id, []).append((created_at, str(data.get("status") or "")))
        if data.get("action") in RESTARTS:
            restarts[run_id] = restarts.get(run_id, 0) + 1
    return {
        run.pk: _duration(run, statuses.get(run.pk, []), 1 + restarts.get(run.pk, 0))
        for run in runs
    }


def run_duration(run: WorkflowRun) -> RunDuration:
    return run_durations([run])[run.pk]


def _duration(
    run: WorkflowRun, statuses: list[tuple[dt.datetime, str]], attempts: int
) -> RunDuration:
    waited, began = waiting_spells(statuses)
    if run.status != RunStatus.WAITING:
        began = None  # every way out of a wait records its status; an open spell is stale data
    elif began is None:
        # A waiting run without status events (seeded by a benchmark): its time is unknown.
        began = run.started_at
    if run.started_at is None:
        return RunDuration(None, None, waited, began, attempts)
    if not any(status == RunStatus.RUNNING for _, status in statuses):
        # No status events (a run seeded or imported whole): from its start to its end, less
        # what it waited.
        until = run.finished_at if run.finished_at is not None else began
        return RunDuration(run.started_at + waited, until, waited, began, attempts)
    worked, running_since = status_spells(statuses, RunStatus.RUNNING)
    if run.status == RunStatus.RUNNING and running_since is not None:
        return RunDuration(running_since - worked, None, waited, began, attempts)
    end = run.finished_at or _began_last(statuses) or run.started_at
    return RunDuration(end - worked, end, waited, began, attempts)


def _began_last(statuses: list[tuple[dt.datetime, str]]) -> dt.datetime | None:
    """When the run's latest status began (None without status events)."""
    return statuses[-1][0] if statuses else None
