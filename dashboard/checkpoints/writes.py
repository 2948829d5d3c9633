"""Writing checkpoints to the database: the one statement per save on PostgreSQL, the ORM
path on SQLite, and the process-wide memory of blobs already stored.

A checkpoint row holds the record; sizeable values live once in ``CheckpointBlob`` rows, and a
``CheckpointBlobUse`` row says a lineage refers to a blob: written at the lineage's first
reference, only locked by later saves (``blob_uses`` says how retention lets go of them).
``save_split`` is the one write path: the storage, the worker's commits and forks all use it;
``commit_split`` is its statement with a worker's run progress added (``RunProgress``).
Parameters are scalars (a blob's JSON text one parameter each), the statement prepared once
per shape per connection.
"""

from __future__ import annotations

import contextlib
import dataclasses
import datetime as dt
import functools
import threading
import uuid
from collections import OrderedDict
from collections.abc import Callable
from decimal import Decimal
from typing import Any

from django.db import connections, transaction
from django.db.backends.utils import CursorWrapper

from dashboard.models import (
    Checkpoint,
    CheckpointBlob,
    CheckpointBlobUse,
    RunEvent,
    RunStatus,
    WorkflowRun,
)
from workflows.storage import SplitCheckpoint, instant

__all__ = [
    "RunProgress",
    "commit_split",
    "forget_known_blobs",
    "is_known_blob",
    "save_split",
    "write_transaction",
]


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

    def clear(self) -> None:
        with self._lock:
            self._items.clear()


_known = _KnownDigests()


def is_known_blob(digest: str) -> bool:
    """This process stored ``digest`` (so a save will not send it again)."""
    return digest in _known


def forget_known_blobs(digests: list[str] | None = None) -> None:
    """Retention deleted these blobs (None: every blob, as after switching databases); a later
    save must insert them again."""
    if digests is None:
        _known.clear()
    for digest in digests or ():
        _known.discard(digest)


# The columns a save sends (``on_hold`` starts false); a re-save of the same id replaces all
# of them but the id.
_COLUMNS = (
    "checkpoint_id",
    "run_id",
    "engine_run_id",
    "workflow_name",
    "superstep",
    "previous_checkpoint_id",
    "graph_signature_hash",
    "document",
    "size_bytes",
    "pending_request_count",
    "created_at",
)
_REPLACED = _COLUMNS[1:]
# SQLite's bulk_create names fields, not columns.
_UPSERT_FIELDS = ["run" if c == "run_id" else c for c in _REPLACED]


# Up to this many blob uses are sent as literal rows (one statement text per count); more go
# through unnest. VALUES rows cost the server less than unnesting a parameter.
_USE_ROWS = 16


@dataclasses.dataclass(frozen=True)
class RunProgress:
    """What a worker's superstep changes on its run, written by the checkpoint's own statement
    only while the lease it names is current (``services.checkpoint_commit``).

    ``events`` are the engine's event dicts (with their ``type``), numbered after the run's
    last; ``output`` the JSON text of a new output, None to keep the run's; the tokens and
    cost are the superstep's model calls, added to the run's totals.
    """

    run_id: uuid.UUID
    epoch: int
    owner: str
    lease_expires_at: dt.datetime
    events_json: str
    event_count: int
    output: str | None
    trace_id: str
    stamp: dt.datetime
    input_tokens: int = 0
    output_tokens: int = 0
    cost: Decimal = Decimal(0)


def _run_update() -> str:
    """The fenced update of the run (locks its row first, as ``services.execution.fenced``
    does). Under READ COMMITTED a concurrent takeover's new epoch is re-checked here, so a worker
    that lost its lease matches no row and the statement writes nothing."""
    run = WorkflowRun._meta.db_table
    return (
        f"run AS (UPDATE {run} SET current_superstep = %s, latest_checkpoint_id = %s, "
        "lost_workers = 0, output = COALESCE(%s::jsonb, output), lease_expires_at = %s, "
        "engine_run_id = %s, trace_id = CASE WHEN trace_id = '' THEN %s ELSE trace_id END, "
        "last_event_seq = last_event_seq + %s, updated_at = %s, "
        "input_tokens = input_tokens + %s, output_tokens = output_tokens + %s, cost = cost + %s "
        "WHERE id = %s AND fencing_epoch = %s AND lease_owner = %s "
        f"AND status = '{RunStatus.RUNNING}' "
        "RETURNING id, last_event_seq)"
    )


