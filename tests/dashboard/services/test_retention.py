"""dashboard/services/retention.py: what pruning may never touch, what each rule deletes, that the
preview tells the truth, that batches stay short, and that everything calling the service
(management command, admin actions, periodic job) gets the same answer.

Most tests build runs and checkpoints as rows (exact ages and shapes, milliseconds each) and
run on SQLite and PostgreSQL through ``services_db``. The last section drives real runs through
the embedded worker while another thread prunes as hard as it can (reliability.md R9).
"""

from __future__ import annotations

import datetime as dt
import io
import itertools
import json
import logging
import math
import threading
import time
import uuid
from collections.abc import Callable
from typing import Any, Self

import pytest
from django.contrib.messages import get_messages
from django.core.management import CommandError, call_command
from django.db import connections, transaction
from django.test import Client
from django.utils import timezone

from dashboard import services
from dashboard.checkpoints.blob_uses import collect_unused_blobs, release_uses_of_gone_lineages
from dashboard.checkpoints.storage import DjangoCheckpointStorage
from dashboard.execution import embedded, tasks
from dashboard.models import (
    ApprovalRequest,
    ApprovalStatus,
    AuditEntry,
    Checkpoint,
    CheckpointBlob,
    CheckpointBlobUse,
    RetentionPolicy,
    RunEvent,
    RunStatus,
    WorkflowRun,
)
from tests.browser.deadlines import seconds

NOW = timezone.now()
_ids = itertools.count(1)


# ------------------------------------------------------------------------------- factories


def make_run(
    *,
    status: str = RunStatus.COMPLETED,
    checkpoints: int = 5,
    workflow: str = "squares",
    finished_days_ago: float = 0,
    first_checkpoint_days_ago: float = 0,
    on_hold: bool = False,
    size_bytes: int = 100,
    parent: WorkflowRun | None = None,
    origin: Checkpoint | None = None,
) -> WorkflowRun:
    """A run with ``checkpoints`` rows one minute apart, oldest first; latest = newest."""
    fields: dict[str, Any] = {}
    if status in (RunStatus.COMPLETED, RunStatus.FAILED, RunStatus.CANCELLED):
        fields["finished_at"] = NOW - dt.timedelta(days=finished_days_ago)
    if status == RunStatus.FAILED:
        fields["error_message"] = "boom"
    if status == RunStatus.RUNNING:
        fields.update(lease_owner="worker-1", lease_expires_at=NOW + dt.timedelta(minutes=5))
    run = WorkflowRun.objects.create(
        workflow_name=workflow,
        status=status,
        engine_run_id=uuid.uuid4().hex,
        on_hold=on_hold,
        parent_run=parent,
        origin_checkpoint_id=origin.checkpoint_id if origin else None,
        **fields,
    )
    start = NOW - dt.timedelta(days=first_checkpoint_days_ago)
    previous = None
    for step in range(checkpoints):
        previous = add_checkpoint(
            run, step, start + dt.timedelta(minutes=step), previous, size_bytes
        )
    if previous is not None:
        run.latest_checkpoint = previous
        run.save()
    return run


def add_checkpoint(
    run: WorkflowRun,
    step: int,
    created_at: dt.datetime,
    previous: Checkpoint | None,
    size_bytes: int = 100,
) -> Checkpoint:
    checkpoint_id = f"cp-{next(_ids):06d}"
    return Checkpoint.objects.create(
        checkpoint_id=checkpoint_id,
        run=run,
        engine_run_id=run.engine_run_id,
        workflow_name=run.workflow_name,
        superstep=step,
        previous_checkpoint_id=previous.checkpoint_id if previous else None,
        graph_signature_hash="sha256:test",
        document={"checkpoint_id": checkpoint_id},
        size_bytes=size_bytes,
        created_at=created_at,
    )


def checkpoints_of(run: WorkflowRun) -> list[str]:
    return list(
        Checkpoint.objects.filter(run=run).order_by("created_at").values_list("pk", flat=True)
    )


def raise_approval(
    run: WorkflowRun, checkpoint: Checkpoint, status: str = ApprovalStatus.PENDING
) -> ApprovalRequest:
    # Decided by the system (a deadline's default) keeps the factory free of users.
    decided = (
        {} if status == ApprovalStatus.PENDING else {"decided_at": NOW, "default_applied": True}
    )
    return ApprovalRequest.objects.create(
        request_id=f"{run.engine_run_id}:req-{next(_ids)}",
        engine_request_id=f"req-{next(_ids)}",
        engine_run_id=run.engine_run_id,
        run=run,
        checkpoint=checkpoint,
        executor_id="gate",
        status=status,
        **decided,
    )


