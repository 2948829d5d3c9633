"""The retention page's reads: every policy with its last real run, and the runs on hold with
who put them there and when. Each is one query whatever the number of rows (the audit entries
are correlated subqueries, served by the ``audit_action_created`` and ``audit_run_created``
indexes)."""

from __future__ import annotations

import dataclasses
import datetime as dt

from django.db.models import CharField, OuterRef, Subquery, Value
from django.db.models.functions import Concat

from dashboard.models import AuditEntry, RetentionPolicy, WorkflowRun

__all__ = ["HELD_RUNS_LIMIT", "HeldRun", "PolicyRow", "held_runs", "policy_get", "policy_rows"]

HELD_RUNS_LIMIT = 200


@dataclasses.dataclass(frozen=True)
class PolicyRow:
    """A policy and the audit entry of its last real run (None: never applied)."""

    policy: RetentionPolicy
    last_run: AuditEntry | None


def policy_rows() -> list[PolicyRow]:
    """Every policy by name, with its last applied run (from the ``prune`` audit entries the
    retention service writes, whoever ran it: an admin, the command or the periodic job)."""
    last = (
        AuditEntry.objects.filter(
            action="prune",
            outcome=AuditEntry.OK,
            target=Concat(Value("policy "), OuterRef("name"), output_field=CharField()),
        )
        .order_by("-created_at", "-id")
        .values("id")[:1]
    )
    policies = list(RetentionPolicy.objects.annotate(last_run_id=Subquery(last)).order_by("name"))
    ids = [p.last_run_id for p in policies if p.last_run_id is not None]
    entries = AuditEntry.objects.in_bulk(ids) if ids else {}
    return [PolicyRow(policy, entries.get(policy.last_run_id)) for policy in policies]


def policy_get(policy_id: int) -> RetentionPolicy | None:
    """The policy, or None (also for an id beyond any key: the databases refuse to compare)."""
    if not 0 < policy_id < 2**63:
        return None
    return RetentionPolicy.objects.filter(pk=policy_id).first()


@dataclasses.dataclass(frozen=True)
class HeldRun:
    run: WorkflowRun
    held_by: str | None  # None: the hold predates the audit trail, or was set by hand
    held_at: dt.datetime | None


def held_runs(limit: int = HELD_RUNS_LIMIT) -> list[HeldRun]:
    """Runs on legal hold, most recently changed first, with who held each and when (the
    newest ``hold`` entry of the run)."""
    hold = AuditEntry.objects.filter(
        action="hold", outcome=AuditEntry.OK, run_id=OuterRef("pk")
    ).order_by("-created_at", "-id")
    runs = (
        WorkflowRun.objects.filter(on_hold=True)
        .annotate(
            held_by=Subquery(hold.values("actor_name")[:1]),
            held_at=Subquery(hold.values("created_at")[:1]),
        )
        .only("id", "workflow_name", "status", "hold_reason", "created_at", "updated_at")
        .order_by("-updated_at", "-id")[:limit]
    )
    return [HeldRun(run, run.held_by, run.held_at) for run in runs]
