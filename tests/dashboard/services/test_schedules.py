"""Schedules (dashboard/services/schedules.py, the ``fire-schedules`` job, the pages and the API):
validation, due ticks, skip-overlap, pause, trigger-now, audit, roles; and one tick fired by two
processes against one PostgreSQL database starting exactly one run.

Service tests run on SQLite and PostgreSQL (``services_db``); nothing runs in the background
(the test's transaction never commits, so no run is enqueued).
"""

from __future__ import annotations

import contextlib
import datetime as dt
import json
import re
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator
from typing import Any
from zoneinfo import ZoneInfo

import pytest
from django.db import IntegrityError, connections, transaction
from django.test import Client
from django.utils import timezone

from dashboard.core.errors import Conflict, Forbidden, InvalidInput, NotFound
from dashboard.execution import embedded
from dashboard.execution import tasks as execution_tasks
from dashboard.models import (
    AuditEntry,
    RunStatus,
    Schedule,
    ScheduleTick,
    WorkflowGrant,
    WorkflowRun,
)
from dashboard.services import schedules
from dashboard.web.operations import schedules as views_schedules
from tests.helpers.stack import HERE, production_env

FAST = {"limit": 2, "work_ms": 0}
T0 = dt.datetime(2026, 3, 2, 9, 0, tzinfo=dt.UTC)


def spec(**changes: Any) -> schedules.ScheduleSpec:
    fields: dict[str, Any] = {
        "name": "nightly",
        "workflow_name": "squares",
        "input": FAST,
        "kind": "cron",
        "cron": "0 * * * *",
        "time_zone": "UTC",
    }
    return schedules.ScheduleSpec(**{**fields, **changes})


def due(schedule: Schedule, at: dt.datetime) -> Schedule:
    """Make ``schedule``'s next tick ``at`` (as if it had been computed before)."""
    Schedule.objects.filter(pk=schedule.pk).update(next_fire_at=at)
    return Schedule.objects.get(pk=schedule.pk)


# ------------------------------------------------------------------------------ validation


@pytest.mark.parametrize(
    "changes, field",
    [
        ({"cron": "61 * * * *"}, "cron"),
        ({"cron": ""}, "cron"),
        ({"time_zone": "Mars/Olympus"}, "time_zone"),
        ({"time_zone": "../../etc/passwd"}, "time_zone"),
        ({"kind": "interval", "interval_seconds": 0}, "interval_seconds"),
        ({"kind": "interval", "interval_seconds": None}, "interval_seconds"),
        ({"kind": "interval", "interval_seconds": 10**9}, "interval_seconds"),
        ({"kind": "sometimes"}, "kind"),
        ({"workflow_name": "nope"}, "workflow"),
        ({"input": {"limit": "ten"}}, "input.limit"),
        ({"input": {"limit": 5000}}, "input.limit"),
        ({"input": [1]}, "input"),
        ({"name": ""}, "name"),
        ({"name": "x" * 101}, "name"),
    ],
)
def test_schedule_create_refuses_bad_fields_by_name(
    services_db: str, operator_user: Any, changes: dict[str, Any], field: str
) -> None:
    with pytest.raises(InvalidInput) as refused:
        schedules.schedule_create(spec(**changes), user=operator_user)

    assert field in refused.value.errors, refused.value.errors
    assert not Schedule.objects.exists()


def test_schedule_create_refuses_a_taken_name(services_db: str, operator_user: Any) -> None:
    schedules.schedule_create(spec(), user=operator_user)

    with pytest.raises(InvalidInput) as refused:
        schedules.schedule_create(spec(cron="5 * * * *"), user=operator_user)

    assert "name" in refused.value.errors


