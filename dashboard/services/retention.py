"""Retention: the one service that prunes checkpoints and runs (admin action, management
command and the periodic job all call ``checkpoint_prune``).

Work happens in short batches: candidates are found run by run with keyset pagination (never a
million ids in memory), and each batch deletes at most ``batch_size`` checkpoints in its own
transaction, after locking the batch's runs, re-checking that they are still finished and
not on hold, and deciding again on what the rows say then.

Which checkpoints of a run go is the engine's rule set (``workflows.storage.retention``), the
one its own ``prune`` follows, asked with the facts ``retention_candidates`` reads
from the database. What is this module's: which runs a policy covers
(its status and workflow pattern, and never a queued, running, waiting or held run) and deleting
old runs whole. What was pruned leaves a trace: a ``checkpoints_pruned`` event on the run's
timeline, and an audit tombstone for a run removed whole.
"""

from __future__ import annotations

import collections
import contextlib
import dataclasses
import datetime as dt
import fnmatch
import functools
import time
import uuid
from collections.abc import Iterator
from typing import Any, Protocol

from django.db import models, transaction
from django.db.models import QuerySet

from dashboard.access import audit, authz
from dashboard.checkpoints.blob_uses import (
    collect_unused_blobs,
    release_unused_uses,
    release_uses_of_gone_lineages,
)
from dashboard.core import run_events
from dashboard.core.errors import NotFound
from dashboard.core.types import Actor
from dashboard.instruments import metrics
from dashboard.models import (
    TERMINAL_RUN_STATUSES,
    AuditEntry,
    Checkpoint,
    RetentionPolicy,
    RunEvent,
    WorkflowRun,
)
from dashboard.services.common import now, record_events
from dashboard.services.retention_candidates import (
    CANDIDATE_FIELDS,
    PruneCandidate,
    checkpoint_decisions,
    retention_rules,
    run_candidates,
)
from workflows.storage import RetentionRules

__all__ = ["PruneReport", "checkpoint_prune", "retention_preview"]

BATCH_SIZE = 1000


@dataclasses.dataclass
class PruneReport:
    """What one policy deleted, or with ``dry_run`` would delete."""

    policy: str
    dry_run: bool
    runs: int = 0
    checkpoints: int = 0
    bytes: int = 0
    batches: int = 0
    longest_transaction_seconds: float = 0.0

    @property
    def megabytes(self) -> float:
        return self.bytes / 1_000_000

    def as_dict(self) -> dict[str, Any]:
        return {**dataclasses.asdict(self), "megabytes": round(self.megabytes, 3)}


def _policies(policy: RetentionPolicy | str | None) -> list[RetentionPolicy]:
    if isinstance(policy, RetentionPolicy):
        return [policy]
    if isinstance(policy, str):
        found = RetentionPolicy.objects.filter(name=policy).first()
        if found is None:
            raise NotFound(f"no retention policy named {policy!r}")
        return [found]
    return list(RetentionPolicy.objects.filter(enabled=True).order_by("name"))


def retention_preview(policy: RetentionPolicy) -> PruneReport:
    """What applying ``policy`` now would delete (counts and bytes), deleting nothing."""
    return _prune_policy(policy, dry_run=True, batch_size=BATCH_SIZE)


def checkpoint_prune(
    *,
    policy: RetentionPolicy | str | None = None,
    dry_run: bool = False,
    user: Actor = None,
    batch_size: int = BATCH_SIZE,
) -> list[PruneReport]:
    """Apply one policy (by object or name) or every enabled one.

    Raises:
        Forbidden: ``user`` may not prune (system calls pass None).
        NotFound: no policy has that name.
    """
    authz.require(user, "prune", target=f"policy {policy or 'all enabled'}")
    reports = []
    for item in _policies(policy):
        report = _prune_policy(item, dry_run=dry_run, batch_size=batch_size)
        if not dry_run:
            audit.record(user, "prune", target=f"policy {item.name}", details=report.as_dict())
        reports.append(report)
    return reports


def _eligible_runs(policy: RetentionPolicy) -> QuerySet[WorkflowRun]:
    names = [
        name
        for name in WorkflowRun.objects.values_list("workflow_name", flat=True).distinct()
        if fnmatch.fnmatchcase(name, policy.workflow_pattern)
    ]
    # Final statuses only, whatever the policy's column says: active runs are protected always.
    return WorkflowRun.objects.filter(
        workflow_name__in=names, status=policy.status, on_hold=False
    ).filter(status__in=TERMINAL_RUN_STATUSES)