def policy(name: str = "p", *, status: str = "completed", **rules: Any) -> RetentionPolicy:
    return RetentionPolicy.objects.create(name=name, status=status, **rules)


def prune(**kwargs: Any) -> services.PruneReport:
    (report,) = services.checkpoint_prune(**kwargs)
    return report


# ----------------------------------------------------------------------------- protections


@pytest.mark.parametrize("status", [RunStatus.QUEUED, RunStatus.RUNNING, RunStatus.WAITING])
def test_prune_never_touches_a_queued_running_or_waiting_run(services_db: str, status: str) -> None:
    active = make_run(status=status, checkpoints=6, first_checkpoint_days_ago=400)
    for final in ("completed", "failed", "cancelled"):
        policy(
            final,
            status=final,
            keep_last_checkpoints=1,
            delete_checkpoints_older_than_days=0,
            delete_runs_older_than_days=0,
        )

    reports = services.checkpoint_prune()

    assert len(checkpoints_of(active)) == 6
    assert sum(r.checkpoints + r.runs for r in reports) == 0


@pytest.mark.parametrize("status", [RunStatus.QUEUED, RunStatus.RUNNING, RunStatus.WAITING])
def test_prune_protects_an_active_run_even_from_a_policy_naming_its_status(
    services_db: str, status: str
) -> None:
    # The form offers only final statuses, but the column accepts any string (a shell, a data
    # migration, a fixture): "protected, always" must not depend on the admin form.
    active = make_run(status=status, checkpoints=6, first_checkpoint_days_ago=400)
    policy(
        status=status,
        keep_last_checkpoints=1,
        delete_checkpoints_older_than_days=0,
        delete_runs_older_than_days=0,
    )

    report = prune()

    assert WorkflowRun.objects.filter(pk=active.pk).exists()
    assert len(checkpoints_of(active)) == 6
    assert (report.runs, report.checkpoints) == (0, 0)


def test_prune_keeps_the_newest_checkpoint_and_the_latest_one_when_they_differ(
    services_db: str,
) -> None:
    run = make_run(checkpoints=6, first_checkpoint_days_ago=30)
    ids = checkpoints_of(run)
    run.latest_checkpoint_id = ids[2]  # resumed from superstep 2, then finished there
    run.save()
    policy(delete_checkpoints_older_than_days=0)

    report = prune()

    assert checkpoints_of(run) == [ids[2], ids[5]]
    assert report.checkpoints == 4


@pytest.mark.parametrize("approval_status", [ApprovalStatus.PENDING, ApprovalStatus.APPROVED])
def test_prune_keeps_the_checkpoint_an_approval_was_raised_in(
    services_db: str, approval_status: str
) -> None:
    run = make_run(checkpoints=6, first_checkpoint_days_ago=30)
    ids = checkpoints_of(run)
    raise_approval(run, Checkpoint.objects.get(pk=ids[1]), approval_status)
    policy(keep_last_checkpoints=1)

    prune()

    assert checkpoints_of(run) == [ids[1], ids[5]]


def test_prune_keeps_a_fork_origin_while_the_fork_exists(services_db: str) -> None:
    parent = make_run(checkpoints=6, finished_days_ago=100, first_checkpoint_days_ago=100)
    ids = checkpoints_of(parent)
    fork = make_run(
        checkpoints=3,
        parent=parent,
        origin=Checkpoint.objects.get(pk=ids[2]),
        status=RunStatus.CANCELLED,
        finished_days_ago=100,
    )
    policy("completed", keep_last_checkpoints=1, delete_runs_older_than_days=30)
    policy("cancelled", status="cancelled", delete_runs_older_than_days=30)

    first = prune(policy="completed")

    # Not deleted whole (it has a fork), but pruned down to what must stay.
    assert first.runs == 0
    assert checkpoints_of(parent) == [ids[2], ids[5]]

    gone = prune(policy="cancelled")
    again = prune(policy="completed")

    assert gone.runs == 1 and not WorkflowRun.objects.filter(pk=fork.pk).exists()
    assert again.runs == 1 and not WorkflowRun.objects.filter(pk=parent.pk).exists()


def test_prune_leaves_a_held_run_whole(services_db: str) -> None:
    held = make_run(
        checkpoints=6, on_hold=True, finished_days_ago=400, first_checkpoint_days_ago=400
    )
    policy(
        keep_last_checkpoints=1, delete_checkpoints_older_than_days=0, delete_runs_older_than_days=0
    )

    report = prune()

    assert len(checkpoints_of(held)) == 6
    assert (report.runs, report.checkpoints) == (0, 0)