def test_schedule_create_stores_the_coerced_input_and_its_first_tick(
    services_db: str, operator_user: Any
) -> None:
    before = timezone.now()
    schedule = schedules.schedule_create(
        spec(input={"limit": 2}, cron="0 9 * * *", time_zone="Europe/Paris"), user=operator_user
    )

    assert schedule.input == {"limit": 2, "work_ms": 100}  # the type's default filled in
    assert schedule.next_fire_at is not None and schedule.next_fire_at > before
    local = schedule.next_fire_at.astimezone(ZoneInfo("Europe/Paris"))
    assert (local.hour, local.minute) == (9, 0)
    entry = AuditEntry.objects.get(action="schedule_create")
    assert entry.actor == operator_user and entry.target == "schedule nightly"
    assert entry.details["cron"] == "0 9 * * *" and entry.details["time_zone"] == "Europe/Paris"


def test_interval_ticks_count_from_creation_so_a_late_firing_does_not_drift(
    services_db: str,
) -> None:
    schedule = Schedule(kind="interval", interval_seconds=600, created_at=T0)

    assert schedules.next_tick(schedule, after=T0) == T0 + dt.timedelta(minutes=10)
    assert schedules.next_tick(
        schedule, after=T0 + dt.timedelta(minutes=10, seconds=4)
    ) == T0 + dt.timedelta(minutes=20)
    assert schedules.next_tick(schedule, after=T0 - dt.timedelta(hours=1)) == T0


def test_the_database_refuses_a_schedule_with_both_or_neither_timing(services_db: str) -> None:
    with pytest.raises(IntegrityError), transaction.atomic():
        Schedule.objects.create(
            name="a", workflow_name="squares", kind="cron", cron="* * * * *", interval_seconds=5
        )
    with pytest.raises(IntegrityError), transaction.atomic():
        Schedule.objects.create(name="b", workflow_name="squares", kind="interval", cron="")


# ------------------------------------------------------------------------------ firing


def test_a_due_tick_starts_one_run_linked_to_its_schedule_and_moves_on(
    services_db: str, operator_user: Any
) -> None:
    schedule = due(schedules.schedule_create(spec(), user=operator_user), T0)

    fired = schedules.schedules_fire_due(at=T0 + dt.timedelta(seconds=3))
    again = schedules.schedules_fire_due(at=T0 + dt.timedelta(seconds=4))

    (tick,) = ScheduleTick.objects.all()
    assert fired == [tick.pk] and again == []
    assert tick.tick_at == T0 and tick.outcome == "started" and not tick.manual
    run = WorkflowRun.objects.get()
    assert tick.run == run and run.schedule == schedule and run.status == RunStatus.QUEUED
    assert run.input == schedule.input and run.created_by is None
    schedule.refresh_from_db()
    assert schedule.next_fire_at == T0 + dt.timedelta(hours=1)
    assert schedule.last_fired_at == T0 + dt.timedelta(seconds=3)
    start = AuditEntry.objects.get(action="start")
    assert start.actor_name == "system" and start.details["schedule"] == "nightly"


def test_a_tick_not_yet_due_fires_nothing(services_db: str, operator_user: Any) -> None:
    due(schedules.schedule_create(spec(), user=operator_user), T0)

    assert schedules.schedules_fire_due(at=T0 - dt.timedelta(seconds=1)) == []
    assert not WorkflowRun.objects.exists()


def test_ticks_missed_while_nothing_fired_start_one_run_then_the_next_tick_after_now(
    services_db: str, operator_user: Any
) -> None:
    schedule = due(schedules.schedule_create(spec(cron="*/5 * * * *"), user=operator_user), T0)
    later = T0 + dt.timedelta(hours=3, minutes=2)

    schedules.schedules_fire_due(at=later)

    assert WorkflowRun.objects.count() == 1
    schedule.refresh_from_db()
    assert schedule.next_fire_at == T0 + dt.timedelta(hours=3, minutes=5)


