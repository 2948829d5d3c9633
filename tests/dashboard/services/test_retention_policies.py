"""dashboard/services/retention_policies.py: what a policy may say before it is saved, that every
change is audited with what changed, that refusals by role are recorded, and that applying one
is the retention service's own pruning. On SQLite and PostgreSQL (``services_db``)."""

from __future__ import annotations

import datetime as dt
import itertools
import uuid
from collections.abc import Callable
from typing import Any

import pytest
from django.utils import timezone

from dashboard import services
from dashboard.models import AuditEntry, Checkpoint, RetentionPolicy, RunStatus, WorkflowRun
from dashboard.services import PolicySpec

_ids = itertools.count(1)


def finished_run(
    *, checkpoints: int = 4, workflow: str = "squares", size: int = 100
) -> WorkflowRun:
    """A completed run with ``checkpoints`` rows a minute apart; its latest is the newest."""
    now = timezone.now()
    run = WorkflowRun.objects.create(
        workflow_name=workflow,
        status=RunStatus.COMPLETED,
        engine_run_id=uuid.uuid4().hex,
        finished_at=now,
    )
    latest = None
    for step in range(checkpoints):
        latest = Checkpoint.objects.create(
            checkpoint_id=f"rp-{next(_ids):06d}",
            run=run,
            engine_run_id=run.engine_run_id,
            workflow_name=workflow,
            superstep=step,
            graph_signature_hash="sha256:test",
            document={},
            size_bytes=size,
            created_at=now - dt.timedelta(minutes=checkpoints - step),
        )
    run.latest_checkpoint = latest
    run.save()
    return run


def entries(action: str) -> list[AuditEntry]:
    return list(AuditEntry.objects.filter(action=action).order_by("created_at", "id"))


def test_policy_create_saves_the_policy_and_audits_all_of_it(
    services_db: str, admin_role_user: Any
) -> None:
    policy = services.policy_create(
        PolicySpec(name="  keep-2  ", workflow_pattern="squares", keep_last_checkpoints=2),
        user=admin_role_user,
    )

    assert RetentionPolicy.objects.get(pk=policy.pk).name == "keep-2"
    [entry] = entries("policy_change")
    assert entry.actor_name == "ada" and entry.target == "policy keep-2" and entry.outcome == "ok"
    assert entry.details["created"] is True
    assert entry.details["policy"]["keep_last_checkpoints"] == 2


@pytest.mark.parametrize(
    ("spec", "field", "words"),
    [
        (PolicySpec(name="", keep_last_checkpoints=1), "name", "Give the policy a name"),
        (PolicySpec(name="x" * 101, keep_last_checkpoints=1), "name", "At most 100 characters"),
        (PolicySpec(name="bad\ud800", keep_last_checkpoints=1), "name", "lone surrogate"),
        (PolicySpec(name="nul\x00", keep_last_checkpoints=1), "name", "NUL character"),
        (
            PolicySpec(name="p", workflow_pattern=" ", keep_last_checkpoints=1),
            "workflow_pattern",
            "* is every workflow",
        ),
        (
            PolicySpec(name="p", status="running", keep_last_checkpoints=1),
            "status",
            "completed, failed or cancelled",
        ),
        (PolicySpec(name="p", keep_last_checkpoints=0), "keep_last_checkpoints", "Keep at least 1"),
        (
            PolicySpec(name="p", delete_runs_older_than_days=-1),
            "delete_runs_older_than_days",
            "0 or more days",
        ),
        (
            PolicySpec(name="p", delete_checkpoints_older_than_days=10**12),
            "delete_checkpoints_older_than_days",
            "At most 36,500",
        ),
        (PolicySpec(name="p", keep_last_checkpoints=True), "keep_last_checkpoints", "whole number"),
        (PolicySpec(name="p"), "__all__", "at least one rule"),
    ],
)
def test_policy_check_names_the_field_each_refusal_is_about(
    services_db: str, spec: PolicySpec, field: str, words: str
) -> None:
    with pytest.raises(services.InvalidInput) as refused:
        services.policy_check(spec)

    assert words in refused.value.errors[field]
    assert RetentionPolicy.objects.count() == 0


def test_policy_check_refuses_another_policys_name_but_not_the_edited_ones_own(
    services_db: str, admin_role_user: Any
) -> None:
    first = services.policy_create(
        PolicySpec(name="same", keep_last_checkpoints=1), user=admin_role_user
    )

    with pytest.raises(services.InvalidInput) as refused:
        services.policy_check(PolicySpec(name="same", keep_last_checkpoints=3))
    draft = services.policy_check(
        PolicySpec(name="same", keep_last_checkpoints=3), policy_id=first.pk
    )

    assert "exists already" in refused.value.errors["name"]
    assert draft.pk == first.pk and draft.keep_last_checkpoints == 3
    assert RetentionPolicy.objects.get(pk=first.pk).keep_last_checkpoints == 1  # checked, not saved


