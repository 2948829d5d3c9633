"""A scheduler process for the schedule tests: fires due schedule ticks against the database
of ``DATABASE_URL`` (production settings, ``DJANGO_SETTINGS_MODULE=dashboard.config.settings``).
Prints one JSON value on its last line::

    python schedule_fire_driver.py seed N TICK   # N schedules of squares, all due at TICK
    python schedule_fire_driver.py every N SECONDS  # N schedules of squares every SECONDS,
                                                 #   each tick starting a run (no skipping)
    python schedule_fire_driver.py fire TICK     # "ready", then on a line from stdin fires
                                                 #   every tick due at TICK -> {"fired": n}
    python schedule_fire_driver.py count         # runs, ticks, schedules with exactly one run

Not a test module (pytest collects ``test_*.py`` only).
"""

from __future__ import annotations

import datetime as dt
import json
import sys
from typing import Any

import django


def seed(count: str, tick: str) -> dict[str, int]:
    from dashboard.models import Schedule
    from dashboard.services import schedules

    for index in range(int(count)):
        spec = schedules.ScheduleSpec(
            name=f"s{index}",
            workflow_name="squares",
            input={"limit": 1, "work_ms": 0},
            cron="0 * * * *",
        )
        schedules.schedule_create(spec)
    Schedule.objects.update(next_fire_at=dt.datetime.fromisoformat(tick))
    return {"schedules": Schedule.objects.count()}


def every(count: str, seconds: str) -> dict[str, int]:
    from dashboard.models import Schedule
    from dashboard.services import schedules

    for index in range(int(count)):
        spec = schedules.ScheduleSpec(
            name=f"every{index}",
            workflow_name="squares",
            input={"limit": 1, "work_ms": 0},
            kind=Schedule.Kind.INTERVAL,
            interval_seconds=int(seconds),
            skip_if_running=False,
        )
        schedules.schedule_create(spec)
    return {"schedules": Schedule.objects.count()}


def fire(tick: str) -> dict[str, int]:
    from django.db import connection

    from dashboard.services import schedules

    connection.ensure_connection()  # connected before the start line, not racing to connect
    print("ready", flush=True)
    sys.stdin.readline()
    moment = dt.datetime.fromisoformat(tick)
    # Several passes, as a beat firing every few seconds would: none may start a run again.
    fired = sum(len(schedules.schedules_fire_due(at=moment)) for _ in range(3))
    return {"fired": fired}


def count() -> dict[str, int]:
    from django.db.models import Count

    from dashboard.models import Schedule, ScheduleTick, WorkflowRun

    with_one = Schedule.objects.annotate(n=Count("runs")).filter(n=1).count()
    return {
        "runs": WorkflowRun.objects.count(),
        "ticks": ScheduleTick.objects.count(),
        "schedules_with_one_run": with_one,
    }


COMMANDS: dict[str, Any] = {"seed": seed, "every": every, "fire": fire, "count": count}

if __name__ == "__main__":
    django.setup()
    command, *arguments = sys.argv[1:]
    print(json.dumps(COMMANDS[command](*arguments)), flush=True)