def test_prune_keeps_a_held_checkpoint_and_so_the_run_it_belongs_to(services_db: str) -> None:
    run = make_run(checkpoints=6, finished_days_ago=400, first_checkpoint_days_ago=400)
    ids = checkpoints_of(run)
    Checkpoint.objects.filter(pk=ids[0]).update(on_hold=True)
    policy(keep_last_checkpoints=1, delete_runs_older_than_days=0)

    report = prune()

    assert WorkflowRun.objects.filter(pk=run.pk).exists()
    assert checkpoints_of(run) == [ids[0], ids[5]]
    assert (report.runs, report.checkpoints) == (0, 4)


def test_prune_after_a_hold_is_released_deletes_what_the_hold_kept(
    services_db: str, role_user: Callable[..., Any]
) -> None:
    admin = role_user("ada", "Admin")
    run = make_run(checkpoints=4, first_checkpoint_days_ago=10)
    services.run_hold(run.pk, user=admin, reason="legal")
    policy(keep_last_checkpoints=1)

    held = prune()
    services.run_hold(run.pk, user=admin, hold=False)
    released = prune()

    assert (held.checkpoints, released.checkpoints) == (0, 3)
    assert AuditEntry.objects.filter(action__in=["hold", "release"], outcome="ok").count() == 2


# ----------------------------------------------------------------------------------- rules


def test_keep_last_applies_per_run_to_the_policy_status_and_workflow_pattern(
    services_db: str,
) -> None:
    done = [make_run(checkpoints=7, workflow="return-replace") for _ in range(2)]
    failed = make_run(status=RunStatus.FAILED, checkpoints=7, workflow="return-replace")
    other = make_run(checkpoints=7, workflow="squares")
    policy(workflow_pattern="return-*", keep_last_checkpoints=3)

    report = prune()

    assert [len(checkpoints_of(run)) for run in done] == [3, 3]
    assert len(checkpoints_of(failed)) == 7
    assert len(checkpoints_of(other)) == 7
    assert report.checkpoints == 8


@pytest.mark.parametrize("status", ["completed", "failed", "cancelled"])
def test_each_final_status_has_its_own_rule(services_db: str, status: str) -> None:
    runs = {s: make_run(status=s, checkpoints=5) for s in ("completed", "failed", "cancelled")}
    policy(status=status, keep_last_checkpoints=2)

    prune()

    assert {s: len(checkpoints_of(r)) for s, r in runs.items()} == {
        s: 2 if s == status else 5 for s in runs
    }


def test_older_than_deletes_only_checkpoints_older_than_the_cutoff(services_db: str) -> None:
    run = make_run(checkpoints=2, first_checkpoint_days_ago=40)
    for step, days in enumerate([20, 9, 1], start=2):
        run.latest_checkpoint = add_checkpoint(run, step, NOW - dt.timedelta(days=days), None)
    run.save()
    ids = checkpoints_of(run)
    policy(delete_checkpoints_older_than_days=10)

    report = prune()

    assert checkpoints_of(run) == ids[3:]
    assert report.checkpoints == 3


def test_older_than_and_keep_last_together_delete_only_what_both_allow(services_db: str) -> None:
    run = make_run(checkpoints=6, first_checkpoint_days_ago=30)  # all 30 days old
    policy(delete_checkpoints_older_than_days=10, keep_last_checkpoints=4)

    report = prune()

    assert len(checkpoints_of(run)) == 4
    assert report.checkpoints == 2


def test_whole_runs_older_than_the_cutoff_are_deleted_and_younger_ones_kept(
    services_db: str,
) -> None:
    old = make_run(checkpoints=3, finished_days_ago=40)
    young = make_run(checkpoints=3, finished_days_ago=5)
    policy(delete_runs_older_than_days=30)

    report = prune()

    assert not WorkflowRun.objects.filter(pk=old.pk).exists()
    assert not Checkpoint.objects.filter(run_id=old.pk).exists()
    assert len(checkpoints_of(young)) == 3
    assert (report.runs, report.checkpoints) == (1, 3)


def test_whole_run_deletion_leaves_a_run_pruned_tombstone_in_the_audit_log(
    services_db: str,
) -> None:
    run = make_run(checkpoints=4, finished_days_ago=40, size_bytes=250)
    ids = checkpoints_of(run)
    raise_approval(run, Checkpoint.objects.get(pk=ids[1]), ApprovalStatus.APPROVED)
    policy("old-runs", delete_runs_older_than_days=30)

    prune()

    assert not WorkflowRun.objects.filter(pk=run.pk).exists()
    assert not ApprovalRequest.objects.filter(run_id=run.pk).exists()
    tombstone = AuditEntry.objects.get(action="run_pruned")
    assert tombstone.run_id == run.pk
    assert tombstone.workflow_name == "squares"
    assert tombstone.actor_name == "system" and tombstone.outcome == "ok"
    assert tombstone.details["policy"] == "old-runs"
    assert tombstone.details["checkpoints"] == 4
    assert tombstone.details["bytes"] == 1000
    assert tombstone.details["status"] == "completed"


