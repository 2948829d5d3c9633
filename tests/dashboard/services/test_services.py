"""dashboard/services: every business rule, driven the way production drives it.

Runs execute in embedded mode: ``run_start`` & co. enqueue the real Celery task on commit, the
embedded pool runs it on a background thread (lease → engine → one transaction per
superstep), and ``wait_for_background_tasks`` is the join. That needs committed data, so every
test runs with real transactions (``services_transactional_db``), once on SQLite and once on
PostgreSQL, where row locks and NUL/jsonb rules differ. Tests that look at a run *between*
transitions hold its task back with the ``held`` fixture. Races between processes are in
test_integration_celery.py, with real workers.
"""

from __future__ import annotations

import datetime as dt
import json
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from asgiref.sync import async_to_sync
from django.db import IntegrityError, OperationalError, connections, transaction
from django.test import override_settings
from django.utils import timezone

from dashboard import broadcast, services
from dashboard.checkpoints.storage import DjangoCheckpointStorage
from dashboard.execution import embedded, tasks
from dashboard.execution.worker import _RunStorage
from dashboard.models import (
    ApprovalRequest,
    ApprovalStatus,
    AuditEntry,
    Checkpoint,
    CheckpointBlob,
    CheckpointBlobUse,
    RunEvent,
    RunStatus,
    WorkflowRun,
)
from dashboard.services import common, execution
from dashboard.services.runs import fork_check
from workflows.storage import decode, split_checkpoint
from workflows.testing import make_checkpoint


@pytest.fixture(autouse=True)
def database(services_transactional_db: str) -> str:
    """Every test runs on SQLite and on PostgreSQL (``default`` answers with each in turn)."""
    return services_transactional_db


WAIT = 30.0
FAST = {"work_ms": 0}


# ------------------------------------------------------------------------------ helpers


@pytest.fixture(autouse=True)
def drained() -> Iterator[None]:
    """No background task of one test may outlive it (the next test flushes the tables)."""
    yield
    assert embedded.wait_for_background_tasks(WAIT), "background tasks still running"


@pytest.fixture
def user(role_user: Callable[..., Any]) -> Any:
    """Operates runs and decides approvals (the services check roles)."""
    return role_user("alice", "Operator", "Approver")


@pytest.fixture
def other_user(role_user: Callable[..., Any]) -> Any:
    return role_user("bob", "Operator", "Approver")


class Held:
    """Tasks that services enqueued (after commit), kept back until ``release()``."""

    def __init__(self) -> None:
        self.tasks: list[tuple[Any, tuple[Any, ...]]] = []

    def enqueue_on_commit(self, task: Any, *args: Any, using: str | None = None) -> None:
        transaction.on_commit(lambda: self.tasks.append((task, args)), using=using)

    def run_ids(self) -> list[str]:
        return [str(args[0]) for _, args in self.tasks]

    def release(self) -> None:
        tasks, self.tasks = self.tasks, []
        for task, args in tasks:
            embedded.enqueue(task, *args)
        settle()


@pytest.fixture
def hold(monkeypatch: pytest.MonkeyPatch) -> Callable[[], Held]:
    """Hold back every task enqueued from now on."""

    def start() -> Held:
        keeper = Held()
        monkeypatch.setattr(tasks, "enqueue_on_commit", keeper.enqueue_on_commit)
        return keeper

    return start


@pytest.fixture
def held(hold: Callable[[], Held]) -> Held:
    return hold()


def settle() -> None:
    assert embedded.wait_for_background_tasks(WAIT), "runs did not finish in time"


def started(workflow: str, input: Any, user: Any = None) -> WorkflowRun:
    """Start a run and let the embedded worker take it as far as it goes."""
    run = services.run_start(workflow_name=workflow, input=input, user=user)
    settle()
    run.refresh_from_db()
    return run


def waiting_return_replace(**input: Any) -> tuple[WorkflowRun, ApprovalRequest]:
    run = started("return-replace", {**FAST, **input})
    assert run.status == RunStatus.WAITING, run.error_message
    return run, ApprovalRequest.objects.get(run=run, status=ApprovalStatus.PENDING)


def events(run: WorkflowRun) -> list[RunEvent]:
    return list(RunEvent.objects.filter(run=run).order_by("seq"))


def event_types(run: WorkflowRun) -> list[str]:
    return [e.type for e in events(run)]


def lineage(run: WorkflowRun, engine_run_id: str | None = None) -> list[Checkpoint]:
    rows = Checkpoint.objects.filter(run=run, engine_run_id=engine_run_id or run.engine_run_id)
    return list(rows.order_by("created_at"))


def assert_gapless_events(run: WorkflowRun) -> None:
    run.refresh_from_db()
    seqs = [e.seq for e in events(run)]
    assert seqs == list(range(1, len(seqs) + 1))
    assert run.last_event_seq == len(seqs)


def checkpoint_pieces(run: WorkflowRun, superstep: int) -> tuple[Any, Any]:
    checkpoint = make_checkpoint(
        workflow_name=run.workflow_name,
        run_id=run.engine_run_id,
        iteration_count=superstep,
        previous_checkpoint_id=run.latest_checkpoint_id,
        state={"n": superstep},
    )
    return checkpoint, split_checkpoint(checkpoint)


def written(run: WorkflowRun) -> tuple[int, int, int, int]:
    """What a superstep commit can write: checkpoints, events, approvals, the run's seq."""
    run.refresh_from_db()
    return (
        Checkpoint.objects.filter(run=run).count(),
        RunEvent.objects.filter(run=run).count(),
        ApprovalRequest.objects.filter(run=run).count(),
        run.last_event_seq,
    )


def expire_lease(run: WorkflowRun) -> None:
    WorkflowRun.objects.filter(pk=run.pk).update(
        lease_expires_at=timezone.now() - dt.timedelta(seconds=1)
    )


# ------------------------------------------------------------------------------ run_start


def test_run_start_refuses_an_unknown_workflow() -> None:
    with pytest.raises(services.InvalidInput) as caught:
        services.run_start(workflow_name="no-such-flow", input={})

    assert caught.value.errors == {"workflow": "unknown workflow"}
    assert not WorkflowRun.objects.exists()