def _events_insert() -> str:
    events = RunEvent._meta.db_table
    return (
        f"ev AS (INSERT INTO {events} (run_id, seq, type, data, created_at) "
        "SELECT run.id, run.last_event_seq - %s + e.n, left(e.v ->> 'type', 100), e.v - 'type', %s "
        "FROM run, jsonb_array_elements(%s::jsonb) WITH ORDINALITY AS e(v, n))"
    )


@functools.cache
def _upsert_statement(new_blobs: int, uses: int, progress: bool) -> str:
    """The save statement for one shape of checkpoint (built once per shape; the common one, a
    run's unchanged state, refers to a few blobs its lineage already uses and inserts none).
    With ``progress``, every write is made only through the fenced run row (``FROM run``) and
    the statement returns the run's new last event number (no row: the lease was lost)."""
    table = Checkpoint._meta.db_table
    updates = ", ".join(f"{c} = EXCLUDED.{c}" for c in _REPLACED)
    placeholders = ", ".join("%s::jsonb" if c == "document" else "%s" for c in _COLUMNS)
    fenced = ", run" if progress else ""
    ctes = [_run_update()] if progress else []
    if new_blobs:
        # Each blob a scalar text parameter, stored as sent (the column is text: the server
        # does not parse it). In a text[] psycopg escaped every element with a Python regex,
        # ~0.9 ms per 64 KiB.
        rows = ", ".join(["(%s, %s, %s)"] * new_blobs)
        ctes.append(
            f"b AS (INSERT INTO {CheckpointBlob._meta.db_table} "
            "(digest, data, size_bytes, created_at) "
            f"SELECT v.d, v.j, v.n, %s FROM (VALUES {rows}) AS v(d, j, n){fenced} "
            "ON CONFLICT DO NOTHING)"
        )
    ctes.append(
        f"cp AS (INSERT INTO {table} ({', '.join(_COLUMNS)}, on_hold) "
        f"SELECT {placeholders}, false{' FROM run' if progress else ''} "
        f"ON CONFLICT (checkpoint_id) DO UPDATE SET {updates} RETURNING 1)"
    )
    if progress:
        ctes.append(_events_insert())
    if uses:
        use_table = CheckpointBlobUse._meta.db_table
        # A use the lineage already has is locked, not written (WHERE false updates nothing,
        # but ON CONFLICT DO UPDATE locks the row): retention cannot release it while this
        # save is in flight (see blob_uses). A new one is inserted; its foreign key is checked
        # at commit. Read FROM cp so that the checkpoint row is written first, as deleters lock
        # it first; and in digest order, the order retention locks uses in.
        lock = (
            " ON CONFLICT (engine_run_id, blob_id) DO UPDATE SET blob_id = EXCLUDED.blob_id"
            " WHERE false"
        )
        if uses <= _USE_ROWS:
            source = f"(VALUES {', '.join(['(%s, %s)'] * uses)}) AS v(l, d)"
            pick = "v.l, v.d"
        else:
            # Digests are hex: one comma-joined text parameter is cheaper than an array.
            source = "(SELECT %s AS l, unnest(string_to_array(%s, ',')) AS d) AS v"
            pick = "v.l, v.d"
        ctes.append(
            f"u AS (INSERT INTO {use_table} (engine_run_id, blob_id) "
            f"SELECT {pick} FROM {source}, cp ORDER BY v.d{lock})"
        )
    tail = "SELECT run.last_event_seq FROM run" if progress else "SELECT 1"
    return "WITH " + ", ".join(ctes) + " " + tail


