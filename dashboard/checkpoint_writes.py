"""Writing checkpoints to the database: the one statement per save on PostgreSQL, the ORM
path on SQLite, and the process-wide memory of blobs already stored.

A checkpoint row holds the record; sizeable values live once in ``CheckpointBlob`` rows, and
link rows say which checkpoint refers to which blob (retention deletes blobs nobody links).
``save_split`` is the one write path: the storage, the worker's commits and forks all use it.
"""

from __future__ import annotations

import datetime as dt
import functools
import threading
from collections import OrderedDict
from collections.abc import Callable
from typing import Any

from django.db import connections, transaction

from workflows import SplitCheckpoint, loads

from .models import Checkpoint, CheckpointBlob

__all__ = ["forget_known_blobs", "is_known_blob", "save_split"]


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