def test_run_start_refuses_bad_input_with_an_error_per_field() -> None:
    with pytest.raises(services.InvalidInput) as caught:
        services.run_start(workflow_name="squares", input={"limit": "many", "work_ms": [1]})

    assert set(caught.value.errors) == {"limit", "work_ms"}
    assert not WorkflowRun.objects.exists()


@pytest.mark.parametrize("bad", [[1, 2], "text", 7])
def test_run_start_refuses_input_that_is_not_an_object(bad: Any) -> None:
    with pytest.raises(services.InvalidInput) as caught:
        services.run_start(workflow_name="refund", input=bad)

    assert caught.value.errors
    assert not WorkflowRun.objects.exists()


def test_run_start_queues_the_run_and_enqueues_it_only_after_commit(held: Held, user: Any) -> None:
    with transaction.atomic():
        run = services.run_start(workflow_name="squares", input={"limit": 2}, user=user)
        assert held.tasks == []  # nothing is published before the commit

    assert held.run_ids() == [str(run.pk)]
    run.refresh_from_db()
    assert run.status == RunStatus.QUEUED and run.created_by == user
    assert run.input == {"limit": 2, "work_ms": 100}  # validated and stored with defaults
    (event,) = events(run)
    assert (event.seq, event.type, event.data) == (
        1,
        "run_status",
        {"status": "queued", "by": "alice"},
    )


def test_run_start_rolled_back_enqueues_nothing(held: Held) -> None:
    with pytest.raises(RuntimeError), transaction.atomic():
        services.run_start(workflow_name="squares", input={"limit": 2})
        raise RuntimeError("the caller's transaction fails")

    assert held.tasks == [] and not WorkflowRun.objects.exists()


def test_a_started_run_executes_to_completion_with_its_output() -> None:
    run = started("squares", {"limit": 4, **FAST})

    assert run.status == RunStatus.COMPLETED, run.traceback
    assert decode(run.output) == {1: 1, 2: 4, 3: 9, 4: 16}
    assert run.current_superstep == 5 and run.finished_at is not None
    assert run.lease_owner == "" and run.lease_expires_at is None
    assert_gapless_events(run)
    assert event_types(run)[-1] == "run_status" and events(run)[-1].data == {"status": "completed"}


def test_a_run_whose_handler_raises_fails_with_type_message_and_traceback() -> None:
    run = started("fail-at-step", {"steps": 2, "fail_at": 1, "outage_seconds": 3600, **FAST})

    assert run.status == RunStatus.FAILED
    assert "simulated outage at step 1" in run.error_message
    assert "Traceback" in run.traceback
    assert_gapless_events(run)


# ------------------------------------------------------------------ one superstep, one commit


def test_every_superstep_commits_checkpoint_events_and_progress_together() -> None:
    run = started("squares", {"limit": 3, **FAST})

    for row in lineage(run):
        if row.superstep == 0:
            continue
        marker = RunEvent.objects.get(
            run=run, type="superstep_completed", data__checkpoint_id=row.checkpoint_id
        )
        # The superstep's own events precede its marker, in the same commit.
        before = RunEvent.objects.filter(run=run, seq__lt=marker.seq).order_by("-seq")[0]
        assert before.type == "executor_completed"
        assert marker.data["iteration"] == row.superstep


def test_checkpoint_commit_that_fails_midway_writes_nothing(held: Held) -> None:
    run = services.run_start(workflow_name="squares", input={"limit": 2})
    lease = services.lease_acquire(run.pk, "worker-a")
    assert lease is not None
    checkpoint, piece = checkpoint_pieces(run, 1)
    # A row in the way of the superstep's marker: the commit fails after writing the checkpoint
    # row and the run's progress (one statement on PostgreSQL, a transaction on SQLite).
    RunEvent.objects.create(run=run, seq=run.last_event_seq + 2, type="in-the-way", data={})
    before = written(run)

    with pytest.raises(IntegrityError):
        services.checkpoint_commit(lease, checkpoint, piece, [{"type": "executor_completed"}])

    assert written(run) == before
    assert not Checkpoint.objects.filter(checkpoint_id=checkpoint.checkpoint_id).exists()
    assert run.latest_checkpoint_id is None and run.current_superstep == 0