def test_a_tick_is_skipped_and_recorded_while_the_previous_run_is_unfinished(
    services_db: str, operator_user: Any
) -> None:
    schedule = due(schedules.schedule_create(spec(), user=operator_user), T0)
    schedules.schedules_fire_due(at=T0)
    first = WorkflowRun.objects.get()
    WorkflowRun.objects.filter(pk=first.pk).update(status=RunStatus.WAITING)
    due(schedule, T0 + dt.timedelta(hours=1))

    schedules.schedules_fire_due(at=T0 + dt.timedelta(hours=1))

    skipped = ScheduleTick.objects.get(tick_at=T0 + dt.timedelta(hours=1))
    assert skipped.outcome == "skipped" and skipped.run is None
    assert skipped.detail == f"run {first.pk} is still waiting"
    assert WorkflowRun.objects.count() == 1


def test_a_tick_starts_when_the_previous_run_finished_or_overlap_is_allowed(
    services_db: str, operator_user: Any
) -> None:
    schedule = due(schedules.schedule_create(spec(), user=operator_user), T0)
    schedules.schedules_fire_due(at=T0)
    WorkflowRun.objects.update(status=RunStatus.COMPLETED, finished_at=T0)
    overlapping = due(
        schedules.schedule_create(
            spec(name="overlapping", skip_if_running=False), user=operator_user
        ),
        T0,
    )
    schedules.schedules_fire_due(at=T0)

    due(schedule, T0 + dt.timedelta(hours=1))
    due(overlapping, T0 + dt.timedelta(hours=1))
    schedules.schedules_fire_due(at=T0 + dt.timedelta(hours=1))

    assert WorkflowRun.objects.filter(schedule=schedule).count() == 2
    assert WorkflowRun.objects.filter(schedule=overlapping).count() == 2
    assert set(ScheduleTick.objects.values_list("outcome", flat=True)) == {"started"}


def test_a_tick_whose_run_cannot_start_is_recorded_as_failed_and_the_schedule_moves_on(
    services_db: str, operator_user: Any
) -> None:
    schedule = due(schedules.schedule_create(spec(), user=operator_user), T0)
    Schedule.objects.filter(pk=schedule.pk).update(workflow_name="removed-by-a-deploy")

    schedules.schedules_fire_due(at=T0)

    tick = ScheduleTick.objects.get()
    assert tick.outcome == "failed" and "unknown workflow 'removed-by-a-deploy'" in tick.detail
    assert not WorkflowRun.objects.exists()
    schedule.refresh_from_db()
    assert schedule.next_fire_at == T0 + dt.timedelta(hours=1)


def test_a_schedule_that_cannot_be_fired_does_not_hold_back_the_others(
    services_db: str, operator_user: Any, caplog: pytest.LogCaptureFixture
) -> None:
    broken = due(schedules.schedule_create(spec(name="a-broken"), user=operator_user), T0)
    Schedule.objects.filter(pk=broken.pk).update(time_zone="Gone/Nowhere")
    due(schedules.schedule_create(spec(name="b-fine"), user=operator_user), T0)

    fired = schedules.schedules_fire_due(at=T0)

    assert len(fired) == 1 and WorkflowRun.objects.get().schedule.name == "b-fine"  # type: ignore[union-attr]
    assert Schedule.objects.get(pk=broken.pk).next_fire_at == T0  # still due, tried again next time
    assert f"schedule {broken.pk} could not be fired" in caplog.text


def test_a_tick_claimed_already_starts_nothing_again(services_db: str, operator_user: Any) -> None:
    # The unique (schedule, tick) claim: what a second firing meets where no row lock held it.
    schedule = due(schedules.schedule_create(spec(), user=operator_user), T0)
    ScheduleTick.objects.create(schedule=schedule, tick_at=T0, outcome="started")

    assert schedules.schedules_fire_due(at=T0) == []
    assert not WorkflowRun.objects.exists()
    with pytest.raises(IntegrityError), transaction.atomic():
        ScheduleTick.objects.create(schedule=schedule, tick_at=T0, outcome="started")


