"""``tests/bench/thread_bench.py [--runs 100000] [--messages 2000]``: a long thread's pages.

An agent run whose conversation holds ``--messages`` messages, among ``--runs`` seeded runs
(``pages_bench.seed_runs``), on the configured database: how fast its run page, its latest
checkpoint's page and the checkpoint diff answer. The run goes through the services and the
worker (``thread_bench_flows.py``); the pages through Django's whole middleware stack, signed
in, each requested ``--repeat`` times after one warm-up. The target: under 150 ms on
PostgreSQL at 100,000 runs. Prints median, p95 and the ratio of the run page's median to the
target, and how many messages the pages drew (a page, never the whole thread).

Use a database of its own, e.g. ``DATABASE_URL=postgres://postgres@127.0.0.1:5432/superstep_thread
.venv/bin/python tests/bench/thread_bench.py``; ``--no-seed`` times an already seeded one.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

import django

if __name__ == "__main__":
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "dashboard.config.settings")
    os.environ.setdefault("SUPERSTEP_DEMO", "1")
    os.environ["SUPERSTEP_WORKFLOWS"] = "thread_bench_flows"
    django.setup()

from django.conf import settings
from django.core.management import call_command
from django.db import connection
from django.test import Client, override_settings
from pages_bench import _user, seed_runs

from dashboard import services
from dashboard.execution import embedded
from dashboard.models import Checkpoint, RunStatus, WorkflowRun

TARGET_MS = 150.0


def long_thread(messages: int) -> WorkflowRun:
    user = _user()
    started = services.run_start(workflow_name="bench-long-thread", input=messages, user=user)
    embedded.wait_for_background_tasks(600)
    run = WorkflowRun.objects.get(pk=started.pk)
    if run.status != RunStatus.COMPLETED:
        raise RuntimeError(f"the long thread's run ended {run.status}: {run.error_message}")
    return run


def timed(client: Client, url: str, repeat: int) -> tuple[list[float], int, str]:
    times, body = [], ""
    status = 0
    for _ in range(repeat + 1):
        began = time.perf_counter()
        response = client.get(url)
        times.append((time.perf_counter() - began) * 1000)
        status, body = response.status_code, response.content.decode()
    return times[1:], status, body


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=100_000)
    parser.add_argument("--messages", type=int, default=2000)
    parser.add_argument("--repeat", type=int, default=20)
    parser.add_argument("--no-seed", action="store_true")
    args = parser.parse_args(argv)
    call_command("migrate", interactive=False, verbosity=0)
    if not args.no_seed:
        began = time.perf_counter()
        written = seed_runs(args.runs)
        print(f"seeded {written} runs in {time.perf_counter() - began:.1f} s")
    if connection.vendor == "postgresql":
        with connection.cursor() as cursor:
            cursor.execute("ANALYZE")
    run = long_thread(args.messages)
    latest = Checkpoint.objects.filter(run=run).order_by("-created_at").first()
    first = Checkpoint.objects.filter(run=run).order_by("created_at").first()
    assert latest is not None and first is not None
    total = WorkflowRun.objects.count()
    pages = [
        ("run page", f"/runs/{run.pk}/"),
        ("latest checkpoint", f"/runs/{run.pk}/checkpoints/{latest.checkpoint_id}/"),
        (
            "diff first → latest",
            f"/runs/{run.pk}/checkpoints/{latest.checkpoint_id}/?compare={first.checkpoint_id}",
        ),
    ]
    plain_static = {
        **settings.STORAGES,
        "staticfiles": {"BACKEND": "django.contrib.staticfiles.storage.StaticFilesStorage"},
    }
    print(
        f"{total} runs in the {connection.vendor} database; a conversation of "
        f"{args.messages} messages; {args.repeat} requests per page\n"
    )
    print(f"{'page':<22} status  median ms  p95 ms  bytes   messages drawn")
    medians = {}
    with override_settings(
        ALLOWED_HOSTS=["testserver"], SECURE_SSL_REDIRECT=False, STORAGES=plain_static
    ):
        client = Client()
        client.force_login(_user())
        for label, url in pages:
            times, status, body = timed(client, url, args.repeat)
            p95 = statistics.quantiles(times, n=20, method="inclusive")[18]
            medians[label] = statistics.median(times)
            drawn = body.count('class="chat-turn')
            print(
                f"{label:<22} {status:>6}  {medians[label]:9.1f}  {p95:6.1f}  {len(body):>7}  "
                f"{drawn:>6}"
            )
    print(f"\nrun page median / target ({TARGET_MS:.0f} ms): {medians['run page'] / TARGET_MS:.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
