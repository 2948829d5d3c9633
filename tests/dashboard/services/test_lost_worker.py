"""The lease sweeper's lost-worker count (dashboard/services/execution.py): a run fails after
``SUPERSTEP_MAX_ATTEMPTS`` workers lost in a row without a committed superstep in between; a
commit resets the count, so restarts spread over a long run never add up to a failure.

Time is a fake clock (``execution.now``): a lost worker is one whose lease the clock has run
past. Tasks the services enqueue are dropped, so each "worker" is the test taking the lease.
"""

from __future__ import annotations

import datetime as dt
from typing import Any

import pytest
from django.test import override_settings
from django.utils import timezone

from dashboard import services
from dashboard.execution import tasks
from dashboard.models import RunStatus, WorkflowRun
from dashboard.services import execution
from workflows.storage import split_checkpoint
from workflows.testing import make_checkpoint

pytestmark = pytest.mark.usefixtures("services_transactional_db")


class Clock:
    def __init__(self) -> None:
        self.moment = timezone.now()

    def __call__(self) -> dt.datetime:
        return self.moment

    def advance(self, **delta: float) -> None:
        self.moment += dt.timedelta(**delta)


@pytest.fixture
def clock(monkeypatch: pytest.MonkeyPatch) -> Clock:
    fake = Clock()
    monkeypatch.setattr(execution, "now", fake)
    return fake


@pytest.fixture(autouse=True)
def no_workers(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(tasks, "enqueue_on_commit", lambda *args, **kwargs: None)


def new_run() -> WorkflowRun:
    return services.run_start(workflow_name="squares", input={"limit": 50, "work_ms": 0})


def take(run: WorkflowRun, worker: str) -> services.Lease:
    lease = services.lease_acquire(run.pk, worker)
    assert lease is not None, f"{worker} could not take the run"
    return lease


def commit_superstep(run: WorkflowRun, lease: services.Lease) -> None:
    run.refresh_from_db()
    checkpoint = make_checkpoint(
        workflow_name=run.workflow_name,
        run_id=run.engine_run_id,
        iteration_count=run.current_superstep + 1,
        previous_checkpoint_id=run.latest_checkpoint_id,
        state={"n": run.current_superstep + 1},
    )
    services.checkpoint_commit(lease, checkpoint, split_checkpoint(checkpoint), [])


def lose_worker(clock: Clock) -> list[str]:
    """The worker dies: its lease runs out, an hour passes, the sweeper looks."""
    clock.advance(hours=1)
    return services.runs_sweep()


def state(run: WorkflowRun) -> tuple[str, int]:
    run.refresh_from_db()
    return run.status, run.lost_workers


@override_settings(SUPERSTEP_MAX_ATTEMPTS=3)
def test_lost_workers_spread_over_a_progressing_run_never_fail_it(clock: Clock) -> None:
    run = new_run()

    for restart in range(8):  # far more than SUPERSTEP_MAX_ATTEMPTS, hours apart
        lease = take(run, f"worker-{restart}")
        commit_superstep(run, lease)
        assert lose_worker(clock) == [str(run.pk)]
        assert state(run) == (RunStatus.QUEUED, 1)

    assert run.current_superstep == 8 and run.error_type == ""


@override_settings(SUPERSTEP_MAX_ATTEMPTS=3)
def test_consecutive_lost_workers_without_progress_fail_the_run(clock: Clock) -> None:
    run = new_run()
    commit_superstep(run, take(run, "worker-ok"))
    assert lose_worker(clock) == [str(run.pk)]  # lost 1
    take(run, "worker-a")
    assert lose_worker(clock) == [str(run.pk)]  # lost 2, nothing committed since

    take(run, "worker-b")
    assert lose_worker(clock) == []  # lost 3

    assert state(run) == (RunStatus.FAILED, 3)
    assert run.error_type == "WorkerLost"
    assert "3 times" in run.error_message and "without committing a superstep" in run.error_message
    services.run_retry(run.pk)  # an operator's retry starts counting again
    assert state(run) == (RunStatus.QUEUED, 0)


@override_settings(SUPERSTEP_MAX_ATTEMPTS=3)
def test_a_takeover_counts_the_lost_worker_and_a_commit_forgives_it(clock: Clock) -> None:
    run = new_run()
    take(run, "worker-a")
    clock.advance(hours=1)  # worker-a died; its redelivered task comes before the sweeper

    lease = take(run, "worker-b")
    assert state(run) == (RunStatus.RUNNING, 1)
    commit_superstep(run, lease)
    assert state(run) == (RunStatus.RUNNING, 0)


@override_settings(SUPERSTEP_MAX_ATTEMPTS=3)
def test_a_finished_attempt_ends_the_streak(clock: Clock) -> None:
    run = new_run()
    take(run, "worker-a")
    lose_worker(clock)
    take(run, "worker-b")
    lose_worker(clock)
    lease = take(run, "worker-c")
    assert state(run) == (RunStatus.RUNNING, 2)

    services.run_finish(lease, outcome=RunStatus.WAITING, events=[])

    assert state(run) == (RunStatus.WAITING, 0)


def test_lost_workers_starts_at_zero(clock: Any) -> None:
    assert new_run().lost_workers == 0