def test_whole_run_deletion_keeps_the_runs_audit_history(
    services_db: str, role_user: Callable[..., Any]
) -> None:
    admin = role_user("ada", "Admin")
    run = make_run(checkpoints=2, finished_days_ago=40)
    services.run_hold(run.pk, user=admin, reason="review")
    services.run_hold(run.pk, user=admin, hold=False)
    policy(delete_runs_older_than_days=30)

    prune()

    assert not WorkflowRun.objects.filter(pk=run.pk).exists()
    assert list(
        AuditEntry.objects.filter(run_id=run.pk).order_by("id").values_list("action", flat=True)
    ) == ["hold", "release", "run_pruned"]


def test_pruned_checkpoints_leave_a_checkpoints_pruned_event_on_the_run_timeline(
    services_db: str,
) -> None:
    run = make_run(checkpoints=6)
    seq_before = WorkflowRun.objects.get(pk=run.pk).last_event_seq
    policy("keep-two", keep_last_checkpoints=2)

    prune()

    event = RunEvent.objects.get(run=run)
    assert event.type == "checkpoints_pruned"
    assert event.seq == seq_before + 1
    assert event.data["count"] == 4 and event.data["policy"] == "keep-two"
    assert abs(dt.datetime.fromisoformat(event.data["at"]) - timezone.now()) < dt.timedelta(
        minutes=1
    )
    assert WorkflowRun.objects.get(pk=run.pk).last_event_seq == event.seq


def test_a_run_pruned_across_batches_counts_every_removed_checkpoint_on_its_timeline(
    services_db: str,
) -> None:
    run = make_run(checkpoints=11)
    policy("keep-one", keep_last_checkpoints=1)

    prune(batch_size=3)

    events = RunEvent.objects.filter(run=run, type="checkpoints_pruned")
    assert sum(e.data["count"] for e in events) == 10
    assert {e.data["policy"] for e in events} == {"keep-one"}


def test_prune_records_who_applied_which_policy_in_the_audit_log(
    services_db: str, role_user: Callable[..., Any]
) -> None:
    admin = role_user("ada", "Admin")
    make_run(checkpoints=4)
    policy("keep-one", keep_last_checkpoints=1)

    services.checkpoint_prune(user=admin)
    services.checkpoint_prune(policy="keep-one", dry_run=True, user=admin)

    (entry,) = AuditEntry.objects.filter(action="prune")  # a dry run changes nothing: no entry
    assert (entry.actor_name, entry.outcome, entry.target) == ("ada", "ok", "policy keep-one")
    assert entry.details["checkpoints"] == 3 and entry.details["dry_run"] is False


# --------------------------------------------------------------------------------- preview


def mixed_population() -> list[WorkflowRun]:
    """Runs that exercise every branch: whole-run deletion, pruning, forks, holds, approvals."""
    runs = [make_run(checkpoints=8, finished_days_ago=60, size_bytes=1000 + i) for i in range(3)]
    runs += [make_run(checkpoints=9, finished_days_ago=1, size_bytes=700) for _ in range(3)]
    runs.append(make_run(checkpoints=5, finished_days_ago=60, on_hold=True))
    approval_run = make_run(checkpoints=6, finished_days_ago=2)
    raise_approval(
        approval_run, Checkpoint.objects.filter(run=approval_run).order_by("created_at")[1]
    )
    forked = runs[0]
    runs.append(
        make_run(
            checkpoints=2,
            parent=forked,
            origin=Checkpoint.objects.filter(run=forked).first(),
            status=RunStatus.QUEUED,
        )
    )
    runs.append(make_run(status=RunStatus.WAITING, checkpoints=4))
    return [*runs, approval_run]


def db_totals() -> tuple[int, int, int]:
    return (
        WorkflowRun.objects.count(),
        Checkpoint.objects.count(),
        sum(Checkpoint.objects.values_list("size_bytes", flat=True)),
    )