def _prune_policy(policy: RetentionPolicy, *, dry_run: bool, batch_size: int) -> PruneReport:
    report = PruneReport(policy=policy.name, dry_run=dry_run)
    runs = _eligible_runs(policy)
    doomed: set[uuid.UUID] = set()
    # Lineages that lost checkpoints: their blob uses are reviewed once, after the batches
    # (per batch, a long lineage would be read again for every thousand checkpoints).
    touched: set[str] = set()
    if policy.delete_runs_older_than_days is not None:
        cutoff = now() - dt.timedelta(days=policy.delete_runs_older_than_days)
        for run_id in _keyset(runs.filter(finished_at__lt=cutoff), batch_size):
            if _removable_whole(run_id):
                doomed.add(run_id)
                if dry_run:
                    report.runs += 1
                    stats = Checkpoint.objects.filter(run_id=run_id).values_list(
                        "size_bytes", flat=True
                    )
                    sizes = list(stats)
                    report.checkpoints += len(sizes)
                    report.bytes += sum(sizes)
                else:
                    _delete_run(run_id, policy, report, batch_size, touched)
    if policy.keep_last_checkpoints is None and policy.delete_checkpoints_older_than_days is None:
        if not dry_run:
            _collect_orphan_blobs(touched, batch_size, report)  # blobs only the deleted runs used
        return report
    rules = retention_rules(policy, at=now())
    batch: list[PruneCandidate] = []
    for run_id in _keyset(runs, batch_size):
        if run_id in doomed:
            continue
        for row in run_candidates(run_id, rules, batch_size):
            batch.append(row)
            if len(batch) >= batch_size:
                _apply(batch, policy, rules, report, dry_run, touched)
                batch = []
    if batch:
        _apply(batch, policy, rules, report, dry_run, touched)
    if not dry_run:
        _collect_orphan_blobs(touched, batch_size, report)
    return report


def _keyset(queryset: QuerySet[WorkflowRun], size: int) -> Iterator[uuid.UUID]:
    """Primary keys of a queryset, fetched ``size`` at a time in key order."""
    last = None
    while True:
        page = queryset.order_by("pk")
        if last is not None:
            page = page.filter(pk__gt=last)
        keys = list(page.values_list("pk", flat=True)[:size])
        yield from keys
        if len(keys) < size:
            return
        last = keys[-1]


def _removable_whole(run_id: uuid.UUID) -> bool:
    """A run with a live fork, or a held checkpoint, is kept whole."""
    return not (
        WorkflowRun.objects.filter(parent_run_id=run_id).exists()
        or Checkpoint.objects.filter(run_id=run_id, on_hold=True).exists()
    )


def _apply(
    batch: list[PruneCandidate],
    policy: RetentionPolicy,
    rules: RetentionRules,
    report: PruneReport,
    dry_run: bool,
    touched: set[str],
) -> None:
    if dry_run:
        report.checkpoints += len(batch)
        report.bytes += sum(row.size_bytes for row in batch)
        return
    with _timed_transaction(report):
        run_ids = sorted({row.run_id for row in batch})
        # Lock the runs (in key order, like every other locker) and decide again on what the
        # rows say now: a run resumed, retried, forked or put on hold since the batch was
        # planned keeps what that made it need.
        still = {
            run.pk: run
            for run in WorkflowRun.objects.select_for_update()
            .filter(pk__in=run_ids, status=policy.status, on_hold=False)
            .order_by("pk")
        }
        horizons = {row.run_id: row.horizon for row in batch}
        fresh = [
            PruneCandidate._make((*values, horizons[values[1]]))
            for values in Checkpoint.objects.filter(
                pk__in=[row.checkpoint_id for row in batch if row.run_id in still]
            ).values_list(*CANDIDATE_FIELDS)
        ]
        current = {pk: run.latest_checkpoint_id for pk, run in still.items()}
        doomed = [
            row for row, decision in checkpoint_decisions(fresh, current, rules) if decision.delete
        ]
        Checkpoint.objects.filter(pk__in=[row.checkpoint_id for row in doomed]).delete()
        touched.update(row.engine_run_id for row in doomed)
        per_run = collections.Counter(row.run_id for row in doomed)
        for run_id, count in per_run.items():
            record_events(
                still[run_id],
                [run_events.checkpoints_pruned(count, policy.name, now().isoformat())],
            )
        size = sum(row.size_bytes for row in doomed)
        report.checkpoints += len(doomed)
        report.bytes += size
    report.batches += 1
    _count_pruned(policy, checkpoints=len(doomed), size_bytes=size)


