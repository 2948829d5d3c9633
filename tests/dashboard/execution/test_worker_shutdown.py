"""dashboard/execution/worker.py and shutdown.py: a worker that is shutting down stops each run
right after its next commit and hands the lease back, without counting a lost worker.

In process, on SQLite and PostgreSQL; the tasks the services enqueue are held back so the test
executes each attempt itself. SIGTERM to a real prefork worker, whose child sees the flag its
main process raised, is in tests/dashboard/integration/test_graceful_shutdown.py.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from django.db import transaction

from dashboard import services
from dashboard.execution import shutdown, tasks, worker
from dashboard.models import Checkpoint, RunEvent, RunStatus, WorkflowRun
from workflows.storage import decode

SQUARES = {"limit": 3, "work_ms": 0}


@pytest.fixture(autouse=True)
def database(services_transactional_db: str) -> str:
    return services_transactional_db


@pytest.fixture(autouse=True)
def lowered() -> Iterator[None]:
    shutdown.reset()
    yield
    shutdown.reset()


@pytest.fixture
def enqueued(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The run ids the services enqueued (after commit), held back: the test executes them."""
    held: list[str] = []

    def hold(task: Any, run_id: Any, using: str | None = None) -> None:
        transaction.on_commit(lambda: held.append(str(run_id)), using=using)

    monkeypatch.setattr(tasks, "enqueue_on_commit", hold)
    return held


def supersteps(run: WorkflowRun) -> list[int]:
    rows = Checkpoint.objects.filter(run=run).order_by("created_at")
    return list(rows.values_list("superstep", flat=True))


def requeues(run: WorkflowRun) -> list[str]:
    rows = RunEvent.objects.filter(run=run, type="run_requeued").order_by("seq")
    return [row.data["reason"] for row in rows]


def shut_down_after_commit(monkeypatch: pytest.MonkeyPatch, n: int) -> None:
    """The worker is told to shut down while its ``n``-th commit is under way."""
    commits = {"n": 0}
    real = services.checkpoint_commit

    def commit_then_shut_down(*args: Any) -> None:
        real(*args)
        commits["n"] += 1
        if commits["n"] == n:
            shutdown.request()

    monkeypatch.setattr(services, "checkpoint_commit", commit_then_shut_down)


def test_a_run_stops_after_the_commit_that_follows_a_shutdown_and_goes_back_to_the_queue(
    enqueued: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    run = services.run_start(workflow_name="squares", input=SQUARES)
    enqueued.clear()
    shut_down_after_commit(monkeypatch, 3)  # the entry checkpoint, supersteps 1 and 2
    worker.execute(str(run.pk))

    run.refresh_from_db()
    assert (run.status, run.lease_owner, run.lost_workers) == (RunStatus.QUEUED, "", 0)
    assert supersteps(run) == [0, 1, 2]
    assert requeues(run) == ["worker shutting down"]
    assert enqueued == [str(run.pk)]  # at once, for another worker

    shutdown.reset()  # that other worker
    worker.execute(enqueued.pop())

    run.refresh_from_db()
    assert run.status == RunStatus.COMPLETED, run.error_message
    assert decode(run.output) == {1: 1, 2: 4, 3: 9}
    assert supersteps(run) == [0, 1, 2, 3, 4]  # each superstep once
    assert run.lost_workers == 0
    running = RunEvent.objects.filter(run=run, type="run_status", data__status="running")
    assert [e.data["attempt"] for e in running.order_by("seq")] == [1, 2]


def test_a_functional_run_stops_at_a_step_commit_and_completes_on_the_next_worker(
    enqueued: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    order = {"customer": "Ada", "quantity": 1, "unit_price": 45.0, "work_ms": 0}
    reference = services.run_start(workflow_name="order-pipeline", input=order)
    worker.execute(enqueued.pop())
    run = services.run_start(workflow_name="order-pipeline", input=order)
    shut_down_after_commit(monkeypatch, 2)
    worker.execute(enqueued.pop())

    run.refresh_from_db()
    assert (run.status, run.lost_workers) == (RunStatus.QUEUED, 0)
    assert requeues(run) == ["worker shutting down"]
    shutdown.reset()
    worker.execute(enqueued.pop())

    run.refresh_from_db()
    reference.refresh_from_db()
    assert run.status == reference.status == RunStatus.COMPLETED, run.error_message
    assert run.output == reference.output


def test_a_shutdown_at_the_last_commit_leaves_the_next_worker_only_the_finish(
    enqueued: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    run = services.run_start(workflow_name="squares", input=SQUARES)
    shut_down_after_commit(monkeypatch, 5)  # the entry checkpoint and all four supersteps
    worker.execute(enqueued.pop())
    run.refresh_from_db()
    assert run.status == RunStatus.QUEUED and supersteps(run) == [0, 1, 2, 3, 4]

    shutdown.reset()
    worker.execute(enqueued.pop())

    run.refresh_from_db()
    assert run.status == RunStatus.COMPLETED, run.error_message
    assert decode(run.output) == {1: 1, 2: 4, 3: 9}
    assert supersteps(run) == [0, 1, 2, 3, 4]