def test_preview_and_dry_run_report_exactly_what_is_then_deleted(services_db: str) -> None:
    mixed_population()
    rule = policy("mixed", keep_last_checkpoints=2, delete_runs_older_than_days=30)
    runs_before, checkpoints_before, bytes_before = db_totals()

    preview = services.retention_preview(rule)
    dry = prune(policy="mixed", dry_run=True)
    unchanged = db_totals()
    applied = prune(policy="mixed", batch_size=4)
    runs_after, checkpoints_after, bytes_after = db_totals()

    assert unchanged == (runs_before, checkpoints_before, bytes_before)
    assert (preview.runs, preview.checkpoints, preview.bytes) == (
        dry.runs,
        dry.checkpoints,
        dry.bytes,
    )
    assert (dry.runs, dry.checkpoints, dry.bytes) == (
        applied.runs,
        applied.checkpoints,
        applied.bytes,
    )
    assert applied.runs == runs_before - runs_after == 2  # the forked one is kept
    assert applied.checkpoints == checkpoints_before - checkpoints_after
    assert applied.bytes == bytes_before - bytes_after
    assert preview.dry_run and dry.dry_run and not applied.dry_run
    assert (preview.batches, dry.batches) == (0, 0)


# ----------------------------------------------------------------------------------- batches


def test_prune_deletes_in_batches_of_batch_size_each_in_a_short_transaction(
    services_db: str,
) -> None:
    for _ in range(3):
        make_run(checkpoints=20)
    policy(keep_last_checkpoints=1)

    report = prune(batch_size=7)

    assert report.checkpoints == 57
    assert report.batches == math.ceil(57 / 7)
    assert 0 < report.longest_transaction_seconds < 1.0


def test_whole_run_deletion_is_batched_too(services_db: str) -> None:
    make_run(checkpoints=23, finished_days_ago=40)
    policy(delete_runs_older_than_days=30)

    report = prune(batch_size=5)

    # events (none) in 1 batch, 22 checkpoints in 5 batches, the run row itself in 1 more
    assert report.batches == 1 + math.ceil(22 / 5)
    assert report.checkpoints == 23 and report.runs == 1
    assert 0 < report.longest_transaction_seconds < 1.0


# ------------------------------------------------------------------------------------- blobs


def blob(digest: str) -> CheckpointBlob:
    return CheckpointBlob.objects.create(
        digest=digest, data=json.dumps({"v": digest}), size_bytes=10
    )


def refer(checkpoint: Checkpoint, *blobs: CheckpointBlob) -> None:
    """Make ``checkpoint`` refer to ``blobs`` as a save would: in its document, and through its
    lineage's use rows."""
    checkpoint.document = {
        **checkpoint.document,
        "blob_refs": [[["state", b.digest], b.digest] for b in blobs],
    }
    checkpoint.save(update_fields=["document"])
    for b in blobs:
        CheckpointBlobUse.objects.get_or_create(engine_run_id=checkpoint.engine_run_id, blob=b)


def test_prune_removes_orphaned_blobs_and_keeps_shared_ones(services_db: str) -> None:
    run = make_run(checkpoints=3)
    old, _, newest = (Checkpoint.objects.get(pk=pk) for pk in checkpoints_of(run))
    only_old, shared = blob("sha256:only-old"), blob("sha256:shared")
    refer(old, only_old, shared)
    refer(newest, shared)
    policy(keep_last_checkpoints=1)

    prune()

    assert set(CheckpointBlob.objects.values_list("pk", flat=True)) == {"sha256:shared"}
    assert list(CheckpointBlobUse.objects.values_list("engine_run_id", "blob_id")) == [
        (run.engine_run_id, "sha256:shared")
    ]


def test_whole_run_deletion_removes_the_blobs_only_that_run_used(services_db: str) -> None:
    run = make_run(checkpoints=2, finished_days_ago=40)
    kept = make_run(checkpoints=1)
    shared = blob("sha256:shared")
    first, second = (Checkpoint.objects.get(pk=pk) for pk in checkpoints_of(run))
    refer(first, blob(f"sha256:{first.pk}"), shared)
    refer(second, blob(f"sha256:{second.pk}"))
    refer(Checkpoint.objects.get(run=kept), shared)
    policy(delete_runs_older_than_days=30)

    prune()

    assert not WorkflowRun.objects.filter(pk=run.pk).exists()
    assert set(CheckpointBlob.objects.values_list("pk", flat=True)) == {"sha256:shared"}
    assert not CheckpointBlobUse.objects.filter(engine_run_id=run.engine_run_id).exists()


def test_pruning_collects_the_blobs_of_a_run_deleted_by_hand(services_db: str) -> None:
    # An operator deleted a run in the admin: its lineage's uses are released on the next pass.
    run = make_run(checkpoints=2)
    refer(Checkpoint.objects.get(pk=checkpoints_of(run)[0]), blob("sha256:by-hand"))
    WorkflowRun.objects.filter(pk=run.pk).delete()
    policy(keep_last_checkpoints=1)

    prune()

    assert not CheckpointBlob.objects.exists()
    assert not CheckpointBlobUse.objects.exists()


