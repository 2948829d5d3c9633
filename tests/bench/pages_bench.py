"""``tests/bench/pages_bench.py [--runs 100000]``: seed many runs, then time every dashboard page.

Seeding writes straight to the configured database with ``bulk_create`` (a realistic mix of
workflows and statuses over 30 days, with a pending approval for each waiting run), then runs a
few real workflows through the services and the worker, so the run, checkpoint and inbox pages
have genuine checkpoints to show. Each page is requested through Django's test client (the
whole middleware stack, a signed-in superuser) several times; the table shows the median.

Seeded rows are marked (``engine_run_id`` starts with ``bench-``); ``--clear`` removes them.
Use a database of its own, e.g.
``DATABASE_URL=postgres://postgres@127.0.0.1:5432/superstep_bench DEBUG=1 \
.venv/bin/python tests/bench/pages_bench.py --runs 100000``. The script sets up Django itself
(``DJANGO_SETTINGS_MODULE`` defaults to ``dashboard.config.settings``) with the demo app's
workflows (``SUPERSTEP_DEMO=1``); tests/dashboard/web/test_web_bench.py calls ``bench_pages()``.
"""

from __future__ import annotations

import argparse
import datetime as dt
import os
import random
import statistics
import sys
import time
import uuid
from collections.abc import Iterator
from decimal import Decimal
from pathlib import Path
from typing import Any, TextIO

import django

if __name__ == "__main__":
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "dashboard.config.settings")
    os.environ.setdefault("SUPERSTEP_DEMO", "1")  # the pages show the demo workflows' runs
    django.setup()

# Imported after django.setup() when run as a script.
from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.management import call_command
from django.db import connection, transaction
from django.test import Client, override_settings
from django.utils import timezone

from dashboard import services
from dashboard.execution import embedded, registry
from dashboard.models import (
    ApprovalRequest,
    ApprovalStatus,
    Checkpoint,
    RunStatus,
    WorkflowRun,
)
from dashboard.web.pagination import encode_cursor

BENCH_PREFIX = "bench-"
BATCH = 5000
BENCH_USER = "bench-admin"
# (status, share of runs): mostly finished, a steady trickle of live and waiting ones.
STATUS_MIX = (
    (RunStatus.COMPLETED, 0.70),
    (RunStatus.FAILED, 0.10),
    (RunStatus.CANCELLED, 0.05),
    (RunStatus.WAITING, 0.08),
    (RunStatus.RUNNING, 0.04),
    (RunStatus.QUEUED, 0.03),
)


def _statuses(count: int, rng: random.Random) -> Iterator[str]:
    names = [status for status, _ in STATUS_MIX]
    weights = [share for _, share in STATUS_MIX]
    for _ in range(count):
        yield rng.choices(names, weights)[0]


def seed_runs(count: int, *, seed: int = 7, now: dt.datetime | None = None) -> int:
    """Insert ``count`` runs (and a checkpoint plus a pending request for each waiting one).

    Returns the number of runs written. Fast: a few bulk inserts per 5000 runs.
    """
    rng = random.Random(seed)
    now = now or timezone.now()
    workflows = registry.names()
    span = dt.timedelta(days=30).total_seconds()
    written = 0
    statuses = _statuses(count, rng)
    usage = random.Random(seed + 1)  # its own draws: the other columns stay as they were
    for start in range(0, count, BATCH):
        runs: list[WorkflowRun] = []
        for index in range(start, min(count, start + BATCH)):
            run = _run(index, next(statuses), rng.choice(workflows), now, span, count, rng)
            _add_usage(run, usage)
            runs.append(run)
        with transaction.atomic():
            WorkflowRun.objects.bulk_create(runs)
            _waiting_requests([r for r in runs if r.status == RunStatus.WAITING])
        written += len(runs)
    return written


def _run(
    index: int,
    status: str,
    workflow: str,
    now: dt.datetime,
    span: float,
    count: int,
    rng: random.Random,
) -> WorkflowRun:
    # Evenly spread over 30 days, newest last, with a little jitter so no two runs tie.
    created = now - dt.timedelta(seconds=span * (1 - index / max(count, 1)) + rng.random())
    started = created + dt.timedelta(seconds=rng.uniform(0.05, 2))
    finished = started + dt.timedelta(seconds=rng.uniform(0.5, 90))
    terminal = status in (RunStatus.COMPLETED, RunStatus.FAILED, RunStatus.CANCELLED)
    return WorkflowRun(
        id=uuid.UUID(int=rng.getrandbits(128), version=4),
        workflow_name=workflow,
        status=status,
        input={"order_id": f"ORD-{100000 + index}", "note": f"bench run {index}", "work_ms": 0},
        output={"ok": True, "index": index} if status == RunStatus.COMPLETED else None,
        error_type="RuntimeError" if status == RunStatus.FAILED else "",
        error_message="simulated failure in the benchmark" if status == RunStatus.FAILED else "",
        current_superstep=rng.randint(0, 12),
        engine_run_id=f"{BENCH_PREFIX}{uuid.UUID(int=rng.getrandbits(128)).hex[:24]}",
        created_at=created,
        started_at=None if status == RunStatus.QUEUED else started,
        finished_at=finished if terminal else None,
    )


