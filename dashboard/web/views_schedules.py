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

from django import forms
from django.contrib import messages
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.utils import timesince, timezone

from dashboard import services
from dashboard.execution import registry
from dashboard.models import Schedule, ScheduleTick
from dashboard.selectors import schedules as selected
from dashboard.services import authz, schedules
from dashboard.web.access import page_view
from dashboard.web.forms import JsonField, apply_errors

PAGE = "dashboard/schedules.html"
FORM = "dashboard/schedule_form.html"
UNITS = {"seconds": 1, "minutes": 60, "hours": 3600, "days": 86400}


class ScheduleForm(forms.Form):
    """Types only; what a schedule may say is ``schedules.schedule_check``'s rule, whose
    messages land beside these fields."""

    name = forms.CharField(strip=True, widget=forms.TextInput(attrs={"maxlength": 100}))
    workflow_name = forms.ChoiceField(label="Workflow", choices=())
    input = JsonField(rows=6, label="Input (JSON)", initial="{}", help_text="What each run starts with.")
    kind = forms.ChoiceField(label="Fires", choices=Schedule.Kind.choices, initial="cron")
    cron = forms.CharField(
        required=False,
        label="Cron expression",
        help_text="minute hour day-of-month month day-of-week, e.g. 0 9 * * MON-FRI",
        widget=forms.TextInput(attrs={"maxlength": 200, "spellcheck": "false", "class": "code"}),
    )
    every = forms.IntegerField(
        required=False, min_value=1, label="Every", widget=forms.NumberInput(attrs={"min": 1})
    )
    unit = forms.ChoiceField(choices=[(unit, unit) for unit in UNITS], initial="minutes")
    time_zone = forms.ChoiceField(
        label="Time zone", initial="UTC", help_text="The cron fields are read on this clock."
    )
    skip_if_running = forms.BooleanField(
        required=False,
        initial=True,
        label="Skip a tick while the previous run is unfinished",
    )

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.fields["workflow_name"].choices = [(name, name) for name in registry.names()]  # type: ignore[attr-defined]
        self.fields["time_zone"].choices = [(zone, zone) for zone in sorted(schedules.time_zones())]  # type: ignore[attr-defined]

    def spec(self) -> schedules.ScheduleSpec:
        data = self.cleaned_data
        every = data.get("every")
        seconds = every * UNITS[data["unit"]] if every is not None else None
        return schedules.ScheduleSpec(
            name=data["name"],
            workflow_name=data["workflow_name"],
            input=data["input"],
            kind=data["kind"],
            cron=data["cron"] if data["kind"] == Schedule.Kind.CRON else "",
            interval_seconds=seconds if data["kind"] == Schedule.Kind.INTERVAL else None,
            time_zone=data["time_zone"],
            skip_if_running=data["skip_if_running"],
        )

    @classmethod
    def initial_for(cls, schedule: Schedule) -> dict[str, Any]:
        seconds = schedule.interval_seconds or 0
        unit = next((u for u in reversed(UNITS) if seconds and seconds % UNITS[u] == 0), "seconds")
        return {
            "name": schedule.name, "workflow_name": schedule.workflow_name, "input": schedule.input,
            "kind": schedule.kind, "cron": schedule.cron, "time_zone": schedule.time_zone,
            "every": seconds // UNITS[unit] if seconds else None, "unit": unit,
            "skip_if_running": schedule.skip_if_running,
        }

    def add_service_errors(self, errors: dict[str, str]) -> None:
        # The service names the API's fields; two of them are asked differently here.
        names = {"interval_seconds": "every", "workflow": "workflow_name"}
        apply_errors(self, {names.get(key, key): value for key, value in errors.items()})


def timing(schedule: Schedule) -> str:
    """When a schedule fires, in words."""
    if schedule.kind == Schedule.Kind.CRON:
        return f"cron {schedule.cron} ({schedule.time_zone})"
    seconds = schedule.interval_seconds or 0
    unit = next((u for u in reversed(UNITS) if seconds % UNITS[u] == 0), "seconds")
    count = seconds // UNITS[unit]
    return f"every {count} {unit[:-1] if count == 1 else unit}"