# --------------------------------------------------------------- callers of the one service


@pytest.fixture
def spy(monkeypatch: pytest.MonkeyPatch) -> list[dict[str, Any]]:
    """Every call to services.checkpoint_prune, with its keyword arguments."""
    calls: list[dict[str, Any]] = []
    real = services.checkpoint_prune

    def recording(**kwargs: Any) -> list[services.PruneReport]:
        calls.append(kwargs)
        return real(**kwargs)

    monkeypatch.setattr(services, "checkpoint_prune", recording)
    return calls


def command(*args: str) -> str:
    out = io.StringIO()
    call_command("prune_checkpoints", *args, stdout=out)
    return out.getvalue()


def test_prune_command_dry_run_reports_and_deletes_nothing(
    services_db: str, spy: list[dict[str, Any]]
) -> None:
    make_run(checkpoints=5)
    policy("keep-two", keep_last_checkpoints=2)

    output = command("--dry-run")

    assert "keep-two: would delete 0 runs, 3 checkpoints" in output
    assert Checkpoint.objects.count() == 5
    assert spy == [{"policy": None, "dry_run": True, "batch_size": services.retention.BATCH_SIZE}]


def test_prune_command_applies_one_named_policy_even_when_disabled(
    services_db: str, spy: list[dict[str, Any]]
) -> None:
    run = make_run(checkpoints=5)
    policy("keep-two", keep_last_checkpoints=2, enabled=False)
    policy("keep-four", keep_last_checkpoints=4)

    output = command("--policy", "keep-two", "--batch-size", "2")

    assert "keep-two: deleted 0 runs, 3 checkpoints" in output and "in 2 batches" in output
    assert "keep-four" not in output
    assert len(checkpoints_of(run)) == 2
    assert spy == [{"policy": "keep-two", "dry_run": False, "batch_size": 2}]


def test_prune_command_refuses_an_unknown_policy_and_a_bad_batch_size(services_db: str) -> None:
    with pytest.raises(CommandError, match="no retention policy named 'nope'"):
        command("--policy", "nope")
    with pytest.raises(CommandError, match="batch-size"):
        command("--batch-size", "0")


def test_a_disabled_policy_does_nothing_unless_named(services_db: str) -> None:
    run = make_run(checkpoints=5)
    policy("off", keep_last_checkpoints=1, enabled=False)

    everything = services.checkpoint_prune()
    periodic = tasks.prune_checkpoints()

    assert everything == [] and periodic == []
    assert len(checkpoints_of(run)) == 5
    assert prune(policy="off").checkpoints == 4


def test_the_periodic_task_applies_every_enabled_policy(
    services_db: str, spy: list[dict[str, Any]]
) -> None:
    make_run(checkpoints=5)
    make_run(status=RunStatus.FAILED, checkpoints=5)
    policy("completed", keep_last_checkpoints=1)
    policy("failed", status="failed", keep_last_checkpoints=2)

    reports = tasks.prune_checkpoints()

    assert [(r["policy"], r["checkpoints"]) for r in reports] == [("completed", 4), ("failed", 3)]
    assert spy == [{}]
    registered = {job.name: job.func for job in embedded.periodic_jobs()}
    assert registered["prune-checkpoints"] is services.retention.checkpoint_prune


@pytest.fixture
def admin_role_client(role_user: Callable[..., Any]) -> Client:
    client = Client()
    client.force_login(role_user("ada", "Admin", is_staff=True))
    return client


def admin_action(client: Client, action: str, rules: list[RetentionPolicy]) -> list[str]:
    response = client.post(
        "/admin/dashboard/retentionpolicy/",
        {"action": action, "_selected_action": [r.pk for r in rules]},
    )
    assert response.status_code == 302, response.content[:500]
    return [str(m) for m in get_messages(response.wsgi_request)]


def test_admin_lists_each_policy_with_a_preview_of_what_it_would_delete(
    services_db: str, admin_role_client: Client
) -> None:
    make_run(checkpoints=5, size_bytes=500_000)
    policy("keep-one", keep_last_checkpoints=1)

    page = admin_role_client.get("/admin/dashboard/retentionpolicy/")

    assert page.status_code == 200
    assert "0 runs, 4 checkpoints, 2.00 MB" in page.content.decode()
    assert Checkpoint.objects.count() == 5


def test_admin_preview_action_is_a_dry_run_of_the_service(
    services_db: str, admin_role_client: Client, spy: list[dict[str, Any]]
) -> None:
    make_run(checkpoints=5)
    rule = policy("keep-one", keep_last_checkpoints=1)

    messages = admin_action(admin_role_client, "preview_policies", [rule])

    assert messages == ["keep-one: would delete 0 runs, 4 checkpoints, 0.00 MB"]
    assert Checkpoint.objects.count() == 5
    assert [(c["policy"], c["dry_run"]) for c in spy] == [(rule, True)]


