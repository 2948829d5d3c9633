"""``prune``: delete old checkpoints without ever breaking a resume or an answer."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from .storage.protocol import CheckpointSummary, SummaryStorage, instant

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

    Never deleted: the newest checkpoint of every run, and any checkpoint holding pending
    requests (someone may still answer from it).

    Args:
        storage: any ``CheckpointStorage``.
        workflow_name, run_id: limit pruning to these checkpoints.
        keep_last: how many of each run's newest checkpoints to keep (at least 1 is always kept).
        older_than: an age (timedelta) or a cutoff time (aware datetime).
        dry_run: report what would be deleted, delete nothing.

    Raises:
        ValueError: neither ``keep_last`` nor ``older_than`` was given, or a bad value.
    """
    if keep_last is None and older_than is None:
        raise ValueError("prune needs keep_last and/or older_than")
    if keep_last is not None and (not isinstance(keep_last, int) or keep_last < 0):
        raise ValueError("keep_last must be a non-negative integer")
    cutoff = _cutoff(older_than)
    runs: dict[str, list[CheckpointSummary]] = {}
    for summary in await _summaries(storage, workflow_name, run_id):
        runs.setdefault(summary.run_id, []).append(summary)
    report = PruneReport(dry_run=dry_run)
    for chain in runs.values():
        chain.sort(key=lambda s: instant(s.timestamp))
        for position, summary in enumerate(chain):
            from_newest = len(chain) - 1 - position
            if from_newest == 0 or summary.pending_request_ids:
                report.protected.append(summary.checkpoint_id)
                continue
            if keep_last is not None and from_newest < keep_last:
                continue
            if cutoff is not None and instant(summary.timestamp) >= cutoff:
                continue
            report.deleted.append(summary.checkpoint_id)
            report.bytes_freed += summary.size_bytes
    if not dry_run:
        report.deleted = [cid for cid in report.deleted if await storage.delete(cid)]
    return report


def _cutoff(older_than: dt.timedelta | dt.datetime | None) -> dt.datetime | None:
    if older_than is None:
        return None
    if isinstance(older_than, dt.timedelta):
        return dt.datetime.now(dt.UTC) - older_than
    if isinstance(older_than, dt.datetime):
        if older_than.tzinfo is None:
            raise ValueError("older_than must be timezone-aware")
        return older_than
    raise ValueError("older_than must be a timedelta or an aware datetime")
