"""dashboard/models/: the invariants the database itself enforces, on SQLite and PostgreSQL.

Every test here takes ``db_alias`` and so runs twice (``[sqlite]``, ``[postgres]``).
Rows are written with ``.save()``/``.create()`` directly on purpose: these tests prove the
constraints hold even when a service has a bug.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable
from typing import Any

import pytest
from django.contrib.auth import get_user_model
from django.contrib.auth.models import AbstractBaseUser
from django.core.management import call_command
from django.db import IntegrityError, transaction
from django.db.models import ProtectedError, RestrictedError
from django.utils import timezone

from dashboard.models import (
    ApprovalRequest,
    ApprovalStatus,
    Checkpoint,
    CheckpointBlob,
    CheckpointBlobUse,
    RunEvent,
    RunStatus,
    WorkflowRun,
)

NOW = dt.datetime(2026, 1, 2, 3, 4, 5, tzinfo=dt.UTC)


def refused(db_alias: str, write: Callable[[], object]) -> bool:
    """Whether the database rejects ``write`` with an IntegrityError.

    The savepoint keeps the test's transaction usable afterwards (PostgreSQL aborts a
    transaction on the first error).
    """
    try:
        with transaction.atomic(using=db_alias):
            write()
    except IntegrityError:
        return True
    return False


def make_run(db_alias: str, **fields: Any) -> WorkflowRun:
    return WorkflowRun.objects.using(db_alias).create(workflow_name="squares", **fields)


def make_checkpoint(db_alias: str, run: WorkflowRun | None, checkpoint_id: str) -> Checkpoint:
    return Checkpoint.objects.using(db_alias).create(
        checkpoint_id=checkpoint_id,
        run=run,
        workflow_name="squares",
        superstep=1,
        graph_signature_hash="0" * 64,
        document={"version": "1", "checkpoint_id": checkpoint_id},
        size_bytes=42,
    )


def make_user(db_alias: str, username: str) -> AbstractBaseUser:
    return get_user_model().objects.db_manager(db_alias).create_user(username)


def make_approval(
    db_alias: str, checkpoint: Checkpoint, request_id: str, **fields: Any
) -> ApprovalRequest:
    assert checkpoint.run is not None
    return ApprovalRequest.objects.using(db_alias).create(
        request_id=request_id,
        run=checkpoint.run,
        checkpoint=checkpoint,
        executor_id="hitl-gate",
        request_data={"order_id": "A-1"},
        response_type="Decision",
        response_schema={"type": "object"},
        **fields,
    )


def test_run_defaults_to_queued_with_a_uuid(db_alias: str) -> None:
    run = make_run(db_alias, input={"n": 3})

    stored = WorkflowRun.objects.using(db_alias).get(pk=run.pk)

    assert stored.status == RunStatus.QUEUED
    assert stored.input == {"n": 3}
    assert stored.fencing_epoch == 0 and stored.attempts == 0
    assert not stored.is_terminal


def test_run_status_must_be_a_known_value(db_alias: str) -> None:
    assert refused(db_alias, lambda: make_run(db_alias, status="paused"))


def test_run_finished_at_is_set_exactly_when_the_run_is_terminal(db_alias: str) -> None:
    assert refused(db_alias, lambda: make_run(db_alias, status=RunStatus.COMPLETED))
    assert refused(db_alias, lambda: make_run(db_alias, status=RunStatus.RUNNING, finished_at=NOW))
    assert not refused(
        db_alias, lambda: make_run(db_alias, status=RunStatus.COMPLETED, finished_at=NOW)
    )


def test_run_failed_must_say_why(db_alias: str) -> None:
    assert refused(db_alias, lambda: make_run(db_alias, status=RunStatus.FAILED, finished_at=NOW))
    assert not refused(
        db_alias,
        lambda: make_run(db_alias, status=RunStatus.FAILED, finished_at=NOW, error_message="boom"),
    )


def test_run_lease_is_an_owner_and_an_expiry_together(db_alias: str) -> None:
    assert refused(db_alias, lambda: make_run(db_alias, lease_owner="worker-1"))
    assert refused(db_alias, lambda: make_run(db_alias, lease_expires_at=NOW))
    assert not refused(
        db_alias, lambda: make_run(db_alias, lease_owner="worker-1", lease_expires_at=NOW)
    )


def test_run_cannot_be_its_own_parent(db_alias: str) -> None:
    run = make_run(db_alias)
    run.parent_run = run

    assert refused(db_alias, lambda: run.save(using=db_alias))


def test_event_seq_is_unique_within_a_run(db_alias: str) -> None:
    first, second = make_run(db_alias), make_run(db_alias)
    events = RunEvent.objects.using(db_alias)
    events.create(run=first, seq=1, type="superstep_started")

    assert refused(db_alias, lambda: events.create(run=first, seq=1, type="duplicate"))
    assert not refused(db_alias, lambda: events.create(run=second, seq=1, type="other run"))


def test_event_seq_starts_at_one(db_alias: str) -> None:
    run = make_run(db_alias)

    assert refused(
        db_alias, lambda: RunEvent.objects.using(db_alias).create(run=run, seq=0, type="x")
    )


def test_approval_request_id_is_unique(db_alias: str) -> None:
    checkpoint = make_checkpoint(db_alias, make_run(db_alias), "c1")
    make_approval(db_alias, checkpoint, "req-1")

    assert refused(db_alias, lambda: make_approval(db_alias, checkpoint, "req-1"))


def test_approval_decision_is_recorded_exactly_when_decided(db_alias: str) -> None:
    checkpoint = make_checkpoint(db_alias, make_run(db_alias), "c1")
    approver = make_user(db_alias, "approver")

    def approval(request_id: str, **fields: Any) -> Callable[[], object]:
        return lambda: make_approval(db_alias, checkpoint, request_id, **fields)

    assert refused(db_alias, approval("pending-decided", decided_at=NOW))
    assert refused(
        db_alias, approval("approved-anon", status=ApprovalStatus.APPROVED, decided_at=NOW)
    )
    assert refused(
        db_alias, approval("rejected-undated", status=ApprovalStatus.REJECTED, decided_by=approver)
    )
    assert refused(db_alias, approval("cancelled-undated", status=ApprovalStatus.CANCELLED))
    assert refused(db_alias, approval("unknown-status", status="maybe"))
    assert not refused(
        db_alias,
        approval("approved", status=ApprovalStatus.APPROVED, decided_by=approver, decided_at=NOW),
    )
    assert not refused(
        db_alias, approval("cancelled-by-system", status=ApprovalStatus.CANCELLED, decided_at=NOW)
    )


def test_checkpoint_document_round_trips_json(db_alias: str) -> None:
    document = {
        "version": "1",
        "state": {"text": "é ü 字 \u2028 </script>", "big": 2**53, "pi": 3.25, "none": None},
        "nested": [[], {}, [1, [2, [3]]], True, False],
        "$t": "a user key that looks like a codec tag stays data",
    }
    checkpoint = make_checkpoint(db_alias, None, "c1")
    checkpoint.document = document
    checkpoint.save(using=db_alias)

    stored = Checkpoint.objects.using(db_alias).get(pk="c1")

    assert stored.document == document
    assert stored.run is None  # storage without a dashboard run (the engine's contract suite)


def test_checkpoint_lookup_by_json_key(db_alias: str) -> None:
    make_checkpoint(db_alias, None, "c1")

    found = Checkpoint.objects.using(db_alias).filter(document__checkpoint_id="c1")

    assert [c.checkpoint_id for c in found] == ["c1"]


def test_checkpoint_blob_is_stored_once_for_many_checkpoints(db_alias: str) -> None:
    blob = {"digest": "sha256:" + "a" * 64, "data": '{"orders":[0,1,2]}', "size_bytes": 400}
    blobs = CheckpointBlob.objects.using(db_alias)
    blobs.bulk_create([CheckpointBlob(**blob)], ignore_conflicts=True)
    blobs.bulk_create([CheckpointBlob(**blob)], ignore_conflicts=True)
    shared = blobs.get()
    for lineage in ("lineage-1", "lineage-2"):
        CheckpointBlobUse.objects.using(db_alias).create(engine_run_id=lineage, blob=shared)

    assert blobs.count() == 1
    assert shared.uses.count() == 2
    assert not blobs.filter(uses__isnull=True).exists()


def test_a_lineage_uses_a_blob_once(db_alias: str) -> None:
    shared = CheckpointBlob.objects.using(db_alias).create(
        digest="sha256:" + "b" * 64, data="{}", size_bytes=2
    )
    CheckpointBlobUse.objects.using(db_alias).create(engine_run_id="lineage-1", blob=shared)

    with pytest.raises(IntegrityError), transaction.atomic(using=db_alias):
        CheckpointBlobUse.objects.using(db_alias).create(engine_run_id="lineage-1", blob=shared)


def test_a_blob_in_use_cannot_be_deleted(db_alias: str) -> None:
    shared = CheckpointBlob.objects.using(db_alias).create(
        digest="sha256:" + "c" * 64, data="{}", size_bytes=2
    )
    CheckpointBlobUse.objects.using(db_alias).create(engine_run_id="lineage-1", blob=shared)

    with pytest.raises(ProtectedError):
        shared.delete()


def test_checkpoint_raised_in_by_an_approval_cannot_be_deleted(db_alias: str) -> None:
    checkpoint = make_checkpoint(db_alias, make_run(db_alias), "c1")
    make_approval(db_alias, checkpoint, "req-1")

    with pytest.raises(RestrictedError):
        checkpoint.delete()


def test_deleting_a_run_deletes_its_checkpoints_events_and_approvals(db_alias: str) -> None:
    run = make_run(db_alias)
    checkpoint = make_checkpoint(db_alias, run, "c1")
    run.latest_checkpoint = checkpoint
    run.save(using=db_alias)
    make_approval(db_alias, checkpoint, "req-1")
    RunEvent.objects.using(db_alias).create(run=run, seq=1, type="run_started")
    fork = make_run(db_alias, parent_run=run, origin_checkpoint_id="c1")

    run.delete()

    assert not Checkpoint.objects.using(db_alias).exists()
    assert not ApprovalRequest.objects.using(db_alias).exists()
    assert not RunEvent.objects.using(db_alias).exists()
    fork.refresh_from_db()
    assert fork.parent_run is None and fork.origin_checkpoint_id == "c1"


def test_deleting_a_checkpoint_clears_the_runs_latest_checkpoint(db_alias: str) -> None:
    run = make_run(db_alias)
    run.latest_checkpoint = make_checkpoint(db_alias, run, "c1")
    run.save(using=db_alias)

    Checkpoint.objects.using(db_alias).filter(pk="c1").delete()

    run.refresh_from_db()
    assert run.latest_checkpoint is None


def test_pending_approvals_list_is_oldest_first(db_alias: str) -> None:
    checkpoint = make_checkpoint(db_alias, make_run(db_alias), "c1")
    approver = make_user(db_alias, "approver")
    make_approval(db_alias, checkpoint, "newer", created_at=NOW)
    make_approval(db_alias, checkpoint, "older", created_at=NOW - dt.timedelta(hours=1))
    make_approval(
        db_alias,
        checkpoint,
        "decided",
        status=ApprovalStatus.APPROVED,
        decided_by=approver,
        decided_at=timezone.now(),
    )

    pending = ApprovalRequest.objects.using(db_alias).filter(status=ApprovalStatus.PENDING)

    assert [a.request_id for a in pending.order_by("created_at")] == ["older", "newer"]


@pytest.mark.django_db
def test_migrations_match_the_models() -> None:
    call_command("makemigrations", "dashboard", "--check", "--dry-run", verbosity=0)
