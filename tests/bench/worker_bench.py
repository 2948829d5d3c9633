"""The durable path as runs really take it: a real ``celery worker`` executing runs on PostgreSQL.

Per superstep, a worker commits the checkpoint, the events since the last one, the run's
progress and its lease check in one transaction (``services.checkpoint_commit``). This
benchmark measures that, in one run, against a database it creates for itself on the
``DATABASE_URL`` server (and drops afterwards), for each workload of ``worker_bench_flows``
(self-loop and 8-way fan-out) at 1 KiB and 64 KiB of state changing every superstep:

* **worker**: µs per superstep of a run executed by one ``celery -A dashboard worker -P solo``
  (first to last ``superstep_completed`` event, each stamped in its commit);
* **raw**: one single-row jsonb ``INSERT`` + ``COMMIT`` of the same checkpoint's JSON (its
  blobs joined back in) with psycopg, half just before and half just after each worker round;
  the ratio is raw µs / worker µs (the worker's rate as a fraction of the raw rate), median
  of the rounds;
* **engine**: the same workflow in this process on ``InMemoryCheckpointStorage``;
* **find latest**: ``DjangoCheckpointStorage.get_latest`` at 100, 10,000 and 100,000
  checkpoints (seeded in SQL), with the query's plan;
* **commits** per superstep (``pg_stat_database.xact_commit`` of the benchmark database over
  the round, less this script's own reads) and **round trips** per superstep (libpq's
  protocol trace of a separate, traced worker: ``ReadyForQuery`` messages between the first
  and the last superstep of a run).

Then, in the same run and on the same server (a scratch database of their own), the peers
on the self-loop cases (``peers_pg.py``): Microsoft Agent Framework with a jsonb-row
PostgreSQL storage written for it, and LangGraph with ``AsyncPostgresSaver`` in its ``sync``
and ``async`` durability modes, compared with the worker in a second table. They need
``pip install -e '.[bench]'``; without it they are reported missing, and ``--no-peers``
skips them.

Usage (``REDIS_URL`` should name a Redis database nothing else uses)::

    DATABASE_URL=postgres://postgres@127.0.0.1:5432/postgres REDIS_URL=redis://127.0.0.1:6379/13 \\
        .venv/bin/python tests/bench/worker_bench.py [--supersteps 1000] [--rounds 2]
        [--cases loop-1k,loop-64k,fanout-1k,fanout-64k] [--no-peers] [--json FILE]

Exit status 0 when the 1 KiB self-loop reaches ``TARGET_RATIO`` of the raw rate, the 64 KiB
self-loop beats the raw INSERT and, when both peers were measured, is ahead of MAF and of
LangGraph (``durability="sync"``) (or with ``--no-fail``), 1 otherwise.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import signal
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import psycopg
from backbone_bench import Processes, production_env, raw_insert_seconds
from cpu_shares import cpu_seconds
from scratch_database import create_database, drop_database

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent
sys.path.insert(0, str(ROOT))

TARGET_RATIO = 0.7
CASES = {
    "loop-1k": ("bench-loop", 1024),
    "loop-64k": ("bench-loop", 64 * 1024),
    "fanout-1k": ("bench-fanout", 1024),
    "fanout-64k": ("bench-fanout", 64 * 1024),
}


def _progress(text: str) -> None:
    print(text, file=sys.stderr, flush=True)


def _worker(
    processes: Processes, name: str, env: dict[str, str], profile: Path | None = None
) -> Any:
    profiler = ["-m", "cProfile", "-o", str(profile)] if profile else []
    saved, processes.env = processes.env, env
    try:
        return processes.start(
            name,
            sys.executable,
            *profiler,
            "-m",
            "celery",
            "-A",
            "dashboard",
            "worker",
            "--pool",
            "solo",
            "--loglevel",
            "WARNING",
            "--without-mingle",
            "--without-gossip",
            "--hostname",
            f"{name}@%h",
        )
    finally:
        processes.env = saved


# --------------------------------------------------------------------------------- one run


class Database:
    """This script's reads of the benchmark database, on one autocommit connection whose own
    transactions are counted, so they can be taken off ``xact_commit``."""

    def __init__(self, url: str) -> None:
        self.connection = psycopg.connect(url, autocommit=True)
        self.own_commits = 0

    def one(self, statement: str, *params: Any) -> Any:
        self.own_commits += 1
        return self.connection.execute(statement, params).fetchone()

    def commits(self) -> int:
        self.one("SELECT pg_stat_clear_snapshot()")
        (count,) = self.one(
            "SELECT xact_commit FROM pg_stat_database WHERE datname = current_database()"
        )
        return int(count)

    def status(self, run_id: str) -> str:
        return str(self.one("SELECT status FROM dashboard_workflowrun WHERE id = %s", run_id)[0])

    def superstep_span(self, run_id: str) -> tuple[int, float, float]:
        """Supersteps committed, and the first and last commit's time (epoch seconds)."""
        count, first, last = self.one(
            "SELECT count(*), extract(epoch FROM min(created_at)),"
            " extract(epoch FROM max(created_at))"
            " FROM dashboard_runevent WHERE run_id = %s AND type = 'superstep_completed'",
            run_id,
        )
        return int(count), float(first), float(last)


