"""The contract every checkpoint storage keeps."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, field
from typing import Protocol, runtime_checkable

from ..checkpoint import WorkflowCheckpoint

__all__ = ["CheckpointStorage", "CheckpointSummary", "SummaryStorage", "instant"]

_EPOCH = dt.datetime.min.replace(tzinfo=dt.UTC)


def instant(timestamp: str) -> dt.datetime:
    """A checkpoint timestamp as an aware datetime, for ordering: ISO texts with different
    offsets do not sort as text (12:00+02:00 is before 11:00+00:00)."""
    try:
        parsed = dt.datetime.fromisoformat(timestamp)
    except (TypeError, ValueError):
        return _EPOCH
    return parsed if parsed.tzinfo is not None else parsed.replace(tzinfo=dt.UTC)


@dataclass(frozen=True)
class CheckpointSummary:
    """What a listing needs to know about a checkpoint, without decoding its payload."""

    checkpoint_id: str
    workflow_name: str
    run_id: str
    timestamp: str
    iteration_count: int
    previous_checkpoint_id: str | None
    graph_signature_hash: str
    pending_request_ids: tuple[str, ...] = ()
    answered_request_ids: tuple[str, ...] = ()
    size_bytes: int = 0
    kind: str = ""
    extra: dict[str, str] = field(default_factory=dict)

    @classmethod
    def of(cls, checkpoint: WorkflowCheckpoint, size_bytes: int = 0) -> CheckpointSummary:
        return cls(
            checkpoint_id=checkpoint.checkpoint_id,
            workflow_name=checkpoint.workflow_name,
            run_id=checkpoint.run_id,
            timestamp=checkpoint.timestamp,
            iteration_count=checkpoint.iteration_count,
            previous_checkpoint_id=checkpoint.previous_checkpoint_id,
            graph_signature_hash=checkpoint.graph_signature_hash,
            pending_request_ids=tuple(checkpoint.pending_request_info_events),
            answered_request_ids=tuple(checkpoint.answered_request_ids),
            size_bytes=size_bytes,
            kind=str(checkpoint.metadata.get("kind", "")),
        )


@runtime_checkable
class CheckpointStorage(Protocol):
    """Where checkpoints live. Every method is async; filters are keyword-only.

    Ownership: ``save`` snapshots the checkpoint as it is at the call (later changes to the object
    do not reach the storage), and every read returns objects the caller owns.
    Ordering: listings are oldest first; "latest" means the greatest timestamp.
    """

    async def save(self, checkpoint: WorkflowCheckpoint) -> str:
        """Store ``checkpoint`` and return its id.

        Raises:
            CheckpointEncodeError: a value in it cannot be stored in a form that restores.
        """
        ...

    async def load(self, checkpoint_id: str) -> WorkflowCheckpoint:
        """Return the checkpoint with this id.

        Raises:
            CheckpointNotFoundError: no checkpoint has this id (also for ids that could never
                exist, such as ones with path separators).
            CheckpointDecodeError: the stored document is malformed or hostile.
        """
        ...

    async def list_checkpoints(
        self, *, workflow_name: str | None = None, run_id: str | None = None
    ) -> list[WorkflowCheckpoint]:
        """Every checkpoint matching the filters, oldest first (no filter: all of them)."""
        ...

    async def list_checkpoint_ids(
        self, *, workflow_name: str | None = None, run_id: str | None = None
    ) -> list[str]:
        """The ids ``list_checkpoints`` would return, without loading the checkpoints."""
        ...

    async def delete(self, checkpoint_id: str) -> bool:
        """Delete the checkpoint; True if it existed. Other checkpoints stay loadable."""
        ...

    async def get_latest(
        self, *, workflow_name: str | None = None, run_id: str | None = None
    ) -> WorkflowCheckpoint | None:
        """The newest matching checkpoint, or None when there is none."""
        ...


@runtime_checkable
class SummaryStorage(CheckpointStorage, Protocol):
    """A storage that can also list checkpoints without decoding them (an optional capability).

    The engine and the dashboard check for it with ``isinstance(storage, SummaryStorage)``:
    refusing an answer given twice and pruning read only the summaries, which a storage of this
    kind serves from an index instead of loading every checkpoint.
    """

    async def list_summaries(
        self, *, workflow_name: str | None = None, run_id: str | None = None
    ) -> list[CheckpointSummary]:
        """Summaries of the checkpoints ``list_checkpoints`` would return, in the same order."""
        ...
