"""Workflow versions: a run records the graph it started on and is never broken silently by a
deploy that changes its workflow.

``spend`` (``versioned_flows``) pauses for a person after its counter ran. Each test starts
runs on one deployment and "deploys" another by changing ``SUPERSTEP_WORKFLOWS``, as a restart
with new code would: the old version kept side by side, replaced by a compatible change, or by
one a paused run cannot continue on.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable, Iterator
from io import StringIO
from pathlib import Path
from typing import Any

import pytest
from django.core.management import call_command
from django.test import override_settings

HERE = Path(__file__).resolve().parents[2] / "helpers"
if str(HERE) not in sys.path:
    sys.path.insert(0, str(HERE))

import versioned_flows as flows  # noqa: E402 - importable by the name its dotted paths use

from dashboard import catalog, services  # noqa: E402
from dashboard.models import (  # noqa: E402
    ApprovalRequest,
    ApprovalStatus,
    AuditEntry,
    Checkpoint,
    RunEvent,
    RunStatus,
    WorkflowRun,
)

pytestmark = pytest.mark.django_db(transaction=True)

Drive = Callable[..., WorkflowRun]


def deploy(*builders: str) -> Any:
    """The deployment registers ``spend`` with these builders, oldest first."""
    return override_settings(SUPERSTEP_WORKFLOWS={"spend": list(builders)})


def version(path: str) -> str:
    module, name = path.rsplit(".", 1)
    return str(getattr(sys.modules[module], name)().graph_signature_hash)


@pytest.fixture
def paused_on_v1(operator_approver_user: Any, drive: Drive) -> Iterator[WorkflowRun]:
    with deploy(flows.V1):
        run = drive(
            services.run_start,
            workflow_name="spend",
            input={"amount": 120},
            user=operator_approver_user,
        )
    assert run.status == RunStatus.WAITING
    yield run


def pending(run: WorkflowRun) -> ApprovalRequest:
    return ApprovalRequest.objects.get(run=run, status=ApprovalStatus.PENDING)


def decide(
    drive: Drive, run: WorkflowRun, approver_user: Any, approved: bool = True
) -> WorkflowRun:
    request = pending(run)
    drive(
        services.approval_decide,
        request.request_id,
        user=approver_user,
        approved=approved,
        response={"approved": approved, "note": ""},
        reason="checked",
    )
    return WorkflowRun.objects.get(pk=run.pk)


def events(run: WorkflowRun, kind: str) -> list[dict[str, Any]]:
    return list(
        RunEvent.objects.filter(run=run, type=kind).order_by("seq").values_list("data", flat=True)
    )


def test_a_run_records_the_version_it_started_on(paused_on_v1: WorkflowRun) -> None:
    assert paused_on_v1.graph_version == version(flows.V1)
    assert {c.graph_signature_hash for c in Checkpoint.objects.filter(run=paused_on_v1)} == {
        version(flows.V1)
    }


def test_versions_side_by_side_old_runs_finish_on_theirs_and_new_runs_start_on_the_newest(
    paused_on_v1: WorkflowRun, operator_approver_user: Any, approver_user: Any, drive: Drive
) -> None:
    with deploy(flows.V1, flows.V3):
        assert list(catalog.versions("spend")) == [version(flows.V1), version(flows.V3)]
        finished = decide(drive, paused_on_v1, approver_user)
        fresh = drive(
            services.run_start,
            workflow_name="spend",
            input={"amount": 5},
            user=operator_approver_user,
        )

    assert finished.status == RunStatus.COMPLETED
    assert finished.output == "120 approved"
    assert finished.graph_version == version(flows.V1)
    assert events(finished, "run_migrated") == []
    assert fresh.graph_version == version(flows.V3)
    assert Checkpoint.objects.filter(run=fresh).values_list(
        "graph_signature_hash", flat=True
    ).distinct().get() == version(flows.V3)


def test_a_compatible_change_continues_the_run_on_the_new_version_and_says_so(
    paused_on_v1: WorkflowRun, approver_user: Any, drive: Drive
) -> None:
    with deploy(flows.V2):
        state = services.version_state(paused_on_v1)
        assert not state.registered and state.can_continue
        finished = decide(drive, paused_on_v1, approver_user)

    assert finished.status == RunStatus.COMPLETED, finished.traceback
    assert finished.output == "120 approved"
    assert finished.graph_version == version(flows.V2)
    (moved,) = events(finished, "run_migrated")
    assert moved["from_version"] == version(flows.V1)
    assert moved["to_version"] == version(flows.V2)
    assert moved["by"] is None and moved["discarded"] == []
    assert "executors added: ['auditor']" in moved["changes"]
    migrated = Checkpoint.objects.get(run=finished, checkpoint_id=moved["checkpoint_id"])
    assert migrated.document["metadata"]["kind"] == "migration"
    assert migrated.previous_checkpoint_id == moved["from_checkpoint_id"]


def test_an_incompatible_change_parks_a_waiting_run_naming_what_changed(
    paused_on_v1: WorkflowRun,
) -> None:
    with deploy(flows.V3):
        services.park_runs_on_removed_versions()
    run = WorkflowRun.objects.get(pk=paused_on_v1.pk)
    assert run.status == RunStatus.NEEDS_MIGRATION
    assert "saved state of executor 'counter'" in run.migration_reason
    assert "DoublingCounter" in run.migration_reason
    assert run.finished_at is None
    assert events(run, "run_status")[-1]["status"] == "needs_migration"
    assert AuditEntry.objects.filter(action="needs_migration", run_id=run.pk).exists()
    # Its request stays open: a decision made now is kept for after the migration.
    assert pending(run).status == ApprovalStatus.PENDING


def test_a_decision_reaching_a_run_the_new_version_cannot_carry_parks_it_instead_of_failing(
    paused_on_v1: WorkflowRun, approver_user: Any, drive: Drive
) -> None:
    with deploy(flows.V3):
        run = decide(drive, paused_on_v1, approver_user)
    assert run.status == RunStatus.NEEDS_MIGRATION
    assert run.error_message == "" and run.lease_owner == ""
    assert run.graph_version == version(flows.V1)


def test_migrating_refuses_to_lose_state_unless_told_and_then_finishes_on_the_new_version(
    paused_on_v1: WorkflowRun, operator_approver_user: Any, approver_user: Any, drive: Drive
) -> None:
    with deploy(flows.V3):
        services.park_runs_on_removed_versions()
        with pytest.raises(services.Conflict, match="saved state of executor 'counter'"):
            services.run_migrate(paused_on_v1.pk, user=operator_approver_user)
        assert WorkflowRun.objects.get(pk=paused_on_v1.pk).status == RunStatus.NEEDS_MIGRATION

        before = pending(paused_on_v1)
        waiting = drive(
            services.run_migrate,
            paused_on_v1.pk,
            discard_unmatched=True,
            user=operator_approver_user,
        )
        # From its latest checkpoint it keeps its lineage: the same request is still open.
        assert waiting.status == RunStatus.WAITING
        assert pending(waiting).pk == before.pk
        finished = decide(drive, waiting, approver_user)

    assert finished.status == RunStatus.COMPLETED, finished.traceback
    assert finished.output == "120 approved"
    assert finished.graph_version == version(flows.V3)
    (moved,) = events(finished, "run_migrated")
    assert moved["by"] == "olga"
    assert moved["discarded"] == [
        (
            "saved state of executor 'counter', now versioned_flows.DoublingCounter "
            "(was versioned_flows.Counter)"
        )
    ]
    entry = AuditEntry.objects.get(action="migrate", run_id=finished.pk)
    assert entry.details["discarded"] == moved["discarded"]
    assert entry.checkpoint_after == moved["checkpoint_id"]


def test_a_decision_made_while_the_run_needed_migration_still_counts_after_it(
    paused_on_v1: WorkflowRun, operator_approver_user: Any, approver_user: Any, drive: Drive
) -> None:
    with deploy(flows.V3):
        parked = decide(drive, paused_on_v1, approver_user, approved=False)
        assert parked.status == RunStatus.NEEDS_MIGRATION
        finished = drive(
            services.run_migrate, parked.pk, discard_unmatched=True, user=operator_approver_user
        )
    assert finished.status == RunStatus.COMPLETED, finished.traceback
    assert finished.output == "120 rejected"


def test_migrating_from_an_earlier_checkpoint_starts_a_branch_that_asks_again(
    paused_on_v1: WorkflowRun, operator_approver_user: Any, drive: Drive
) -> None:
    first = Checkpoint.objects.filter(run=paused_on_v1).order_by("superstep", "created_at").first()
    assert first is not None
    old_request = pending(paused_on_v1)
    with deploy(flows.V3):
        preview = services.migration_preview(paused_on_v1, first.checkpoint_id)
        assert not preview.compatible
        run = drive(
            services.run_migrate,
            paused_on_v1.pk,
            checkpoint_id=first.checkpoint_id,
            discard_unmatched=True,
            user=operator_approver_user,
        )

    assert run.status == RunStatus.WAITING, run.traceback
    assert run.engine_run_id != paused_on_v1.engine_run_id
    assert run.origin_checkpoint_id == first.checkpoint_id
    assert ApprovalRequest.objects.get(pk=old_request.pk).status == ApprovalStatus.CANCELLED
    assert pending(run).engine_run_id == run.engine_run_id


def test_migrate_refuses_what_it_cannot_do_with_a_reason(
    paused_on_v1: WorkflowRun, operator_approver_user: Any, role_user: Callable[..., Any]
) -> None:
    with (
        deploy(flows.V1),
        pytest.raises(services.Conflict, match="already runs on the current version"),
    ):
        services.run_migrate(paused_on_v1.pk, user=operator_approver_user)
    with deploy(flows.V3):
        with pytest.raises(services.Forbidden):
            services.run_migrate(paused_on_v1.pk, user=role_user("vic", "Viewer"))
        with pytest.raises(services.NotFound):
            services.run_migrate(paused_on_v1.pk, checkpoint_id="nope", user=operator_approver_user)
        WorkflowRun.objects.filter(pk=paused_on_v1.pk).update(status=RunStatus.RUNNING)
        with pytest.raises(services.Conflict, match="is running"):
            services.run_migrate(paused_on_v1.pk, user=operator_approver_user)


def test_bulk_migration_moves_what_it_can_and_says_why_it_skipped_the_rest(
    operator_approver_user: Any, drive: Drive
) -> None:
    with deploy(flows.V1):
        old = [
            drive(
                services.run_start,
                workflow_name="spend",
                input={"amount": n},
                user=operator_approver_user,
            )
            for n in (1, 2)
        ]
    with deploy(flows.V3):
        current = drive(
            services.run_start,
            workflow_name="spend",
            input={"amount": 3},
            user=operator_approver_user,
        )
        services.park_runs_on_removed_versions()
        result = services.runs_migrate(
            [str(r.pk) for r in (*old, current)],
            discard_unmatched=True,
            user=operator_approver_user,
        )
    assert sorted(result.migrated) == sorted(str(r.pk) for r in old)
    assert result.skipped == {
        str(
            current.pk
        ): f"run {current.pk} already runs on the current version {version(flows.V3)[:12]}"
    }
    for run in old:
        assert WorkflowRun.objects.get(pk=run.pk).graph_version == version(flows.V3)


def test_resume_from_a_checkpoint_of_a_version_kept_side_by_side_runs_on_that_version(
    paused_on_v1: WorkflowRun, operator_approver_user: Any, drive: Drive
) -> None:
    services.run_cancel(paused_on_v1.pk, user=operator_approver_user, reason="not needed")
    first = Checkpoint.objects.filter(run=paused_on_v1).order_by("superstep", "created_at").first()
    assert first is not None
    with deploy(flows.V1, flows.V3):
        run = drive(
            services.run_resume,
            paused_on_v1.pk,
            checkpoint_id=first.checkpoint_id,
            user=operator_approver_user,
            reason="from the start",
        )
        assert run.status == RunStatus.WAITING and run.graph_version == version(flows.V1)
    with deploy(flows.V3), pytest.raises(services.Conflict, match="no longer registered; migrate"):
        services.run_resume(
            paused_on_v1.pk,
            checkpoint_id=first.checkpoint_id,
            user=operator_approver_user,
            reason="from the start",
        )


def test_manage_workflows_lists_the_versions_kept_beside_the_current_one() -> None:
    out = StringIO()
    with deploy(flows.V1, flows.V3):
        call_command("workflows", stdout=out)
        listed = StringIO()
        call_command("workflows", "--json", stdout=listed)
    text = out.getvalue()
    assert f"signature: {version(flows.V3)}" in text
    assert f"also kept: {version(flows.V1)}  (an earlier version, for its runs)" in text
    (spend,) = [w for w in json.loads(listed.getvalue())["workflows"] if w["name"] == "spend"]
    assert spend["older_versions"] == [version(flows.V1)]