def test_policy_update_records_each_change_from_what_to_what(
    services_db: str, admin_role_user: Any
) -> None:
    policy = services.policy_create(
        PolicySpec(name="p", keep_last_checkpoints=1), user=admin_role_user
    )

    services.policy_update(
        policy.pk,
        PolicySpec(name="p2", keep_last_checkpoints=5, delete_runs_older_than_days=30),
        user=admin_role_user,
    )

    policy.refresh_from_db()
    assert (policy.name, policy.keep_last_checkpoints, policy.delete_runs_older_than_days) == (
        "p2",
        5,
        30,
    )
    change = entries("policy_change")[-1]
    assert change.target == "policy p2"
    assert change.details["changes"] == {
        "name": ["p", "p2"],
        "keep_last_checkpoints": [1, 5],
        "delete_runs_older_than_days": [None, 30],
    }


def test_policy_update_that_changes_nothing_writes_and_records_nothing(
    services_db: str, admin_role_user: Any
) -> None:
    policy = services.policy_create(
        PolicySpec(name="p", keep_last_checkpoints=1), user=admin_role_user
    )
    updated_at = RetentionPolicy.objects.get(pk=policy.pk).updated_at

    services.policy_update(
        policy.pk, PolicySpec(name="p", keep_last_checkpoints=1), user=admin_role_user
    )

    assert len(entries("policy_change")) == 1
    assert RetentionPolicy.objects.get(pk=policy.pk).updated_at == updated_at


def test_policy_set_enabled_switches_and_refuses_the_state_it_is_in(
    services_db: str, admin_role_user: Any
) -> None:
    policy = services.policy_create(
        PolicySpec(name="p", keep_last_checkpoints=1), user=admin_role_user
    )

    services.policy_set_enabled(policy.pk, enabled=False, user=admin_role_user)
    with pytest.raises(services.Conflict, match="already disabled"):
        services.policy_set_enabled(policy.pk, enabled=False, user=admin_role_user)

    assert RetentionPolicy.objects.get(pk=policy.pk).enabled is False
    assert entries("policy_change")[-1].details["changes"] == {"enabled": [True, False]}


def test_policy_changes_by_other_roles_are_refused_and_recorded_whatever_the_name_holds(
    services_db: str, role_user: Callable[..., Any]
) -> None:
    operator = role_user("otto", "Operator")

    with pytest.raises(services.Forbidden):
        services.policy_create(
            PolicySpec(name="evil\ud800\x00", keep_last_checkpoints=1), user=operator
        )
    with pytest.raises(services.Forbidden):
        services.policy_apply(1, dry_run=True, user=operator)

    assert RetentionPolicy.objects.count() == 0
    refused = [(e.action, e.outcome, e.target) for e in AuditEntry.objects.order_by("id")]
    assert refused == [
        ("policy_change", "denied", "policy evil\\ud800\\u0000 (new)"),
        ("prune", "denied", "policy 1"),
    ]


def test_policy_apply_prunes_through_the_retention_service_and_a_dry_run_deletes_nothing(
    services_db: str,
    admin_role_user: Any,
) -> None:
    run = finished_run(checkpoints=4)
    policy = services.policy_create(
        PolicySpec(name="keep-1", keep_last_checkpoints=1), user=admin_role_user
    )
    preview = services.retention_preview(policy)

    dry = services.policy_apply(policy.pk, dry_run=True, user=admin_role_user)
    assert Checkpoint.objects.filter(run=run).count() == 4
    real = services.policy_apply(policy.pk, dry_run=False, user=admin_role_user)

    assert (dry.checkpoints, dry.bytes) == (preview.checkpoints, preview.bytes) == (3, 300)
    assert (real.checkpoints, real.dry_run) == (3, False)
    assert list(Checkpoint.objects.filter(run=run).values_list("pk", flat=True)) == [
        run.latest_checkpoint_id
    ]
    [prune] = entries("prune")  # the real run only, like checkpoint_prune everywhere
    assert prune.target == "policy keep-1" and prune.details["checkpoints"] == 3


@pytest.mark.parametrize("policy_id", [0, -1, 2**63, 10**30])
def test_policy_ids_no_key_can_have_are_not_found(
    services_db: str, admin_role_user: Any, policy_id: int
) -> None:
    spec = PolicySpec(name="p", keep_last_checkpoints=1)

    with pytest.raises(services.NotFound):
        services.policy_update(policy_id, spec, user=admin_role_user)
    with pytest.raises(services.NotFound):
        services.policy_set_enabled(policy_id, enabled=False, user=admin_role_user)
    with pytest.raises(services.NotFound):
        services.policy_apply(policy_id, dry_run=True, user=admin_role_user)
    assert services.policy_check(spec, policy_id=policy_id).name == "p"
