"""Writing checkpoints to the database: the one statement per save on PostgreSQL, the ORM
path on SQLite, and the process-wide memory of blobs already stored.

A checkpoint row holds the record; sizeable values live once in ``CheckpointBlob`` rows, and a
``CheckpointBlobUse`` row says a lineage refers to a blob: written at the lineage's first
reference, only locked by later saves (``blob_uses`` says how retention lets go of them).
``save_split`` is the one write path: the storage, the worker's commits and forks all use it.
"""

from __future__ import annotations

import datetime as dt
import functools
import threading
import uuid
from collections import OrderedDict
from collections.abc import Callable
from typing import Any

from django.db import connections, transaction
from django.db.backends.utils import CursorWrapper

from dashboard.checkpoints.async_connection import AsyncDatabase
from dashboard.models import Checkpoint, CheckpointBlob, CheckpointBlobUse
from workflows.storage import SplitCheckpoint, loads

__all__ = ["forget_known_blobs", "is_known_blob", "save_split", "save_split_async"]


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


def is_known_blob(digest: str) -> bool:
    """This process stored ``digest`` (so a save will not send it again)."""
    return digest in _known


def forget_known_blobs(digests: list[str]) -> None:
    """Retention deleted these blobs; a later save must insert them again."""
    for digest in digests:
        _known.discard(digest)


# The columns a save sends (``on_hold`` starts false); a re-save of the same id replaces all
# of them but the id.
_COLUMNS = (
    "checkpoint_id", "run_id", "engine_run_id", "workflow_name", "superstep",
    "previous_checkpoint_id", "graph_signature_hash", "document", "size_bytes",
    "pending_request_count", "created_at",
)
_REPLACED = _COLUMNS[1:]
# SQLite's bulk_create names fields, not columns.
_UPSERT_FIELDS = ["run" if c == "run_id" else c for c in _REPLACED]


# Up to this many blob uses are sent as literal rows (one statement text per count); more go
# through unnest. VALUES rows cost the server less than unnesting a parameter.
_USE_ROWS = 16


@functools.cache
def _upsert_statement(new_blobs: bool, uses: int) -> str:
    """The save statement for one shape of checkpoint (built once per shape; the common one, a
    run's unchanged state, refers to a few blobs its lineage already uses and inserts none)."""
    table = Checkpoint._meta.db_table
    updates = ", ".join(f"{c} = EXCLUDED.{c}" for c in _REPLACED)
    placeholders = ", ".join("%s::jsonb" if c == "document" else "%s" for c in _COLUMNS)
    row = (
        f"INSERT INTO {table} ({', '.join(_COLUMNS)}, on_hold) VALUES ({placeholders}, false) "
        f"ON CONFLICT (checkpoint_id) DO UPDATE SET {updates}"
    )
    if not uses:
        return row
    use_table = CheckpointBlobUse._meta.db_table
    # A use the lineage already has is locked, not written (WHERE false updates nothing, but
    # ON CONFLICT DO UPDATE locks the row): retention cannot release it while this save is in
    # flight (see blob_uses). A new one is inserted; its foreign key is checked at commit.
    lock = " ON CONFLICT (engine_run_id, blob_id) DO UPDATE SET blob_id = EXCLUDED.blob_id WHERE false"
    # The uses are read FROM cp so that the checkpoint row is written first, as deleters
    # lock it first (an unreferenced CTE would run after the main statement); and in digest
    # order, the order retention locks uses in.
    cp = f"cp AS ({row} RETURNING 1) "
    if uses <= _USE_ROWS:
        rows = ", ".join(["(%s, %s)"] * uses)
        statement = (
            f"{cp}INSERT INTO {use_table} (engine_run_id, blob_id) "
            f"SELECT v.l, v.d FROM (VALUES {rows}) AS v(l, d), cp ORDER BY v.d{lock}"
        )
    else:
        statement = (
            f"{cp}INSERT INTO {use_table} (engine_run_id, blob_id) "
            # Digests are hex: one comma-joined text parameter is cheaper than an array.
            "SELECT %s, t.d FROM unnest(string_to_array(%s, ',')) AS t(d), cp "
            f"ORDER BY t.d{lock}"
        )
    if new_blobs:
        statement = (
            f"b AS (INSERT INTO {CheckpointBlob._meta.db_table} (digest, data, size_bytes, created_at) "
            "SELECT d, j::jsonb, n, %s FROM unnest(%s::text[], %s::text[], %s::int[]) AS t(d, j, n) "
            "ON CONFLICT DO NOTHING), " + statement
        )
    return "WITH " + statement


def _save_statement(
    values: dict[str, Any], record_text: str, digests: list[str], new_blobs: dict[str, str]
) -> tuple[str, list[Any]]:
    """The save statement and its parameters (``digests``: each once, sorted; ``new_blobs``:
    those of them to insert, digest to JSON text)."""
    params: list[Any] = []
    if new_blobs:
        params += [
            values["created_at"], list(new_blobs), list(new_blobs.values()),
            [len(text) for text in new_blobs.values()],
        ]
    params += [record_text if c == "document" else values[c] for c in _COLUMNS]
    if len(digests) > _USE_ROWS:
        params += [values["engine_run_id"], ",".join(digests)]
    else:
        for digest in digests:
            params += [values["engine_run_id"], digest]
    return _upsert_statement(bool(new_blobs), len(digests)), params


