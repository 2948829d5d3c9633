"""``DjangoCheckpointStorage``: the engine's checkpoints in the database.

A checkpoint row holds the record (the small part of the document, JSONB on PostgreSQL);
sizeable values live once in ``CheckpointBlob`` rows shared by every checkpoint that refers to
them. It passes the engine's storage contract suite unchanged.

The engine is async and the ORM is sync: every call does its database work in one sync
function run through ``sync_to_async``. A save is the engine's hot path, once per superstep:
``write`` commits it (on PostgreSQL one statement, one round trip, built by
``checkpoints.writes``, the module every checkpoint write in the dashboard goes through) and
retries once when retention deleted a blob this process remembered; a worker's storage
(``execution.worker``) overrides ``commit`` to write its run's progress in the same statement.
"""

from __future__ import annotations

from typing import Any

from asgiref.sync import sync_to_async
from django.db import IntegrityError, transaction
from django.db.models import ProtectedError, QuerySet, RestrictedError

from dashboard.checkpoints.blob_uses import collect_unused_blobs, ref_digests, release_unused_uses
from dashboard.checkpoints.writes import (
    forget_known_blobs,
    is_known_blob,
    save_split,
    write_transaction,
)
from dashboard.models import Checkpoint, CheckpointBlob
from workflows import (
    CheckpointDecodeError,
    CheckpointError,
    CheckpointNotFoundError,
    WorkflowCheckpoint,
)
from workflows.storage import (
    CheckpointSummary,
    PartCache,
    SplitCheckpoint,
    join_checkpoint,
    loads,
    split_checkpoint,
)

__all__ = ["DjangoCheckpointStorage", "summary_from_row"]


def _could_exist(checkpoint_id: object) -> bool:
    # PostgreSQL refuses NUL in text parameters (DataError): such an id is simply not there.
    return (
        isinstance(checkpoint_id, str)
        and 0 < len(checkpoint_id) <= 128
        and "\x00" not in checkpoint_id
    )


def summary_from_row(values: dict[str, Any]) -> CheckpointSummary:
    return CheckpointSummary(
        checkpoint_id=values["checkpoint_id"],
        workflow_name=values["workflow_name"],
        run_id=values["engine_run_id"],
        timestamp=values["timestamp"],
        iteration_count=values["superstep"],
        previous_checkpoint_id=values["previous_checkpoint_id"],
        graph_signature_hash=values["graph_signature_hash"],
        pending_request_ids=tuple(values.get("pending") or ()),
        answered_request_ids=tuple(values.get("answered") or ()),
        size_bytes=values["size_bytes"],
        kind=str(values.get("kind") or ""),
    )


