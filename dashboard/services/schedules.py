"""Schedules: create, change, pause, resume, trigger and delete them; fire the ticks that are due.

A schedule's ``next_fire_at`` is its next tick. ``schedules_fire_due`` (the ``fire-schedules``
periodic job, from Celery beat or the embedded threads) fires each due schedule in a short
transaction of its own: it locks the schedule row, re-reads that the tick is still due, claims
the row (schedule, tick) of ``ScheduleTick`` (unique for timed ticks), starts the run through
``run_start`` and moves ``next_fire_at`` on, all committed together. A second process firing
the same tick waits on the lock and then finds the tick gone (PostgreSQL re-checks the row it
waited for), and where there are no row locks the unique claim refuses it: one start per tick
however many processes fire.

A tick missed while nothing fired (every scheduler down) fires once when one is back, not once
per missed tick; ``next_fire_at`` then moves to the first tick after now. Resuming a paused
schedule starts from the next tick after now as well.

"Skip if running": a tick that finds the schedule's previous run unfinished (queued, running,
waiting, needs migration) starts nothing and records the skip on its ``ScheduleTick``.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import functools
import logging
import math
import zoneinfo
from typing import Any

from django.db import IntegrityError, transaction

from dashboard.access import audit, authz
from dashboard.core.errors import Conflict, InvalidInput, NotFound, ServiceError
from dashboard.core.types import Actor, is_user
from dashboard.models import TERMINAL_RUN_STATUSES, AuditEntry, Schedule, ScheduleTick, WorkflowRun
from dashboard.services import cron, validation
from dashboard.services.common import now
from dashboard.services.runs import run_start, start_input

__all__ = [
    "MAX_INTERVAL_SECONDS",
    "ScheduleSpec",
    "next_tick",
    "schedule_check",
    "schedule_create",
    "schedule_delete",
    "schedule_pause",
    "schedule_resume",
    "schedule_trigger",
    "schedule_update",
    "schedules_fire_due",
    "time_zones",
]

logger = logging.getLogger(__name__)

MAX_INTERVAL_SECONDS = 366 * 24 * 3600
# Due schedules fired per call; the rest wait for the next call a few seconds later.
FIRE_BATCH = 200


@dataclasses.dataclass(frozen=True)
class ScheduleSpec:
    """What a schedule says, as a form or the API gives it (checked by ``schedule_check``)."""

    name: str
    workflow_name: str
    input: object = dataclasses.field(default_factory=dict)
    kind: str = Schedule.Kind.CRON
    cron: str = ""
    interval_seconds: int | None = None
    time_zone: str = "UTC"
    skip_if_running: bool = True


@functools.cache
def time_zones() -> frozenset[str]:
    """The IANA zone names this machine knows."""
    return frozenset(zoneinfo.available_timezones())


def schedule_check(spec: ScheduleSpec, *, schedule_id: int | None = None) -> dict[str, Any]:
    """The model fields ``spec`` stands for, or ``InvalidInput`` naming every bad field."""
    errors: dict[str, str] = {}
    name = validation.printable(spec.name).strip()
    if not name or len(name) > 100:
        errors["name"] = "A name of 1 to 100 characters."
    elif Schedule.objects.filter(name=name).exclude(pk=schedule_id or 0).exists():
        errors["name"] = f"A schedule named {name!r} exists already."
    fields: dict[str, Any] = {
        "name": name,
        "kind": spec.kind,
        "skip_if_running": spec.skip_if_running,
    }
    try:
        fields["input"] = start_input(spec.workflow_name, spec.input)
        fields["workflow_name"] = spec.workflow_name
    except InvalidInput as exc:
        errors.update(_input_errors(exc))
    fields.update(_timing(spec, errors))
    if errors:
        raise InvalidInput("the schedule is not valid", errors=errors)
    return fields


def _input_errors(exc: InvalidInput) -> dict[str, str]:
    """The start service's refusal with the input's paths under ``input.`` (``input.limit``),
    so a field of the workflow's input never reads as one of the schedule's own."""
    if not exc.errors:
        return {"input": exc.message}
    return {
        key
        if key in ("workflow", "input")
        else ("input" if key == "__root__" else f"input.{key}"): message
        for key, message in exc.errors.items()
    }


def _timing(spec: ScheduleSpec, errors: dict[str, str]) -> dict[str, Any]:
    if spec.time_zone not in time_zones():
        errors["time_zone"] = (
            f"{validation.printable(spec.time_zone)[:64]!r} is not a known time zone."
        )
    if spec.kind == Schedule.Kind.CRON:
        try:
            expression = cron.parse(spec.cron)
        except cron.CronError as exc:
            errors["cron"] = str(exc)
            return {}
        return {"cron": expression.text, "interval_seconds": None, "time_zone": spec.time_zone}
    if spec.kind == Schedule.Kind.INTERVAL:
        every = spec.interval_seconds
        if every is None or not 1 <= every <= MAX_INTERVAL_SECONDS:
            errors["interval_seconds"] = (
                f"A whole number of seconds from 1 to {MAX_INTERVAL_SECONDS}."
            )
            return {}
        return {"cron": "", "interval_seconds": every, "time_zone": spec.time_zone}
    errors["kind"] = "Either cron or interval."
    return {}


def next_tick(schedule: Schedule, *, after: dt.datetime) -> dt.datetime:
    """The schedule's first tick strictly after ``after``. Interval ticks are counted from
    ``created_at``, so a late firing does not push every later tick back."""
    if schedule.kind == Schedule.Kind.INTERVAL:
        every = dt.timedelta(seconds=schedule.interval_seconds or 0)
        anchor = schedule.created_at.replace(microsecond=0)
        elapsed = max(0, math.floor((after - anchor) / every) + 1)
        return anchor + elapsed * every
    return cron.parse(schedule.cron).next_after(after, zoneinfo.ZoneInfo(schedule.time_zone))


def _require(user: Actor, action: str, schedule_id: int) -> None:
    """``authz.require`` on the schedule's workflow. One whose workflow the user may not see
    is not found, as a run of it would not be (an unknown id is left to the action)."""
    workflow = (
        Schedule.objects.filter(pk=schedule_id).values_list("workflow_name", flat=True).first()
    )
    target = f"schedule {schedule_id}"
    if workflow is not None and not authz.can(user, "view", workflow):
        audit.record(
            user, action, outcome=AuditEntry.DENIED, target=target, details={"workflow": workflow}
        )
        raise NotFound(f"no schedule with id {schedule_id}")
    authz.require(user, action, workflow=workflow, target=target)


def _locked(schedule_id: int) -> Schedule:
    schedule = Schedule.objects.select_for_update().filter(pk=schedule_id).first()
    if schedule is None:
        raise NotFound(f"no schedule with id {schedule_id}")
    return schedule


def _described(schedule: Schedule) -> dict[str, Any]:
    return {
        "workflow": schedule.workflow_name,
        "input": schedule.input,
        "kind": schedule.kind,
        "cron": schedule.cron,
        "interval_seconds": schedule.interval_seconds,
        "time_zone": schedule.time_zone,
        "skip_if_running": schedule.skip_if_running,
    }


def schedule_create(spec: ScheduleSpec, *, user: Actor = None, paused: bool = False) -> Schedule:
    """Save a new schedule; its first tick is the first one after now."""
    authz.require(
        user, "schedule_change", workflow=spec.workflow_name, target=f"schedule {spec.name}"[:300]
    )
    fields = schedule_check(spec)
    with transaction.atomic():
        schedule = Schedule(**fields, paused=paused, created_by=user if is_user(user) else None)
        schedule.created_at = now()
        schedule.next_fire_at = None if paused else next_tick(schedule, after=schedule.created_at)
        try:
            with transaction.atomic():
                schedule.save()
        except IntegrityError:  # the same name saved a moment ago by someone else
            raise InvalidInput(
                "the schedule is not valid", errors={"name": "This name is taken."}
            ) from None
        audit.record(
            user,
            "schedule_create",
            target=f"schedule {schedule.name}",
            details=_described(schedule),
        )
    return schedule


def schedule_update(schedule_id: int, spec: ScheduleSpec, *, user: Actor = None) -> Schedule:
    """Change a schedule; its next tick is computed again from now."""
    _require(user, "schedule_change", schedule_id)
    if not Schedule.objects.filter(pk=schedule_id).exists():
        raise NotFound(f"no schedule with id {schedule_id}")  # before any field's refusal
    # Moving a schedule to another workflow needs the role on that one too.
    authz.require(
        user, "schedule_change", workflow=spec.workflow_name, target=f"schedule {schedule_id}"
    )
    fields = schedule_check(spec, schedule_id=schedule_id)
    with transaction.atomic():
        schedule = _locked(schedule_id)
        before = _described(schedule)
        for key, value in fields.items():
            setattr(schedule, key, value)
        if not schedule.paused:
            schedule.next_fire_at = next_tick(schedule, after=now())
        try:
            with transaction.atomic():
                schedule.save()
        except IntegrityError:
            raise InvalidInput(
                "the schedule is not valid", errors={"name": "This name is taken."}
            ) from None
        audit.record(
            user,
            "schedule_update",
            target=f"schedule {schedule.name}",
            details={"before": before, "after": _described(schedule)},
        )
    return schedule


def schedule_pause(schedule_id: int, *, user: Actor = None) -> Schedule:
    """Stop firing ticks until resumed (a run already started goes on)."""
    return _set_paused(schedule_id, paused=True, user=user)


def schedule_resume(schedule_id: int, *, user: Actor = None) -> Schedule:
    """Fire again from the first tick after now; ticks passed while paused are not made up."""
    return _set_paused(schedule_id, paused=False, user=user)


def _set_paused(schedule_id: int, *, paused: bool, user: Actor) -> Schedule:
    action = "schedule_pause" if paused else "schedule_resume"
    _require(user, "schedule_change", schedule_id)
    with transaction.atomic():
        schedule = _locked(schedule_id)
        if schedule.paused == paused:
            raise Conflict(
                f"schedule {schedule.name} is already {'paused' if paused else 'active'}"
            )
        schedule.paused = paused
        schedule.next_fire_at = None if paused else next_tick(schedule, after=now())
        schedule.save(update_fields=["paused", "next_fire_at", "updated_at"])
        audit.record(user, action, target=f"schedule {schedule.name}")
    return schedule


def schedule_delete(schedule_id: int, *, user: Actor = None) -> None:
    """Delete a schedule and its tick history; the runs it started stay, unlinked."""
    _require(user, "schedule_change", schedule_id)
    with transaction.atomic():
        schedule = _locked(schedule_id)
        audit.record(
            user,
            "schedule_delete",
            target=f"schedule {schedule.name}",
            details=_described(schedule),
        )
        schedule.delete()


def schedule_trigger(schedule_id: int, *, user: Actor = None) -> ScheduleTick:
    """Fire a tick now, paused or not, by ``user`` (the run is theirs); "skip if running"
    applies as to any tick. Returns the tick, whose outcome says what happened."""
    _require(user, "schedule_trigger", schedule_id)
    with transaction.atomic():
        schedule = _locked(schedule_id)
        tick = ScheduleTick.objects.create(
            schedule=schedule, tick_at=now(), manual=True, outcome=ScheduleTick.Outcome.FAILED
        )
        _start(schedule, tick, user=user)
        audit.record(
            user,
            "schedule_trigger",
            run=tick.run,
            target=f"schedule {schedule.name}",
            details={"outcome": tick.outcome, "detail": tick.detail},
        )
    return tick


def schedules_fire_due(*, at: dt.datetime | None = None) -> list[int]:
    """Fire every unpaused schedule whose tick is due at ``at`` (now); returns the ids of the
    ticks this call fired (those another process fired are not among them)."""
    moment = at or now()
    due = list(
        Schedule.objects.filter(paused=False, next_fire_at__lte=moment)
        .order_by("next_fire_at", "pk")
        .values_list("pk", flat=True)[:FIRE_BATCH]
    )
    fired: list[int] = []
    for schedule_id in due:
        try:
            tick = _fire(schedule_id, moment)
        except Exception:
            # One broken schedule (a time zone this machine no longer knows) must not hold
            # back the others; it stays due, and is logged each time.
            logger.exception("schedule %s could not be fired", schedule_id)
            continue
        if tick is not None:
            fired.append(tick.pk)
    return fired


def _fire(schedule_id: int, moment: dt.datetime) -> ScheduleTick | None:
    with transaction.atomic():
        schedule = (
            Schedule.objects.select_for_update()
            .filter(pk=schedule_id, paused=False, next_fire_at__lte=moment)
            .first()
        )
        if schedule is None or schedule.next_fire_at is None:
            return None  # fired, paused, changed or deleted by someone else meanwhile
        tick_at = schedule.next_fire_at
        try:
            with transaction.atomic():
                tick = ScheduleTick.objects.create(
                    schedule=schedule, tick_at=tick_at, outcome=ScheduleTick.Outcome.FAILED
                )
        except IntegrityError:
            return None
        schedule.next_fire_at = next_tick(schedule, after=max(moment, tick_at))
        schedule.last_fired_at = moment
        schedule.save(update_fields=["next_fire_at", "last_fired_at"])
        _start(schedule, tick, user=None)
    return tick


def _start(schedule: Schedule, tick: ScheduleTick, *, user: Actor) -> None:
    """Start the tick's run unless the previous one is unfinished; record the outcome."""
    active = (
        WorkflowRun.objects.filter(schedule=schedule)
        .exclude(status__in=TERMINAL_RUN_STATUSES)
        .order_by("-created_at")
        .first()
    )
    if schedule.skip_if_running and active is not None:
        tick.outcome = ScheduleTick.Outcome.SKIPPED
        tick.detail = f"run {active.pk} is still {active.status}"
    else:
        try:
            with transaction.atomic():
                tick.run = run_start(
                    workflow_name=schedule.workflow_name,
                    input=schedule.input,
                    user=user,
                    schedule=schedule,
                )
            tick.outcome = ScheduleTick.Outcome.STARTED
        except ServiceError as exc:
            # The workflow was removed by a deploy, or its input no longer fits: recorded on
            # the tick and shown on the page; the next tick tries again.
            tick.detail = exc.message + "".join(f"; {k}: {v}" for k, v in exc.errors.items())
    tick.save(update_fields=["outcome", "detail", "run"])
