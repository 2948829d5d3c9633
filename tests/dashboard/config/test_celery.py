"""dashboard/config/celery.py: the app workers and beat run, configured from Django settings;
beat publishes every periodic job, and each job's task runs once per period."""

from __future__ import annotations

import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from celery import Celery
from django.utils import timezone

from dashboard import celery_app, services
from dashboard.access import audit_chain
from dashboard.catalog.periodic_jobs import PERIODIC_JOBS
from dashboard.config.settings import BASE_DIR
from dashboard.execution import bulk_tasks, embedded
from dashboard.execution import tasks as execution_tasks
from dashboard.models import PeriodicJobRun
from dashboard.notifications import tasks as notification_tasks
from dashboard.services import alert_evaluation, bulk, schedules

EnvBuilder = Callable[..., dict[str, str]]


def test_celery_app_takes_its_configuration_from_django_settings() -> None:
    conf = celery_app.conf

    assert celery_app.main == "dashboard"
    assert conf.task_serializer == conf.result_serializer == "json"
    assert conf.accept_content == ["json"]
    assert conf.task_acks_late is True
    assert conf.task_reject_on_worker_lost is True
    assert conf.worker_prefetch_multiplier == 1
    assert conf.task_ignore_result is True


def test_beat_publishes_every_periodic_job_at_the_interval_the_threads_use() -> None:
    schedule = celery_app.conf.beat_schedule
    threads = {job.name: job.every for job in embedded.periodic_jobs() if job.name in PERIODIC_JOBS}

    assert (
        set(schedule)
        == set(PERIODIC_JOBS)
        == set(threads)
        == {
            "sweep-runs",
            "sweep-bulk-actions",
            "sweep-approvals",
            "retry-notifications",
            "park-stranded-runs",
            "prune-checkpoints",
            "fire-schedules",
            "evaluate-alerts",
            "seal-audit",
        }
    )
    for name, entry in schedule.items():
        assert entry["task"] in celery_app.tasks, entry["task"]
        assert entry["schedule"] == threads[name] == PERIODIC_JOBS[name].every
        assert entry["options"]["expires"] == entry["schedule"]