def start_run(workflow: str, supersteps: int, state_bytes: int) -> str:
    from dashboard import services

    run = services.run_start(
        workflow_name=workflow, input={"supersteps": supersteps, "state_bytes": state_bytes}
    )
    return str(run.pk)


def wait_run(db: Database, run_id: str, timeout: float = 900) -> None:
    deadline = time.monotonic() + timeout
    while (status := db.status(run_id)) not in ("completed", "failed", "cancelled"):
        if time.monotonic() > deadline:
            raise RuntimeError(f"run {run_id} still {status} after {timeout:.0f} s")
        time.sleep(0.25)
    if status != "completed":
        raise RuntimeError(f"run {run_id} {status} (see the worker log)")


def checkpoint_json(run_id: str) -> bytes:
    """The run's latest checkpoint as one JSON document (its blobs joined back in)."""
    from dashboard.checkpoints.storage import DjangoCheckpointStorage
    from dashboard.models import WorkflowRun

    run = WorkflowRun.objects.get(pk=run_id)
    assert run.latest_checkpoint_id is not None
    checkpoint = DjangoCheckpointStorage().load_sync(run.latest_checkpoint_id)
    return json.dumps(checkpoint.to_dict(), ensure_ascii=False, separators=(",", ":")).encode()


def engine_seconds(
    workflow: str, supersteps: int, state_bytes: int, *, durable: bool = False
) -> float:
    """Seconds per superstep of the same workflow in this process, on in-memory storage or
    (``durable``) on ``DjangoCheckpointStorage``: the peers' setting, an engine saving its own
    checkpoints, without the worker's events, run progress, lease and Celery."""
    import worker_bench_flows as flows
    from asgiref.sync import sync_to_async
    from django.db import connections

    from dashboard.checkpoints.storage import DjangoCheckpointStorage
    from workflows import InMemoryCheckpointStorage, WorkflowCheckpoint

    build = flows.WORKFLOWS[workflow]
    base: type = DjangoCheckpointStorage if durable else InMemoryCheckpointStorage

    class Counted(base):  # type: ignore[misc, valid-type]
        saves = 0

        async def save(self, checkpoint: WorkflowCheckpoint) -> str:
            self.saves += 1
            return await super().save(checkpoint)  # type: ignore[no-any-return]

    async def once() -> float:
        storage = Counted()
        started = time.perf_counter()
        await build(storage).run(flows.BenchInput(supersteps, state_bytes))
        seconds = (time.perf_counter() - started) / max(1, storage.saves)
        if durable:
            # Closed, its backend reports its commits now: an idle one reports them up to
            # ten seconds later, into the next case's count of the worker's commits.
            await sync_to_async(connections.close_all)()
        return seconds

    return min(asyncio.run(once()) for _ in range(2))


# ------------------------------------------------------------------------------ round trips


