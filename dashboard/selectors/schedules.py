"""The schedules page's reads: every schedule with its latest tick (and the run it started),
in two queries whatever the number of schedules; one schedule and its recent ticks."""

from __future__ import annotations

import dataclasses

from django.db.models import OuterRef, Subquery

from dashboard.models import Schedule, ScheduleTick

__all__ = ["RECENT_TICKS", "ScheduleRow", "schedule_get", "schedule_rows", "schedule_ticks"]

RECENT_TICKS = 20


@dataclasses.dataclass(frozen=True)
class ScheduleRow:
    schedule: Schedule
    last_tick: ScheduleTick | None  # None: it never fired


def schedule_rows(*, workflows: frozenset[str] | None = None) -> list[ScheduleRow]:
    """Every schedule by name (of ``workflows`` only, when given: those the viewer may see),
    with its latest tick (timed or triggered)."""
    latest = (
        ScheduleTick.objects.filter(schedule=OuterRef("pk"))
        .order_by("-fired_at", "-pk")
        .values("pk")[:1]
    )
    rows = Schedule.objects.annotate(last_tick_id=Subquery(latest)).order_by("name")
    if workflows is not None:
        rows = rows.filter(workflow_name__in=sorted(workflows))
    schedules = list(rows)
    ids = [s.last_tick_id for s in schedules if s.last_tick_id is not None]
    ticks = ScheduleTick.objects.select_related("run").in_bulk(ids) if ids else {}
    return [ScheduleRow(s, ticks.get(s.last_tick_id)) for s in schedules]


def schedule_get(schedule_id: int, *, workflows: frozenset[str] | None = None) -> Schedule | None:
    """The schedule, or None: none has that id (or one beyond any key, which the databases
    refuse to compare), or its workflow is not among ``workflows`` (when given)."""
    if not 0 < schedule_id < 2**63:
        return None
    found = Schedule.objects.filter(pk=schedule_id).first()
    return (
        found
        if found is not None and (workflows is None or found.workflow_name in workflows)
        else None
    )


def schedule_ticks(schedule: Schedule, *, limit: int = RECENT_TICKS) -> list[ScheduleTick]:
    """The schedule's latest ticks, newest first, with their runs."""
    return list(
        ScheduleTick.objects.filter(schedule=schedule)
        .select_related("run")
        .order_by("-fired_at", "-pk")[:limit]
    )