def test_the_periodic_task_fires_due_schedules_once_per_period(
    services_db: str, operator_user: Any
) -> None:
    due(
        schedules.schedule_create(spec(), user=operator_user),
        timezone.now() - dt.timedelta(seconds=1),
    )

    first = execution_tasks.fire_schedules()
    second = execution_tasks.fire_schedules()

    assert len(first) == 1 and second == []
    assert WorkflowRun.objects.count() == 1
    registered = {job.name: job.func for job in embedded.periodic_jobs()}
    assert registered["fire-schedules"] is schedules.schedules_fire_due


# --------------------------------------------------------------------------- pause, resume, trigger


def test_a_paused_schedule_fires_nothing_and_resumes_from_the_next_tick_after_now(
    services_db: str, operator_user: Any
) -> None:
    schedule = schedules.schedule_create(spec(cron="* * * * *"), user=operator_user)

    paused = schedules.schedule_pause(schedule.pk, user=operator_user)
    assert paused.paused and paused.next_fire_at is None
    assert schedules.schedules_fire_due(at=timezone.now() + dt.timedelta(days=1)) == []
    with pytest.raises(Conflict, match="already paused"):
        schedules.schedule_pause(schedule.pk, user=operator_user)

    before = timezone.now()
    resumed = schedules.schedule_resume(schedule.pk, user=operator_user)
    assert not resumed.paused and resumed.next_fire_at is not None
    assert before < resumed.next_fire_at <= before + dt.timedelta(minutes=1)
    with pytest.raises(Conflict, match="already active"):
        schedules.schedule_resume(schedule.pk, user=operator_user)
    actions = list(
        AuditEntry.objects.filter(action__startswith="schedule_")
        .values_list("action", flat=True)
        .order_by("id")
    )
    assert actions == ["schedule_create", "schedule_pause", "schedule_resume"]


def test_trigger_now_starts_a_run_by_the_operator_even_while_paused(
    services_db: str, operator_user: Any
) -> None:
    schedule = schedules.schedule_create(spec(), user=operator_user, paused=True)

    tick = schedules.schedule_trigger(schedule.pk, user=operator_user)

    assert tick.manual and tick.outcome == "started"
    run = WorkflowRun.objects.get()
    assert tick.run == run and run.schedule == schedule and run.created_by == operator_user
    entry = AuditEntry.objects.get(action="schedule_trigger")
    assert (
        entry.actor == operator_user
        and entry.run_id == run.pk
        and entry.details["outcome"] == "started"
    )
    schedule.refresh_from_db()
    assert schedule.paused and schedule.next_fire_at is None  # its own ticks are unchanged


def test_trigger_now_skips_while_the_previous_run_is_unfinished(
    services_db: str, operator_user: Any
) -> None:
    schedule = schedules.schedule_create(spec(), user=operator_user)
    schedules.schedule_trigger(schedule.pk, user=operator_user)

    again = schedules.schedule_trigger(schedule.pk, user=operator_user)

    assert again.outcome == "skipped" and "is still queued" in again.detail
    assert WorkflowRun.objects.count() == 1
    assert AuditEntry.objects.filter(action="schedule_trigger").count() == 2


def test_update_changes_the_timing_and_records_before_and_after(
    services_db: str, operator_user: Any
) -> None:
    schedule = schedules.schedule_create(spec(), user=operator_user)

    updated = schedules.schedule_update(
        schedule.pk,
        spec(kind="interval", cron="", interval_seconds=90, time_zone="Asia/Tokyo"),
        user=operator_user,
    )

    assert (updated.kind, updated.cron, updated.interval_seconds, updated.time_zone) == (
        "interval",
        "",
        90,
        "Asia/Tokyo",
    )
    entry = AuditEntry.objects.get(action="schedule_update")
    assert (
        entry.details["before"]["cron"] == "0 * * * *"
        and entry.details["after"]["interval_seconds"] == 90
    )


