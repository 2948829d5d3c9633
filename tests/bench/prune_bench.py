"""Retention benchmark on PostgreSQL: prune a million checkpoints in short transactions.

Creates a database of its own, under a fresh name, on the server ``DATABASE_URL`` points at
(default ``postgres://postgres@127.0.0.1:5432/postgres``; the database named there is only
used to connect, never touched, so a ``DATABASE_URL`` exported for the dashboard is safe). It
drops its database at the end unless ``--keep-database``, migrates it, and seeds
in SQL (``INSERT ... SELECT generate_series``, seconds rather than an ORM hour):

* ``--runs`` completed runs (default 10,000) × ``--per-run`` checkpoints (default 100), small
  JSON documents, one minute apart, each run's ``latest_checkpoint`` its newest;
* the blobs real checkpoints refer to: one shared by every checkpoint (a graph signature) and
  one per run used by its first ten checkpoints only (they become orphans when those go);
* one approval request per run, raised in its 20th checkpoint (protected, must survive).

Then it applies one policy (completed runs, keep the last ``--keep-last`` = 5 checkpoints)
through ``services.checkpoint_prune`` exactly as the admin, the command and the periodic job
do, and reports: what the preview (dry run) said and how long it took, total prune time,
checkpoints deleted, batches, the longest single transaction (target < 1 s), peak memory, and
how long a concurrent writer (a "worker" inserting checkpoints of another run every 20 ms)
waited at most while the prune ran: the table is never locked as a whole.

Usage::

    .venv/bin/python tests/bench/prune_bench.py [--runs 10000] [--per-run 100] [--keep-last 5]
        [--batch-size 1000] [--tracemalloc] [--keep-database] [--json FILE]

Exit status 0 when the longest transaction is under 1 s (not checked with ``--tracemalloc``,
which slows every allocation), the preview equals what was deleted and every protected
checkpoint is still there (or with ``--no-fail``), 1 otherwise.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import secrets
import statistics
import sys
import threading
import time
import tracemalloc
from pathlib import Path
from typing import Any, Self
from urllib.parse import urlsplit

import psycopg
from scratch_database import create_database, drop_database

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

DEFAULT_SERVER = "postgres://postgres@127.0.0.1:5432/postgres"
TARGET_LONGEST_TRANSACTION_SECONDS = 1.0


def _progress(text: str) -> None:
    print(text, file=sys.stderr, flush=True)


# ------------------------------------------------------------------------------ the database


def setup_django(url: str) -> None:
    os.environ.update(
        DJANGO_SETTINGS_MODULE="dashboard.config.settings",
        DATABASE_URL=url,
        DEBUG="0",  # DEBUG would keep every query in memory
        SECRET_KEY=secrets.token_urlsafe(50),
        ALLOWED_HOSTS="localhost",
        SECURE_SSL_REDIRECT="0",
        SUPERSTEP_BACKGROUND_SERVICES="0",
        LOG_LEVEL="WARNING",
    )
    os.environ.pop("REDIS_URL", None)
    import django

    django.setup()
    from django.core.management import call_command

    call_command("migrate", verbosity=0)


# ------------------------------------------------------------------------------------ seeding

# Run n (1..runs): id md5('run'||n)::uuid; checkpoint s (0..per_run-1): 'r<n>-s<s>'.
SEED_SQL = (
    """
INSERT INTO dashboard_workflowrun (
    id, workflow_name, status, input, output, error_message, error_type, traceback,
    current_superstep, engine_run_id, created_at, started_at, finished_at, updated_at,
    attempts, lease_owner, fencing_epoch, last_event_seq, on_hold, hold_reason)
SELECT md5('run' || n)::uuid, 'bench-refund', 'completed', '{}'::jsonb, '{"ok": true}'::jsonb,
       '', '', '', %(last)s, 'lineage-' || n, %(t0)s::timestamptz, %(t0)s::timestamptz,
       %(t0)s::timestamptz + interval '1 minute' * %(per_run)s, """
    """%(t0)s::timestamptz + interval '1 minute' * %(per_run)s,
       0, '', 1, 0, false, ''
