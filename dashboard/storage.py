"""``DjangoCheckpointStorage``: the engine's checkpoints in the database.

A checkpoint row holds the record (the small part of the document, JSONB on PostgreSQL);
sizeable values live once in ``CheckpointBlob`` rows shared by every checkpoint that refers to
them. It passes the engine's storage contract suite unchanged.

The engine is async and the ORM is sync: each method does its database work in one sync
function run through ``sync_to_async``, one transaction per save.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import functools
import threading
from collections import OrderedDict
from collections.abc import Callable
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
    loads,
    split_checkpoint,
)

from .models import Checkpoint, CheckpointBlob

__all__ = ["DjangoCheckpointStorage", "save_split", "summary_from_row"]


class _KnownDigests:
    """Digests this process has seen stored, so an unchanged 64 KiB value is not even sent to
    the database again. A miss only costs an INSERT ... ON CONFLICT DO NOTHING."""

    def __init__(self, size: int = 4096) -> None:
        self._items: OrderedDict[str, None] = OrderedDict()
        self._size = size
        self._lock = threading.Lock()

    def __contains__(self, digest: str) -> bool:
        with self._lock:
            return digest in self._items

    def add(self, digest: str) -> None:
        with self._lock:
            self._items[digest] = None
            self._items.move_to_end(digest)
            while len(self._items) > self._size:
                self._items.popitem(last=False)

    def discard(self, digest: str) -> None:
        with self._lock:
            self._items.pop(digest, None)


_known = _KnownDigests()


def forget_known_blobs(digests: list[str]) -> None:
    """Retention deleted these blobs; a later save must insert them again."""
    for digest in digests:
        _known.discard(digest)


_UPSERT_FIELDS = [
    "run",
    "engine_run_id",
    "workflow_name",
    "superstep",
    "previous_checkpoint_id",
    "graph_signature_hash",
    "document",
    "size_bytes",
    "pending_request_count",
    "created_at",
]


_COLUMNS = (
    "checkpoint_id", "run_id", "engine_run_id", "workflow_name", "superstep",
    "previous_checkpoint_id", "graph_signature_hash", "document", "size_bytes",
    "pending_request_count", "created_at", "on_hold",
)


# Up to this many blob links are written as literal rows (one statement text per count);
# more go through unnest. VALUES rows cost the server less than unnesting a parameter.
_LINK_ROWS = 16


@functools.cache
def _upsert_statement(new_blobs: bool, links: int) -> str:
    """The save statement for one shape of checkpoint (built once per shape; the common one, a
    run's unchanged state, links a few known blobs and inserts no new blob)."""
    table = Checkpoint._meta.db_table
    updates = ", ".join(
        f"{c} = EXCLUDED.{c}" for c in _COLUMNS if c not in ("checkpoint_id", "on_hold")
    )
    row = (
        f"INSERT INTO {table} ({', '.join(_COLUMNS)}) "
        "VALUES (%s, %s, %s, %s, %s, %s, %s, %s::jsonb, %s, %s, %s, false) "
        f"ON CONFLICT (checkpoint_id) DO UPDATE SET {updates}"
    )
    if not links:
        return row
    link_table = Checkpoint.blobs.through._meta.db_table
    if links <= _LINK_ROWS:
        # Deferred foreign keys: the link may name the row inserted by the same statement.
        rows = ", ".join(["(%s, %s)"] * links)
        statement = (
            f"cp AS ({row}) INSERT INTO {link_table} (checkpoint_id, checkpointblob_id) "
            f"VALUES {rows} ON CONFLICT DO NOTHING"
        )
    else:
        statement = (
            f"cp AS ({row} RETURNING checkpoint_id) "
            f"INSERT INTO {link_table} (checkpoint_id, checkpointblob_id) "
            # Digests are hex: one comma-joined text parameter is cheaper than an array.
            "SELECT cp.checkpoint_id, d FROM cp, unnest(string_to_array(%s, ',')) AS d "
            "ON CONFLICT DO NOTHING"
        )
    if new_blobs:
        statement = (
            f"b AS (INSERT INTO {CheckpointBlob._meta.db_table} (digest, data, size_bytes, created_at) "
            "SELECT d, j::jsonb, n, %s FROM unnest(%s::text[], %s::text[], %s::int[]) AS t(d, j, n) "
            "ON CONFLICT DO NOTHING), " + statement
        )
    return "WITH " + statement


def _upsert_postgresql(
    row: Checkpoint, record_text: str, digests: list[str], new_blobs: dict[str, str], using: str
) -> None:
    """New blobs, the checkpoint row and its blob links in one statement (data-modifying CTEs):
    one round trip per superstep, atomic even outside a transaction, and the JSON goes in as
    already written instead of being serialized again. (Django's foreign keys on PostgreSQL are
    checked at commit, so the links may name blobs inserted by the same statement.)"""
    if not set(new_blobs) <= set(digests):
        raise ValueError("every new blob must be one the checkpoint refers to")
    params: list[Any] = []
    if new_blobs:
        params += [
            row.created_at, list(new_blobs), list(new_blobs.values()),
            [len(text) for text in new_blobs.values()],
        ]
    params += [
        row.checkpoint_id, row.run_id, row.engine_run_id, row.workflow_name, row.superstep,
        row.previous_checkpoint_id, row.graph_signature_hash, record_text, row.size_bytes,
        row.pending_request_count, row.created_at,
    ]
    if len(digests) > _LINK_ROWS:
        params.append(",".join(digests))
    else:
        for digest in digests:
            params += [row.checkpoint_id, digest]
    with connections[using].cursor() as cursor:
        cursor.execute(_upsert_statement(bool(new_blobs), len(digests)), params)


def save_split(
    piece: SplitCheckpoint,
    *,
    using: str = "default",
    run_id: Any = None,
    after: Callable[[Checkpoint], None] | None = None,
    trust_known_blobs: bool = True,
) -> Checkpoint:
    """Write one split checkpoint (blobs, row, blob links); call inside ``transaction.atomic``.

    ``after`` runs in the same transaction with the new row (services use it to update the run,
    write events and open approval requests atomically with the checkpoint).
    ``trust_known_blobs=False`` sends every blob (existing rows are left alone) instead of
    skipping those this process remembers storing, which retention in another process may have
    deleted since: for callers that do not retry on ``IntegrityError`` (a fork).
    """
    record = piece.record
    new_digests = [d for d in dict.fromkeys(piece.refs) if not trust_known_blobs or d not in _known]
    postgres = connections[using].vendor == "postgresql"
    if new_digests and not postgres:
        CheckpointBlob.objects.using(using).bulk_create(
            [
                CheckpointBlob(digest=d, data=loads(piece.blobs[d]), size_bytes=len(piece.blobs[d]))
                for d in new_digests
            ],
            ignore_conflicts=True,
        )
    row = Checkpoint(
        checkpoint_id=record["checkpoint_id"],
        run_id=run_id,
        engine_run_id=record["run_id"],
        workflow_name=record["workflow_name"],
        superstep=record["iteration_count"],
        previous_checkpoint_id=record.get("previous_checkpoint_id"),
        graph_signature_hash=record["graph_signature_hash"],
        document=record,
        size_bytes=piece.size_bytes,
        pending_request_count=len(record.get("pending_request_ids", ())),
        created_at=dt.datetime.fromisoformat(record["timestamp"]),
    )
    # One upsert instead of delete-then-insert: the engine never saves an id twice, so paying
    # for a delete (and its cascade lookups) on every superstep would be waste. A re-save of the
    # same id replaces the row; links to blobs it no longer uses go when the checkpoint goes.
    digests = list(dict.fromkeys(piece.refs))
    if postgres:
        _upsert_postgresql(row, piece.record_text, digests, {d: piece.blobs[d] for d in new_digests}, using)
    else:
        Checkpoint.objects.using(using).bulk_create(
            [row], update_conflicts=True, unique_fields=["checkpoint_id"], update_fields=_UPSERT_FIELDS
        )
        if digests:
            links = Checkpoint.blobs.through
            links.objects.using(using).bulk_create(
                [links(checkpoint_id=row.checkpoint_id, checkpointblob_id=d) for d in digests],
                ignore_conflicts=True,
            )
    row._state.adding, row._state.db = False, using
    if after is not None:
        after(row)

    def remember() -> None:
        for digest in new_digests:
            _known.add(digest)

    transaction.on_commit(remember, using=using)
    return row


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
            len(piece.blobs[d]) for d in dict.fromkeys(piece.refs) if d not in _known
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