def test_delete_keeps_the_runs_it_started_unlinked(services_db: str, operator_user: Any) -> None:
    schedule = schedules.schedule_create(spec(), user=operator_user)
    run = schedules.schedule_trigger(schedule.pk, user=operator_user).run

    schedules.schedule_delete(schedule.pk, user=operator_user)

    assert not Schedule.objects.exists() and not ScheduleTick.objects.exists()
    assert run is not None and WorkflowRun.objects.get(pk=run.pk).schedule is None
    assert AuditEntry.objects.get(action="schedule_delete").details["workflow"] == "squares"
    with pytest.raises(NotFound):
        schedules.schedule_pause(schedule.pk, user=operator_user)


# ------------------------------------------------------------------------------ roles


@pytest.mark.parametrize(
    "call",
    [
        lambda user, pk: schedules.schedule_create(spec(name="other"), user=user),
        lambda user, pk: schedules.schedule_update(pk, spec(), user=user),
        lambda user, pk: schedules.schedule_pause(pk, user=user),
        lambda user, pk: schedules.schedule_delete(pk, user=user),
        lambda user, pk: schedules.schedule_trigger(pk, user=user),
    ],
    ids=["create", "update", "pause", "delete", "trigger"],
)
def test_a_viewer_may_not_change_or_trigger_a_schedule_and_the_refusal_is_recorded(
    services_db: str, operator_user: Any, viewer_user: Any, call: Callable[[Any, int], object]
) -> None:
    schedule = schedules.schedule_create(spec(), user=operator_user)

    with pytest.raises(Forbidden):
        call(viewer_user, schedule.pk)

    assert AuditEntry.objects.filter(actor=viewer_user, outcome=AuditEntry.DENIED).count() == 1
    assert Schedule.objects.get().name == "nightly" and not WorkflowRun.objects.exists()


def test_a_role_granted_for_one_workflow_manages_only_that_workflows_schedules(
    services_db: str, operator_user: Any, role_user: Callable[..., Any]
) -> None:
    team = role_user("tess")
    WorkflowGrant.objects.create(
        user=team, role=role_user.group("Operator"), workflow_name="squares"
    )  # type: ignore[attr-defined]
    other = schedules.schedule_create(
        spec(name="other", workflow_name="fail-at-step", input={"steps": 1}), user=operator_user
    )
    client = Client()
    client.force_login(team)

    own = schedules.schedule_create(spec(name="own"), user=team)
    with pytest.raises(Forbidden):
        schedules.schedule_create(
            spec(name="theirs", workflow_name="fail-at-step", input={"steps": 1}), user=team
        )
    with pytest.raises(Forbidden):  # moving its own schedule onto another workflow
        schedules.schedule_update(
            own.pk, spec(name="own", workflow_name="fail-at-step", input={"steps": 1}), user=team
        )
    with pytest.raises(NotFound):  # another team's schedule is not there at all
        schedules.schedule_trigger(other.pk, user=team)
    assert schedules.schedule_pause(own.pk, user=team).paused

    assert [s["name"] for s in client.get("/api/schedules/").json()["schedules"]] == ["own"]
    page = text(client.get("/schedules/"))
    assert "own" in page and "fail-at-step" not in page
    assert client.get(f"/schedules/{other.pk}/edit/").status_code == 404
    assert post(client, f"/api/schedules/{other.pk}/pause/").status_code == 404
    assert not Schedule.objects.get(pk=other.pk).paused


# ------------------------------------------------------------------------------ pages


def text(response: Any) -> str:
    return " ".join(response.content.decode().split())


