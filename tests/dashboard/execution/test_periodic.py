"""dashboard/execution/periodic.py: each period of a periodic job runs once, whoever triggers
it (Celery beat, a second beat, the embedded threads of any server process)."""

from __future__ import annotations

import datetime as dt
import threading

import pytest
from django.db import connections
from django.utils import timezone

from dashboard.execution import periodic
from dashboard.models import PeriodicJobRun

NOON = dt.datetime(2026, 3, 1, 12, 0, 0, tzinfo=dt.UTC)


def test_period_of_numbers_whole_intervals_since_the_epoch() -> None:
    assert periodic.period_of(10, NOON) == periodic.period_of(10, NOON + dt.timedelta(seconds=9.9))
    assert (
        periodic.period_of(10, NOON + dt.timedelta(seconds=10)) == periodic.period_of(10, NOON) + 1
    )
    with pytest.raises(ValueError, match="positive"):
        periodic.period_of(0, NOON)


def test_a_period_runs_once_and_the_next_period_runs_again(services_db: str) -> None:
    calls: list[int] = []

    def job() -> int:
        calls.append(1)
        return len(calls)

    first = periodic.run_once_per_period("sweep", 60, job, now=NOON)
    again = periodic.run_once_per_period("sweep", 60, job, now=NOON + dt.timedelta(seconds=30))
    other_job = periodic.run_once_per_period("prune", 60, job, now=NOON)
    next_period = periodic.run_once_per_period(
        "sweep", 60, job, now=NOON + dt.timedelta(seconds=60)
    )

    assert (first, again, other_job, next_period) == (
        (True, 1),
        (False, None),
        (True, 2),
        (True, 3),
    )
    row = PeriodicJobRun.objects.get(job="sweep", period=periodic.period_of(60, NOON))
    assert row.finished_at is not None and row.error == ""


def test_concurrent_triggers_of_one_period_run_the_job_once(services_transactional_db: str) -> None:
    # Two beat processes (or beat and a server thread) firing at the same moment.
    calls: list[str] = []
    start = threading.Barrier(4)

    def trigger() -> None:
        try:
            start.wait(10)
            periodic.run_once_per_period("sweep", 3600, lambda: calls.append("ran"), now=NOON)
        finally:
            connections.close_all()

    threads = [threading.Thread(target=trigger) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(30)

    assert calls == ["ran"]
    assert PeriodicJobRun.objects.filter(job="sweep").count() == 1


def test_a_failed_run_keeps_its_period_and_records_the_error(services_db: str) -> None:
    def broken() -> None:
        raise RuntimeError("database went away")

    with pytest.raises(RuntimeError, match="went away"):
        periodic.run_once_per_period("sweep", 60, broken, now=NOON)
    retried = periodic.run_once_per_period("sweep", 60, lambda: "ok", now=NOON)

    assert retried == (False, None)  # the next period does the work (every job is a sweep)
    row = PeriodicJobRun.objects.get(job="sweep")
    assert row.error == "RuntimeError: database went away" and row.finished_at is not None


def test_claims_older_than_a_day_are_deleted_by_later_claims(services_db: str) -> None:
    periodic.run_once_per_period("sweep", 3600, lambda: None, now=NOON - dt.timedelta(days=3))
    periodic.run_once_per_period("prune", 3600, lambda: None, now=NOON - dt.timedelta(days=3))
    periodic.run_once_per_period("sweep", 3600, lambda: None, now=NOON - dt.timedelta(hours=5))

    periodic.run_once_per_period("sweep", 3600, lambda: None, now=NOON)

    kept = sorted(PeriodicJobRun.objects.values_list("job", "started_at"))
    assert kept == [
        ("prune", NOON - dt.timedelta(days=3)),  # another job's history is its own to prune
        ("sweep", NOON - dt.timedelta(hours=5)),
        ("sweep", NOON),
    ]


def test_the_default_moment_is_now(services_db: str) -> None:
    ran, _ = periodic.run_once_per_period("sweep", 3600, lambda: None)

    row = PeriodicJobRun.objects.get(job="sweep")
    assert ran and row.period == periodic.period_of(3600, timezone.now())
