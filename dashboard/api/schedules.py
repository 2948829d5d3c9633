"""The JSON API's schedule operations: list and create schedules; read, change, delete, pause,
resume and trigger one.

Mounted beside ``views.router`` by ``urls.py``, with the same authentication, body rules and
error format. ``services.schedules`` validates (cron, time zone, interval, the input against the
workflow's start type), checks the role and audits.
"""

from __future__ import annotations

import datetime as dt
from typing import Literal

from django.http import HttpRequest
from ninja import Router, Schema
from ninja.responses import Status
from pydantic import ConfigDict, Field, JsonValue

from dashboard import services
from dashboard.access import authz
from dashboard.api.schemas import NoBodyIn
from dashboard.api.views import refusals, refuse_other_methods
from dashboard.models import Schedule, ScheduleTick
from dashboard.selectors import schedules as selected
from dashboard.services import schedules

__all__ = ["router"]

router = Router(tags=["schedules"])


class ScheduleChangeIn(Schema):
    model_config = ConfigDict(strict=True, extra="ignore")

    name: str
    workflow: str
    input: JsonValue = Field(default_factory=dict, description="the workflow's input_schema")
    cron: str | None = Field(
        None, description="five fields, read in time_zone; or interval_seconds"
    )
    interval_seconds: int | None = Field(None, description="fire every so many seconds; or cron")
    time_zone: str = "UTC"
    skip_if_running: bool = True


class ScheduleIn(ScheduleChangeIn):
    paused: bool = False


class TickOut(Schema):
    tick_at: dt.datetime
    fired_at: dt.datetime
    manual: bool
    outcome: Literal["started", "skipped", "failed"]
    run_id: str | None
    detail: str


class ScheduleOut(Schema):
    id: int
    name: str
    workflow: str
    input: JsonValue
    kind: Literal["cron", "interval"]
    cron: str | None
    interval_seconds: int | None
    time_zone: str
    skip_if_running: bool
    paused: bool
    next_fire_at: dt.datetime | None
    last_tick: TickOut | None


class SchedulesOut(Schema):
    schedules: list[ScheduleOut]


def tick_out(tick: ScheduleTick) -> TickOut:
    return TickOut(
        tick_at=tick.tick_at,
        fired_at=tick.fired_at,
        manual=tick.manual,
        outcome=ScheduleTick.Outcome(tick.outcome).value,  # type: ignore[arg-type]
        run_id=str(tick.run_id) if tick.run_id else None,
        detail=tick.detail,
    )


def schedule_out(schedule: Schedule, last_tick: ScheduleTick | None = None) -> ScheduleOut:
    return ScheduleOut(
        id=schedule.pk,
        name=schedule.name,
        workflow=schedule.workflow_name,
        input=schedule.input,
        kind=Schedule.Kind(schedule.kind).value,  # type: ignore[arg-type]
        cron=schedule.cron or None,
        interval_seconds=schedule.interval_seconds,
        time_zone=schedule.time_zone,
        skip_if_running=schedule.skip_if_running,
        paused=schedule.paused,
        next_fire_at=schedule.next_fire_at,
        last_tick=tick_out(last_tick) if last_tick is not None else None,
    )


def _with_last_tick(schedule: Schedule) -> ScheduleOut:
    latest = selected.schedule_ticks(schedule, limit=1)
    return schedule_out(schedule, latest[0] if latest else None)


@router.get("/schedules/", response={200: SchedulesOut, **refusals()}, url_name="schedules")
def schedule_list(request: HttpRequest) -> SchedulesOut:
    """Every schedule by name, with its next tick and its latest one."""
    rows = selected.schedule_rows(workflows=authz.visible_workflows(request.user))
    return SchedulesOut(schedules=[schedule_out(r.schedule, r.last_tick) for r in rows])