def test_schedules_page_shows_the_next_tick_on_the_schedules_clock_in_words_and_the_last_run(
    services_db: str, operator_client: Client
) -> None:
    user = operator_client.user  # type: ignore[attr-defined]
    schedule = schedules.schedule_create(
        spec(cron="0 9 * * *", time_zone="America/New_York"), user=user
    )
    run = schedules.schedule_trigger(schedule.pk, user=user).run
    schedules.schedule_create(
        spec(name="weekly", kind="interval", cron="", interval_seconds=3600), user=user, paused=True
    )
    assert schedule.next_fire_at is not None
    local = schedule.next_fire_at.astimezone(ZoneInfo("America/New_York"))

    page = text(operator_client.get("/schedules/"))

    assert "cron 0 9 * * * (America/New_York)" in page and "every 1 hour" in page
    assert local.strftime("%Y-%m-%d 09:00 %Z") in page  # on New York's clock, not the site's
    assert re.search(r"in (under a minute|\d+ (minutes?|hours?))", page)  # and in words
    assert run is not None and f'href="/runs/{run.pk}/"' in page
    assert "Paused" in page and "None while paused" in page
    assert "Trigger now" in page and "New schedule" in page


@pytest.mark.parametrize(
    "ahead, words",
    [
        (-5, "due now"),
        (0, "due now"),
        (30, "in under a minute"),
        (3 * 3600 + 300, "in 3 hours, 5 minutes"),
    ],
)
def test_the_next_tick_in_words(ahead: int, words: str) -> None:
    said = views_schedules._in_words(T0 + dt.timedelta(seconds=ahead), T0)

    assert said.replace("\xa0", " ") == words  # Django's timeuntil keeps number and unit together


def test_a_viewer_sees_schedules_without_buttons_and_is_refused_changes(
    services_db: str, operator_user: Any, client_as: Callable[..., Client]
) -> None:
    schedule = schedules.schedule_create(spec(), user=operator_user)
    viewer = client_as("Viewer", username="vic")

    page = text(viewer.get("/schedules/"))
    assert "nightly" in page and "Trigger now" not in page and "New schedule" not in page
    assert viewer.get("/schedules/new/").status_code == 403
    assert viewer.post(f"/schedules/{schedule.pk}/pause/").status_code == 403
    assert viewer.post(f"/schedules/{schedule.pk}/trigger/").status_code == 403
    assert not Schedule.objects.get().paused and not WorkflowRun.objects.exists()


def test_the_form_saves_a_schedule_through_the_service(
    services_db: str, operator_client: Client
) -> None:
    response = operator_client.post(
        "/schedules/new/",
        {
            "name": "hourly squares",
            "workflow_name": "squares",
            "input": json.dumps(FAST),
            "kind": "interval",
            "every": "2",
            "unit": "hours",
            "time_zone": "UTC",
            "skip_if_running": "on",
        },
    )

    assert response.status_code == 302 and response["Location"] == "/schedules/"
    schedule = Schedule.objects.get()
    assert (schedule.kind, schedule.interval_seconds, schedule.skip_if_running) == (
        "interval",
        7200,
        True,
    )
    edit = text(operator_client.get(f"/schedules/{schedule.pk}/edit/"))
    assert 'value="hourly squares"' in edit and 'value="2"' in edit


def test_the_form_answers_422_with_the_refusal_beside_its_field(
    services_db: str, operator_client: Client
) -> None:
    response = operator_client.post(
        "/schedules/new/",
        {
            "name": "bad",
            "workflow_name": "squares",
            "input": json.dumps({"limit": "ten"}),
            "kind": "cron",
            "cron": "0 25 * * *",
            "unit": "minutes",
            "time_zone": "UTC",
        },
    )

    assert response.status_code == 422
    page = response.content.decode()
    assert "hour: 25 is outside 0-23" in page and 'id="id_cron_error"' in page
    assert 'id="id_input_error"' in page and "limit: " in page
    assert not Schedule.objects.exists()


