"""dashboard/checkpoints/storage.py: ``DjangoCheckpointStorage`` on SQLite and on PostgreSQL.

The engine's storage contract runs unchanged on both databases (``TestDjangoStorageContract``
is collected twice, ``[sqlite]`` and ``[postgres]``), then what only this backend promises:
large unchanged state stored once as a shared ``CheckpointBlob``, deletes that drop orphan
blobs but keep shared ones, and checkpoints that an approval was raised in kept for good.

Why ``transactional_db_alias`` (real commits) and not ``db_alias``: every storage method runs
its ORM work through ``sync_to_async``, and with no enclosing ``async_to_sync`` asgiref runs
that on its own single worker thread, i.e. on a *different* database connection from the
test's. Inside pytest-django's per-test transaction the worker thread would neither see the
test's rows nor be rolled back with them. With real commits both sides see the same data and
the database is flushed afterwards. The fixture closes the worker thread's connections at the
end of each test (from that thread), so PostgreSQL can drop the test database at the end.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from asgiref.sync import sync_to_async
from django.db import connections, transaction

from dashboard.checkpoints.storage import DjangoCheckpointStorage
from dashboard.checkpoints.writes import save_split
from dashboard.models import (
    ApprovalRequest,
    Checkpoint,
    CheckpointBlob,
    CheckpointBlobUse,
    WorkflowRun,
)
from workflows import CheckpointError, CheckpointNotFoundError
from workflows.storage import split_checkpoint
from workflows.storage.document import CHANGING_INLINE_LIMIT
from workflows.testing import CheckpointStorageContract, make_checkpoint

BIG = {"payload": "z" * 64 * 1024}


@pytest.fixture
async def storage(transactional_db_alias: str) -> AsyncIterator[DjangoCheckpointStorage]:
    storage = DjangoCheckpointStorage(using=transactional_db_alias)
    yield storage
    await sync_to_async(connections.close_all)()  # runs on the storage's worker thread


class TestDjangoStorageContract(CheckpointStorageContract):
    """The engine's own suite, bound to the module's ``storage`` fixture."""

    @pytest.fixture
    def storage(
        self, storage: DjangoCheckpointStorage, request: pytest.FixtureRequest
    ) -> DjangoCheckpointStorage:
        return storage


def count(model: Any, alias: str, **filters: Any) -> int:
    return int(model.objects.using(alias).filter(**filters).count())


async def test_storage_stores_unchanged_large_state_once_as_a_shared_blob(
    storage: DjangoCheckpointStorage,
) -> None:
    alias = storage.using
    for i in range(5):
        await storage.save(
            make_checkpoint(
                seconds=i,
                iteration_count=i,
                state={"big": BIG, "i": i},
                executor_states={"w": {"big": BIG}},
            )
        )

    blobs = await sync_to_async(count)(CheckpointBlob, alias)
    sizes = await sync_to_async(
        lambda: list(Checkpoint.objects.using(alias).values_list("size_bytes", flat=True))
    )()
    rows = await sync_to_async(
        lambda: [
            len(str(d)) for d in Checkpoint.objects.using(alias).values_list("document", flat=True)
        ]
    )()

    assert blobs == 1  # state and executor state hold equal values: one row for both
    assert len(sizes) == 5 and all(size > 64 * 1024 for size in sizes)  # logical size
    assert max(rows) < 4 * 1024  # each checkpoint row holds a reference, not the 64 KiB


def uses(alias: str) -> list[tuple[str, str]]:
    return sorted(CheckpointBlobUse.objects.using(alias).values_list("engine_run_id", "blob_id"))


@pytest.mark.parametrize("parts", [1, 16, 17, 40])
async def test_a_checkpoint_with_many_large_values_records_each_use_once_per_lineage(
    storage: DjangoCheckpointStorage, parts: int
) -> None:
    # Few uses are sent as literal rows, many through unnest: both must record every blob, on
    # a first save (new blobs) and on a second one (known blobs, one changed key).
    alias = storage.using
    first = {f"k{i}": {"n": i, "pad": "p" * CHANGING_INLINE_LIMIT} for i in range(parts)}
    second = {**first, "k0": {"n": -1, "pad": "q" * CHANGING_INLINE_LIMIT}}
    saved = []
    for seconds, state in enumerate([first, second]):
        checkpoint = make_checkpoint(seconds=seconds, iteration_count=seconds, state=state)
        await storage.save(checkpoint)
        saved.append((checkpoint.checkpoint_id, state))

    for checkpoint_id, state in saved:
        assert (await storage.load(checkpoint_id)).state == state
    lineage = make_checkpoint().run_id
    digests = await sync_to_async(
        lambda: set(CheckpointBlob.objects.using(alias).values_list("digest", flat=True))
    )()
    assert len(digests) == parts + 1
    assert await sync_to_async(uses)(alias) == sorted((lineage, d) for d in digests)


async def test_a_run_whose_large_state_does_not_change_writes_no_use_after_its_first(
    storage: DjangoCheckpointStorage,
) -> None:
    alias = storage.using
    for i in range(4):
        await storage.save(make_checkpoint(seconds=i, iteration_count=i, state={"big": BIG}))

    assert len(await sync_to_async(uses)(alias)) == 1
    assert await sync_to_async(count)(CheckpointBlob, alias) == 1


async def test_deleting_checkpoints_releases_only_the_uses_no_checkpoint_needs(
    storage: DjangoCheckpointStorage,
) -> None:
    # Two lineages share a value; one also had a value of its own, since changed.
    alias = storage.using
    other = {"other": "x" * CHANGING_INLINE_LIMIT}
    a1 = make_checkpoint(seconds=1, run_id="lineage-a", state={"shared": BIG, "own": other})
    a2 = make_checkpoint(seconds=2, run_id="lineage-a", state={"shared": BIG})
    b1 = make_checkpoint(seconds=3, run_id="lineage-b", state={"shared": BIG})
    for checkpoint in (a1, a2, b1):
        await storage.save(checkpoint)
    assert len(await sync_to_async(uses)(alias)) == 3

    await storage.delete(a1.checkpoint_id)  # "own" is used by no checkpoint left

    assert [lineage for lineage, _ in await sync_to_async(uses)(alias)] == [
        "lineage-a",
        "lineage-b",
    ]
    assert await sync_to_async(count)(CheckpointBlob, alias) == 1
    await storage.delete(a2.checkpoint_id)  # lineage-a is gone; lineage-b still uses "shared"
    assert [lineage for lineage, _ in await sync_to_async(uses)(alias)] == ["lineage-b"]
    assert (await storage.load(b1.checkpoint_id)).state == {"shared": BIG}
    await storage.delete(b1.checkpoint_id)
    assert await sync_to_async(uses)(alias) == []
    assert await sync_to_async(count)(CheckpointBlob, alias) == 0


async def test_storage_delete_removes_orphan_blobs_and_keeps_shared_ones(
    storage: DjangoCheckpointStorage,
) -> None:
    alias = storage.using
    own = {"only_first": "o" * 20_000}
    first = make_checkpoint(seconds=1, state={"shared": BIG, "own": own})
    second = make_checkpoint(seconds=2, state={"shared": BIG})
    await storage.save(first)
    await storage.save(second)
    assert await sync_to_async(count)(CheckpointBlob, alias) == 2

    assert await storage.delete(first.checkpoint_id)

    assert await sync_to_async(count)(CheckpointBlob, alias) == 1  # "own" went with first
    assert (await storage.load(second.checkpoint_id)).state["shared"] == BIG
    assert await storage.delete(second.checkpoint_id)
    assert await sync_to_async(count)(CheckpointBlob, alias) == 0


async def test_storage_saves_a_blob_again_after_it_was_deleted(
    storage: DjangoCheckpointStorage,
) -> None:
    # The process remembers blobs it stored; deleting the last user must make it forget.
    first, second = make_checkpoint(seconds=1, state=BIG), make_checkpoint(seconds=2, state=BIG)
    await storage.save(first)
    await storage.delete(first.checkpoint_id)

    await storage.save(second)

    assert (await storage.load(second.checkpoint_id)).state == BIG


async def test_storage_saves_again_a_blob_another_process_deleted(
    storage: DjangoCheckpointStorage,
) -> None:
    # Retention elsewhere removed every row of the first checkpoint, its shared blob included;
    # this process still remembers that blob as stored and learns otherwise from the database.
    alias = storage.using
    first, second = make_checkpoint(seconds=1, state=BIG), make_checkpoint(seconds=2, state=BIG)
    await storage.save(first)

    def prune_elsewhere() -> None:
        Checkpoint.objects.using(alias).all().delete()
        CheckpointBlobUse.objects.using(alias).all().delete()
        CheckpointBlob.objects.using(alias).all().delete()

    await sync_to_async(prune_elsewhere)()

    sent_before = storage.bytes_written
    await storage.save(second)

    assert (await storage.load(second.checkpoint_id)).state == BIG
    assert await sync_to_async(count)(CheckpointBlob, alias) == 1
    # What it sent again is counted as sent.
    assert storage.bytes_written - sent_before > len(str(BIG))


async def test_storage_refuses_to_delete_a_checkpoint_an_approval_was_raised_in(
    storage: DjangoCheckpointStorage,
) -> None:
    alias = storage.using
    checkpoint = make_checkpoint(state={"big": BIG})
    await storage.save(checkpoint)

    def raise_approval() -> None:
        run = WorkflowRun.objects.using(alias).create(workflow_name="return-replace")
        ApprovalRequest.objects.using(alias).create(
            request_id="lineage:req-1",
            engine_request_id="req-1",
            engine_run_id="lineage",
            run=run,
            checkpoint_id=checkpoint.checkpoint_id,
            executor_id="hitl-gate",
        )

    await sync_to_async(raise_approval)()

    with pytest.raises(CheckpointError, match="approval"):
        await storage.delete(checkpoint.checkpoint_id)
    assert (await storage.load(checkpoint.checkpoint_id)).state == {"big": BIG}
    assert await sync_to_async(count)(CheckpointBlob, alias) == 1


@pytest.mark.parametrize("value", [-0.0, 1e16, -2.5e22, 1e300, 1.5e-7, 0.1, 123456789.125])
async def test_storage_restores_floats_exactly(
    storage: DjangoCheckpointStorage, value: float
) -> None:
    checkpoint = make_checkpoint(state={"f": value, "big": {"f": value, "pad": "p" * 5000}})
    await storage.save(checkpoint)

    loaded = await storage.load(checkpoint.checkpoint_id)

    assert repr(loaded.state["f"]) == repr(value)
    assert repr(loaded.state["big"]["f"]) == repr(value)


async def test_storage_treats_an_id_with_a_nul_byte_as_missing(
    storage: DjangoCheckpointStorage,
) -> None:
    # PostgreSQL refuses NUL in a text parameter; the id can only be "not found".
    await storage.save(make_checkpoint())

    with pytest.raises(CheckpointNotFoundError):
        await storage.load("abc\x00def")
    assert await storage.delete("abc\x00def") is False


@pytest.mark.postgres
@pytest.mark.django_db(databases=["pg"], transaction=True)
def test_a_postgres_save_is_one_round_trip_and_one_commit(tmp_path: Path) -> None:
    # The storage's write path, the one a worker's commits take: one statement in autocommit
    # (no BEGIN, no COMMIT), counted on the wire (libpq's protocol trace).
    storage = DjangoCheckpointStorage(using="pg")
    first = make_checkpoint(state={"big": BIG})
    storage.write(first, split_checkpoint(first))  # prepares the statement of this shape
    second = make_checkpoint(seconds=1, state={"big": {"payload": "y" * 64 * 1024}})
    piece = split_checkpoint(second)
    connection = connections["pg"].connection
    trace = tmp_path / "trace"
    with trace.open("w") as handle:
        connection.pgconn.trace(handle.fileno())
        try:
            storage.write(second, piece)
        finally:
            connection.pgconn.untrace()
    messages = [line.split("\t")[3] for line in trace.read_text().splitlines() if "\tB\t" in line]

    assert messages.count("ReadyForQuery") == 1, messages
    assert Checkpoint.objects.using("pg").filter(checkpoint_id=second.checkpoint_id).exists()
    assert CheckpointBlob.objects.using("pg").count() == 2  # each new blob a scalar parameter


@pytest.mark.postgres
@pytest.mark.django_db(databases=["pg"], transaction=True)
def test_a_postgres_save_in_a_transaction_uses_a_prepared_statement() -> None:
    # PostgreSQL plans the save once per connection, not once per superstep.
    piece = split_checkpoint(make_checkpoint(state={"big": BIG}))
    with transaction.atomic(using="pg"):
        save_split(piece, using="pg", trust_known_blobs=False)
    with connections["pg"].cursor() as cursor:
        cursor.execute("SELECT statement FROM pg_prepared_statements")
        prepared = [row[0] for row in cursor.fetchall()]

    assert any("INSERT INTO dashboard_checkpoint " in text for text in prepared), prepared


@pytest.mark.postgres
@pytest.mark.django_db(databases=["pg"])
def test_postgres_maintains_only_the_checkpoint_indexes_queries_use() -> None:
    # Each index on these tables is paid for at every superstep; LIKE-pattern indexes and a
    # link index that the unique pair already covers served no query.
    with connections["pg"].cursor() as cursor:
        cursor.execute(
            "SELECT tablename, indexdef FROM pg_indexes WHERE tablename IN "
            "('dashboard_checkpoint', 'dashboard_checkpointblobuse', 'dashboard_checkpointblob')"
        )
        indexes = cursor.fetchall()
        cursor.execute("SELECT to_regclass('dashboard_checkpoint_blobs')")
        link_table = cursor.fetchone()[0]
    assert not [d for _, d in indexes if "pattern_ops" in d]
    use_indexes = sorted(
        d.split(" USING btree ")[1] for t, d in indexes if t == "dashboard_checkpointblobuse"
    )
    assert use_indexes == ["(blob_id)", "(engine_run_id, blob_id)", "(id)"]
    assert link_table is None  # no row per checkpoint and blob any more