def test_each_periodic_task_runs_its_job_once_per_period(
    services_db: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Two beats (or a message delivered twice) trigger the same period: the second does nothing.
    # One instant for both rounds: a period boundary crossed between them would be a new period.
    moment = timezone.now()
    monkeypatch.setattr(timezone, "now", lambda: moment)
    calls: list[str] = []
    monkeypatch.setattr(services, "runs_sweep", lambda: calls.append("runs") or ["run-1"])
    monkeypatch.setattr(services, "approvals_sweep", lambda: calls.append("approvals") or [])
    monkeypatch.setattr(services, "checkpoint_prune", lambda: calls.append("prune") or [])
    monkeypatch.setattr(
        services, "park_runs_on_removed_versions", lambda: calls.append("park") or []
    )
    monkeypatch.setattr(schedules, "schedules_fire_due", lambda: calls.append("schedules") or [])
    monkeypatch.setattr(
        alert_evaluation,
        "alerts_evaluate",
        lambda: calls.append("alerts") or alert_evaluation.EvaluationReport(opened=[1]),
    )
    monkeypatch.setattr(audit_chain, "seal_pending", lambda: calls.append("seal") or 3)
    monkeypatch.setattr(bulk, "bulk_sweep", lambda: calls.append("bulk") or ["bulk-1"])
    tasks = [
        execution_tasks.sweep_runs,
        execution_tasks.sweep_approvals,
        execution_tasks.prune_checkpoints,
        notification_tasks.retry_notifications,
        execution_tasks.park_stranded_runs,
        execution_tasks.fire_schedules,
        notification_tasks.evaluate_alerts,
        execution_tasks.seal_audit,
        bulk_tasks.sweep_bulk_actions,
    ]

    first = [task() for task in tasks]
    second = [task() for task in tasks]

    nothing = {"opened": [], "resolved": []}
    assert first == [["run-1"], [], [], [], [], [], {"opened": [1], "resolved": []}, 3, ["bulk-1"]]
    assert second == [[], [], [], [], [], [], nothing, 0, []]
    assert calls == ["runs", "approvals", "prune", "park", "schedules", "alerts", "seal", "bulk"]
    assert sorted(PeriodicJobRun.objects.values_list("job", flat=True)) == sorted(PERIODIC_JOBS)


@pytest.fixture
def worker_log(tmp_path: Path) -> Path:
    return tmp_path / "worker.log"


@pytest.fixture
def worker(
    redis_url: str,
    postgres_db_url: str,
    subprocess_env: EnvBuilder,
    secret_key: str,
    worker_log: Path,
    stop_process: Callable[[subprocess.Popen[bytes]], None],
) -> Iterator[subprocess.Popen[bytes]]:
    """``celery -A dashboard worker`` in production mode; its output goes to ``worker_log``."""
    env = subprocess_env(
        DEBUG="0",
        SECRET_KEY=secret_key,
        DATABASE_URL=postgres_db_url,
        REDIS_URL=redis_url,
        PYTHONPATH=str(Path(__file__).resolve().parents[2] / "helpers"),
    )
    command = [
        *(sys.executable, "-m", "celery", "-A", "dashboard", "worker", "--pool", "solo"),
        *("--include", "celery_test_tasks", "--loglevel", "INFO"),
        *("--without-mingle", "--without-gossip", "--hostname", "smoke@%h"),
    ]
    with worker_log.open("wb") as log:
        process = subprocess.Popen(
            command, cwd=BASE_DIR, env=env, stdout=log, stderr=subprocess.STDOUT
        )
    try:
        yield process
    finally:
        stop_process(process)


@pytest.mark.slow
@pytest.mark.redis
@pytest.mark.postgres
def test_celery_worker_runs_a_task_published_to_redis(
    worker: subprocess.Popen[bytes], worker_log: Path, redis_url: str, tmp_path: Path
) -> None:
    client = Celery("smoke-client", broker=redis_url, set_as_current=False)
    client.conf.update(task_serializer="json", accept_content=["json"])
    target = tmp_path / "written-by-worker.txt"

    with client:
        client.send_task("tests.write_file", args=[str(target), "hello"])

    deadline = time.monotonic() + 60
    while not target.exists() and worker.poll() is None and time.monotonic() < deadline:
        time.sleep(0.2)
    assert target.exists(), f"the worker did not run the task:\n{worker_log.read_text()}"
    assert target.read_text() == "hello"


@pytest.mark.slow
@pytest.mark.redis
@pytest.mark.postgres
def test_celery_beat_publishes_the_periodic_jobs(
    redis_url: str,
    postgres_db_url: str,
    subprocess_env: EnvBuilder,
    secret_key: str,
    tmp_path: Path,
    stop_process: Callable[[subprocess.Popen[bytes]], None],
) -> None:
    env = subprocess_env(
        DEBUG="0", SECRET_KEY=secret_key, DATABASE_URL=postgres_db_url, REDIS_URL=redis_url
    )
    log_path = tmp_path / "beat.log"
    command = [
        *(sys.executable, "-m", "celery", "-A", "dashboard", "beat", "--loglevel", "DEBUG"),
        *("--schedule", str(tmp_path / "beat-schedule"), "--max-interval", "1"),
    ]
    with log_path.open("wb") as log:
        beat = subprocess.Popen(
            command, cwd=BASE_DIR, env=env, stdout=log, stderr=subprocess.STDOUT
        )
    # The job of the shortest interval is due first; the schedule is logged at start.
    first = min(PERIODIC_JOBS.items(), key=lambda item: item[1].every)
    sent = f"Sending due task {first[0]} ({first[1].task})"
    try:
        deadline = time.monotonic() + 60
        while beat.poll() is None and time.monotonic() < deadline:
            if sent in log_path.read_text():
                break
            time.sleep(0.2)
    finally:
        stop_process(beat)
    text = log_path.read_text()
    assert sent in text, text
    for name, job in PERIODIC_JOBS.items():
        assert f"<ScheduleEntry: {name} {job.task}()" in text, text