def test_pause_resume_and_trigger_buttons(services_db: str, operator_client: Client) -> None:
    schedule = schedules.schedule_create(spec(), user=operator_client.user)  # type: ignore[attr-defined]

    assert operator_client.post(f"/schedules/{schedule.pk}/pause/").status_code == 302
    assert Schedule.objects.get().paused
    assert operator_client.post(f"/schedules/{schedule.pk}/resume/").status_code == 302
    assert not Schedule.objects.get().paused
    triggered = operator_client.post(f"/schedules/{schedule.pk}/trigger/")
    run = WorkflowRun.objects.get()
    assert triggered.status_code == 302 and triggered["Location"] == f"/runs/{run.pk}/"
    skipped = operator_client.post(f"/schedules/{schedule.pk}/trigger/")
    assert skipped.status_code == 409 and "is still queued" in text(skipped)
    assert operator_client.post("/schedules/999999/pause/").status_code == 404


def test_the_run_page_links_to_its_schedule(services_db: str, operator_client: Client) -> None:
    schedule = schedules.schedule_create(spec(), user=operator_client.user)  # type: ignore[attr-defined]
    run = schedules.schedule_trigger(schedule.pk, user=operator_client.user).run  # type: ignore[attr-defined]
    assert run is not None

    page = text(operator_client.get(f"/runs/{run.pk}/"))

    assert f'href="/schedules/#schedule-{schedule.pk}" data-schedule-link>nightly</a>' in page


# ------------------------------------------------------------------------------ API


def post(client: Client, path: str, body: Any = None) -> Any:
    return client.post(path, json.dumps(body or {}), content_type="application/json")


def test_api_creates_lists_pauses_resumes_and_triggers(
    services_db: str, operator_client: Client
) -> None:
    created = post(
        operator_client,
        "/api/schedules/",
        {
            "name": "api",
            "workflow": "squares",
            "input": FAST,
            "cron": "*/10 * * * *",
            "time_zone": "Europe/Paris",
        },
    )
    assert created.status_code == 201, created.content
    body = created.json()
    assert body["kind"] == "cron" and body["time_zone"] == "Europe/Paris" and body["next_fire_at"]
    pk = body["id"]

    assert post(operator_client, f"/api/schedules/{pk}/pause/").json()["paused"] is True
    assert post(operator_client, f"/api/schedules/{pk}/pause/").status_code == 409
    assert post(operator_client, f"/api/schedules/{pk}/resume/").json()["paused"] is False
    triggered = post(operator_client, f"/api/schedules/{pk}/trigger/")
    assert triggered.status_code == 201 and triggered.json()["outcome"] == "started"
    run_id = triggered.json()["run_id"]
    assert operator_client.get(f"/api/runs/{run_id}/").json()["schedule_id"] == pk
    skipped = post(operator_client, f"/api/schedules/{pk}/trigger/")
    assert skipped.status_code == 409 and "still queued" in skipped.json()["error"]
    (listed,) = operator_client.get("/api/schedules/").json()["schedules"]
    assert listed["name"] == "api" and listed["last_tick"]["outcome"] == "skipped"
    assert post(operator_client, "/api/schedules/424242/trigger/").status_code == 404
    wrong_method = operator_client.get(f"/api/schedules/{pk}/pause/")
    assert wrong_method.status_code == 405 and "error" in wrong_method.json()


@pytest.mark.parametrize(
    "body, field",
    [
        ({"cron": "* * *"}, "cron"),
        ({"cron": "* * * * *", "interval_seconds": 60}, "cron"),
        ({}, "cron"),
        ({"interval_seconds": 0}, "interval_seconds"),
        ({"cron": "* * * * *", "time_zone": "Nowhere"}, "time_zone"),
        ({"cron": "* * * * *", "input": {"limit": -1}}, "input.limit"),
    ],
)
def test_api_refuses_bad_schedules_with_400_naming_the_field(
    services_db: str, operator_client: Client, body: dict[str, Any], field: str
) -> None:
    response = post(
        operator_client, "/api/schedules/", {"name": "x", "workflow": "squares", **body}
    )

    assert response.status_code == 400 and field in response.json()["errors"], response.json()
    assert not Schedule.objects.exists()


