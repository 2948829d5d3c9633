"""Which checkpoints a retention policy deletes: the database's side of the engine's rules.

The rules are ``workflows.storage.retention``'s, the ones the engine's own ``prune`` follows;
this module gathers from the database the facts they decide on (each run's newest and current
checkpoint, pending requests, approvals raised, fork origins, holds) and asks them. SQL narrows
a run's candidates to what ``delete_before`` bounds (a superset of what the rules delete), never
to a rule of its own. ``retention`` plans batches with ``run_candidates`` and, under
the run locks, decides again with ``checkpoint_decisions`` on what the rows say then.
"""

from __future__ import annotations

import datetime as dt
import uuid
from collections.abc import Iterator
from typing import NamedTuple

from dashboard.models import ApprovalRequest, Checkpoint, RetentionPolicy, WorkflowRun
from workflows.storage import (
    CheckpointFacts,
    Decision,
    RetentionRules,
    RunHorizon,
    decide_one,
    delete_before,
)

__all__ = [
    "CANDIDATE_FIELDS",
    "PruneCandidate",
    "checkpoint_decisions",
    "retention_rules",
    "run_candidates",
    "run_horizon",
]


class PruneCandidate(NamedTuple):
    """A checkpoint as the rules and a prune report need it, with its run's horizon as it was
    when the candidate was found: a run resumed since gains only checkpoints newer than all it
    had, which moves its old ones further from its newest, never closer."""

    checkpoint_id: str
    run_id: uuid.UUID
    created_at: dt.datetime
    pending_request_count: int
    on_hold: bool
    size_bytes: int
    engine_run_id: str
    horizon: RunHorizon


CANDIDATE_FIELDS = (
    "pk",
    "run_id",
    "created_at",
    "pending_request_count",
    "on_hold",
    "size_bytes",
    "engine_run_id",
)


def retention_rules(policy: RetentionPolicy, *, at: dt.datetime) -> RetentionRules:
    """The engine's rules for what ``policy`` says about checkpoints, its ages counted back
    from ``at``."""
    days = policy.delete_checkpoints_older_than_days
    return RetentionRules.of(
        keep_last=policy.keep_last_checkpoints,
        older_than=None if days is None else dt.timedelta(days=days),
        now=at,
    )


def run_horizon(run_id: uuid.UUID, rules: RetentionRules) -> RunHorizon | None:
    """``RunHorizon.of`` the run's checkpoint times, read with one or two index-ordered rows;
    None for a run without checkpoints."""
    newest_first = (
        Checkpoint.objects.filter(run_id=run_id)
        .order_by("-created_at")
        .values_list("created_at", flat=True)
    )
    newest = newest_first.first()
    if newest is None:
        return None
    kth = None
    if rules.keep_last:
        kth = next(iter(newest_first[rules.keep_last - 1 : rules.keep_last]), None)
    return RunHorizon(newest=newest, kth_newest=kth)


def checkpoint_decisions(
    rows: list[PruneCandidate], current: dict[uuid.UUID, str | None], rules: RetentionRules
) -> list[tuple[PruneCandidate, Decision]]:
    """The rules' verdict on each row, from what the database knows about it now."""
    ids = [row.checkpoint_id for row in rows]
    approvals = set(
        ApprovalRequest.objects.filter(checkpoint_id__in=ids).values_list(
            "checkpoint_id", flat=True
        )
    )
    forks = set(
        WorkflowRun.objects.filter(
            parent_run_id__in={row.run_id for row in rows}, origin_checkpoint_id__in=ids
        ).values_list("origin_checkpoint_id", flat=True)
    )
    return [
        (
            row,
            decide_one(
                CheckpointFacts(
                    checkpoint_id=row.checkpoint_id,
                    run=row.run_id,
                    timestamp=row.created_at,
                    pending_requests=row.pending_request_count > 0,
                    approval=row.checkpoint_id in approvals,
                    fork_origin=row.checkpoint_id in forks,
                    current=row.checkpoint_id == current.get(row.run_id),
                    held=row.on_hold,
                ),
                row.horizon,
                rules,
            ),
        )
        for row in rows
    ]


def run_candidates(run_id: uuid.UUID, rules: RetentionRules, size: int) -> Iterator[PruneCandidate]:
    """The run's checkpoints the rules delete. SQL narrows them to the rows older than
    ``delete_before`` and not on hold (a superset of what the rules delete); the rules decide."""
    horizon = run_horizon(run_id, rules)
    bound = None if horizon is None else delete_before(horizon, rules)
    if horizon is None or bound is None:
        return
    current = {
        run_id: WorkflowRun.objects.filter(pk=run_id)
        .values_list("latest_checkpoint_id", flat=True)
        .first()
    }
    rows = Checkpoint.objects.filter(run_id=run_id, on_hold=False, created_at__lt=bound)
    last: tuple[dt.datetime, str] | None = None
    while True:
        page = rows.order_by("created_at", "pk")
        if last is not None:
            page = page.filter(created_at__gte=last[0]).exclude(created_at=last[0], pk__lte=last[1])
        chunk = [
            PruneCandidate._make((*values, horizon))
            for values in page.values_list(*CANDIDATE_FIELDS)[:size]
        ]
        for row, decision in checkpoint_decisions(chunk, current, rules) if chunk else ():
            if decision.delete:
                yield row
        if len(chunk) < size:
            return
        last = (chunk[-1].created_at, chunk[-1].checkpoint_id)