def count_round_trips(
    processes: Processes, env: dict[str, str], db: Database, cases: list[str], supersteps: int
) -> dict[str, dict[str, float]]:
    """Round trips and transactions per superstep, from a traced worker's protocol trace."""
    import datetime as dt

    folder = Path(tempfile.mkdtemp(prefix="superstep-trace-"))
    worker = _worker(processes, "traced", {**env, "SUPERSTEP_BENCH_TRACE": str(folder)})
    counts: dict[str, dict[str, float]] = {}
    try:
        for case in cases:
            workflow, size = CASES[case]
            run_id = start_run(workflow, supersteps, size)
            wait_run(db, run_id)
            steps, first, last = db.superstep_span(run_id)
            lines = [
                line.split("\t")
                for trace in folder.glob("*.trace")
                for line in trace.read_text(errors="replace").splitlines()
            ]
            window = [
                fields
                for fields in lines
                if len(fields) > 3
                and first
                < dt.datetime.fromisoformat(fields[0]).replace(tzinfo=dt.UTC).timestamp()
                <= last
            ]
            trips = sum(1 for f in window if f[1] == "B" and f[3] == "ReadyForQuery")
            idle = sum(
                1 for f in window if f[1] == "B" and f[3] == "ReadyForQuery" and f[4].strip() == "I"
            )
            counts[case] = {"round_trips": trips / (steps - 1), "transactions": idle / (steps - 1)}
            for trace in folder.glob("*.trace"):
                trace.write_text("")  # truncates while the worker appends
            _progress(f"  {case}: {counts[case]['round_trips']:.2f} round trips per superstep")
    finally:
        processes.children.remove(worker)
        os.killpg(worker.pid, signal.SIGKILL)
        worker.wait()
    return counts


# ------------------------------------------------------------------------------------ timing