def _spec(payload: ScheduleChangeIn) -> schedules.ScheduleSpec:
    if (payload.cron is None) == (payload.interval_seconds is None):
        message = "give either cron or interval_seconds"
        raise services.InvalidInput(message, errors={"cron": message})
    return schedules.ScheduleSpec(
        name=payload.name,
        workflow_name=payload.workflow,
        input=payload.input,
        kind=Schedule.Kind.CRON if payload.cron is not None else Schedule.Kind.INTERVAL,
        cron=payload.cron or "",
        interval_seconds=payload.interval_seconds,
        time_zone=payload.time_zone,
        skip_if_running=payload.skip_if_running,
    )


@router.post(
    "/schedules/", response={201: ScheduleOut, **refusals(413)}, url_name="schedule-create"
)
def schedule_create(request: HttpRequest, payload: ScheduleIn) -> Status[ScheduleOut]:
    """Create a schedule: a cron expression (in ``time_zone``) or ``interval_seconds``, not
    both (400 names the field that does not fit)."""
    schedule = schedules.schedule_create(_spec(payload), user=request.user, paused=payload.paused)
    return Status(201, schedule_out(schedule))


@router.get(
    "/schedules/{int:schedule_id}/",
    response={200: ScheduleOut, **refusals(404)},
    url_name="schedule",
)
def schedule_detail(request: HttpRequest, schedule_id: int) -> ScheduleOut:
    """One schedule, with its next tick and its latest one."""
    schedule = selected.schedule_get(schedule_id, workflows=authz.visible_workflows(request.user))
    if schedule is None:
        raise services.NotFound(f"no schedule with id {schedule_id}")
    return _with_last_tick(schedule)


@router.put(
    "/schedules/{int:schedule_id}/",
    response={200: ScheduleOut, **refusals(404, 413)},
    url_name="schedule-update",
)
def schedule_update(
    request: HttpRequest, schedule_id: int, payload: ScheduleChangeIn
) -> ScheduleOut:
    """Replace a schedule's name, workflow, input and timing (every field, as on create; pause
    and resume have their own operations). Its next tick is computed again from now."""
    return _with_last_tick(
        schedules.schedule_update(schedule_id, _spec(payload), user=request.user)
    )


@router.delete(
    "/schedules/{int:schedule_id}/",
    response={204: None, **refusals(404)},
    url_name="schedule-delete",
)
def schedule_delete(request: HttpRequest, schedule_id: int) -> Status[None]:
    """Delete a schedule and its tick history; the runs it started stay."""
    schedules.schedule_delete(schedule_id, user=request.user)
    return Status(204, None)


@router.post(
    "/schedules/{int:schedule_id}/pause/",
    response={200: ScheduleOut, **refusals(404, 409, 413)},
    url_name="schedule-pause",
)
def schedule_pause(
    request: HttpRequest, schedule_id: int, payload: NoBodyIn | None = None
) -> ScheduleOut:
    """Stop firing ticks (409 when already paused)."""
    return schedule_out(schedules.schedule_pause(schedule_id, user=request.user))


@router.post(
    "/schedules/{int:schedule_id}/resume/",
    response={200: ScheduleOut, **refusals(404, 409, 413)},
    url_name="schedule-resume",
)
def schedule_resume(
    request: HttpRequest, schedule_id: int, payload: NoBodyIn | None = None
) -> ScheduleOut:
    """Fire again from the next tick after now (409 when not paused)."""
    return schedule_out(schedules.schedule_resume(schedule_id, user=request.user))


@router.post(
    "/schedules/{int:schedule_id}/trigger/",
    response={201: TickOut, **refusals(404, 409, 413)},
    url_name="schedule-trigger",
)
def schedule_trigger(
    request: HttpRequest, schedule_id: int, payload: NoBodyIn | None = None
) -> Status[TickOut]:
    """Start a run now with the schedule's input; 409 when the tick was skipped (the previous
    run is unfinished) or the run could not start, with the recorded reason."""
    tick = schedules.schedule_trigger(schedule_id, user=request.user)
    if tick.outcome != ScheduleTick.Outcome.STARTED:
        raise services.Conflict(f"nothing started: {tick.get_outcome_display()} ({tick.detail})")
    return Status(201, tick_out(tick))


refuse_other_methods(router)