class DjangoCheckpointStorage:
    """Checkpoints in the Django database (``using`` names the connection alias)."""

    def __init__(self, *, using: str = "default") -> None:
        self.using = using
        self._cache = PartCache()
        self.bytes_written = 0

    # ------------------------------------------------------------------------------------ save

    async def save(self, checkpoint: WorkflowCheckpoint) -> str:
        piece = split_checkpoint(checkpoint, cache=self._cache)
        await sync_to_async(self.write)(checkpoint, piece)
        return checkpoint.checkpoint_id

    def write(self, checkpoint: WorkflowCheckpoint, piece: SplitCheckpoint) -> None:
        """Commit one split checkpoint; the one place a save retries."""
        try:
            self.commit(checkpoint, piece)
        except IntegrityError:
            # A blob this process believed stored was deleted by retention meanwhile.
            forget_known_blobs(piece.refs)
            self.commit(checkpoint, piece)

    def commit(self, checkpoint: WorkflowCheckpoint, piece: SplitCheckpoint) -> None:
        """One transaction (one statement on PostgreSQL) writing ``piece``; what a save adds to
        it (a worker's run progress) is a subclass's. Raises IntegrityError as ``save_split``."""
        self.bytes_written += len(piece.record_text) + sum(
            len(piece.blobs[d]) for d in dict.fromkeys(piece.refs) if not is_known_blob(d)
        )
        with write_transaction(self.using):
            save_split(piece, using=self.using)

    # ------------------------------------------------------------------------------------ read

    async def load(self, checkpoint_id: str) -> WorkflowCheckpoint:
        return await sync_to_async(self.load_sync)(checkpoint_id)

    def load_sync(self, checkpoint_id: str) -> WorkflowCheckpoint:
        if not _could_exist(checkpoint_id):
            raise CheckpointNotFoundError(f"no checkpoint with id {checkpoint_id!r}")
        row = (
            Checkpoint.objects.using(self.using)
            .filter(checkpoint_id=checkpoint_id)
            .values_list("document", flat=True)
            .first()
        )
        if row is None:
            raise CheckpointNotFoundError(f"no checkpoint with id {checkpoint_id!r}")
        return self.decode(row)

    def decode(self, record: dict[str, Any]) -> WorkflowCheckpoint:
        digests = ref_digests(record.get("blob_refs") if isinstance(record, dict) else None)
        blobs = dict(
            CheckpointBlob.objects.using(self.using)
            .filter(digest__in=digests)
            .values_list("digest", "data")
        )

        def blob(digest: str) -> Any:
            if digest not in blobs:
                raise CheckpointDecodeError(f"checkpoint blob {digest} is missing")
            return loads(blobs[digest])  # CheckpointDecodeError when it is not sound JSON

        return join_checkpoint(record, blob)

    def _rows(self, workflow_name: str | None, run_id: str | None) -> QuerySet[Checkpoint]:
        rows = Checkpoint.objects.using(self.using).all()
        if workflow_name is not None:
            rows = rows.filter(workflow_name=workflow_name)
        if run_id is not None:
            rows = rows.filter(engine_run_id=run_id)
        return rows.order_by("created_at", "checkpoint_id")

    async def list_summaries(
        self, *, workflow_name: str | None = None, run_id: str | None = None
    ) -> list[CheckpointSummary]:
        return await sync_to_async(self.list_summaries_sync)(workflow_name, run_id)

    def list_summaries_sync(
        self, workflow_name: str | None = None, run_id: str | None = None
    ) -> list[CheckpointSummary]:
        rows = self._rows(workflow_name, run_id).values(
            "checkpoint_id",
            "workflow_name",
            "engine_run_id",
            "superstep",
            "previous_checkpoint_id",
            "graph_signature_hash",
            "size_bytes",
            "document__timestamp",
            "document__pending_request_ids",
            "document__answered_request_ids",
            "document__metadata__kind",
        )
        return [
            summary_from_row(
                {
                    **values,
                    "timestamp": values["document__timestamp"],
                    "pending": values["document__pending_request_ids"],
                    "answered": values["document__answered_request_ids"],
                    "kind": values["document__metadata__kind"],
                }
            )
            for values in rows
        ]

    async def list_checkpoint_ids(
        self, *, workflow_name: str | None = None, run_id: str | None = None
    ) -> list[str]:
        def ids() -> list[str]:
            return list(self._rows(workflow_name, run_id).values_list("checkpoint_id", flat=True))

        return await sync_to_async(ids)()

    async def list_checkpoints(
        self, *, workflow_name: str | None = None, run_id: str | None = None
    ) -> list[WorkflowCheckpoint]:
        def load_all() -> list[WorkflowCheckpoint]:
            documents = self._rows(workflow_name, run_id).values_list("document", flat=True)
            return [self.decode(doc) for doc in documents]

        return await sync_to_async(load_all)()

    async def get_latest(
        self, *, workflow_name: str | None = None, run_id: str | None = None
    ) -> WorkflowCheckpoint | None:
        def latest() -> WorkflowCheckpoint | None:
            doc = (
                self._rows(workflow_name, run_id)
                .reverse()
                .values_list("document", flat=True)
                .first()
            )
            return None if doc is None else self.decode(doc)

        return await sync_to_async(latest)()

    async def delete(self, checkpoint_id: str) -> bool:
        return await sync_to_async(self.delete_sync)(checkpoint_id)

    def delete_sync(self, checkpoint_id: str) -> bool:
        """Delete one checkpoint, its lineage's uses of blobs no checkpoint of the lineage
        refers to any more, and those blobs when no other lineage uses them.

        Raises:
            CheckpointError: an approval request was raised in this checkpoint (it is kept
                for the audit trail and for resuming).
        """
        if not _could_exist(checkpoint_id):
            return False
        with transaction.atomic(using=self.using):
            rows = Checkpoint.objects.using(self.using).filter(checkpoint_id=checkpoint_id)
            found = rows.values_list("engine_run_id", "document__blob_refs").first()
            if found is None:
                return False
            lineage, refs = found
            try:
                deleted, _ = rows.delete()
            except (ProtectedError, RestrictedError):
                raise CheckpointError(
                    f"checkpoint {checkpoint_id} is kept: an approval request was raised in it"
                ) from None
            released = release_unused_uses([lineage], digests=ref_digests(refs), using=self.using)
            if released:
                collect_unused_blobs(released, limit=len(released), using=self.using)
        return deleted > 0