def test_admin_apply_action_prunes_through_the_service_and_is_audited(
    services_db: str, admin_role_client: Client, spy: list[dict[str, Any]]
) -> None:
    make_run(checkpoints=5)
    rule = policy("keep-one", keep_last_checkpoints=1, enabled=False)

    messages = admin_action(admin_role_client, "apply_policies", [rule])

    assert messages == ["keep-one: deleted 0 runs, 4 checkpoints, 0.00 MB in 1 batches"]
    assert Checkpoint.objects.count() == 1
    assert [(c["policy"], c.get("dry_run", False)) for c in spy] == [(rule, False)]
    assert AuditEntry.objects.filter(action="prune", actor_name="ada", outcome="ok").count() == 1


# ---------------------------------------------------------------- pruning while runs execute


class PruneLoop:
    """Prunes every enabled policy again and again on its own thread until stopped."""

    def __init__(self) -> None:
        self.stop = threading.Event()
        self.errors: list[str] = []
        self.passes = 0
        self.deleted = 0
        self.thread = threading.Thread(target=self._loop, name="prune-loop", daemon=True)

    def _loop(self) -> None:
        try:
            while not self.stop.is_set():
                try:
                    reports = services.checkpoint_prune(batch_size=5)
                except Exception as exc:  # noqa: BLE001 - any failure at all is a finding
                    self.errors.append(f"{type(exc).__name__}: {exc}")
                    continue
                self.passes += 1
                self.deleted += sum(r.checkpoints for r in reports)
        finally:
            connections.close_all()

    def __enter__(self) -> Self:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        # Stop after one whole pass that began once the work was done, so what the work left
        # (runs cancelled last) has been seen by the loop, however long a pass takes.
        target, deadline = self.passes + 2, time.monotonic() + 60
        while self.passes < target and self.thread.is_alive() and time.monotonic() < deadline:
            time.sleep(0.05)
        self.stop.set()
        self.thread.join(30)


def wait_until_settled() -> None:
    assert embedded.wait_for_background_tasks(60), "runs did not settle within 60 s"


def wait_for_outage_to_end(run: WorkflowRun) -> None:
    """The simulated outage lasts from when the run began executing, which a busy pool may
    delay well past the moment it was started; the run's own checkpoint says when."""
    assert run.latest_checkpoint_id is not None
    state = DjangoCheckpointStorage().load_sync(run.latest_checkpoint_id).state
    ends = state["started_at"] + dt.timedelta(seconds=run.input["outage_seconds"])
    time.sleep(max(0.0, (ends - timezone.now()).total_seconds() + 0.05))


def pending_request(run: WorkflowRun) -> ApprovalRequest:
    return ApprovalRequest.objects.get(run=run, status=ApprovalStatus.PENDING)


RUNS = 16