def bench_case(
    database_url: str, db: Database, case: str, supersteps: int, rounds: int, worker_pid: int
) -> dict[str, Any]:
    workflow, size = CASES[case]
    warm = start_run(workflow, min(100, supersteps), size)
    wait_run(db, warm)
    document = checkpoint_json(warm)
    inserts = max(1, min(supersteps, 1000) // 2)
    raw_insert_seconds(database_url, document, inserts)  # warm-up
    pairs: list[tuple[float, float]] = []
    commits: list[float] = []
    cpu: list[float] = []
    for _ in range(rounds):
        before = raw_insert_seconds(database_url, document, inserts)
        own, counted = db.own_commits, db.commits()
        used = cpu_seconds(worker_pid)
        run_id = start_run(workflow, supersteps, size)
        wait_run(db, run_id)
        steps, first, last = db.superstep_span(run_id)
        cpu.append((cpu_seconds(worker_pid) - used) / steps)
        time.sleep(1.2)  # backends report their counters at most once a second
        commits.append((db.commits() - counted - (db.own_commits - own)) / steps)
        after = raw_insert_seconds(database_url, document, inserts)
        pairs.append(((last - first) / (steps - 1), (before + after) / 2))
    engine = engine_seconds(workflow, supersteps, size)
    in_process = engine_seconds(workflow, supersteps, size, durable=True)
    worker_us = statistics.median(s for s, _ in pairs) * 1e6
    raw_us = statistics.median(r for _, r in pairs) * 1e6
    row: dict[str, Any] = {
        "case": case,
        "checkpoint_json_bytes": len(document),
        "supersteps": supersteps,
        "worker_us": worker_us,
        "raw_insert_us": raw_us,
        "engine_memory_us": engine * 1e6,
        "engine_postgres_us": in_process * 1e6,
        "ratio": statistics.median(raw / s for s, raw in pairs),
        "paired_ratios": [raw / s for s, raw in pairs],
        "commits_per_superstep": statistics.median(commits),
        # The worker process's own CPU per superstep (whole run: start and finish included).
        "worker_cpu_us": statistics.median(cpu) * 1e6,
    }
    _progress(
        f"  {case}: worker {worker_us:.0f} us/superstep, raw INSERT {raw_us:.0f} us, "
        f"engine {engine * 1e6:.0f} us, worker CPU {row['worker_cpu_us']:.0f} us (paired ratios "
        f"{', '.join(f'{r:.2f}' for r in row['paired_ratios'])})"
    )
    return row


def find_latest(sizes: tuple[int, ...] = (100, 10_000, 100_000)) -> list[dict[str, Any]]:
    """``DjangoCheckpointStorage.get_latest`` (connection open, one indexed row) as the table
    grows: checkpoints of 5 workflows and 50 lineages seeded in SQL, median of 200 calls."""
    from asgiref.sync import async_to_sync
    from django.db import connection

    from dashboard.checkpoints.storage import DjangoCheckpointStorage
    from workflows.storage import split_checkpoint
    from workflows.testing import make_checkpoint

    record = split_checkpoint(make_checkpoint(workflow_name="wf", run_id="lin")).record_text
    storage = DjangoCheckpointStorage()
    with connection.cursor() as cursor:
        cursor.execute("TRUNCATE dashboard_checkpointblobuse, dashboard_checkpoint CASCADE")
    rows: list[dict[str, Any]] = []
    seeded = 0
    for size in sizes:
        with connection.cursor() as cursor:
            cursor.execute(
                "INSERT INTO dashboard_checkpoint (checkpoint_id, engine_run_id, workflow_name,"
                " superstep, graph_signature_hash, document, size_bytes, pending_request_count,"
                " created_at, on_hold) SELECT 'c' || n, 'lin' || n %% 50, 'wf' || n %% 5, n, 'h',"
                " %s::jsonb, 100, 0, now() - make_interval(secs => 1e6 - n), false"
                " FROM generate_series(%s, %s) AS n",
                [record, seeded + 1, size],
            )
            cursor.execute("ANALYZE dashboard_checkpoint")
        seeded = size

        async def median(**where: str) -> float:
            await storage.get_latest(**where)
            times = []
            for _ in range(200):
                started = time.perf_counter()
                await storage.get_latest(**where)
                times.append(time.perf_counter() - started)
            return statistics.median(times)

        row = {
            "checkpoints": size,
            "by_workflow_us": async_to_sync(median)(workflow_name="wf3") * 1e6,
            "by_lineage_us": async_to_sync(median)(run_id="lin7") * 1e6,
        }
        rows.append(row)
        _progress(f"  find latest of {size}: {row['by_workflow_us']:.0f} us")
    with connection.cursor() as cursor:
        cursor.execute(
            "EXPLAIN SELECT document FROM dashboard_checkpoint WHERE workflow_name = 'wf3'"
            " ORDER BY created_at DESC, checkpoint_id DESC LIMIT 1"
        )
        plan = " / ".join(line.strip() for (line,) in cursor.fetchall())
    rows.append({"plan": plan})
    return rows


def measure_peers(
    server: str, cases: list[str], supersteps: int, rounds: int
) -> list[dict[str, Any]]:
    """The peers on the self-loop cases, in a scratch database of their own on ``server``."""
    import peers_pg

    loops = [(case, CASES[case][1]) for case in cases if CASES[case][0] == "bench-loop"]
    if not loops:
        return []
    url = create_database(server, "superstep_peers_bench")
    _progress(f"peers (database {urlsplit(url).path[1:]})")
    try:
        return peers_pg.measure_peers(url, loops, supersteps, rounds)
    finally:
        drop_database(url)


def report_peers(rows: list[dict[str, Any]], peer_rows: list[dict[str, Any]] | None) -> bool:
    """The second table: the worker against the peers; False when the 64 KiB self-loop was
    measured against both peers and is not ahead of them."""
    from peers_pg import INSTALL, PEERS

    if peer_rows is None:
        print("\nPeers: skipped (--no-peers)")
        return True
    if not peer_rows:
        print("\nPeers: no self-loop case in --cases")
        return True
    ours = {row["case"]: row for row in rows}
    theirs = {(row["case"], row["peer"]): row for row in peer_rows}

    def us(case: str, peer: str) -> float | None:
        row = theirs.get((case, peer))
        return None if row is None else row["us_per_superstep"]

    def cell(value: float | None, width: int, digits: int = 0) -> str:
        return f"{'-':>{width}}" if value is None else f"{value:>{width}.{digits}f}"

    def ratio(peer_us: float | None, mine: float, width: int) -> str:
        return cell(None if peer_us is None else peer_us / mine, width, 2)

    print("\nPeers on the same PostgreSQL server, same self-loop (peers_pg.py), us per superstep")
    print(
        f"   {'case':>9} {'ours':>7} {'in-proc':>7} {'raw INSERT':>10} {'MAF':>7} {'LG sync':>7}"
        f" {'LG async':>8} | {'MAF/ours':>8} {'sync/ours':>9} {'async/ours':>10}"
        f" {'MAF/in-proc':>11} {'sync/in-proc':>12}  target"
    )
    ok = True
    for case in dict.fromkeys(row["case"] for row in peer_rows):
        mine = ours[case]["worker_us"]
        maf, lg_sync, lg_async = (us(case, peer) for peer in PEERS)
        target = ""
        if case == "loop-64k":
            if maf is not None and lg_sync is not None:
                passed = mine < maf and mine < lg_sync
                ok &= passed
                target = f"ahead of MAF and LangGraph: {'PASS' if passed else 'FAIL'}"
            else:
                missing = all(
                    theirs[(case, peer)]["status"].startswith("missing")
                    for peer in PEERS
                    if us(case, peer) is None
                )
                target = "ahead of MAF and LangGraph: " + (
                    f"SKIP ({INSTALL})" if missing else "NOT MEASURED (a peer failed, see below)"
                )

        in_process = ours[case]["engine_postgres_us"]
        print(
            f"   {case:>9} {mine:>7.0f} {in_process:>7.0f} {ours[case]['raw_insert_us']:>10.0f}"
            f" {cell(maf, 7)} {cell(lg_sync, 7)} {cell(lg_async, 8)} | {ratio(maf, mine, 8)}"
            f" {ratio(lg_sync, mine, 9)} {ratio(lg_async, mine, 10)}"
            f" {ratio(maf, in_process, 11)} {ratio(lg_sync, in_process, 12)}  {target}"
        )
    print(
        "   ours = the worker's figure above (first to last superstep commit); in-proc = our engine"
        " in this process on DjangoCheckpointStorage, as the peers run; peers = wall"
        " time of an in-process run / supersteps, after a warm-up run, median of the rounds;\n"
        "   peer/ours above 1: ours is faster; the target takes LangGraph's sync durability"
        " (each step's checkpoint committed before the next starts, as ours); async is extra"
    )
    for peer in PEERS:
        mine_rows = [row for row in peer_rows if row["peer"] == peer]
        measured = [row for row in mine_rows if row["us_per_superstep"] is not None]
        if measured:
            print(f"   {peer}: {measured[0]['label']}; {measured[0]['storage']}")
        elif len({row["status"] for row in mine_rows}) == 1:
            print(f"   {peer}: {mine_rows[0]['status']}")
            continue
        for row in mine_rows:
            if row["us_per_superstep"] is None:
                print(f"   {peer:>15} {row['case']:>9}: {row['status']}")
                continue
            print(
                f"   {peer:>15} {row['case']:>9}: {row['checkpoint_bytes_per_superstep']:>6.0f} B"
                f" sent, {row['stored_bytes_per_superstep']:>6.0f} B stored, "
                f"{row['rows_per_superstep']:.2f} rows, {row['commits_per_superstep']:.2f} commits"
                " per superstep"
            )
    return ok


def report(
    rows: list[dict[str, Any]],
    trips: dict[str, dict[str, float]],
    latest: list[dict[str, Any]],
    peer_rows: list[dict[str, Any]] | None = None,
) -> bool:
    ok = True
    print("\nA real celery worker (-P solo) on PostgreSQL, state changing every superstep")
    print(
        f"   {'case':>10} {'ckpt JSON B':>11} {'worker us':>10} {'raw INSERT us':>13} "
        f"{'ratio':>6} {'engine us':>9} {'in-proc us':>10} {'CPU us':>7} {'commits':>8} "
        f"{'trips':>6} {'txns':>5} "
        f"{'target':>14}"
    )
    for row in rows:
        case = row["case"]
        target = ""
        if case == "loop-1k":
            passed = row["ratio"] >= TARGET_RATIO
            target = f">= {TARGET_RATIO}: {'PASS' if passed else 'FAIL'}"
            ok &= passed
        elif case == "loop-64k":
            passed = row["ratio"] > 1
            target = f"> 1: {'PASS' if passed else 'FAIL'}"
            ok &= passed
        counted = trips.get(case, {})
        print(
            f"   {case:>10} {row['checkpoint_json_bytes']:>11} {row['worker_us']:>10.0f} "
            f"{row['raw_insert_us']:>13.0f} {row['ratio']:>6.2f} {row['engine_memory_us']:>9.0f} "
            f"{row['engine_postgres_us']:>10.0f} "
            f"{row['worker_cpu_us']:>7.0f} "
            f"{row['commits_per_superstep']:>8.2f} "
            f"{counted.get('round_trips', float('nan')):>6.2f} "
            f"{counted.get('transactions', float('nan')):>5.2f} {target:>14}"
        )
    print(
        "   ratio = worker supersteps/s over raw jsonb INSERT+COMMIT/s of the same checkpoint JSON"
        " (median of rounds, each bracketed by raw INSERTs);\n"
        "   engine = the workflow in-process on InMemoryCheckpointStorage; in-proc = in-process"
        " on DjangoCheckpointStorage (the peers' setting: no events, run progress, lease or"
        " Celery); CPU = the worker"
        " process's CPU; commits from pg_stat_database, trips and txns from a traced worker's"
        " libpq trace; all per superstep"
    )
    ok &= report_peers(rows, peer_rows)
    if latest:
        print("\nFind the latest checkpoint on PostgreSQL (DjangoCheckpointStorage.get_latest)")
        for row in latest:
            if "plan" in row:
                print(f"   plan: {row['plan']}")
                continue
            passed = row["checkpoints"] != 10_000 or row["by_workflow_us"] <= 1000
            ok &= passed
            print(
                f"   {row['checkpoints']:>7} checkpoints:"
                f" by workflow {row['by_workflow_us']:>5.0f} us,"
                f" by lineage {row['by_lineage_us']:>5.0f} us"
                + (
                    ""
                    if row["checkpoints"] != 10_000
                    else f"  (<= 1 ms: {'PASS' if passed else 'FAIL'})"
                )
            )
    return ok


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--supersteps", type=int, default=1000)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--cases", default=",".join(CASES))
    parser.add_argument("--trace-supersteps", type=int, default=200)
    parser.add_argument("--no-find-latest", action="store_true")
    parser.add_argument("--keep-database", action="store_true")
    parser.add_argument("--no-fail", action="store_true")
    parser.add_argument(
        "--no-peers", action="store_true", help="skip MAF and LangGraph (tests/bench/peers_pg.py)"
    )
    parser.add_argument("--json", type=Path)
    parser.add_argument(
        "--profile", type=Path, help="run the timed worker under cProfile, writing stats here"
    )
    args = parser.parse_args(argv)
    cases = [c for c in args.cases.split(",") if c]
    if unknown := set(cases) - set(CASES):
        parser.error(f"unknown cases {sorted(unknown)}; choose from {', '.join(CASES)}")
    server, redis_url = os.environ.get("DATABASE_URL", ""), os.environ.get("REDIS_URL", "")
    if not server.startswith(("postgres://", "postgresql://")) or not redis_url:
        parser.error(
            "set DATABASE_URL=postgres://... (the server to use) and REDIS_URL=redis://..."
        )

    database_url = create_database(server, "superstep_worker_bench")
    env = production_env(database_url, redis_url)
    env.update(
        SUPERSTEP_WORKFLOWS="worker_bench_flows",
        PYTHONPATH=os.pathsep.join(filter(None, [str(HERE), env.get("PYTHONPATH", "")])),
        DEBUG="0",
    )
    os.environ.update(env)
    processes = Processes(env, Path(tempfile.mkdtemp(prefix="superstep-worker-bench-")))
    _progress(f"database {urlsplit(database_url).path[1:]}, logs in {processes.logs}")
    db: Database | None = None
    try:
        import django

        django.setup()
        from django.core.management import call_command

        call_command("migrate", interactive=False, verbosity=0)
        db = Database(database_url)
        _progress("round trips (traced worker)")
        trips = count_round_trips(processes, env, db, cases, args.trace_supersteps)
        timed = _worker(processes, "timed", env, args.profile)
        _progress("timing")
        rows = [
            bench_case(database_url, db, case, args.supersteps, args.rounds, timed.pid)
            for case in cases
        ]
        latest = [] if args.no_find_latest else find_latest()
        if args.profile:
            timed.send_signal(signal.SIGTERM)  # a warm shutdown: cProfile writes its stats
            timed.wait(60)
    finally:
        processes.stop()
        if db is not None:
            db.connection.close()
        from django.db import connections

        connections.close_all()
        if not args.keep_database:
            drop_database(database_url)
    # After our cases, with the worker stopped and its database dropped: the peers run in
    # this process against the same server.
    peer_rows = (
        None if args.no_peers else measure_peers(server, cases, args.supersteps, args.rounds)
    )
    ok = report(rows, trips, latest, peer_rows)
    if args.json:
        args.json.write_text(
            json.dumps(
                {"rows": rows, "round_trips": trips, "find_latest": latest, "peers": peer_rows},
                indent=2,
            )
        )
    return 0 if ok or args.no_fail else 1


if __name__ == "__main__":
    sys.exit(main())
