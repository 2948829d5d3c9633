"""dashboard/execution/embedded.py: one enqueue for both modes, and the periodic job runner."""

from __future__ import annotations

import logging
import threading
import uuid
from collections.abc import Iterator
from typing import Any

import pytest
from celery import Celery
from django.contrib.auth.models import User
from django.db import DEFAULT_DB_ALIAS, connections, transaction
from django.test import override_settings

from dashboard.config.celery import app as dashboard_celery_app
from dashboard.execution import embedded, periodic
from dashboard.models import PeriodicJobRun

WAIT = 10.0

# A Celery app of the tests' own, so the fake tasks never join the dashboard's registry.
fake_app = Celery("embedded-tests", set_as_current=False)
fake_app.conf.update(task_serializer="json", accept_content=["json"], task_ignore_result=True)

calls: list[tuple[str, list[Any]]] = []
called = threading.Event()


@fake_app.task(name="tests.record")
def record(*args: Any) -> None:
    calls.append((threading.current_thread().name, list(args)))
    called.set()


@fake_app.task(name="tests.explode")
def explode() -> None:
    raise RuntimeError("task exploded")


# The database connection objects the background threads used (one per thread).
used_connections: list[Any] = []


@fake_app.task(name="tests.count_users")
def count_users() -> None:
    calls.append((threading.current_thread().name, [User.objects.count()]))
    used_connections.append(connections[DEFAULT_DB_ALIAS])


@pytest.fixture(autouse=True)
def clean_slate() -> Iterator[None]:
    calls.clear()
    called.clear()
    used_connections.clear()
    yield
    assert embedded.wait_for_background_tasks(WAIT), "background tasks still running"


# ------------------------------------------------------------------------------ enqueue


def test_embedded_enqueue_runs_task_in_background() -> None:
    embedded.enqueue(record, 1, "two")

    assert called.wait(WAIT)
    assert embedded.wait_for_background_tasks(WAIT)
    ((thread_name, args),) = calls
    assert thread_name.startswith("superstep-task-")
    assert thread_name != threading.current_thread().name
    assert args == [1, "two"]


def test_embedded_enqueue_delivers_arguments_as_the_broker_would() -> None:
    run_id = uuid.uuid4()

    embedded.enqueue(record, (1, 2), {"k": run_id})

    assert embedded.wait_for_background_tasks(WAIT)
    # A tuple arrives as a list, exactly as after a JSON trip through Redis.
    assert calls[0][1] == [[1, 2], {"k": run_id}]


def test_embedded_enqueue_refuses_arguments_the_broker_would_refuse() -> None:
    with pytest.raises(TypeError):
        embedded.enqueue(record, object())
    assert not calls


@pytest.mark.django_db(transaction=True)
def test_enqueue_on_commit_refuses_unserializable_arguments_before_the_commit() -> None:
    with pytest.raises(TypeError), transaction.atomic():
        User.objects.create_user("rolled-back")
        embedded.enqueue_on_commit(record, object())

    assert not User.objects.exists()


def test_production_enqueue_publishes_to_the_broker(monkeypatch: pytest.MonkeyPatch) -> None:
    published: list[dict[str, Any]] = []
    monkeypatch.setattr(record, "apply_async", lambda **kwargs: published.append(kwargs))

    with override_settings(SUPERSTEP_EMBEDDED=False):
        embedded.enqueue(record, "run-1")

    assert published == [{"args": ("run-1",)}]
    assert not called.is_set()


def test_failing_background_task_is_logged_and_the_pool_keeps_working(
    caplog: pytest.LogCaptureFixture,
) -> None:
    with caplog.at_level(logging.ERROR):
        embedded.enqueue(explode)
        embedded.enqueue(record, "after")
        assert embedded.wait_for_background_tasks(WAIT)

    assert "task exploded" in caplog.text
    assert calls[0][1] == ["after"]


@pytest.mark.django_db(transaction=True)
def test_enqueue_on_commit_runs_only_after_the_commit() -> None:
    with transaction.atomic():
        User.objects.create_user("committed-first")
        embedded.enqueue_on_commit(count_users)
        assert embedded.wait_for_background_tasks(WAIT)
        assert not calls, "the task ran before the transaction committed"

    assert embedded.wait_for_background_tasks(WAIT)
    assert calls[0][1] == [1]  # the background thread saw the committed user


@pytest.mark.django_db(transaction=True)
def test_background_task_closes_its_database_connection() -> None:
    embedded.enqueue(count_users)

    assert embedded.wait_for_background_tasks(WAIT)
    (wrapper,) = used_connections
    assert wrapper is not connections[DEFAULT_DB_ALIAS]  # the thread had its own connection...
    assert wrapper.connection is None  # ...and gave it back: no SQLite lock left held