@pytest.mark.timeout(180)
def test_pruning_in_a_loop_never_breaks_a_run_a_resume_or_an_approval(
    services_transactional_db: str, role_user: Callable[..., Any], caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING)
    operator, approver = role_user("olga", "Operator"), role_user("abe", "Approver")
    policy("completed", keep_last_checkpoints=1, delete_checkpoints_older_than_days=0)
    policy("failed", status="failed", keep_last_checkpoints=1, delete_checkpoints_older_than_days=0)
    policy("cancelled", status="cancelled", delete_runs_older_than_days=0)

    def start(name: str, **data: Any) -> WorkflowRun:
        return services.run_start(workflow_name=name, input={**data, "work_ms": 0}, user=operator)

    def decide_pending(
        runs: list[WorkflowRun], approve: Callable[[int], bool], discount: int
    ) -> None:
        for i, run in enumerate(runs):
            services.approval_decide(
                pending_request(run).request_id,
                user=approver,
                approved=approve(i),
                response={"discount_percent": discount},
                reason="checked",
            )

    with PruneLoop() as pruner:
        returns = [start("return-replace", order_id=f"ORD-{i}") for i in range(RUNS)]
        squares = [start("squares", limit=12) for _ in range(4)]
        # Failing at step 3 needs step 3 within the outage, which a busy machine stretches.
        outage = seconds(1.0)
        failing = [
            start("fail-at-step", steps=6, fail_at=3, outage_seconds=outage) for _ in range(2)
        ]
        doomed = [start("return-replace", order_id=f"DOOMED-{i}") for i in range(3)]
        wait_until_settled()
        # Paused runs resumed from the checkpoint they wait in (a new branch raises a new
        # request), and forked from it (the fork waits for a decision of its own).
        for run in returns[:4]:
            services.run_resume(
                run.pk,
                checkpoint_id=pending_request(run).checkpoint_id,
                user=operator,
                reason="once more",
            )
        forks = [
            services.run_fork(
                run.pk,
                checkpoint_id=pending_request(run).checkpoint_id,
                user=operator,
                reason="a copy",
            )
            for run in returns[4:7]
        ]
        wait_until_settled()
        decide_pending(returns, approve=lambda i: i % 2 == 0, discount=10)
        decide_pending(forks, approve=lambda i: True, discount=50)
        for run in doomed:
            services.run_cancel(run.pk, user=operator, reason="not needed")
        for run in failing:
            run.refresh_from_db()
            assert run.status == RunStatus.FAILED
            wait_for_outage_to_end(run)
            services.run_retry(run.pk, user=operator, reason="once more")
        wait_until_settled()
        passes_during_work = pruner.passes

    assert pruner.errors == []
    assert passes_during_work >= 3, "the prune loop hardly ran while runs executed"
    assert [r.getMessage() for r in caplog.records if r.levelno >= logging.ERROR] == []
    for i, run in enumerate(returns):
        run.refresh_from_db()
        assert run.status == RunStatus.COMPLETED, (run.status, run.error_message)
        expected = (
            ("replacement approved", 10) if i % 2 == 0 else ("replacement rejected; refund only", 0)
        )
        assert (run.output["outcome"], run.output["discount_percent"]) == expected
    for fork in forks:
        fork.refresh_from_db()
        assert fork.status == RunStatus.COMPLETED, (fork.status, fork.error_message)
        assert (fork.output["outcome"], fork.output["discount_percent"]) == (
            "replacement approved",
            50,
        )
    for run in [*squares, *failing]:
        run.refresh_from_db()
        assert run.status == RunStatus.COMPLETED, (run.status, run.error_message)
    assert [WorkflowRun.objects.get(pk=r.pk).output for r in failing] == [
        {"counted": [1, 2, 3, 4, 5, 6]}
    ] * 2
    assert not WorkflowRun.objects.filter(pk__in=[r.pk for r in doomed]).exists()
    assert AuditEntry.objects.filter(action="run_pruned").count() == 3
    assert not ApprovalRequest.objects.filter(status=ApprovalStatus.PENDING).exists()

    # What is left decodes (no blob went missing under a checkpoint) ...
    storage = DjangoCheckpointStorage()
    for checkpoint_id in Checkpoint.objects.values_list("pk", flat=True):
        storage.load_sync(checkpoint_id)
    # ... and, after one more pass, is exactly the protected set.
    services.checkpoint_prune()
    for run in WorkflowRun.objects.all():
        protected = {
            run.latest_checkpoint_id,
            *run.approval_requests.values_list("checkpoint_id", flat=True),
        }
        protected |= set(run.children.values_list("origin_checkpoint_id", flat=True))
        newest = Checkpoint.objects.filter(run=run).order_by("-created_at").first()
        assert newest is not None
        assert set(checkpoints_of(run)) == protected | {newest.pk}, run.workflow_name
    assert pruner.deleted > 0


def test_a_fork_still_saves_after_another_process_pruned_blobs_this_one_remembers(
    services_transactional_db: str, role_user: Callable[..., Any]
) -> None:
    # Each process remembers which blobs it has stored (so it does not send them again). A
    # prune in another process (a Celery worker, the beat schedule) cannot tell it which of
    # them it deleted; simulated here by deleting rows without telling this process.
    operator = role_user("olga", "Operator")
    run = services.run_start(workflow_name="return-replace", input={"work_ms": 0}, user=operator)
    wait_until_settled()
    checkpoint_id = pending_request(run).checkpoint_id
    edited = DjangoCheckpointStorage().load_sync(checkpoint_id).to_dict()["state"]
    edited["operator_memo"] = "a value large enough to be stored as a blob " * 20
    first = services.run_fork(
        run.pk, checkpoint_id=checkpoint_id, state=edited, user=operator, reason="edited"
    )
    wait_until_settled()
    WorkflowRun.objects.filter(pk=first.pk).delete()
    with transaction.atomic():  # what another process's retention pass does
        release_uses_of_gone_lineages(limit=1000)
        collect_unused_blobs(limit=1000)

    second = services.run_fork(
        run.pk, checkpoint_id=checkpoint_id, state=edited, user=operator, reason="edited"
    )
    wait_until_settled()

    for checkpoint in Checkpoint.objects.filter(run=second):
        assert (
            DjangoCheckpointStorage().load_sync(checkpoint.pk).state["operator_memo"]
            == edited["operator_memo"]
        )
