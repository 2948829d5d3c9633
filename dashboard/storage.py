"""``DjangoCheckpointStorage``: the engine's checkpoints in the database.

A checkpoint row holds the record (the small part of the document, JSONB on PostgreSQL);
sizeable values live once in ``CheckpointBlob`` rows shared by every checkpoint that refers to
them. It passes the engine's storage contract suite unchanged.

The engine is async and the ORM is sync: each method does its database work in one sync
function run through ``sync_to_async``, one transaction per save. Writes go through
``checkpoint_writes.save_split``, the path every checkpoint write in the dashboard takes.
"""

from __future__ import annotations

import contextlib
from typing import Any

from asgiref.sync import sync_to_async
from django.db import IntegrityError, connections, transaction
from django.db.models import ProtectedError, RestrictedError

from workflows import (
    CheckpointDecodeError,
    CheckpointError,
    CheckpointNotFoundError,
    CheckpointSummary,
    PartCache,
    SplitCheckpoint,
    WorkflowCheckpoint,
    join_checkpoint,
    split_checkpoint,
)

from .checkpoint_writes import forget_known_blobs, is_known_blob, save_split
from .models import Checkpoint, CheckpointBlob

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
        await sync_to_async(self._save_sync)(piece)
        return checkpoint.checkpoint_id

    def _save_sync(self, piece: SplitCheckpoint) -> None:
        written = len(piece.record_text) + sum(
            len(piece.blobs[d]) for d in dict.fromkeys(piece.refs) if not is_known_blob(d)
        )
        # On PostgreSQL a save is one statement, atomic by itself: no BEGIN/COMMIT round trips.
        single = connections[self.using].vendor == "postgresql"
        try:
            with contextlib.nullcontext() if single else transaction.atomic(using=self.using):
                save_split(piece, using=self.using)
        except IntegrityError:
            # A blob this process believed stored was deleted by retention meanwhile.
            forget_known_blobs(piece.refs)
            with transaction.atomic(using=self.using):
                save_split(piece, using=self.using)
        self.bytes_written += written

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
        refs = record.get("blob_refs") if isinstance(record, dict) else None
        digests = [r[1] for r in refs if isinstance(r, list) and len(r) == 2] if isinstance(refs, list) else []
        blobs = dict(
            CheckpointBlob.objects.using(self.using)
            .filter(digest__in=digests)
            .values_list("digest", "data")
        )

        def blob(digest: str) -> Any:
            if digest not in blobs:
                raise CheckpointDecodeError(f"checkpoint blob {digest} is missing")
            return blobs[digest]

        return join_checkpoint(record, blob)

    def _rows(self, workflow_name: str | None, run_id: str | None) -> Any:
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
        """Delete one checkpoint and the blobs no other checkpoint uses.

        Raises:
            CheckpointError: an approval request was raised in this checkpoint (it is kept
                for the audit trail and for resuming).
        """
        if not _could_exist(checkpoint_id):
            return False
        with transaction.atomic(using=self.using):
            rows = Checkpoint.objects.using(self.using).filter(checkpoint_id=checkpoint_id)
            digests = list(rows.values_list("blobs__digest", flat=True))
            try:
                deleted, _ = rows.delete()
            except (ProtectedError, RestrictedError):
                raise CheckpointError(
                    f"checkpoint {checkpoint_id} is kept: an approval request was raised in it"
                ) from None
            orphans = CheckpointBlob.objects.using(self.using).filter(
                digest__in=[d for d in digests if d], checkpoints__isnull=True
            )
            forget_known_blobs(list(orphans.values_list("digest", flat=True)))
            orphans.delete()
        return deleted > 0