@pytest.mark.django_db(transaction=True)
def test_enqueue_on_commit_logs_a_broker_failure_instead_of_failing_the_request(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    def broker_down(**kwargs: Any) -> None:
        raise ConnectionError("broker unreachable")

    monkeypatch.setattr(record, "apply_async", broker_down)

    with (
        override_settings(SUPERSTEP_EMBEDDED=False),
        caplog.at_level(logging.ERROR),
        transaction.atomic(),
    ):
        User.objects.create_user("kept")
        embedded.enqueue_on_commit(record, "run-1")

    assert User.objects.filter(username="kept").exists()
    assert "broker unreachable" in caplog.text


def test_publishing_in_embedded_mode_fails_loudly() -> None:
    with pytest.raises(RuntimeError, match="embedded mode"):
        dashboard_celery_app.send_task("dashboard.anything", args=["run-1"])


# ------------------------------------------------------------------------------ periodic jobs


@pytest.fixture
def services(transactional_db: None) -> Iterator[None]:
    # Every run claims its period in the database (dashboard.execution.periodic) first.
    before = {job.name for job in embedded.periodic_jobs()}
    yield
    embedded.stop_background_services()
    for job in embedded.periodic_jobs():
        if job.name not in before:
            embedded.unregister_periodic(job.name)


def counting_job(times: int) -> tuple[list[int], threading.Event, Any]:
    runs: list[int] = []
    done = threading.Event()

    def job() -> None:
        runs.append(len(runs))
        if len(runs) >= times:
            done.set()

    return runs, done, job


@pytest.mark.usefixtures("services")
def test_periodic_job_runs_repeatedly_once_services_start() -> None:
    runs, done, job = counting_job(3)
    embedded.register_periodic("test-count", every=0.01, func=job)
    assert not runs  # registering alone starts nothing

    embedded.start_background_services()

    assert done.wait(WAIT)
    assert any(t.name == "superstep-periodic-test-count" for t in threading.enumerate())


@pytest.mark.usefixtures("services")
def test_periodic_job_keeps_running_after_a_failure(caplog: pytest.LogCaptureFixture) -> None:
    runs, done, job = counting_job(2)

    def flaky() -> None:
        job()
        if len(runs) == 1:
            raise RuntimeError("first sweep failed")

    embedded.register_periodic("test-flaky", every=0.01, func=flaky)
    with caplog.at_level(logging.ERROR):
        embedded.start_background_services()
        assert done.wait(WAIT)

    assert "first sweep failed" in caplog.text


@pytest.mark.usefixtures("services")
def test_periodic_job_registered_after_start_runs_too() -> None:
    embedded.start_background_services()
    _, done, job = counting_job(1)

    embedded.register_periodic("test-late", every=60, func=job)

    assert done.wait(WAIT)


@pytest.mark.usefixtures("services")
def test_stopping_services_ends_the_periodic_threads() -> None:
    _, done, job = counting_job(1)
    embedded.register_periodic("test-stop", every=0.01, func=job)
    embedded.start_background_services()
    embedded.start_background_services()  # a second start is a no-op
    assert done.wait(WAIT)

    embedded.stop_background_services()

    assert not [t for t in threading.enumerate() if t.name == "superstep-periodic-test-stop"]


@pytest.mark.usefixtures("services")
def test_register_periodic_refuses_a_second_function_under_one_name() -> None:
    embedded.register_periodic("test-name", every=1, func=lambda: None)

    with pytest.raises(ValueError, match="already registered"):
        embedded.register_periodic(
            "test-name", every=1, func=test_periodic_job_runs_repeatedly_once_services_start
        )
    with pytest.raises(ValueError, match="positive"):
        embedded.register_periodic("test-zero", every=0, func=lambda: None)


@pytest.fixture
def claims(monkeypatch: pytest.MonkeyPatch) -> tuple[list[tuple[str, bool]], threading.Event]:
    """What each test job's period claim returned (job, ran), and an event set after each
    (the dashboard's own jobs run beside them and are left out)."""
    seen: list[tuple[str, bool]] = []
    claimed = threading.Event()
    original = periodic.run_once_per_period

    def spy(job: str, every: float, func: Any, **kwargs: Any) -> Any:
        result = original(job, every, func, **kwargs)
        if job.startswith("test-"):
            seen.append((job, result[0]))
            claimed.set()
        return result

    monkeypatch.setattr(periodic, "run_once_per_period", spy)
    return seen, claimed


@pytest.mark.usefixtures("services")
def test_periodic_threads_run_each_period_once_across_server_processes(
    claims: tuple[list[tuple[str, bool]], threading.Event],
) -> None:
    seen, claimed = claims
    runs, _, job = counting_job(1)
    embedded.register_periodic("test-hourly", every=3600, func=job)
    embedded.start_background_services()
    assert claimed.wait(WAIT)
    embedded.stop_background_services()
    claimed.clear()

    embedded.start_background_services()  # a second server process, in effect

    assert claimed.wait(WAIT)
    embedded.stop_background_services()
    assert seen == [("test-hourly", True), ("test-hourly", False)]
    assert runs == [0]
    assert PeriodicJobRun.objects.filter(job="test-hourly").count() == 1


@pytest.mark.usefixtures("services")
def test_a_period_claimed_by_celery_beat_is_not_run_again_by_the_threads(
    claims: tuple[list[tuple[str, bool]], threading.Event],
) -> None:
    seen, claimed = claims
    runs, _, job = counting_job(1)
    periodic.run_once_per_period("test-beat-first", 3600, lambda: None)  # beat's task ran it
    embedded.register_periodic("test-beat-first", every=3600, func=job)

    embedded.start_background_services()

    assert claimed.wait(WAIT)
    embedded.stop_background_services()
    assert seen[-1] == ("test-beat-first", False) and runs == []