def test_api_refuses_a_viewer_with_403(
    services_db: str, operator_user: Any, client_as: Callable[..., Client]
) -> None:
    schedule = schedules.schedule_create(spec(), user=operator_user)
    viewer = client_as("Viewer", username="vic")

    assert viewer.get("/api/schedules/").status_code == 200
    assert (
        post(
            viewer, "/api/schedules/", {"name": "v", "workflow": "squares", "cron": "* * * * *"}
        ).status_code
        == 403
    )
    assert post(viewer, f"/api/schedules/{schedule.pk}/trigger/").status_code == 403


# ------------------------------------------------------------------------------ processes


def test_threads_firing_the_same_tick_start_one_run(
    services_postgres_transactional_db: str, role_user: Callable[..., Any]
) -> None:
    operator = role_user("olga", "Operator")
    schedule = due(schedules.schedule_create(spec(), user=operator), T0)
    barrier = threading.Barrier(4)
    fired: list[list[int]] = []

    def fire() -> None:
        try:
            barrier.wait(10)
            fired.append(schedules.schedules_fire_due(at=T0))
        finally:
            connections.close_all()

    threads = [threading.Thread(target=fire) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(30)

    assert sorted(len(ticks) for ticks in fired) == [0, 0, 0, 1]
    assert WorkflowRun.objects.filter(schedule=schedule).count() == 1
    assert ScheduleTick.objects.filter(schedule=schedule).count() == 1


DRIVER = HERE / "schedule_fire_driver.py"
SCHEDULES = 25


@pytest.fixture
def own_database(
    migrated_postgres: Callable[[str], contextlib.AbstractContextManager[str]],
) -> Iterator[str]:
    """A migrated database of this test's own: the session's is shared with the integration
    tests, whose runs would be counted here (and whose workers would execute ours)."""
    with migrated_postgres("superstep_schedules") as url:
        yield url


@pytest.mark.slow
@pytest.mark.postgres
def test_two_processes_firing_the_same_ticks_start_each_run_once(
    own_database: str, subprocess_env: Callable[..., dict[str, str]]
) -> None:
    # Two scheduler processes (as two beats, or beat beside a server's embedded threads) with
    # their own connections, released at one instant onto the same due ticks.
    env = production_env(subprocess_env, database_url=own_database, redis_url="")
    env.pop("REDIS_URL")  # embedded mode: a started run is executed (or not) in the process
    seeded = _driver(env, "seed", str(SCHEDULES), T0.isoformat())
    assert seeded == {"schedules": SCHEDULES}
    processes = [
        subprocess.Popen(
            [sys.executable, str(DRIVER), "fire", T0.isoformat()],
            cwd=HERE.parents[1],
            env=env,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for _ in range(2)
    ]
    try:
        ready = [p.stdout.readline().strip() for p in processes if p.stdout is not None]
        assert ready == ["ready", "ready"], [p.stderr.read() for p in processes if p.stderr]
        for process in processes:  # both released at once: each reads its start line
            assert process.stdin is not None
            process.stdin.write("go\n")
            process.stdin.flush()
        outputs = [p.communicate(timeout=120) for p in processes]
    finally:
        for process in processes:
            if process.poll() is None:
                process.kill()
    assert all(p.returncode == 0 for p in processes), [err[-3000:] for _, err in outputs]
    fired = [json.loads(out.strip().splitlines()[-1])["fired"] for out, _ in outputs]

    counts = _driver(env, "count")
    assert sum(fired) == SCHEDULES, fired
    assert counts == {"runs": SCHEDULES, "ticks": SCHEDULES, "schedules_with_one_run": SCHEDULES}


def _driver(env: dict[str, str], *arguments: str) -> Any:
    result = subprocess.run(
        [sys.executable, str(DRIVER), *arguments],
        cwd=HERE.parents[1],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    return json.loads(result.stdout.strip().splitlines()[-1])