def _add_usage(run: WorkflowRun, rng: random.Random) -> None:
    """A third of the runs had agents: their tokens, and a cost at a few dollars a million."""
    if rng.random() >= 1 / 3:
        return
    run.input_tokens = rng.randint(200, 400_000)
    run.output_tokens = rng.randint(50, 80_000)
    run.cost = (Decimal(run.input_tokens) * 3 + Decimal(run.output_tokens) * 15) / 1_000_000


def _waiting_requests(runs: list[WorkflowRun]) -> None:
    if not runs:
        return
    checkpoints = [
        Checkpoint(
            checkpoint_id=f"{BENCH_PREFIX}{run.pk.hex}",
            run=run,
            engine_run_id=run.engine_run_id,
            workflow_name=run.workflow_name,
            superstep=run.current_superstep,
            graph_signature_hash="bench",
            document={
                "version": "1",
                "blob_refs": [],
                "pending_request_ids": ["r1"],
                "metadata": {"kind": "superstep"},
            },
            size_bytes=2048,
            pending_request_count=1,
            created_at=run.started_at or run.created_at,
        )
        for run in runs
    ]
    Checkpoint.objects.bulk_create(checkpoints)
    ApprovalRequest.objects.bulk_create(
        ApprovalRequest(
            request_id=f"{run.engine_run_id}:r1",
            engine_request_id="r1",
            engine_run_id=run.engine_run_id,
            run=run,
            checkpoint=checkpoint,
            executor_id="hitl-gate",
            request_data={"order_id": (run.input or {}).get("order_id"), "question": "Replace?"},
            response_type="dashboard.demo.workflows.ApprovalDecision",
            response_schema={"type": "object", "properties": {"approved": {"type": "boolean"}}},
            status=ApprovalStatus.PENDING,
            created_at=checkpoint.created_at,
        )
        for run, checkpoint in zip(runs, checkpoints, strict=True)
    )


def clear_bench_runs() -> int:
    runs = WorkflowRun.objects.filter(engine_run_id__startswith=BENCH_PREFIX)
    ApprovalRequest.objects.filter(run__in=runs).delete()
    deleted, _ = runs.delete()
    return deleted


def real_runs(user: Any) -> dict[str, WorkflowRun]:
    """A few genuine runs through the services and the worker, for the detail pages."""
    started = {
        "waiting": services.run_start(
            workflow_name="return-replace", input={"order_id": "ORD-BENCH", "work_ms": 0}, user=user
        ),
        "long": services.run_start(
            workflow_name="squares", input={"limit": 60, "work_ms": 0}, user=user
        ),
        "fan": services.run_start(workflow_name="fan-out-fan-in", input={"work_ms": 0}, user=user),
    }
    embedded.wait_for_background_tasks(300)
    return {key: WorkflowRun.objects.get(pk=run.pk) for key, run in started.items()}


def bench_pages(
    *,
    runs: int = 10_000,
    repeat: int = 7,
    clear: bool = False,
    no_seed: bool = False,
    stdout: TextIO | None = None,
) -> None:
    """Seed ``runs`` runs into the configured database and print each page's timings."""
    out = stdout or sys.stdout
    call_command("migrate", interactive=False, verbosity=0)
    if clear:
        out.write(f"cleared {clear_bench_runs()} rows of earlier bench runs\n")
    user = _user()
    if not no_seed:
        began = time.perf_counter()
        written = seed_runs(runs)
        out.write(f"seeded {written} runs in {time.perf_counter() - began:.1f} s\n")
    if connection.vendor == "postgresql":
        with connection.cursor() as cursor:
            cursor.execute("ANALYZE")
    real = real_runs(user)
    total = WorkflowRun.objects.count()
    out.write(
        f"{total} runs in the {connection.vendor} database; "
        f"timing pages ({repeat} requests each)\n\n"
    )
    _table(_timings(user, real, repeat), out)
    out.flush()


def _user() -> Any:
    model = get_user_model()
    user = model.objects.filter(username=BENCH_USER).first()
    return user or model.objects.create_superuser(BENCH_USER, password=uuid.uuid4().hex)