FROM generate_series(1, %(runs)s) AS n;

INSERT INTO dashboard_checkpoint (
    checkpoint_id, run_id, engine_run_id, workflow_name, superstep, previous_checkpoint_id,
    graph_signature_hash, document, size_bytes, pending_request_count, created_at, on_hold)
SELECT 'r' || n || '-s' || s, md5('run' || n)::uuid, 'lineage-' || n, 'bench-refund', s,
       CASE WHEN s = 0 THEN NULL ELSE 'r' || n || '-s' || (s - 1) END,
       'sha256:bench',
       jsonb_build_object('checkpoint_id', 'r' || n || '-s' || s, 'run_id', 'lineage-' || n,
                          'iteration_count', s, 'state', jsonb_build_object('refund', s * 5),
                          'blob_refs', CASE WHEN s < 10
                              THEN jsonb_build_array("""
    """jsonb_build_array(jsonb_build_array('graph_signature'), 'sha256:graph-signature'),
                                                     jsonb_build_array("""
    """jsonb_build_array('state', 'items'), 'sha256:run-' || n))
                              ELSE jsonb_build_array("""
    """jsonb_build_array(jsonb_build_array('graph_signature'), 'sha256:graph-signature')) END,
                          'pending_request_ids', '[]'::jsonb),
       240, 0, %(t0)s::timestamptz + interval '1 minute' * s, false
FROM generate_series(1, %(runs)s) AS n, generate_series(0, %(last)s) AS s;

UPDATE dashboard_workflowrun SET latest_checkpoint_id = """
    """'r' || substr(engine_run_id, 9) || '-s' || %(last)s;

INSERT INTO dashboard_checkpointblob (digest, data, size_bytes, created_at)
VALUES ('sha256:graph-signature', '{"executors": ["a", "b"]}', 1200, %(t0)s::timestamptz);
INSERT INTO dashboard_checkpointblob (digest, data, size_bytes, created_at)
SELECT 'sha256:run-' || n, jsonb_build_object('items', n), 800, %(t0)s::timestamptz
FROM generate_series(1, %(runs)s) AS n;

INSERT INTO dashboard_checkpointblobuse (engine_run_id, blob_id)
SELECT 'lineage-' || n, 'sha256:graph-signature' FROM generate_series(1, %(runs)s) AS n;
INSERT INTO dashboard_checkpointblobuse (engine_run_id, blob_id)
SELECT 'lineage-' || n, 'sha256:run-' || n FROM generate_series(1, %(runs)s) AS n;

INSERT INTO dashboard_approvalrequest (
    request_id, engine_request_id, engine_run_id, run_id, checkpoint_id, executor_id,
    request_data, response_type, response_schema, status, response, reason, decided_at,
    created_at, required_approvals, default_applied)
SELECT 'lineage-' || n || ':req', 'req', 'lineage-' || n, md5('run' || n)::uuid,
       'r' || n || '-s19', 'gate', '{}'::jsonb, '', '{}'::jsonb, 'approved', 'true'::jsonb, '',
       %(t0)s::timestamptz, %(t0)s::timestamptz, 1, true
FROM generate_series(1, %(runs)s) AS n;