def _save_statement(
    values: dict[str, Any],
    record_text: str,
    digests: list[str],
    new_blobs: dict[str, str],
    progress: RunProgress | None = None,
) -> tuple[str, list[Any]]:
    """The save statement and its parameters (``digests``: each once, sorted; ``new_blobs``:
    those of them to insert, digest to JSON text)."""
    params: list[Any] = []
    if progress is not None:
        params += [
            values["superstep"],
            values["checkpoint_id"],
            progress.output,
            progress.lease_expires_at,
            values["engine_run_id"],
            progress.trace_id,
            progress.event_count,
            progress.stamp,
            progress.input_tokens,
            progress.output_tokens,
            progress.cost,
            progress.run_id,
            progress.epoch,
            progress.owner,
        ]
    if new_blobs:
        params.append(values["created_at"])
    for digest, text in new_blobs.items():
        params += [digest, text, len(text)]
    params += [record_text if c == "document" else values[c] for c in _COLUMNS]
    if progress is not None:
        params += [progress.event_count, progress.stamp, progress.events_json]
    if len(digests) > _USE_ROWS:
        params += [values["engine_run_id"], ",".join(digests)]
    else:
        for digest in digests:
            params += [values["engine_run_id"], digest]
    statement = _upsert_statement(len(new_blobs), len(digests), progress is not None)
    return statement, params


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
        # The instant the engine orders and prunes by (no offset means UTC), so retention and
        # "latest" read the same moment from this column as from the record.
        "created_at": instant(record["timestamp"]),
    }


def write_transaction(using: str) -> contextlib.AbstractContextManager[Any]:
    """The transaction a save needs: none for PostgreSQL's one statement in autocommit (it is
    atomic by itself; BEGIN and COMMIT would be two more round trips), a savepoint inside a
    caller's transaction (so a failed save can be retried there), a transaction on SQLite."""
    db = connections[using]
    if db.vendor == "postgresql" and not db.in_atomic_block:
        return contextlib.nullcontext()
    return transaction.atomic(using=using)


def _execute(
    piece: SplitCheckpoint,
    new_digests: list[str],
    using: str,
    run_id: uuid.UUID | None,
    progress: RunProgress | None = None,
) -> Any:
    """New blobs, the checkpoint row, its lineage's blob uses (and the run's progress) in one
    statement (data-modifying CTEs): one round trip, atomic even outside a transaction, the
    JSON sent as already written. (Django's foreign keys on PostgreSQL are checked at commit,
    so a new use may name a blob inserted by the same statement.) Returns its one value."""
    values = _row_values(piece, run_id)
    digests = sorted(set(piece.refs))
    new_blobs = {d: piece.blobs[d] for d in new_digests}
    statement, params = _save_statement(values, piece.record_text, digests, new_blobs, progress)
    with _binding_cursor(using) as cursor:
        cursor.execute(statement, params)
        row = cursor.fetchone()
    return None if row is None else row[0]


def commit_split(
    piece: SplitCheckpoint, progress: RunProgress, *, using: str = "default"
) -> int | None:
    """A worker's superstep on PostgreSQL: ``save_split`` and the run's progress (events,
    lease, latest checkpoint) in one statement, one round trip, one commit. Returns the run's
    last event number after it, or None when the lease was not current (nothing written).

    Raises:
        django.db.IntegrityError: a blob this process remembered storing is gone (retention
            deleted it); ``forget_known_blobs(piece.refs)`` and commit again.
    """
    new_digests = sorted({d for d in piece.refs if d not in _known})
    with write_transaction(using):
        last_seq = _execute(piece, new_digests, using, progress.run_id, progress)
    if last_seq is not None:
        transaction.on_commit(functools.partial(_remember, new_digests), using=using)
    return None if last_seq is None else int(last_seq)


def _remember(digests: list[str]) -> None:
    for digest in digests:
        _known.add(digest)


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
                CheckpointBlob(digest=d, data=piece.blobs[d], size_bytes=len(piece.blobs[d]))
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
        _execute(piece, new_digests, using, run_id)
    else:
        # SQLite runs one writer at a time: nothing can release a use between these statements.
        Checkpoint.objects.using(using).bulk_create(
            [row],
            update_conflicts=True,
            unique_fields=["checkpoint_id"],
            update_fields=_UPSERT_FIELDS,
        )
        if digests:
            CheckpointBlobUse.objects.using(using).bulk_create(
                [
                    CheckpointBlobUse(engine_run_id=values["engine_run_id"], blob_id=d)
                    for d in digests
                ],
                ignore_conflicts=True,
            )
    row._state.adding, row._state.db = False, using
    if after is not None:
        after(row)
    transaction.on_commit(functools.partial(_remember, new_digests), using=using)
    return row
