"""Schedules: every schedule with its next tick (in its own time zone and in words), its last
tick and the run that started; the form that creates or changes one with its recent ticks;
pause, resume, trigger now and delete.

Anyone who may see runs sees the list; changing needs an Operator's role, checked by the
services (``services.schedules``), which validate (cron, time zone, interval, the input
against the workflow's start type) and audit. Refused input answers 422 with the message
beside the field it concerns; a refused role answers 403 with the refusal in the audit log.
"""

from __future__ import annotations

import datetime as dt
import zoneinfo
from collections.abc import Callable
from typing import Any

from django.contrib import messages
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.utils import timesince, timezone

from dashboard import services
from dashboard.access import authz
from dashboard.models import Schedule, ScheduleTick
from dashboard.selectors import schedules as selected
from dashboard.services import schedules
from dashboard.web.access import page_view
from dashboard.web.operations.crud import Crud, forbidden
from dashboard.web.operations.forms import UNITS, ScheduleForm

PAGE = "dashboard/schedules.html"
FORM = "dashboard/schedule_form.html"


def timing(schedule: Schedule) -> str:
    """When a schedule fires, in words."""
    if schedule.kind == Schedule.Kind.CRON:
        return f"cron {schedule.cron} ({schedule.time_zone})"
    seconds = schedule.interval_seconds or 0
    unit = next((u for u in reversed(UNITS) if seconds % UNITS[u] == 0), "seconds")
    count = seconds // UNITS[unit]
    return f"every {count} {unit[:-1] if count == 1 else unit}"


SCHEDULES = Crud(
    form=ScheduleForm,
    create=schedules.schedule_create,
    update=schedules.schedule_update,
    template=FORM,
    record_name="schedule",
    saved=lambda schedule: f"Schedule {schedule.name} saved: {timing(schedule)}.",
    nav_section="schedules",
    section="Schedules",
    noun="schedule",
    new_title="New schedule",
    form_id="schedule-form",
    list_url="dashboard:schedules",
    new_url="dashboard:schedule_new",
    edit_url="dashboard:schedule_edit",
    # The form page shows an edited schedule's recent ticks beside it.
    extra=lambda schedule: {
        "ticks": selected.schedule_ticks(schedule) if schedule is not None else []
    },
)


def _row(request: HttpRequest, row: selected.ScheduleRow, moment: dt.datetime) -> dict[str, Any]:
    schedule = row.schedule
    local = words = ""
    if schedule.next_fire_at is not None:
        # Formatted here: the template's date filter would convert to the site's time zone.
        zone = zoneinfo.ZoneInfo(schedule.time_zone)
        local = schedule.next_fire_at.astimezone(zone).strftime("%Y-%m-%d %H:%M %Z")
        words = _in_words(schedule.next_fire_at, moment)
    return {
        "schedule": schedule,
        "timing": timing(schedule),
        "next_local": local,
        "next_words": words,
        "last": row.last_tick,
        # A role granted for some workflows only changes those workflows' schedules.
        "may_change": authz.can(request.user, "schedule_change", schedule.workflow_name),
        "may_trigger": authz.can(request.user, "schedule_trigger", schedule.workflow_name),
    }


def _in_words(when: dt.datetime, moment: dt.datetime) -> str:
    if when <= moment:
        return "due now"  # not fired yet: the schedulers look every few seconds
    if when - moment < dt.timedelta(minutes=1):
        return "in under a minute"
    return f"in {timesince.timeuntil(when, moment)}"


def _visible(request: HttpRequest) -> frozenset[str] | None:
    return authz.visible_workflows(request.user)


def _may(request: HttpRequest) -> dict[str, bool]:
    return {"change": services.can(request.user, "schedule_change")}


def _page(request: HttpRequest, *, status: int = 200, error: str = "") -> HttpResponse:
    moment = timezone.now()
    context = {
        "rows": [
            _row(request, row, moment)
            for row in selected.schedule_rows(workflows=_visible(request))
        ],
        "may": _may(request),
        "error": error,
        "nav_section": "schedules",
    }
    return render(request, PAGE, context, status=status)


@page_view("GET")
def schedule_list(request: HttpRequest) -> HttpResponse:
    return _page(request)


def _forbidden(request: HttpRequest, target: str) -> HttpResponse | None:
    """Refuse a change before its form is even read."""
    return forbidden(
        request,
        "schedule_change",
        target,
        lambda message: _page(request, status=403, error=message),
    )


@page_view("GET", "POST")
def schedule_new(request: HttpRequest) -> HttpResponse:
    return _forbidden(request, "schedule (new)") or SCHEDULES.new(request)


@page_view("GET", "POST")
def schedule_edit(request: HttpRequest, schedule_id: int) -> HttpResponse:
    if refused := _forbidden(request, f"schedule {schedule_id}"):
        return refused
    schedule = selected.schedule_get(schedule_id, workflows=_visible(request))
    if schedule is None:
        return _page(request, status=404, error=f"No schedule has the id {schedule_id}.")
    return SCHEDULES.edit(request, schedule)


@page_view("POST")
def schedule_pause(request: HttpRequest, schedule_id: int) -> HttpResponse:
    return _act(
        request, schedule_id, schedules.schedule_pause, "paused: no tick fires until it is resumed"
    )


@page_view("POST")
def schedule_resume(request: HttpRequest, schedule_id: int) -> HttpResponse:
    return _act(request, schedule_id, schedules.schedule_resume, "resumed from its next tick")


@page_view("POST")
def schedule_delete(request: HttpRequest, schedule_id: int) -> HttpResponse:
    return _act(
        request, schedule_id, schedules.schedule_delete, "deleted; the runs it started stay"
    )


def _act(
    request: HttpRequest, schedule_id: int, action: Callable[..., object], done: str
) -> HttpResponse:
    found = selected.schedule_get(schedule_id, workflows=_visible(request))
    try:
        action(schedule_id, user=request.user)
    except services.ServiceError as exc:
        return _page(request, status=exc.status, error=exc.message)
    messages.success(request, f"Schedule {found.name if found else schedule_id} {done}.")
    return redirect("dashboard:schedules")


@page_view("POST")
def schedule_trigger(request: HttpRequest, schedule_id: int) -> HttpResponse:
    try:
        tick = schedules.schedule_trigger(schedule_id, user=request.user)
    except services.ServiceError as exc:
        return _page(request, status=exc.status, error=exc.message)
    if tick.outcome == ScheduleTick.Outcome.STARTED and tick.run_id is not None:
        messages.success(
            request, f"Run {str(tick.run_id)[:8]} of {tick.schedule.workflow_name} is queued."
        )
        return redirect("dashboard:run_detail", run_id=tick.run_id)
    return _page(
        request, status=409, error=f"Nothing started: {tick.get_outcome_display()} ({tick.detail})."
    )