def _delete_run(
    run_id: uuid.UUID,
    policy: RetentionPolicy,
    report: PruneReport,
    batch_size: int,
    touched: set[str],
) -> None:
    """Delete a whole run in short transactions, leaving an audit tombstone."""
    run = WorkflowRun.objects.filter(pk=run_id).first()
    if run is None:
        return
    total = Checkpoint.objects.filter(run_id=run_id).count()
    size = sum(Checkpoint.objects.filter(run_id=run_id).values_list("size_bytes", flat=True))
    # Its lineages' blob uses are reviewed after the pass (a superset is safe if it stops).
    touched.update(
        Checkpoint.objects.filter(run_id=run_id).values_list("engine_run_id", flat=True).distinct()
    )
    checkpoints = Checkpoint.objects.filter(run_id=run_id).exclude(approval_requests__isnull=False)
    if run.latest_checkpoint_id:
        checkpoints = checkpoints.exclude(pk=run.latest_checkpoint_id)
    rows: QuerySet[RunEvent] | QuerySet[Checkpoint]
    for rows in (RunEvent.objects.filter(run_id=run_id), checkpoints):
        while True:
            with _timed_transaction(report):
                if (
                    not WorkflowRun.objects.select_for_update()
                    .filter(pk=run_id, status=policy.status, on_hold=False)
                    .exists()
                ):
                    return  # resumed or held meanwhile: stop here, what is left stays valid
                deleted = _delete_first(rows, batch_size)
            report.batches += 1
            if deleted < batch_size:
                break
    with _timed_transaction(report):
        locked = (
            WorkflowRun.objects.select_for_update()
            .filter(pk=run_id, status=policy.status, on_hold=False)
            .first()
        )
        if locked is None:
            return
        audit.record(
            None,
            "run_pruned",
            run=locked,
            outcome=AuditEntry.OK,
            target=f"run {run_id}",
            details={
                "policy": policy.name,
                "status": locked.status,
                "checkpoints": total,
                "bytes": size,
                "created_at": locked.created_at.isoformat(),
                "finished_at": locked.finished_at.isoformat() if locked.finished_at else None,
            },
        )
        locked.delete()
    report.runs += 1
    report.checkpoints += total
    report.bytes += size
    _count_pruned(policy, checkpoints=total, runs=1, size_bytes=size)


def _count_pruned(policy: RetentionPolicy, **deleted: int) -> None:
    # Once committed: a prune run inside a caller's transaction counts only if that commits.
    transaction.on_commit(functools.partial(metrics.pruned, policy.name, **deleted), robust=True)


def _delete_first[M: models.Model](rows: QuerySet[M], size: int) -> int:
    """Delete the first ``size`` of ``rows`` by key; returns how many that was."""
    keys = list(rows.values_list("pk", flat=True)[:size])
    rows.model._default_manager.filter(pk__in=keys).delete()
    return len(keys)


# Lineages whose uses one transaction reviews (each reads its surviving checkpoints' refs).
LINEAGES_PER_TRANSACTION = 20


def _collect_orphan_blobs(touched: set[str], batch_size: int, report: PruneReport) -> None:
    """Uses the touched lineages no longer need, uses of lineages deleted whole (here or by
    hand), then blobs no lineage uses; each step in short, timed transactions."""
    lineages = sorted(touched)
    for start in range(0, len(lineages), LINEAGES_PER_TRANSACTION):
        with _timed_transaction(report):
            release_unused_uses(lineages[start : start + LINEAGES_PER_TRANSACTION])
    _sweep_all(release_uses_of_gone_lineages, batch_size, report)
    _sweep_all(collect_unused_blobs, batch_size, report)


class _Sweep[K](Protocol):
    """Looks at up to ``limit`` rows past the key ``after``: how many it looked at, and the
    key to go on from."""

    def __call__(self, *, limit: int, after: K | None) -> tuple[int, K | None]: ...


def _sweep_all[K](sweep: _Sweep[K], batch_size: int, report: PruneReport) -> None:
    after: K | None = None
    while True:
        with _timed_transaction(report):
            looked_at, after = sweep(limit=batch_size, after=after)
        if looked_at < batch_size:
            return


@contextlib.contextmanager
def _timed_transaction(report: PruneReport) -> Iterator[None]:
    """One retention transaction; the report keeps the longest (each must stay short)."""
    started = time.perf_counter()
    try:
        with transaction.atomic():
            yield
    finally:
        report.longest_transaction_seconds = max(
            report.longest_transaction_seconds, time.perf_counter() - started
        )