def _row(request: HttpRequest, row: selected.ScheduleRow, moment: dt.datetime) -> dict[str, Any]:
    schedule = row.schedule
    local = words = ""
    if schedule.next_fire_at is not None:
        # Formatted here: the template's date filter would convert to the site's time zone.
        zone = zoneinfo.ZoneInfo(schedule.time_zone)
        local = schedule.next_fire_at.astimezone(zone).strftime("%Y-%m-%d %H:%M %Z")
        words = _in_words(schedule.next_fire_at, moment)
    return {
        "schedule": schedule, "timing": timing(schedule), "next_local": local, "next_words": words,
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
        "rows": [_row(request, row, moment) for row in selected.schedule_rows(workflows=_visible(request))],
        "may": _may(request),
        "error": error,
        "nav_section": "schedules",
    }
    return render(request, PAGE, context, status=status)


def _status(exc: services.ServiceError) -> int:
    return 422 if exc.status == 400 else exc.status


@page_view("GET")
def schedule_list(request: HttpRequest) -> HttpResponse:
    return _page(request)


def _forbidden(request: HttpRequest, target: str) -> HttpResponse | None:
    """Refuse a change before its form is even read (the refusal is recorded by the service's
    own check)."""
    try:
        services.require(request.user, "schedule_change", target=target)
    except services.Forbidden as exc:
        return _page(request, status=403, error=exc.message)
    return None


@page_view("GET", "POST")
def schedule_new(request: HttpRequest) -> HttpResponse:
    if refused := _forbidden(request, "schedule (new)"):
        return refused
    if request.method == "GET":
        return _form_page(request, ScheduleForm(), None)
    return _save(request, None)


@page_view("GET", "POST")
def schedule_edit(request: HttpRequest, schedule_id: int) -> HttpResponse:
    if refused := _forbidden(request, f"schedule {schedule_id}"):
        return refused
    schedule = selected.schedule_get(schedule_id, workflows=_visible(request))
    if schedule is None:
        return _page(request, status=404, error=f"No schedule has the id {schedule_id}.")
    if request.method == "GET":
        return _form_page(request, ScheduleForm(initial=ScheduleForm.initial_for(schedule)), schedule)
    return _save(request, schedule)


def _save(request: HttpRequest, schedule: Schedule | None) -> HttpResponse:
    """The posted form through ``schedule_create`` (``schedule`` None) or ``schedule_update``."""
    form = ScheduleForm(request.POST)
    if not form.is_valid():
        return _form_page(request, form, schedule, status=422)
    try:
        if schedule is None:
            saved = schedules.schedule_create(form.spec(), user=request.user)
        else:
            saved = schedules.schedule_update(schedule.pk, form.spec(), user=request.user)
    except services.ServiceError as exc:
        form.add_service_errors(exc.errors or {"__all__": exc.message})
        return _form_page(request, form, schedule, status=_status(exc))
    messages.success(request, f"Schedule {saved.name} saved: {timing(saved)}.")
    return redirect("dashboard:schedules")


def _form_page(
    request: HttpRequest, form: ScheduleForm, schedule: Schedule | None, *, status: int = 200
) -> HttpResponse:
    context = {
        "form": form,
        "schedule": schedule,
        "ticks": selected.schedule_ticks(schedule) if schedule is not None else [],
        "nav_section": "schedules",
    }
    return render(request, FORM, context, status=status)


@page_view("POST")
def schedule_pause(request: HttpRequest, schedule_id: int) -> HttpResponse:
    return _act(request, schedule_id, schedules.schedule_pause, "paused: no tick fires until it is resumed")


@page_view("POST")
def schedule_resume(request: HttpRequest, schedule_id: int) -> HttpResponse:
    return _act(request, schedule_id, schedules.schedule_resume, "resumed from its next tick")


@page_view("POST")
def schedule_delete(request: HttpRequest, schedule_id: int) -> HttpResponse:
    return _act(request, schedule_id, schedules.schedule_delete, "deleted; the runs it started stay")


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
        messages.success(request, f"Run {str(tick.run_id)[:8]} of {tick.schedule.workflow_name} is queued.")
        return redirect("dashboard:run_detail", run_id=tick.run_id)
    return _page(request, status=409, error=f"Nothing started: {tick.get_outcome_display()} ({tick.detail}).")
