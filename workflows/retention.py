"""``prune``: delete old checkpoints without ever breaking a resume or an answer.

The rules are ``storage.retention``'s, the ones the dashboard's database retention follows too;
this module reads a storage's summaries, turns them into the facts those rules need and deletes
what they let go.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from .storage.protocol import CheckpointSummary, SummaryStorage, instant
from .storage.retention import CheckpointFacts, RetentionRules, decide

if TYPE_CHECKING:
    from .storage.protocol import CheckpointStorage

__all__ = ["PruneReport", "prune"]


@dataclass
class PruneReport:
    """What ``prune`` deleted (or, with ``dry_run``, would delete) and what it had to keep."""

    deleted: list[str] = field(default_factory=list)
    protected: list[str] = field(default_factory=list)
    bytes_freed: int = 0
    dry_run: bool = False


async def _summaries(
    storage: CheckpointStorage, workflow_name: str | None, run_id: str | None
) -> list[CheckpointSummary]:
    if isinstance(storage, SummaryStorage):
        return list(await storage.list_summaries(workflow_name=workflow_name, run_id=run_id))
    checkpoints = await storage.list_checkpoints(workflow_name=workflow_name, run_id=run_id)
    return [CheckpointSummary.of(cp) for cp in checkpoints]


def _fork_origins(summaries: Iterable[CheckpointSummary]) -> set[str]:
    """Checkpoints another run started from: the previous checkpoint of a checkpoint of
    another run (a fork's first checkpoint follows its origin)."""
    listed = list(summaries)
    run_of = {s.checkpoint_id: s.run_id for s in listed}
    return {
        s.previous_checkpoint_id
        for s in listed
        if s.previous_checkpoint_id in run_of and run_of[s.previous_checkpoint_id] != s.run_id
    }


async def prune(
    storage: CheckpointStorage,
    *,
    workflow_name: str | None = None,
    run_id: str | None = None,
    keep_last: int | None = None,
    older_than: dt.timedelta | dt.datetime | None = None,
    dry_run: bool = False,
) -> PruneReport:
    """Delete checkpoints beyond the newest ``keep_last`` of each run and/or older than
    ``older_than`` (both must hold when both are given).

    Never deleted: the newest checkpoint of every run, any checkpoint holding pending
    requests (someone may still answer from it) and any checkpoint a fork started from.

    Args:
        storage: any ``CheckpointStorage``.
        workflow_name, run_id: limit pruning to these checkpoints.
        keep_last: how many of each run's newest checkpoints to keep (at least 1 is always kept).
        older_than: an age (timedelta) or a cutoff time (aware datetime).
        dry_run: report what would be deleted, delete nothing.

    Raises:
        ValueError: neither ``keep_last`` nor ``older_than`` was given, or a bad value.
    """
    rules = RetentionRules.of(keep_last=keep_last, older_than=older_than)
    summaries = await _summaries(storage, workflow_name, run_id)
    # A fork may be of another run than the ones pruned, or (migrated) of another workflow.
    everything = (
        summaries
        if workflow_name is None and run_id is None
        else await _summaries(storage, None, None)
    )
    origins = _fork_origins(everything)
    facts = [
        CheckpointFacts(
            checkpoint_id=s.checkpoint_id,
            run=s.run_id,
            timestamp=instant(s.timestamp),
            pending_requests=bool(s.pending_request_ids),
            fork_origin=s.checkpoint_id in origins,
        )
        for s in summaries
    ]
    sizes = {s.checkpoint_id: s.size_bytes for s in summaries}
    report = PruneReport(dry_run=dry_run)
    for decision in decide(facts, rules):
        if decision.delete:
            report.deleted.append(decision.checkpoint_id)
            report.bytes_freed += sizes[decision.checkpoint_id]
        elif decision.protected:
            report.protected.append(decision.checkpoint_id)
    if not dry_run:
        report.deleted = [cid for cid in report.deleted if await storage.delete(cid)]
    return report