def _row_values(piece: SplitCheckpoint, run_id: uuid.UUID | None) -> dict[str, Any]:
    """The checkpoint row's columns (``document`` is the record; the statement sends its
    already-written JSON text instead)."""
    record = piece.record
    return {
        "checkpoint_id": record["checkpoint_id"],
        "run_id": run_id,
        "engine_run_id": record["run_id"],
        "workflow_name": record["workflow_name"],
        "superstep": record["iteration_count"],
        "previous_checkpoint_id": record.get("previous_checkpoint_id"),
        "graph_signature_hash": record["graph_signature_hash"],
        "document": record,
        "size_bytes": piece.size_bytes,
        "pending_request_count": len(record.get("pending_request_ids", ())),
        "created_at": dt.datetime.fromisoformat(record["timestamp"]),
    }


def _upsert_postgresql(
    values: dict[str, Any], record_text: str, digests: list[str], new_blobs: dict[str, str], using: str
) -> None:
    """New blobs, the checkpoint row and its lineage's blob uses in one statement
    (data-modifying CTEs): one round trip per superstep, atomic even outside a transaction,
    and the JSON goes in as already written instead of being serialized again. (Django's
    foreign keys on PostgreSQL are checked at commit, so a new use may name a blob inserted by
    the same statement.)"""
    with _binding_cursor(using) as cursor:
        cursor.execute(*_save_statement(values, record_text, digests, new_blobs))


async def save_split_async(piece: SplitCheckpoint, database: AsyncDatabase) -> int:
    """``save_split`` for code on an event loop, PostgreSQL only: the same statement, sent on
    ``database``'s connection for this loop and committed by itself (no thread hop). Returns
    the bytes of JSON it sent (the record and the blobs not known to be stored).

    Raises:
        django.db.IntegrityError: a blob this process remembered storing is gone (retention
            deleted it); ``forget_known_blobs(piece.refs)`` and save again.
    """
    digests = sorted(set(piece.refs))
    new_blobs = {d: piece.blobs[d] for d in digests if d not in _known}
    await database.execute(
        *_save_statement(_row_values(piece, None), piece.record_text, digests, new_blobs)
    )
    for digest in new_blobs:
        _known.add(digest)
    return len(piece.record_text) + sum(len(text) for text in new_blobs.values())


def _binding_cursor(using: str) -> CursorWrapper:
    """A Django cursor (error wrapping, query logging) over a server-side binding psycopg
    cursor, so psycopg prepares the statement (``prepare_threshold`` in the database
    OPTIONS, set by ``settings.database_from_url``). Django's own cursors bind client-side:
    PostgreSQL would parse and plan the save statement again on every superstep, a third of
    its cost on a small checkpoint."""
    from django.db.backends.postgresql.base import ServerBindingCursor

    db = connections[using]
    db.close_if_health_check_failed()
    db.ensure_connection()
    db.validate_thread_sharing()
    with db.wrap_database_errors:
        # django-stubs declares neither psycopg's cursor constructor nor that make_cursor
        # takes a DB-API cursor.
        cursor = ServerBindingCursor(db.connection)  # type: ignore[call-arg]
    wrap = db.make_debug_cursor if db.queries_logged else db.make_cursor
    return wrap(cursor)  # type: ignore[arg-type]


def save_split(
    piece: SplitCheckpoint,
    *,
    using: str = "default",
    run_id: uuid.UUID | None = None,
    after: Callable[[Checkpoint], None] | None = None,
    trust_known_blobs: bool = True,
) -> Checkpoint:
    """Write one split checkpoint (blobs, row, blob uses); call inside ``transaction.atomic``.

    ``after`` runs in the same transaction with the new row (services use it to update the run,
    write events and open approval requests atomically with the checkpoint).
    ``trust_known_blobs=False`` sends every blob (existing rows are left alone) instead of
    skipping those this process remembers storing, which retention in another process may have
    deleted since: for callers that do not retry on ``IntegrityError`` (a fork).
    """
    # Sorted, like every lock in checkpoint writes: two first saves of one value cannot wait
    # on each other's half-written blob rows.
    new_digests = sorted({d for d in piece.refs if not trust_known_blobs or d not in _known})
    postgres = connections[using].vendor == "postgresql"
    if new_digests and not postgres:
        CheckpointBlob.objects.using(using).bulk_create(
            [
                CheckpointBlob(digest=d, data=loads(piece.blobs[d]), size_bytes=len(piece.blobs[d]))
                for d in new_digests
            ],
            ignore_conflicts=True,
        )
    values = _row_values(piece, run_id)
    row = Checkpoint(**values)
    # One upsert instead of delete-then-insert: the engine never saves an id twice, so paying
    # for a delete (and its cascade lookups) on every superstep would be waste. A re-save of the
    # same id replaces the row; a use it no longer needs goes when retention next looks.
    digests = sorted(set(piece.refs))
    if postgres:
        _upsert_postgresql(values, piece.record_text, digests, {d: piece.blobs[d] for d in new_digests}, using)
    else:
        # SQLite runs one writer at a time: nothing can release a use between these statements.
        Checkpoint.objects.using(using).bulk_create(
            [row], update_conflicts=True, unique_fields=["checkpoint_id"], update_fields=_UPSERT_FIELDS
        )
        if digests:
            CheckpointBlobUse.objects.using(using).bulk_create(
                [CheckpointBlobUse(engine_run_id=values["engine_run_id"], blob_id=d) for d in digests],
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
