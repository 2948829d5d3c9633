"""What one ``/metrics`` scrape costs on PostgreSQL as the runs table grows.

Creates a database of its own on the server ``DATABASE_URL`` points at (default
``postgres://postgres@127.0.0.1:5432/postgres``, only used to connect), migrates it, seeds
``--runs`` runs in SQL (20 workflows, every status, a live lease on each running one), then
times the run gauges' one aggregate query (``collector.run_counts``) and a whole scrape
(``exposition.render``: that query, this process's instruments and the text encoding), each
the median of ``--repeat`` calls, and drops the database.

Usage::

    .venv/bin/python tests/bench/metrics_bench.py [--runs 100000 500000] [--repeat 7]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

import psycopg
from prune_bench import setup_django
from scratch_database import create_database, drop_database

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

DEFAULT_SERVER = "postgres://postgres@127.0.0.1:5432/postgres"

# Run n: workflow n % 20; statuses in the proportions of a busy deployment (most finished).
SEED_SQL = """
INSERT INTO dashboard_workflowrun (
    id, workflow_name, status, input, output, error_message, error_type, traceback,
    current_superstep, engine_run_id, created_at, started_at, finished_at, updated_at,
    attempts, lease_owner, lease_expires_at, fencing_epoch, last_event_seq, on_hold, hold_reason)
SELECT gen_random_uuid(), 'bench-' || (n %% 20), st,
       jsonb_build_object('order_id', md5(n::text), 'lines', jsonb_build_array(n, n + 1)),
       jsonb_build_object('total', n, 'note', repeat('x', 120)),
       CASE WHEN st = 'failed' THEN 'boom' ELSE '' END, '', '', 3, 'lineage-' || n,
       now(), now(),
       CASE WHEN st IN ('completed', 'failed', 'cancelled') THEN now() END, now(),
       1, CASE WHEN st = 'running' THEN 'worker' ELSE '' END,
       CASE WHEN st = 'running' THEN now() + interval '1 minute' END, 1, 0, false, ''
FROM (
    SELECT n, (ARRAY['completed', 'completed', 'completed', 'completed', 'failed', 'cancelled',
                     'queued', 'running', 'waiting', 'completed'])[1 + n %% 10] AS st
    FROM generate_series(%(first)s, %(last)s) AS n
) AS seeded;
"""


def median_ms(call: Callable[[], object], repeat: int) -> float:
    times = []
    for _ in range(repeat):
        started = time.perf_counter()
        call()
        times.append(time.perf_counter() - started)
    return statistics.median(times) * 1000


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, nargs="+", default=[100_000, 500_000])
    parser.add_argument("--repeat", type=int, default=7)
    options = parser.parse_args()
    url = create_database(os.environ.get("DATABASE_URL") or DEFAULT_SERVER, "superstep_metrics")
    try:
        setup_django(url)
        from dashboard.observability import collector, exposition

        seeded = 0
        print(f"{'runs':>9}  {'table':>8}  {'query ms':>8}  {'scrape ms':>9}")
        for target in sorted(options.runs):
            with psycopg.connect(url, autocommit=True) as conn:
                conn.execute(SEED_SQL, {"first": seeded + 1, "last": target})
                conn.execute("VACUUM ANALYZE dashboard_workflowrun")
                size = conn.execute(
                    "SELECT pg_size_pretty(pg_total_relation_size('dashboard_workflowrun'))"
                ).fetchone()
            seeded = target
            query = median_ms(collector.run_counts, options.repeat)
            scrape = median_ms(lambda: exposition.render(""), options.repeat)
            print(f"{target:>9}  {size[0] if size else '?':>8}  {query:>8.1f}  {scrape:>9.1f}")
    finally:
        from django.db import connections

        connections.close_all()
        drop_database(url)


if __name__ == "__main__":
    main()