def test_a_run_whose_third_commit_fails_keeps_exactly_the_first_two_and_retries_from_there(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    real = services.checkpoint_commit
    calls = {"n": 0}

    def flaky(lease: Any, checkpoint: Any, piece: Any, evs: Any) -> None:
        calls["n"] += 1
        if calls["n"] == 3:
            raise RuntimeError("disk full")
        real(lease, checkpoint, piece, evs)

    monkeypatch.setattr(services, "checkpoint_commit", flaky)
    run = started("squares", {"limit": 4, **FAST})

    assert run.status == RunStatus.FAILED and "disk full" in run.error_message
    assert [c.superstep for c in lineage(run)] == [0, 1]
    assert run.current_superstep == 1
    assert_gapless_events(run)

    monkeypatch.setattr(services, "checkpoint_commit", real)
    services.run_retry(run.pk)
    settle()
    run.refresh_from_db()
    assert run.status == RunStatus.COMPLETED
    assert decode(run.output) == {1: 1, 2: 4, 3: 9, 4: 16}
    assert [c.superstep for c in lineage(run)] == [0, 1, 2, 3, 4, 5]
    assert_gapless_events(run)


# ------------------------------------------------------------------------------ leases


def test_lease_acquire_takes_a_queued_run_once(held: Held) -> None:
    run = services.run_start(workflow_name="squares", input={"limit": 2})

    lease = services.lease_acquire(run.pk, "worker-a")

    assert lease is not None and lease.epoch == 1 and lease.owner == "worker-a"
    assert services.lease_acquire(run.pk, "worker-b") is None  # still leased
    run.refresh_from_db()
    assert run.status == RunStatus.RUNNING and run.attempts == 1
    assert run.lease_owner == "worker-a" and run.lease_expires_at > timezone.now()


def test_lease_acquire_does_nothing_for_finished_or_unknown_runs() -> None:
    run = started("squares", {"limit": 1, **FAST})

    assert services.lease_acquire(run.pk, "worker-a") is None
    assert services.lease_acquire("00000000-0000-4000-8000-000000000000", "worker-a") is None
    run.refresh_from_db()
    assert run.status == RunStatus.COMPLETED


def test_lease_renew_extends_the_lease(held: Held) -> None:
    run = services.run_start(workflow_name="squares", input={"limit": 2})
    lease = services.lease_acquire(run.pk, "worker-a")
    assert lease is not None
    WorkflowRun.objects.filter(pk=run.pk).update(lease_expires_at=timezone.now())

    services.lease_renew(lease)

    run.refresh_from_db()
    assert run.lease_expires_at > timezone.now() + dt.timedelta(seconds=20)


def test_a_released_lease_hands_the_run_back_without_counting_a_lost_worker(held: Held) -> None:
    run = services.run_start(workflow_name="squares", input={"limit": 2, **FAST})
    held.tasks.clear()
    lease = services.lease_acquire(run.pk, "worker-a")
    assert lease is not None

    assert services.lease_release(lease, "database lost") is True
    assert services.lease_release(lease, "database lost") is False  # no longer ours

    run.refresh_from_db()
    assert run.status == RunStatus.QUEUED and run.lease_owner == "" and run.lost_workers == 0
    assert events(run)[-1].type == "run_requeued"
    assert events(run)[-1].data["reason"] == "database lost"
    assert held.run_ids() == [str(run.pk)]
    held.release()
    run.refresh_from_db()
    assert run.status == RunStatus.COMPLETED and run.lost_workers == 0
    assert_gapless_events(run)


def test_a_commit_that_loses_the_database_requeues_the_run_rather_than_lose_a_worker(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    real = services.checkpoint_commit
    calls = {"n": 0}

    def cut(lease: Any, checkpoint: Any, piece: Any, evs: Any) -> None:
        calls["n"] += 1
        if calls["n"] in (2, 3, 4):  # three outages in a row, each before a superstep commits
            raise OperationalError("server closed the connection unexpectedly")
        real(lease, checkpoint, piece, evs)

    monkeypatch.setattr(services, "checkpoint_commit", cut)
    with override_settings(SUPERSTEP_MAX_ATTEMPTS=3):
        run = started("squares", {"limit": 3, **FAST})

    assert run.status == RunStatus.COMPLETED, (run.status, run.error_message)
    assert run.lost_workers == 0
    assert decode(run.output) == {1: 1, 2: 4, 3: 9}
    assert [c.superstep for c in lineage(run)] == [0, 1, 2, 3, 4]
    assert [e.data["reason"] for e in events(run) if e.type == "run_requeued"] == [
        "database lost"
    ] * 3
    assert_gapless_events(run)


def test_a_worker_whose_lease_was_taken_over_cannot_write(held: Held) -> None:
    run = services.run_start(workflow_name="squares", input={"limit": 2})
    old = services.lease_acquire(run.pk, "worker-a")
    assert old is not None
    expire_lease(run)
    new = services.lease_acquire(run.pk, "worker-b")
    assert new is not None and new.epoch == old.epoch + 1
    before = written(run)
    checkpoint, piece = checkpoint_pieces(run, 1)

    with pytest.raises(services.LeaseLost):
        services.checkpoint_commit(old, checkpoint, piece, [{"type": "executor_completed"}])
    with pytest.raises(services.LeaseLost):
        services.lease_renew(old)
    with pytest.raises(services.LeaseLost):
        services.run_finish(old, outcome=RunStatus.COMPLETED, events=[], output=1)

    assert written(run) == before
    run.refresh_from_db()
    assert run.status == RunStatus.RUNNING and run.lease_owner == "worker-b"
    assert run.output is None
    recovered = [e for e in events(run) if e.type == "run_recovered"]
    assert [e.data["worker"] for e in recovered] == ["worker-b"]


def test_the_current_lease_holder_commits(held: Held) -> None:
    run = services.run_start(workflow_name="squares", input={"limit": 2})
    lease = services.lease_acquire(run.pk, "worker-a")
    assert lease is not None
    checkpoint, piece = checkpoint_pieces(run, 1)

    services.checkpoint_commit(lease, checkpoint, piece, [{"type": "executor_completed"}])

    run.refresh_from_db()
    assert run.latest_checkpoint_id == checkpoint.checkpoint_id and run.current_superstep == 1
    assert event_types(run)[-2:] == ["executor_completed", "superstep_completed"]
    assert_gapless_events(run)


def test_checkpoint_commit_broadcasts_the_events_as_stored_with_the_output(
    held: Held, monkeypatch: pytest.MonkeyPatch
) -> None:
    run = services.run_start(workflow_name="squares", input={"limit": 2})
    lease = services.lease_acquire(run.pk, "worker-a")
    assert lease is not None
    sent: list[list[dict[str, Any]]] = []
    monkeypatch.setattr(
        execution.broadcast, "broadcast_run_events", lambda run_id, payload: sent.append(payload)
    )
    checkpoint, piece = checkpoint_pieces(run, 1)

    services.checkpoint_commit(
        lease, checkpoint, piece, [{"type": "output", "executor_id": "w", "data": {"n": [1, "é"]}}]
    )

    stored = [broadcast.event_payload(row) for row in events(run)[-2:]]
    assert sent == [json.loads(json.dumps(stored))]
    run.refresh_from_db()
    assert run.output == {"n": [1, "é"]} and run.current_superstep == 1
    assert run.lease_expires_at > timezone.now() + dt.timedelta(seconds=20)
    assert_gapless_events(run)


def test_checkpoint_commit_on_postgres_is_one_round_trip(
    database: str, held: Held, tmp_path: Path
) -> None:
    if database != "pg":
        pytest.skip("SQLite commits through the ORM's transaction")
    run = services.run_start(workflow_name="squares", input={"limit": 3})
    lease = services.lease_acquire(run.pk, "worker-a")
    assert lease is not None
    first, first_piece = checkpoint_pieces(run, 1)
    services.checkpoint_commit(lease, first, first_piece, [])  # prepares the statement
    run.refresh_from_db()
    checkpoint, piece = checkpoint_pieces(run, 2)
    connection = connections["default"].connection
    trace = tmp_path / "trace"
    with trace.open("w") as handle:
        connection.pgconn.trace(handle.fileno())
        try:
            services.checkpoint_commit(lease, checkpoint, piece, [{"type": "executor_completed"}])
        finally:
            connection.pgconn.untrace()
    backend = [line.split("\t")[3] for line in trace.read_text().splitlines() if "\tB\t" in line]

    assert backend.count("ReadyForQuery") == 1, backend
    run.refresh_from_db()
    assert run.latest_checkpoint_id == checkpoint.checkpoint_id
    assert event_types(run)[-2:] == ["executor_completed", "superstep_completed"]


def test_a_workers_commit_sends_again_a_blob_retention_deleted_meanwhile(held: Held) -> None:
    run = services.run_start(workflow_name="squares", input={"limit": 3})
    lease = services.lease_acquire(run.pk, "worker-a")
    assert lease is not None
    storage = _RunStorage(lease, [], run.workflow_name)
    big = {"payload": "q" * 64 * 1024}
    first = make_checkpoint(
        workflow_name=run.workflow_name, run_id=run.engine_run_id, iteration_count=1, state=big
    )
    async_to_sync(storage.save)(first)
    # Retention elsewhere let go of the blob this process remembers storing.
    CheckpointBlobUse.objects.all().delete()
    CheckpointBlob.objects.all().delete()
    second = make_checkpoint(
        workflow_name=run.workflow_name,
        run_id=run.engine_run_id,
        iteration_count=2,
        previous_checkpoint_id=first.checkpoint_id,
        seconds=1,
        state=big,
    )

    async_to_sync(storage.save)(second)

    run.refresh_from_db()
    assert run.latest_checkpoint_id == second.checkpoint_id and run.current_superstep == 2
    assert CheckpointBlob.objects.count() == 1
    assert DjangoCheckpointStorage().load_sync(second.checkpoint_id).state == big
    assert_gapless_events(run)


def test_cancelling_a_running_run_fences_its_worker_out(held: Held) -> None:
    run = services.run_start(workflow_name="squares", input={"limit": 2})
    lease = services.lease_acquire(run.pk, "worker-a")
    assert lease is not None

    services.run_cancel(run.pk)

    with pytest.raises(services.LeaseLost):
        services.lease_renew(lease)
    checkpoint, piece = checkpoint_pieces(run, 1)
    with pytest.raises(services.LeaseLost):
        services.checkpoint_commit(lease, checkpoint, piece, [])
    run.refresh_from_db()
    assert run.status == RunStatus.CANCELLED and run.lease_owner == ""


def test_cancelling_a_run_mid_flight_stops_its_worker() -> None:
    run = services.run_start(workflow_name="squares", input={"limit": 200, "work_ms": 10})
    deadline = time.monotonic() + WAIT
    while WorkflowRun.objects.get(pk=run.pk).current_superstep < 3:
        assert time.monotonic() < deadline, "the run made no progress"
        time.sleep(0.01)

    services.run_cancel(run.pk)
    at_cancel = Checkpoint.objects.filter(run=run).count()
    settle()

    run.refresh_from_db()
    assert run.status == RunStatus.CANCELLED
    # At most the superstep in flight when the cancel committed is refused; nothing later.
    assert Checkpoint.objects.filter(run=run).count() == at_cancel
    assert events(run)[-1].data.get("status") == RunStatus.CANCELLED
    assert_gapless_events(run)


# ------------------------------------------------------------------------------ sweeper


def test_runs_sweep_requeues_a_run_whose_lease_expired(held: Held) -> None:
    run = services.run_start(workflow_name="squares", input={"limit": 2, **FAST})
    held.tasks.clear()
    assert services.lease_acquire(run.pk, "worker-that-died") is not None
    expire_lease(run)

    assert services.runs_sweep() == [str(run.pk)]

    run.refresh_from_db()
    assert run.status == RunStatus.QUEUED and run.lease_owner == ""
    assert held.run_ids() == [str(run.pk)]
    assert events(run)[-1].type == "run_requeued"
    held.release()
    run.refresh_from_db()
    assert run.status == RunStatus.COMPLETED and run.attempts == 0
    assert "run_recovered" not in event_types(run)  # requeued first, so a clean start
    assert_gapless_events(run)


def test_runs_sweep_leaves_live_leases_alone(held: Held) -> None:
    run = services.run_start(workflow_name="squares", input={"limit": 2})
    assert services.lease_acquire(run.pk, "worker-alive") is not None

    assert services.runs_sweep() == []

    run.refresh_from_db()
    assert run.status == RunStatus.RUNNING and run.lease_owner == "worker-alive"


@override_settings(SUPERSTEP_MAX_ATTEMPTS=3)
def test_runs_sweep_fails_a_run_that_lost_its_worker_too_often(held: Held) -> None:
    run = services.run_start(workflow_name="squares", input={"limit": 2})
    for attempt in range(3):
        assert services.lease_acquire(run.pk, f"doomed-{attempt}") is not None
        expire_lease(run)

    assert services.runs_sweep() == []

    run.refresh_from_db()
    assert run.status == RunStatus.FAILED and run.attempts == 3
    assert run.error_type == "WorkerLost" and "3 times" in run.error_message
    assert run.lease_owner == "" and run.finished_at is not None
    assert events(run)[-1].data == {"status": "failed", "reason": "worker lost"}
    # A failed run is retried by an operator, from its latest checkpoint.
    services.run_retry(run.pk)
    run.refresh_from_db()
    assert run.status == RunStatus.QUEUED and run.attempts == 0


def test_runs_sweep_reenqueues_a_queued_run_whose_task_was_lost(held: Held) -> None:
    run = services.run_start(workflow_name="squares", input={"limit": 2, **FAST})
    held.tasks.clear()  # the broker lost the message
    assert services.runs_sweep() == []  # too recent to call lost
    WorkflowRun.objects.filter(pk=run.pk).update(
        updated_at=timezone.now() - dt.timedelta(seconds=3 * common.lease_seconds())
    )

    assert services.runs_sweep() == [str(run.pk)]
    assert services.runs_sweep() == [str(run.pk)] * 0  # touched: not every sweep again

    assert held.run_ids() == [str(run.pk)]
    held.release()
    run.refresh_from_db()
    assert run.status == RunStatus.COMPLETED


def test_a_duplicate_task_for_a_run_changes_nothing() -> None:
    run = started("squares", {"limit": 2, **FAST})
    before = written(run)

    from dashboard.execution.tasks import execute_run

    execute_run(str(run.pk))

    assert written(run) == before


# ------------------------------------------------------------------------------ approvals


def test_request_info_opens_an_approval_with_the_response_schema() -> None:
    run, approval = waiting_return_replace(order_id="ORD-7")

    assert approval.executor_id == "hitl-gate"
    assert approval.response_type.endswith("ApprovalDecision")
    assert set(approval.response_schema["properties"]) == {"approved", "discount_percent", "note"}
    assert approval.response_schema["properties"]["discount_percent"]["maximum"] == 100
    assert approval.request_data["v"]["order_id"] == "ORD-7"
    assert approval.engine_run_id == run.engine_run_id
    assert approval.request_id == f"{run.engine_run_id}:{approval.engine_request_id}"
    assert approval.checkpoint_id == run.latest_checkpoint_id
    assert approval.checkpoint.pending_request_count == 1
    assert run.lease_owner == "" and run.current_superstep == 4
    assert event_types(run)[-1] == "run_status" and events(run)[-1].data == {"status": "waiting"}


def test_approving_resumes_the_run_to_completion_with_the_response(user: Any) -> None:
    run, approval = waiting_return_replace()

    services.approval_decide(
        approval.request_id,
        user=user,
        approved=True,
        response={"discount_percent": 10, "note": "sorry"},
        reason="looks right",
    )
    settle()

    run.refresh_from_db()
    approval.refresh_from_db()
    assert run.status == RunStatus.COMPLETED, run.traceback
    assert run.output["outcome"] == "replacement approved"
    assert run.output["final_amount"] == 44.91 and run.output["operator_note"] == "sorry"
    assert run.output["completed_steps"] == [
        "check-eligibility",
        "initiate-return",
        "search-replacements",
        "hitl-gate",
        "apply-discount",
        "finalize",
    ]
    assert approval.status == ApprovalStatus.APPROVED and approval.decided_by == user
    assert approval.response == {"approved": True, "discount_percent": 10, "note": "sorry"}
    assert approval.reason == "looks right"
    kinds = [c.document["metadata"].get("kind") for c in lineage(run)]
    assert kinds.count("responses") == 1
    assert_gapless_events(run)


def test_rejecting_resumes_the_run_with_approved_false(user: Any) -> None:
    run, approval = waiting_return_replace()

    # The button sets "approved"; the rest of the response is the person's.
    services.approval_decide(
        approval.request_id,
        user=user,
        approved=False,
        response={"discount_percent": 50},
        reason="no replacement in stock",
    )
    settle()

    run.refresh_from_db()
    assert run.status == RunStatus.COMPLETED
    assert run.output["outcome"] == "replacement rejected; refund only"
    assert run.output["discount_percent"] == 0


def test_a_decided_request_cannot_be_decided_again_and_says_by_whom(
    user: Any, other_user: Any
) -> None:
    _, approval = waiting_return_replace()
    services.approval_decide(approval.request_id, user=user, approved=True, response={})
    settle()

    with pytest.raises(services.Conflict) as caught:
        services.approval_decide(
            approval.request_id, user=other_user, approved=False, response={}, reason="too late"
        )

    approval.refresh_from_db()
    assert "already approved by alice at " in caught.value.message
    assert approval.decided_at is not None
    assert approval.decided_at.isoformat(timespec="seconds") in caught.value.message
    assert approval.status == ApprovalStatus.APPROVED and approval.decided_by == user


def test_approval_decide_refuses_a_response_that_does_not_fit(
    user: Any, hold: Callable[[], Held]
) -> None:
    run, approval = waiting_return_replace()
    held = hold()

    with pytest.raises(services.InvalidInput) as caught:
        services.approval_decide(
            approval.request_id,
            user=user,
            approved=True,
            response={"discount_percent": 150, "note": 3},
        )

    assert set(caught.value.errors) == {"discount_percent", "note"}
    approval.refresh_from_db()
    run.refresh_from_db()
    assert approval.status == ApprovalStatus.PENDING and run.status == RunStatus.WAITING
    assert held.tasks == []


def test_approval_decide_refuses_an_unknown_request(user: Any) -> None:
    with pytest.raises(services.NotFound):
        services.approval_decide("no-such-request", user=user, approved=True)


def test_concurrent_decisions_on_one_request_give_one_decision_and_one_resume(
    user: Any, hold: Callable[[], Held]
) -> None:
    run, approval = waiting_return_replace()
    held = hold()
    outcomes: list[str] = []
    barrier = threading.Barrier(8)

    def decide() -> None:
        barrier.wait()
        try:
            services.approval_decide(approval.request_id, user=user, approved=True, response={})
            outcomes.append("decided")
        except services.Conflict as exc:
            # What the loser read after waiting for the winner's lock names the winner.
            said_who = "was already approved by alice at " in exc.message
            outcomes.append("conflict naming alice" if said_who else exc.message)
        finally:
            connections.close_all()

    threads = [threading.Thread(target=decide) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(WAIT)

    assert sorted(outcomes) == ["conflict naming alice"] * 7 + ["decided"]
    assert held.run_ids() == [str(run.pk)]
    assert event_types(run).count("approval_decided") == 1
    held.release()
    run.refresh_from_db()
    assert run.status == RunStatus.COMPLETED
    kinds = [c.document["metadata"].get("kind") for c in lineage(run)]
    assert kinds.count("responses") == 1


def test_a_decision_made_while_the_worker_is_still_finishing_is_not_lost(
    user: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The approval row exists from the superstep's commit on, while the run is still
    # "running"; a quick operator decides before the worker records "waiting".
    real_finish = services.run_finish

    def decide_first(lease: Any, *, outcome: str, **kwargs: Any) -> None:
        pending = ApprovalRequest.objects.filter(run_id=lease.run_id, status="pending").first()
        if outcome == RunStatus.WAITING and pending is not None:
            services.approval_decide(pending.request_id, user=user, approved=True, response={})
        real_finish(lease, outcome=outcome, **kwargs)

    monkeypatch.setattr(services, "run_finish", decide_first)
    run = started("return-replace", FAST)
    settle()

    run.refresh_from_db()
    assert run.status == RunStatus.COMPLETED, run.status
    assert run.output["outcome"] == "replacement approved"


# ------------------------------------------------------------------------ status machine


def test_run_resume_is_refused_while_the_run_is_queued(held: Held) -> None:
    run = services.run_start(workflow_name="squares", input={"limit": 2})
    row = Checkpoint.objects.create(
        checkpoint_id="c0",
        run=run,
        workflow_name="squares",
        superstep=0,
        graph_signature_hash="x",
        document={},
        size_bytes=1,
    )

    with pytest.raises(services.Conflict, match="queued"):
        services.run_resume(run.pk, checkpoint_id=row.checkpoint_id)


def test_run_resume_is_refused_while_the_run_is_running() -> None:
    run = services.run_start(workflow_name="squares", input={"limit": 400, "work_ms": 5})
    deadline = time.monotonic() + WAIT
    while (row := WorkflowRun.objects.get(pk=run.pk)).latest_checkpoint_id is None:
        assert time.monotonic() < deadline
        time.sleep(0.01)

    with pytest.raises(services.Conflict, match="running"):
        services.run_resume(run.pk, checkpoint_id=row.latest_checkpoint_id)
    services.run_cancel(run.pk)


def test_a_finished_run_is_resumed_once_and_the_second_resume_is_refused(held: Held) -> None:
    run = services.run_start(workflow_name="squares", input={"limit": 3, **FAST})
    held.release()
    run.refresh_from_db()
    first = lineage(run)[1]

    services.run_resume(run.pk, checkpoint_id=first.checkpoint_id)
    with pytest.raises(services.Conflict):
        services.run_resume(run.pk, checkpoint_id=first.checkpoint_id)

    assert held.run_ids() == [str(run.pk)]
    old_lineage = run.engine_run_id
    held.release()
    run.refresh_from_db()
    assert run.status == RunStatus.COMPLETED and run.engine_run_id != old_lineage
    assert decode(run.output) == {1: 1, 2: 4, 3: 9}
    branch = lineage(run)
    # The branch starts after the chosen checkpoint: supersteps 2..4, linked back to it.
    assert branch[0].previous_checkpoint_id == first.checkpoint_id
    assert [c.superstep for c in branch if c.document["metadata"]["kind"] == "superstep"] == [
        2,
        3,
        4,
    ]
    assert_gapless_events(run)


def test_run_resume_refuses_a_checkpoint_of_another_run() -> None:
    first = started("squares", {"limit": 1, **FAST})
    second = started("squares", {"limit": 1, **FAST})

    with pytest.raises(services.NotFound):
        services.run_resume(second.pk, checkpoint_id=first.latest_checkpoint_id)
    with pytest.raises(services.NotFound):
        services.run_resume("00000000-0000-4000-8000-000000000000", checkpoint_id="x")


def test_run_resume_refuses_a_checkpoint_written_by_another_graph() -> None:
    run = started("squares", {"limit": 1, **FAST})
    Checkpoint.objects.filter(pk=run.latest_checkpoint_id).update(graph_signature_hash="old")

    with pytest.raises(services.Conflict, match="no longer registered; migrate"):
        services.run_resume(run.pk, checkpoint_id=run.latest_checkpoint_id)


def test_resume_starts_a_new_lineage_so_a_reraised_request_is_a_new_row(user: Any) -> None:
    run, old = waiting_return_replace()
    before_gate = next(c for c in lineage(run) if c.superstep == 3)

    services.run_resume(
        run.pk, checkpoint_id=before_gate.checkpoint_id, user=user, reason="ask again"
    )
    settle()

    run.refresh_from_db()
    old.refresh_from_db()
    assert run.status == RunStatus.WAITING
    assert old.status == ApprovalStatus.CANCELLED  # the old branch's request is void
    new = ApprovalRequest.objects.get(run=run, status=ApprovalStatus.PENDING)
    assert new.pk != old.pk and new.request_id != old.request_id
    assert new.engine_run_id == run.engine_run_id != old.engine_run_id
    assert ApprovalRequest.objects.filter(run=run).count() == 2

    with pytest.raises(services.Conflict, match="cancelled"):
        services.approval_decide(old.request_id, user=user, approved=True, response={})
    services.approval_decide(new.request_id, user=user, approved=True, response={})
    settle()
    run.refresh_from_db()
    assert run.status == RunStatus.COMPLETED
    assert_gapless_events(run)


def test_a_request_of_a_branch_the_run_has_left_is_refused_as_stale(user: Any) -> None:
    run, approval = waiting_return_replace()
    # As if a resume had moved the run on without cancelling this request.
    WorkflowRun.objects.filter(pk=run.pk).update(engine_run_id="another-lineage")

    with pytest.raises(services.Conflict, match="stale"):
        services.approval_decide(approval.request_id, user=user, approved=True, response={})
    approval.refresh_from_db()
    assert approval.status == ApprovalStatus.PENDING


def test_run_cancel_cancels_a_waiting_run_and_its_pending_requests(user: Any) -> None:
    run, approval = waiting_return_replace()

    services.run_cancel(run.pk, user=user, reason="customer withdrew")

    run.refresh_from_db()
    approval.refresh_from_db()
    assert run.status == RunStatus.CANCELLED and run.finished_at is not None
    assert approval.status == ApprovalStatus.CANCELLED and approval.decided_at is not None
    with pytest.raises(services.Conflict, match="cancelled"):
        services.approval_decide(approval.request_id, user=user, approved=True, response={})


@pytest.mark.parametrize(
    "workflow, input, status",
    [
        ("squares", {"limit": 1, **FAST}, RunStatus.COMPLETED),
        (
            "fail-at-step",
            {"steps": 2, "fail_at": 1, "outage_seconds": 3600, **FAST},
            RunStatus.FAILED,
        ),
    ],
)
def test_run_cancel_refuses_a_finished_run(workflow: str, input: Any, status: str) -> None:
    run = started(workflow, input)
    assert run.status == status

    with pytest.raises(services.Conflict, match=f"already {status}"):
        services.run_cancel(run.pk)


def test_run_cancel_refuses_a_cancelled_run() -> None:
    run, _ = waiting_return_replace()
    services.run_cancel(run.pk)

    with pytest.raises(services.Conflict, match="already cancelled"):
        services.run_cancel(run.pk)


def test_run_cancel_refuses_an_unknown_run() -> None:
    with pytest.raises(services.NotFound):
        services.run_cancel("00000000-0000-4000-8000-000000000000")
    with pytest.raises(services.NotFound):
        services.run_cancel("not-a-uuid")


@pytest.mark.parametrize("status", [RunStatus.COMPLETED, RunStatus.WAITING, RunStatus.CANCELLED])
def test_run_retry_refuses_anything_but_a_failed_run(status: str) -> None:
    if status == RunStatus.WAITING:
        run, _ = waiting_return_replace()
    else:
        run = started("squares", {"limit": 1, **FAST})
        if status == RunStatus.CANCELLED:
            run = services.run_cancel(waiting_return_replace()[0].pk)

    with pytest.raises(services.Conflict, match="only a failed run"):
        services.run_retry(run.pk)


def test_run_retry_continues_a_failed_run_from_its_latest_checkpoint() -> None:
    run = started("fail-at-step", {"steps": 5, "fail_at": 3, "outage_seconds": 2.0, **FAST})
    assert run.status == RunStatus.FAILED and "simulated outage" in run.error_message
    assert [c.superstep for c in lineage(run)] == [0, 1, 2, 3]
    outage_over = run.started_at + dt.timedelta(seconds=2.5)  # it began a little after
    time.sleep(max(0.0, (outage_over - timezone.now()).total_seconds()))

    services.run_retry(run.pk)
    settle()

    run.refresh_from_db()
    assert run.status == RunStatus.COMPLETED and run.error_message == "" and run.traceback == ""
    assert run.output == {"counted": [1, 2, 3, 4, 5]}
    chain = lineage(run)
    assert [c.superstep for c in chain] == [0, 1, 2, 3, 4, 5, 6]
    assert [c.previous_checkpoint_id for c in chain[1:]] == [c.checkpoint_id for c in chain[:-1]]
    assert_gapless_events(run)


# ------------------------------------------------------------------------------ fork


def test_run_fork_with_edited_executor_state_runs_a_new_linked_run(user: Any) -> None:
    origin = started("refund", {"item_refund": 5.0, "initial_refund": 10.0, **FAST})
    assert origin.output == 15.0
    entry = lineage(origin)[0]

    fork = services.run_fork(
        origin.pk,
        checkpoint_id=entry.checkpoint_id,
        user=user,
        reason="try it with edits",
        executor_states={"return-request": {"refund_amount": 100.0, "seeded": True}},
    )
    settle()

    fork.refresh_from_db()
    assert fork.pk != origin.pk and fork.parent_run_id == origin.pk
    assert fork.origin_checkpoint_id == entry.checkpoint_id and fork.created_by == user
    assert fork.status == RunStatus.COMPLETED and fork.output == 105.0
    first = lineage(fork)[0]
    assert first.previous_checkpoint_id == entry.checkpoint_id
    assert first.document["metadata"] == {"kind": "fork", "forked_from": entry.checkpoint_id}
    assert events(fork)[0].data["edited"] is True
    assert "run_forked" in event_types(origin)
    origin.refresh_from_db()
    assert origin.output == 15.0  # the origin is untouched
    assert_gapless_events(fork)
    assert_gapless_events(origin)


def test_run_fork_from_a_checkpoint_with_a_pending_request_opens_its_own_approval(
    user: Any,
) -> None:
    origin, original = waiting_return_replace()
    gate = lineage(origin)[-1]
    assert gate.pending_request_count == 1

    fork = services.run_fork(origin.pk, checkpoint_id=gate.checkpoint_id)
    settle()

    fork.refresh_from_db()
    assert fork.status == RunStatus.WAITING
    # Without a request of its own the fork would wait for ever: nobody could approve it.
    approval = ApprovalRequest.objects.get(run=fork)
    assert approval.status == ApprovalStatus.PENDING and approval.checkpoint.run_id == fork.pk
    assert approval.request_id != original.request_id
    assert approval.engine_run_id == fork.engine_run_id
    services.approval_decide(approval.request_id, user=user, approved=True, response={})
    settle()
    fork.refresh_from_db()
    original.refresh_from_db()
    assert fork.status == RunStatus.COMPLETED and fork.output["outcome"] == "replacement approved"
    assert original.status == ApprovalStatus.PENDING  # the origin still waits on its own


def test_run_fork_with_edited_shared_state_carries_the_edit_through(user: Any) -> None:
    origin, _ = waiting_return_replace(order_id="ORD-9", refund_amount=20.0)
    gate = lineage(origin)[-1]
    # The API shows a checkpoint in its codec JSON form; an operator edits that form.
    state = DjangoCheckpointStorage().decode(gate.document).to_dict()["state"]
    assert state["pending:ORD-9"]["v"]["refund_amount"] == 20.0
    state["pending:ORD-9"]["v"]["refund_amount"] = 80.0

    fork = services.run_fork(origin.pk, checkpoint_id=gate.checkpoint_id, state=state)
    settle()

    fork.refresh_from_db()
    assert fork.status == RunStatus.WAITING  # forked at the gate: a request of its own
    approval = ApprovalRequest.objects.get(run=fork, status=ApprovalStatus.PENDING)
    assert approval.engine_run_id == fork.engine_run_id != origin.engine_run_id
    services.approval_decide(
        approval.request_id, user=user, approved=True, response={"discount_percent": 50}
    )
    settle()
    fork.refresh_from_db()
    assert fork.output["refund_amount"] == 80.0 and fork.output["final_amount"] == 40.0
    assert ApprovalRequest.objects.get(run=origin).status == ApprovalStatus.PENDING


@pytest.mark.parametrize(
    "edit, field",
    [
        ({"state": {"x": {"$t": "no-such-tag", "v": 1}}}, "state"),
        ({"state": {"x": {"$t": "datetime", "v": "not a date"}}}, "state"),
        ({"executor_states": {"ghost": {"a": 1}}}, "executor_states"),
        ({"executor_states": {"return-request": "not an object"}}, "executor_states"),
        (
            {
                "executor_states": {
                    "return-request": {"x": {"$t": "model", "name": "os.system", "v": {}}}
                }
            },
            "executor_states",
        ),
    ],
)
def test_run_fork_refuses_state_the_codec_cannot_restore_and_saves_nothing(
    edit: dict[str, Any], field: str
) -> None:
    origin = started("refund", {**FAST})
    entry = lineage(origin)[0]
    counts = (WorkflowRun.objects.count(), Checkpoint.objects.count(), RunEvent.objects.count())

    with pytest.raises(services.InvalidInput) as caught:
        services.run_fork(origin.pk, checkpoint_id=entry.checkpoint_id, **edit)

    assert any(path == field or path.startswith(f"{field}.") for path in caught.value.errors)
    assert (
        WorkflowRun.objects.count(),
        Checkpoint.objects.count(),
        RunEvent.objects.count(),
    ) == counts


def squares_at(superstep: int, limit: int = 4) -> tuple[WorkflowRun, Checkpoint, dict[str, Any]]:
    """A completed squares run, its checkpoint after ``superstep`` and that checkpoint's
    document (the work list travels in the message the worker sends itself)."""
    origin = started("squares", {"limit": limit, **FAST})
    assert origin.status == RunStatus.COMPLETED, origin.error_message
    checkpoint = next(c for c in lineage(origin) if c.superstep == superstep)
    return origin, checkpoint, DjangoCheckpointStorage().decode(checkpoint.document).to_dict()


def test_run_fork_with_edited_messages_runs_the_edited_work_list(user: Any) -> None:
    origin, checkpoint, document = squares_at(2)
    (message,) = document["messages"]
    assert message["data"]["v"]["remaining"] == [2, 3, 4]
    message["data"]["v"]["remaining"] = [10, 20]

    fork = services.run_fork(
        origin.pk,
        checkpoint_id=checkpoint.checkpoint_id,
        messages=document["messages"],
        user=user,
        reason="try it with edits",
    )
    settle()

    fork.refresh_from_db()
    assert fork.status == RunStatus.COMPLETED, fork.error_message
    assert decode(fork.output) == {1: 1, 10: 100, 20: 400}
    assert decode(origin.output) == {1: 1, 2: 4, 3: 9, 4: 16}
    assert events(fork)[0].data["edited"] is True
    assert AuditEntry.objects.get(action="fork", run_id=fork.pk).details["edited"] == ["messages"]


@pytest.mark.parametrize(
    "edit, path, words",
    [
        # The worker's handler takes a SquaresTask: a bare string would be dropped with a warning.
        (
            {"data": "three"},
            "messages.0.data",
            "nothing it goes to takes a str (worker takes SquaresTask)",
        ),
        # A dataclass is built without checking its fields; the fork checks them.
        (
            {
                "data": {
                    "$t": "model",
                    "name": "dashboard.demo.workflows.SquaresTask",
                    "v": {"remaining": [3, "four"], "work_ms": 0},
                }
            },
            "messages.0.data.remaining.1",
            "Input should be a valid integer",
        ),
        (
            {
                "data": {
                    "$t": "model",
                    "name": "dashboard.demo.workflows.SquaresTask",
                    "v": {"remaining": [3], "work_ms": 0, "colour": "red"},
                }
            },
            "messages.0.data",
            "SquaresTask has no field(s) ['colour']",
        ),
        ({"source": "nobody"}, "messages.0.data", "nothing it goes to takes a SquaresTask"),
    ],
)
def test_run_fork_refuses_an_edited_message_that_nothing_would_take_as_it_is(
    edit: dict[str, Any], path: str, words: str
) -> None:
    origin, checkpoint, document = squares_at(2)
    document["messages"][0].update(edit)
    counts = (WorkflowRun.objects.count(), Checkpoint.objects.count(), RunEvent.objects.count())

    with pytest.raises(services.InvalidInput) as checked:
        fork_check(origin.pk, checkpoint_id=checkpoint.checkpoint_id, messages=document["messages"])
    with pytest.raises(services.InvalidInput) as forked:
        services.run_fork(
            origin.pk, checkpoint_id=checkpoint.checkpoint_id, messages=document["messages"]
        )

    assert checked.value.errors == forked.value.errors
    assert words in forked.value.errors[path], forked.value.errors
    assert (
        WorkflowRun.objects.count(),
        Checkpoint.objects.count(),
        RunEvent.objects.count(),
    ) == counts


def test_run_fork_checks_edited_dataclass_fields_in_state_but_not_what_was_left_alone() -> None:
    origin, _ = waiting_return_replace(order_id="ORD-3")
    gate = lineage(origin)[-1]
    state = DjangoCheckpointStorage().decode(gate.document).to_dict()["state"]
    state["pending:ORD-3"]["v"]["discount_percent"] = "ten"
    state["untouched"] = 1

    with pytest.raises(services.InvalidInput) as caught:
        fork_check(origin.pk, checkpoint_id=gate.checkpoint_id, state=state)

    assert caught.value.errors == {
        "state.pending:ORD-3.discount_percent": "Input should be a valid integer"
    }


def test_fork_check_accepts_what_run_fork_accepts_and_writes_nothing(user: Any) -> None:
    origin, checkpoint, document = squares_at(2)
    document["messages"][0]["data"]["v"]["remaining"] = [5]
    document["executor_states"]["worker"]["results"] = {"$t": "dict", "v": [[1, 2]]}
    counts = (WorkflowRun.objects.count(), Checkpoint.objects.count(), RunEvent.objects.count())

    fork_check(
        origin.pk,
        checkpoint_id=checkpoint.checkpoint_id,
        user=user,
        messages=document["messages"],
        executor_states=document["executor_states"],
    )

    assert (
        WorkflowRun.objects.count(),
        Checkpoint.objects.count(),
        RunEvent.objects.count(),
    ) == counts
    fork = services.run_fork(
        origin.pk,
        checkpoint_id=checkpoint.checkpoint_id,
        user=user,
        reason="try it with edits",
        messages=document["messages"],
        executor_states=document["executor_states"],
    )
    settle()
    fork.refresh_from_db()
    assert decode(fork.output) == {1: 2, 5: 25}


def test_run_fork_of_a_queued_run_is_allowed_but_unknown_checkpoints_are_not(held: Held) -> None:
    run = services.run_start(workflow_name="squares", input={"limit": 2})

    with pytest.raises(services.NotFound):
        services.run_fork(run.pk, checkpoint_id="nope")