ANALYZE;
"""
)


def seed(url: str, runs: int, per_run: int) -> float:
    started = time.perf_counter()
    params = {"runs": runs, "per_run": per_run, "last": per_run - 1, "t0": "2026-01-01T00:00:00+00"}
    with psycopg.connect(url) as conn:
        for statement in filter(None, (s.strip() for s in SEED_SQL.split(";\n"))):
            conn.execute(statement, params)
    return time.perf_counter() - started


def counts(url: str) -> dict[str, int]:
    with psycopg.connect(url) as conn:
        row = conn.execute(
            "SELECT (SELECT count(*) FROM dashboard_checkpoint),"
            " (SELECT count(*) FROM dashboard_checkpointblobuse),"
            " (SELECT count(*) FROM dashboard_checkpointblob),"
            " (SELECT count(*) FROM dashboard_checkpoint c JOIN dashboard_approvalrequest a"
            "  ON a.checkpoint_id = c.checkpoint_id),"
            " (SELECT count(*) FROM dashboard_workflowrun w JOIN dashboard_checkpoint c"
            "  ON c.checkpoint_id = w.latest_checkpoint_id),"
            " (SELECT count(*) FROM dashboard_runevent WHERE type = 'checkpoints_pruned')"
        ).fetchone()
    assert row is not None
    keys = (
        "checkpoints",
        "blob_uses",
        "blobs",
        "approval_checkpoints",
        "latest_checkpoints",
        "pruned_events",
    )
    return dict(zip(keys, (int(v) for v in row), strict=True))


# ------------------------------------------------------------------- the concurrent "worker"


class Writer:
    """Inserts a checkpoint of an unrelated running run every 20 ms, timing each commit."""

    def __init__(self, url: str) -> None:
        self.url = url
        self.stop = threading.Event()
        self.latencies: list[float] = []
        self.thread = threading.Thread(target=self._loop, daemon=True)

    def _loop(self) -> None:
        with psycopg.connect(self.url) as conn:
            conn.execute(
                "INSERT INTO dashboard_workflowrun (id, workflow_name, status, input,"
                " error_message, error_type, traceback, current_superstep, engine_run_id,"
                " created_at, updated_at, attempts, lease_owner, lease_expires_at, fencing_epoch,"
                " last_event_seq, on_hold, hold_reason) VALUES (md5('writer')::uuid,"
                " 'bench-refund', 'running', '{}', '', '', '', 0, 'writer', now(), now(), 1, 'w',"
                " now() + interval '1 hour', 1, 0, false, '')"
            )
            conn.commit()
            step = 0
            while not self.stop.wait(0.02):
                started = time.perf_counter()
                conn.execute(
                    "INSERT INTO dashboard_checkpoint (checkpoint_id, run_id, engine_run_id,"
                    " workflow_name, superstep, graph_signature_hash, document, size_bytes,"
                    " pending_request_count, created_at, on_hold) VALUES (%s, md5('writer')::uuid,"
                    " 'writer', 'bench-refund', %s, 'sha256:bench', '{}', 2, 0, now(), false)",
                    (f"writer-{step}", step),
                )
                conn.execute(
                    "UPDATE dashboard_workflowrun SET current_superstep = %s"
                    " WHERE id = md5('writer')::uuid",
                    (step,),
                )
                conn.commit()
                self.latencies.append(time.perf_counter() - started)
                step += 1

    def __enter__(self) -> Self:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop.set()
        self.thread.join(10)


# ---------------------------------------------------------------------------------- the run


def peak_rss_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # KiB on Linux


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=10_000)
    parser.add_argument("--per-run", type=int, default=100)
    parser.add_argument("--keep-last", type=int, default=5)
    parser.add_argument("--batch-size", type=int, default=1000)
    parser.add_argument(
        "--tracemalloc",
        action="store_true",
        help="trace Python allocations (several times slower: times are then not gated)",
    )
    parser.add_argument("--keep-database", action="store_true")
    parser.add_argument("--no-fail", action="store_true")
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    if args.per_run < 20:
        parser.error(
            "--per-run must be at least 20 (each run's approval is in its 20th checkpoint)"
        )

    server = os.environ.get("DATABASE_URL") or DEFAULT_SERVER
    if not server.startswith(("postgres://", "postgresql://")):
        parser.error("DATABASE_URL must name a PostgreSQL server (postgres://...)")
    url = create_database(server, "superstep_prune_bench")
    try:
        return measure(url, args)
    finally:
        if not args.keep_database:
            from django.conf import settings

            if settings.configured:
                from django.db import connections

                connections.close_all()
            drop_database(url)


def measure(url: str, args: argparse.Namespace) -> int:
    _progress(f"migrating {urlsplit(url).path.lstrip('/')} ...")
    setup_django(url)
    from dashboard import services
    from dashboard.models import RetentionPolicy

    total = args.runs * args.per_run
    _progress(f"seeding {args.runs:,} runs x {args.per_run} = {total:,} checkpoints ...")
    seed_seconds = seed(url, args.runs, args.per_run)
    before = counts(url)
    policy = RetentionPolicy.objects.create(
        name="bench-keep-last", status="completed", keep_last_checkpoints=args.keep_last
    )

    _progress("preview (dry run) ...")
    started = time.perf_counter()
    preview = services.retention_preview(policy)
    preview_seconds = time.perf_counter() - started

    _progress("pruning ...")
    rss_before = peak_rss_mib()
    if args.tracemalloc:
        tracemalloc.start()
    with Writer(url) as writer:
        started = time.perf_counter()
        (report,) = services.checkpoint_prune(policy=policy.name, batch_size=args.batch_size)
        prune_seconds = time.perf_counter() - started
    traced_peak = tracemalloc.get_traced_memory()[1] / 2**20 if args.tracemalloc else None
    tracemalloc.stop()
    after = counts(url)

    expected_kept = args.runs * (args.keep_last + (1 if args.keep_last < args.per_run - 19 else 0))
    results: dict[str, Any] = {
        "machine": (
            f"{platform.node()} {platform.machine()} {os.cpu_count()} CPUs, "
            f"Python {platform.python_version()}"
        ),
        "postgres": _server_version(url),
        "runs": args.runs,
        "checkpoints_seeded": before["checkpoints"],
        "seed_seconds": round(seed_seconds, 1),
        "preview": {
            "seconds": round(preview_seconds, 1),
            "runs": preview.runs,
            "checkpoints": preview.checkpoints,
            "megabytes": round(preview.megabytes, 1),
        },
        "prune": {
            "seconds": round(prune_seconds, 1),
            "checkpoints_deleted": report.checkpoints,
            "checkpoints_per_second": round(report.checkpoints / prune_seconds),
            "batches": report.batches,
            "batch_size": args.batch_size,
            "longest_transaction_ms": round(report.longest_transaction_seconds * 1000, 1),
            "peak_rss_mib_before": round(rss_before, 1),
            "peak_rss_mib_after": round(peak_rss_mib(), 1),
            "tracemalloc_peak_mib": round(traced_peak, 1) if traced_peak is not None else None,
        },
        "concurrent_writer": {
            "commits": len(writer.latencies),
            "p50_ms": round(statistics.median(writer.latencies) * 1000, 1)
            if writer.latencies
            else None,
            "max_ms": round(max(writer.latencies) * 1000, 1) if writer.latencies else None,
        },
        "after": after,
    }
    checks = {
        # tracemalloc slows every allocation several times over: time is not measured then
        "longest transaction < 1 s": args.tracemalloc
        or report.longest_transaction_seconds < TARGET_LONGEST_TRANSACTION_SECONDS,
        "preview equals deleted": (preview.runs, preview.checkpoints, preview.bytes)
        == (report.runs, report.checkpoints, report.bytes),
        "deleted = seeded - kept": report.checkpoints == before["checkpoints"] - expected_kept
        and after["checkpoints"] - results["concurrent_writer"]["commits"] == expected_kept,
        "approval and latest checkpoints kept": after["approval_checkpoints"]
        == before["approval_checkpoints"]
        and after["latest_checkpoints"] == args.runs,
        "orphan blobs removed, shared kept": after["blobs"] == 1,
    }
    results["checks"] = checks
    print(json.dumps(results, indent=2))
    if args.json:
        args.json.write_text(json.dumps(results, indent=2))
    for name, ok in checks.items():
        _progress(f"{'PASS' if ok else 'FAIL'}  {name}")
    return 0 if args.no_fail or all(checks.values()) else 1


def _server_version(url: str) -> str:
    with psycopg.connect(url) as conn:
        row = conn.execute("SHOW server_version").fetchone()
    return str(row[0]) if row else "?"


if __name__ == "__main__":
    sys.exit(main())
