"""Our two peers on PostgreSQL, on the worker benchmark's ``bench-loop`` workload.

One executor (a graph node) loops to itself for N supersteps, holding ``state_bytes`` of the
engine benchmark's records (``engine_bench.make_items``), one record's ``qty`` changing every
superstep, the state checkpointed after every superstep. Both peers run in this process
against the PostgreSQL server a DSN names:

* **MAF** (``agent-framework-core``): the engine benchmark's MAF self-loop
  (``engine_bench.MafLoop``). MAF ships no PostgreSQL checkpoint storage, so
  ``MafPostgresStorage`` is the one a MAF user would write: MAF's own checkpoint encoding
  (``encode_checkpoint_value``, what its ``FileCheckpointStorage`` writes) as one jsonb row
  per checkpoint, one prepared ``INSERT`` in autocommit on an open psycopg ``AsyncConnection``.
* **LangGraph**: a ``StateGraph`` whose node routes back to itself, compiled with
  ``AsyncPostgresSaver`` (``langgraph-checkpoint-postgres``) and invoked with
  ``durability="sync"`` (each step's checkpoint committed before the next step starts, the
  guarantee a Superstep worker gives) and, as an extra, ``durability="async"`` (the next step
  runs while the previous checkpoint is written).

``measure_peers`` returns, per peer and case, µs per superstep (wall time of a run / N, after
a warm-up run, median of the rounds), the checkpoint bytes each superstep hands PostgreSQL,
the bytes its tables grew by, and the rows and commits per superstep (the peer's connection
flushes its statistics before it closes). A peer whose package is missing gets a ``missing``
status instead of figures. ``worker_bench.py`` calls it after its own cases; standalone::

    DATABASE_URL=postgres://postgres@127.0.0.1:5432/postgres \\
        python tests/bench/peers_pg.py [--supersteps 1000] [--rounds 1] [--json FILE]

creates a scratch database on that server and drops it afterwards. Not a test module.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import importlib.metadata
import json
import os
import statistics
import sys
import time
import traceback
from collections.abc import Callable, Coroutine
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypedDict

import psycopg

if TYPE_CHECKING:
    from agent_framework import WorkflowCheckpoint

__all__ = ["CASES", "INSTALL", "PEERS", "MafPostgresStorage", "measure_peers"]

INSTALL = "pip install -e '.[bench]'"
CASES = [("loop-1k", 1024), ("loop-64k", 64 * 1024)]
PEERS = ("maf", "langgraph-sync", "langgraph-async")
WARM_UP_SUPERSTEPS = 50
# Long enough for a closed connection's backend to have exited and reported its statistics.
SETTLE = 0.2

MAF_TABLES = ("maf_checkpoint",)
LANGGRAPH_TABLES = ("checkpoints", "checkpoint_blobs", "checkpoint_writes")


def _progress(text: str) -> None:
    print(text, file=sys.stderr, flush=True)


def _version(dist: str) -> str:
    try:
        return importlib.metadata.version(dist)
    except importlib.metadata.PackageNotFoundError:
        return "?"


def _missing(*modules: str) -> str | None:
    """The first of ``modules`` that cannot be imported, as a reason; None when all can."""
    for module in modules:
        try:
            __import__(module)
        except ImportError as exc:
            return f"{type(exc).__name__}: {exc}"
    return None


# ------------------------------------------------------------------------------------- MAF


class MafPostgresStorage:
    """MAF 1.23's ``CheckpointStorage`` protocol on PostgreSQL: one jsonb row per checkpoint.

    The document is exactly what MAF's ``FileCheckpointStorage`` writes to its file
    (``encode_checkpoint_value`` of ``checkpoint.to_dict()``: JSON-native values as they are,
    everything else pickled and base64'ed), dumped compactly; its save-time decode check is
    left out, as a storage of one's own may. ``created_at`` is the checkpoint's timestamp,
    which is how MAF's own storages find the latest.
    """

    SETUP = (
        (
            "CREATE TABLE IF NOT EXISTS maf_checkpoint ("
            " checkpoint_id text PRIMARY KEY,"
            " workflow_name text NOT NULL,"
            " previous_checkpoint_id text,"
            " created_at timestamptz NOT NULL,"
            " doc jsonb NOT NULL)"
        ),
        (
            "CREATE INDEX IF NOT EXISTS maf_checkpoint_latest"
            " ON maf_checkpoint (workflow_name, created_at DESC)"
        ),
    )
    INSERT = (
        "INSERT INTO maf_checkpoint"
        " (checkpoint_id, workflow_name, previous_checkpoint_id, created_at, doc)"
        " VALUES (%s, %s, %s, %s::timestamptz, %s::jsonb)"
    )

    def __init__(self, connection: psycopg.AsyncConnection[Any]) -> None:
        # Not re-exported by agent_framework: what its own storages import.
        from agent_framework._workflows._checkpoint_encoding import (
            decode_checkpoint_value,
            encode_checkpoint_value,
        )

        if not connection.autocommit:
            raise ValueError("MafPostgresStorage needs an autocommit connection")
        self.connection = connection
        self._encode: Callable[[Any], Any] = encode_checkpoint_value
        self._decode: Callable[..., Any] = decode_checkpoint_value
        self.bytes_written = 0
        self.saved = 0

    @classmethod
    async def setup(cls, connection: psycopg.AsyncConnection[Any]) -> None:
        for statement in cls.SETUP:
            await connection.execute(statement)

    async def save(self, checkpoint: WorkflowCheckpoint) -> str:
        document = json.dumps(
            self._encode(checkpoint.to_dict()), ensure_ascii=False, separators=(",", ":")
        )
        # prepare=True: parsed and planned once per connection, then one Bind/Execute/Sync
        # round trip per checkpoint, committed by autocommit.
        await self.connection.execute(
            self.INSERT,
            (
                checkpoint.checkpoint_id,
                checkpoint.workflow_name,
                checkpoint.previous_checkpoint_id,
                checkpoint.timestamp,
                document,
            ),
            prepare=True,
        )
        self.bytes_written += len(document)
        self.saved += 1
        return str(checkpoint.checkpoint_id)

    def _checkpoint(self, document: Any) -> WorkflowCheckpoint:
        from agent_framework import WorkflowCheckpoint

        # An empty allow-list still admits MAF's own types and the built-in safe set.
        decoded = self._decode(document, allowed_types=frozenset())
        return WorkflowCheckpoint.from_dict(decoded)

    async def load(self, checkpoint_id: str) -> WorkflowCheckpoint:
        from agent_framework import WorkflowCheckpointException

        cursor = await self.connection.execute(
            "SELECT doc FROM maf_checkpoint WHERE checkpoint_id = %s", (checkpoint_id,)
        )
        row = await cursor.fetchone()
        if row is None:
            raise WorkflowCheckpointException(f"No checkpoint found with ID {checkpoint_id}")
        return self._checkpoint(row[0])

    async def list_checkpoints(self, *, workflow_name: str) -> list[WorkflowCheckpoint]:
        cursor = await self.connection.execute(
            "SELECT doc FROM maf_checkpoint WHERE workflow_name = %s ORDER BY created_at",
            (workflow_name,),
        )
        return [self._checkpoint(doc) for (doc,) in await cursor.fetchall()]

    async def delete(self, checkpoint_id: str) -> bool:
        cursor = await self.connection.execute(
            "DELETE FROM maf_checkpoint WHERE checkpoint_id = %s", (checkpoint_id,)
        )
        return cursor.rowcount > 0

    async def get_latest(self, *, workflow_name: str) -> WorkflowCheckpoint | None:
        cursor = await self.connection.execute(
            "SELECT doc FROM maf_checkpoint WHERE workflow_name = %s"
            " ORDER BY created_at DESC LIMIT 1",
            (workflow_name,),
        )
        row = await cursor.fetchone()
        return None if row is None else self._checkpoint(row[0])

    async def list_checkpoint_ids(self, *, workflow_name: str) -> list[str]:
        cursor = await self.connection.execute(
            "SELECT checkpoint_id FROM maf_checkpoint WHERE workflow_name = %s ORDER BY created_at",
            (workflow_name,),
        )
        return [str(checkpoint_id) for (checkpoint_id,) in await cursor.fetchall()]


async def maf_setup(dsn: str) -> None:
    async with await psycopg.AsyncConnection.connect(dsn, autocommit=True) as connection:
        await MafPostgresStorage.setup(connection)


@dataclass
class Run:
    seconds: float
    bytes_sent: int | None = None  # checkpoint bytes handed to PostgreSQL, when known here


async def maf_run(dsn: str, items: list[dict[str, Any]], supersteps: int) -> Run:
    import engine_bench

    engine = engine_bench.maf_engine()
    assert engine is not None
    async with await psycopg.AsyncConnection.connect(dsn, autocommit=True) as connection:
        storage = MafPostgresStorage(connection)
        executor = engine_bench.MafLoop(items, supersteps, True)
        workflow = engine_bench.loop_workflow(engine, executor, supersteps, storage)
        gc.collect()
        started = time.perf_counter()
        result = await workflow.run(1)
        seconds = time.perf_counter() - started
        if executor.counter != supersteps:
            raise RuntimeError(f"MAF ran {executor.counter} supersteps, not {supersteps}")
        if str(result.get_final_state()).rsplit(".", 1)[-1].upper() != "IDLE":
            raise RuntimeError(f"MAF ended {result.get_final_state()}, not IDLE")
        # Read back through the storage: what a resume would get.
        latest = await storage.get_latest(workflow_name="bench-loop")
        saved = latest.state["_executor_state"]["loop"] if latest is not None else {}
        if saved.get("counter") != supersteps or saved.get("items") != executor.items:
            raise RuntimeError("MAF's latest checkpoint does not hold the final executor state")
        await connection.execute("SELECT pg_stat_force_next_flush()")
    return Run(seconds, storage.bytes_written)


# ------------------------------------------------------------------------------- LangGraph


class LoopState(TypedDict):
    items: list[dict[str, Any]]
    counter: int


def langgraph_loop(supersteps: int) -> Any:
    """The self-loop as a LangGraph ``StateGraph`` (not compiled)."""
    from langgraph.graph import END, START, StateGraph

    async def step(state: LoopState) -> dict[str, Any]:
        counter = state["counter"] + 1
        # A new list and record rather than an edit in place: with durability="async" the
        # previous checkpoint may still be being serialized while this step runs.
        items = list(state["items"])
        if items:
            i = counter % len(items)
            items[i] = {**items[i], "qty": items[i]["qty"] + 1}
        return {"items": items, "counter": counter}

    def route(state: LoopState) -> str:
        return "step" if state["counter"] < supersteps else str(END)

    graph = StateGraph(LoopState)
    graph.add_node("step", step)
    graph.add_edge(START, "step")
    graph.add_conditional_edges("step", route, ["step", END])
    return graph


async def langgraph_setup(dsn: str) -> None:
    from langgraph.checkpoint.postgres.aio import AsyncPostgresSaver

    async with AsyncPostgresSaver.from_conn_string(dsn) as saver:
        await saver.setup()


async def langgraph_run(
    dsn: str, items: list[dict[str, Any]], supersteps: int, durability: str, thread: str
) -> Run:
    from langgraph.checkpoint.postgres.aio import AsyncPostgresSaver

    # from_conn_string: one autocommit connection, statements prepared on first use, each
    # checkpoint's statements sent as one pipeline.
    async with AsyncPostgresSaver.from_conn_string(dsn) as saver:
        graph = langgraph_loop(supersteps).compile(checkpointer=saver)
        config: Any = {
            "configurable": {"thread_id": thread},
            # One step per superstep plus the input's; the default limit is 25.
            "recursion_limit": supersteps + 10,
        }
        state = {"items": [dict(r) for r in items], "counter": 0}
        gc.collect()
        started = time.perf_counter()
        final = await graph.ainvoke(state, config, durability=durability)
        seconds = time.perf_counter() - started
        if final["counter"] != supersteps:
            raise RuntimeError(f"LangGraph ran {final['counter']} supersteps, not {supersteps}")
        latest = await saver.aget_tuple({"configurable": {"thread_id": thread}})
        values = latest.checkpoint["channel_values"] if latest is not None else {}
        if values.get("counter") != supersteps or values.get("items") != final["items"]:
            raise RuntimeError("LangGraph's latest checkpoint does not hold the final state")
        assert isinstance(saver.conn, psycopg.AsyncConnection)  # from_conn_string: no pool
        await saver.conn.execute("SELECT pg_stat_force_next_flush()")
    return Run(seconds)


# ------------------------------------------------------------------------------- measuring


@dataclass
class Peer:
    key: str
    label: str
    storage: str
    tables: tuple[str, ...]
    missing: str | None
    setup: Callable[[str], Coroutine[Any, Any, None]]
    run: Callable[[str, list[dict[str, Any]], int, str], Coroutine[Any, Any, Run]]


def peers() -> list[Peer]:
    maf_missing = _missing("agent_framework")
    lg_missing = _missing("langgraph", "langgraph.checkpoint.postgres.aio")
    lg_label = (
        f"langgraph {_version('langgraph')}, "
        f"langgraph-checkpoint-postgres {_version('langgraph-checkpoint-postgres')}"
    )

    def lg(durability: str) -> Peer:
        return Peer(
            key=f"langgraph-{durability}",
            label=f"{lg_label}, durability={durability}",
            storage=(
                "AsyncPostgresSaver: a checkpoint row (jsonb), a blob row per changed channel"
                " and a row per channel write (msgpack bytea), one pipeline per save"
            ),
            tables=LANGGRAPH_TABLES,
            missing=lg_missing,
            setup=langgraph_setup,
            run=lambda dsn, items, n, thread: langgraph_run(dsn, items, n, durability, thread),
        )

    return [
        Peer(
            key="maf",
            label=f"agent-framework-core {_version('agent-framework-core')}",
            storage=(
                "MafPostgresStorage: MAF's checkpoint encoding as one jsonb row, one prepared"
                " INSERT in autocommit per checkpoint"
            ),
            tables=MAF_TABLES,
            missing=maf_missing,
            setup=maf_setup,
            run=lambda dsn, items, n, thread: maf_run(dsn, items, n),
        ),
        lg("sync"),
        lg("async"),
    ]


class Observer:
    """Reads of the peers' tables and of the database's statistics.

    Each read is a connection of its own, closed at once: a backend reports its statistics
    when it exits, so none of these reads' own commits are left pending to land, later,
    inside a measured run's counters.
    """

    def __init__(self, dsn: str) -> None:
        self.dsn = dsn

    def _value(self, statement: str, *params: Any) -> int:
        with psycopg.connect(self.dsn, autocommit=True) as connection:
            row = connection.execute(statement, params).fetchone()
        return int(row[0] or 0) if row else 0

    def truncate(self, tables: tuple[str, ...]) -> None:
        with psycopg.connect(self.dsn, autocommit=True) as connection:
            connection.execute(f"TRUNCATE {', '.join(tables)}")

    def size(self, tables: tuple[str, ...]) -> int:
        return self._value(
            "SELECT sum(pg_total_relation_size(t::regclass)) FROM unnest(%s::text[]) AS t",
            list(tables),
        )

    def counters(self, tables: tuple[str, ...]) -> tuple[int, int]:
        """The database's commits and the rows inserted or updated in ``tables`` so far."""
        with psycopg.connect(self.dsn, autocommit=True) as connection:
            row = connection.execute(
                "SELECT (SELECT xact_commit FROM pg_stat_database"
                "        WHERE datname = current_database()),"
                " (SELECT coalesce(sum(n_tup_ins + n_tup_upd), 0) FROM pg_stat_user_tables"
                "  WHERE relname = ANY(%s::text[]))",
                (list(tables),),
            ).fetchone()
        assert row is not None
        return int(row[0]), int(row[1])

    def langgraph_bytes(self) -> int:
        """Bytes of the checkpoint rows, blobs and writes LangGraph sent (as their text/bytea)."""
        return self._value(
            "SELECT (SELECT coalesce(sum(octet_length(checkpoint::text)"
            " + octet_length(metadata::text)), 0) FROM checkpoints)"
            " + (SELECT coalesce(sum(octet_length(blob)), 0) FROM checkpoint_blobs)"
            " + (SELECT coalesce(sum(octet_length(blob)), 0) FROM checkpoint_writes)"
        )


def _row(peer: Peer, case: str, size: int, supersteps: int, status: str) -> dict[str, Any]:
    return {
        "peer": peer.key,
        "label": peer.label,
        "storage": peer.storage,
        "case": case,
        "state_bytes": size,
        "supersteps": supersteps,
        "status": status,
        "us_per_superstep": None,
        "rounds_us": [],
        "checkpoint_bytes_per_superstep": None,
        "stored_bytes_per_superstep": None,
        "rows_per_superstep": None,
        "commits_per_superstep": None,
    }


def _measure(
    peer: Peer,
    observer: Observer,
    dsn: str,
    case: str,
    size: int,
    supersteps: int,
    rounds: int,
) -> dict[str, Any]:
    import engine_bench

    row = _row(peer, case, size, supersteps, "ok")
    items = engine_bench.make_items(size)
    observer.truncate(peer.tables)
    asyncio.run(peer.run(dsn, items, min(supersteps, WARM_UP_SUPERSTEPS), f"{case}-warm"))
    per_step: list[float] = []
    for round_ in range(rounds):
        observer.truncate(peer.tables)
        empty = observer.size(peer.tables)
        time.sleep(SETTLE)
        commits, written = observer.counters(peer.tables)
        run = asyncio.run(peer.run(dsn, items, supersteps, f"{case}-{round_}"))
        per_step.append(run.seconds / supersteps)
        time.sleep(SETTLE)
        commits_after, written_after = observer.counters(peer.tables)
        sent = run.bytes_sent if run.bytes_sent is not None else observer.langgraph_bytes()
        if round_ == 0:
            row.update(
                checkpoint_bytes_per_superstep=sent / supersteps,
                stored_bytes_per_superstep=(observer.size(peer.tables) - empty) / supersteps,
                rows_per_superstep=(written_after - written) / supersteps,
                # Less the first counters read's own commit; the run's few reads of its
                # checkpoints (a resume check) stay in.
                commits_per_superstep=(commits_after - commits - 1) / supersteps,
            )
    row["rounds_us"] = [s * 1e6 for s in per_step]
    row["us_per_superstep"] = statistics.median(per_step) * 1e6
    return row


def measure_peers(
    dsn: str, cases: list[tuple[str, int]], supersteps: int, rounds: int = 1
) -> list[dict[str, Any]]:
    """Per peer and case (name, state bytes): µs per superstep and what each superstep wrote.

    ``dsn`` names a database this may fill with the peers' tables (a scratch one). Never
    raises for a peer: a missing package or a failed run is that row's ``status``.
    """
    observer = Observer(dsn)
    every = peers()
    status: dict[str, str] = {}
    set_up: dict[Callable[[str], Coroutine[Any, Any, None]], str] = {}
    for peer in every:
        if peer.missing is not None:
            status[peer.key] = f"missing: {INSTALL} ({peer.missing})"
            continue
        if peer.setup not in set_up:  # LangGraph's two modes share their tables
            try:
                asyncio.run(peer.setup(dsn))
                set_up[peer.setup] = "ok"
            except Exception as exc:  # noqa: BLE001 - reported as the peer's status, traceback printed
                traceback.print_exc()
                set_up[peer.setup] = f"error: {type(exc).__name__}: {exc}"
        status[peer.key] = set_up[peer.setup]
    rows: list[dict[str, Any]] = []
    for case, size in cases:
        for peer in every:
            if status[peer.key] != "ok":
                rows.append(_row(peer, case, size, supersteps, status[peer.key]))
                continue
            try:
                row = _measure(peer, observer, dsn, case, size, supersteps, rounds)
            except Exception as exc:  # noqa: BLE001 - reported as the row's status, traceback printed
                traceback.print_exc()
                row = _row(peer, case, size, supersteps, f"error: {type(exc).__name__}: {exc}")
            else:
                _progress(
                    f"  {case}: {peer.key} {row['us_per_superstep']:.0f} us/superstep, "
                    f"{row['checkpoint_bytes_per_superstep']:.0f} B sent, "
                    f"{row['rows_per_superstep']:.2f} rows, "
                    f"{row['commits_per_superstep']:.2f} commits per superstep"
                )
            rows.append(row)
    return rows


# ------------------------------------------------------------------------------- standalone


def print_rows(rows: list[dict[str, Any]]) -> None:
    print(
        f"   {'case':>9} {'peer':>16} {'us/step':>8} {'B sent/step':>11} {'B stored/step':>13} "
        f"{'rows/step':>9} {'commits/step':>12}  status"
    )
    for row in rows:
        if row["us_per_superstep"] is None:
            print(
                f"   {row['case']:>9} {row['peer']:>16} {'-':>8} {'':>11} {'':>13} {'':>9} "
                f"{'':>12}  {row['status']}"
            )
            continue
        print(
            f"   {row['case']:>9} {row['peer']:>16} {row['us_per_superstep']:>8.0f} "
            f"{row['checkpoint_bytes_per_superstep']:>11.0f} "
            f"{row['stored_bytes_per_superstep']:>13.0f} {row['rows_per_superstep']:>9.2f} "
            f"{row['commits_per_superstep']:>12.2f}  {row['status']}"
        )


def main(argv: list[str] | None = None) -> int:
    from scratch_database import create_database, drop_database

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--supersteps", type=int, default=1000)
    parser.add_argument("--rounds", type=int, default=1)
    parser.add_argument("--cases", default=",".join(case for case, _ in CASES))
    parser.add_argument("--json", type=Path)
    args = parser.parse_args(argv)
    known = dict(CASES)
    cases = [(c, known[c]) for c in args.cases.split(",") if c]
    server = os.environ.get("DATABASE_URL", "")
    if not server.startswith(("postgres://", "postgresql://")):
        parser.error("set DATABASE_URL=postgres://... (the server to use)")
    dsn = create_database(server, "superstep_peers_bench")
    try:
        rows = measure_peers(dsn, cases, args.supersteps, args.rounds)
    finally:
        drop_database(dsn)
    print_rows(rows)
    if args.json:
        args.json.write_text(json.dumps(rows, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