def _pages(real: dict[str, WorkflowRun]) -> list[tuple[str, str]]:
    waiting, long = real["waiting"], real["long"]
    middle = Checkpoint.objects.filter(run=long).order_by("created_at")[30]
    gate = Checkpoint.objects.filter(run=waiting).order_by("-created_at").first()
    approval = ApprovalRequest.objects.filter(run=waiting).first()
    oldest = WorkflowRun.objects.order_by("-created_at")[50]
    cursor = _cursor(oldest)
    pages = [
        ("runs list", "/"),
        ("runs list, page 2 (keyset)", f"/?after={cursor}"),
        ("runs list, status=waiting", "/?status=waiting"),
        ("runs list, workflow=squares", "/?workflow=squares"),
        ("runs list, oldest first", "/?sort=created"),
        (
            "runs list, last 7 days",
            f"/?created_from={(timezone.now() - dt.timedelta(days=7)).date()}",
        ),
        ("runs list, search run id prefix", f"/?q={str(oldest.pk)[:8]}"),
        ("runs list, search input text", "/?q=ORD-1999"),
        ("runs list table (htmx refresh)", "/ htmx"),
        ("runs list, dearest first", "/?sort=-cost"),
        ("runs list, cheapest first", "/?sort=cost"),
        ("runs list, cost at least 2", "/?cost_min=2"),
        ("runs list, cost 0.5 to 0.6, dearest first", "/?cost_min=0.5&cost_max=0.6&sort=-cost"),
        ("runs list, tokens at least 300000", "/?tokens_min=300000"),
        ("runs list, workflow=squares with totals", "/?workflow=squares&cost_min=0.01"),
        ("start run form", "/runs/start/?workflow=return-replace"),
        ("run detail (waiting, 5 checkpoints)", f"/runs/{waiting.pk}/"),
        ("run detail (60 supersteps)", f"/runs/{long.pk}/"),
        (
            "checkpoint inspector (superstep 30 of 60)",
            f"/runs/{long.pk}/checkpoints/{middle.checkpoint_id}/",
        ),
        (
            "checkpoint inspector (approval gate)",
            f"/runs/{waiting.pk}/checkpoints/{gate.checkpoint_id}/" if gate else "/",
        ),
        (
            "checkpoint download",
            f"/runs/{long.pk}/checkpoints/{middle.checkpoint_id}/download/",
        ),
        ("approval inbox", "/approvals/"),
        (
            "approval inbox, request selected",
            f"/approvals/?request={approval.request_id}" if approval else "/approvals/",
        ),
        ("approval archive", "/approvals/archive/"),
        ("storage", "/storage/"),
    ]
    return pages


def _timings(
    user: Any, real: dict[str, WorkflowRun], repeat: int
) -> list[tuple[str, int, float, float, int]]:
    rows = []
    # The test client's host, plain HTTP, and static URLs without collectstatic's manifest:
    # what is measured is the page, not the deployment's HTTPS and static setup.
    plain_static = {
        **settings.STORAGES,
        "staticfiles": {"BACKEND": "django.contrib.staticfiles.storage.StaticFilesStorage"},
    }
    with override_settings(
        ALLOWED_HOSTS=["testserver"], SECURE_SSL_REDIRECT=False, STORAGES=plain_static
    ):
        client = Client()
        client.force_login(user)
        for label, url in _pages(real):
            headers = {}
            if url.endswith(" htmx"):
                url = url.removesuffix(" htmx")
                headers = {"HX-Request": "true", "HX-Target": "runs-table"}
            times, status, size = [], 0, 0
            for _ in range(repeat + 1):
                began = time.perf_counter()
                response = client.get(url, headers=headers)
                times.append((time.perf_counter() - began) * 1000)
                status, size = response.status_code, len(response.content)
            times = times[1:]  # the first request warms caches (templates, graph layouts)
            rows.append((label, status, statistics.median(times), max(times), size))
    return rows


def _table(rows: list[tuple[str, int, float, float, int]], out: TextIO) -> None:
    width = max(len(label) for label, *_ in rows)
    out.write(f"{'page':<{width}}  status  median ms  max ms  bytes\n")
    out.writelines(
        f"{label:<{width}}  {status:>6}  {median:9.1f}  {worst:6.1f}  {size:>6}\n"
        for label, status, median, worst, size in rows
    )


def _cursor(run: WorkflowRun) -> str:
    return encode_cursor(run.created_at, run.pk)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=10_000, help="runs to seed (default 10000)")
    parser.add_argument("--repeat", type=int, default=7, help="requests per page (median shown)")
    parser.add_argument("--clear", action="store_true", help="delete earlier bench runs first")
    parser.add_argument("--no-seed", action="store_true", help="time the pages only")
    args = parser.parse_args(argv)
    bench_pages(runs=args.runs, repeat=args.repeat, clear=args.clear, no_seed=args.no_seed)
    return 0


if __name__ == "__main__":
    sys.exit(main())
