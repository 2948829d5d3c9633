"""Bulk action benchmark on PostgreSQL: cancel 1,000 runs at once, through a real Celery worker.

The path production takes: ``services.bulk_start`` records the action and its runs and
publishes the task; a ``celery -A dashboard worker`` process started here works through the
runs a chunk at a time, each one through ``services.run_cancel`` (lock, status, approvals,
event, audit) in its own transaction. Meanwhile a sampler on another connection reads
``pg_stat_activity`` every 20 ms and keeps the oldest open transaction it sees on the
benchmark's database: the longest any transaction was held, to 20 ms.

Creates a database of its own on the server ``DATABASE_URL`` points at (default
``postgres://postgres@127.0.0.1:5432/postgres``, only used to connect) and drops it at the end.
The worker's broker is ``BULK_BENCH_REDIS_URL`` (default ``redis://127.0.0.1:6379/14``), which
it only reads and writes its own messages on; nothing is flushed.

Usage::

    .venv/bin/python tests/bench/bulk_bench.py [--runs 1000] [--json FILE]

Targets (issue 15): the action finishes within 10 s and no transaction is held longer than 1 s.
Exit status 0 when both hold.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import secrets
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import psycopg
from scratch_database import create_database, drop_database

REPO = Path(__file__).resolve().parents[2]
TARGET_SECONDS = 10.0
TARGET_TRANSACTION_SECONDS = 1.0


def environment(url: str, redis_url: str) -> dict[str, str]:
    return {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "dashboard.config.settings",
        "DATABASE_URL": url,
        "REDIS_URL": redis_url,
        "DEBUG": "0",
        "SECRET_KEY": secrets.token_urlsafe(50),
        "ALLOWED_HOSTS": "localhost",
        "SECURE_SSL_REDIRECT": "0",
        "SUPERSTEP_BACKGROUND_SERVICES": "0",
        "SUPERSTEP_DEMO": "1",
        "DATABASE_CONN_MAX_AGE": "60",
        "LOG_LEVEL": "WARNING",
    }


class LongestTransaction(threading.Thread):
    """Samples the age of the oldest open transaction on one database until stopped."""

    def __init__(self, url: str) -> None:
        super().__init__(daemon=True)
        self.url = url
        self.longest = 0.0
        self.samples = 0
        self._stop = threading.Event()

    def run(self) -> None:
        name = self.url.rsplit("/", 1)[-1]
        with psycopg.connect(self.url, autocommit=True) as conn:
            while not self._stop.is_set():
                row = conn.execute(
                    "SELECT coalesce(max(extract(epoch FROM clock_timestamp() - xact_start)), 0)"
                    " FROM pg_stat_activity WHERE datname = %s AND pid <> pg_backend_pid()"
                    " AND xact_start IS NOT NULL",
                    (name,),
                ).fetchone()
                self.longest = max(self.longest, float(row[0]) if row else 0.0)
                self.samples += 1
                time.sleep(0.02)

    def stop(self) -> float:
        self._stop.set()
        self.join(5)
        return self.longest


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=1000)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()

    server = os.environ.get("DATABASE_URL", "postgres://postgres@127.0.0.1:5432/postgres")
    redis_url = os.environ.get("BULK_BENCH_REDIS_URL", "redis://127.0.0.1:6379/14")
    url = create_database(server, "superstep_bulk")
    env = environment(url, redis_url)
    workers: list[subprocess.Popen[bytes]] = []
    try:
        os.environ.update(env)
        import django

        django.setup()
        from django.core.management import call_command

        call_command("migrate", verbosity=0)
        report = _measure(args.runs, url, env, workers)
    finally:
        for worker in workers:
            worker.terminate()
            try:
                worker.wait(20)
            except subprocess.TimeoutExpired:
                worker.kill()
        drop_database(url)

    report["machine"] = {"python": platform.python_version(), "cpus": os.cpu_count()}
    print(json.dumps(report, indent=2))
    if args.json:
        args.json.write_text(json.dumps(report, indent=2))
    ok = (
        report["seconds"] < TARGET_SECONDS
        and report["longest_transaction_seconds"] < TARGET_TRANSACTION_SECONDS
    )
    print(
        f"\n{args.runs} runs cancelled in {report['seconds']:.2f} s "
        f"(target < {TARGET_SECONDS:.0f} s), "
        f"{report['ms_per_run']:.1f} ms a run; longest transaction "
        f"{report['longest_transaction_seconds'] * 1000:.0f} ms "
        f"(target < {TARGET_TRANSACTION_SECONDS * 1000:.0f} ms): {'ok' if ok else 'MISSED'}"
    )
    return 0 if ok else 1


def _measure(
    runs: int, url: str, env: dict[str, str], workers: list[subprocess.Popen[bytes]]
) -> dict[str, Any]:
    import uuid

    from django.contrib.auth.models import Group, User
    from django.utils import timezone

    from dashboard.models import AuditEntry, BulkAction, RunStatus, WorkflowRun
    from dashboard.services import bulk

    admin = User.objects.create_user("bench-ops")
    admin.groups.add(Group.objects.get(name="Operator"))
    now = timezone.now()
    WorkflowRun.objects.bulk_create(
        [
            WorkflowRun(
                workflow_name="squares",
                input={"limit": 3},
                status=RunStatus.WAITING,
                engine_run_id=uuid.uuid4().hex,
                created_at=now,
                started_at=now,
            )
            for _ in range(runs)
        ],
        batch_size=1000,
    )
    ids = [str(pk) for pk in WorkflowRun.objects.values_list("pk", flat=True)]

    worker = subprocess.Popen(
        [
            sys.executable,
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
            f"bulk-bench-{os.getpid()}@%h",
        ],
        cwd=REPO,
        env=env,
    )
    workers.append(worker)
    time.sleep(3)  # the worker connects to the broker before the task is published

    sampler = LongestTransaction(url)
    sampler.start()
    started = time.perf_counter()
    action = bulk.bulk_start("cancel", ids, user=admin, reason="bulk benchmark")
    asked = time.perf_counter() - started
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        state = BulkAction.objects.filter(pk=action.pk).values_list("status", flat=True).first()
        if state == BulkAction.FINISHED:
            break
        time.sleep(0.02)
    elapsed = time.perf_counter() - started
    longest = sampler.stop()
    action.refresh_from_db()
    cancelled = WorkflowRun.objects.filter(status=RunStatus.CANCELLED).count()
    audited = AuditEntry.objects.filter(action="cancel").count()
    return {
        "runs": runs,
        "status": action.status,
        "done": action.done,
        "skipped": action.skipped,
        "cancelled": cancelled,
        "audited": audited,
        "seconds": round(elapsed, 3),
        "request_seconds": round(asked, 3),
        "ms_per_run": round(elapsed * 1000 / max(runs, 1), 2),
        "longest_transaction_seconds": round(longest, 3),
        "transaction_samples": sampler.samples,
    }


if __name__ == "__main__":
    sys.exit(main())
