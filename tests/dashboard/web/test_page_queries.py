"""What each page costs the database: a bounded number of queries, the same for a small and a
large history (runs, events, checkpoints, requests, audit entries). And the Python renderings of
the components the runs list repeats are the components' own HTML.

A count that grows with the data is an N+1; each test measures one page twice, with more rows
the second time, and requires the same count, under a bound (today's count and a query or two
to spare) that leaves no room for one per row. Counts include the session, the user, its one
permission query and the navigation badge.
"""

from __future__ import annotations

import datetime as dt
import importlib.util
import sys
from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
from django.db import connection
from django.template.loader import render_to_string
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from dashboard import services
from dashboard.models import (
    ApprovalRequest,
    ApprovalStatus,
    AuditEntry,
    Checkpoint,
    RunStatus,
    WorkflowRun,
)
from dashboard.web.components import status_pill_html, time_html
from dashboard.web.durations import RunDuration
from dashboard.web.operations import storage as views_storage
from dashboard.web.runs import rows as run_rows

PAGES_BENCH = Path(__file__).resolve().parents[2] / "bench" / "pages_bench.py"


def _pages_bench() -> ModuleType:
    """tests/bench/pages_bench.py (a script, not a package), for its fast seeding of runs."""
    if "pages_bench" not in sys.modules:
        spec = importlib.util.spec_from_file_location("pages_bench", PAGES_BENCH)
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        sys.modules["pages_bench"] = module
    return sys.modules["pages_bench"]


def queries(client: Client, url: str, **headers: str) -> int:
    """The number of queries one GET of ``url`` makes (after a first GET warmed caches)."""
    client.get(url, headers=headers)
    with CaptureQueriesContext(connection) as captured:
        response = client.get(url, headers=headers)
    assert response.status_code == 200, (url, response.status_code)
    return len(captured.captured_queries)


def assert_flat(
    client: Client, urls: dict[str, str], grow: Callable[[], object], bound: dict[str, int]
) -> None:
    """Each page's count after ``grow()`` added rows equals its count before, and is bounded."""
    before = {name: queries(client, url) for name, url in urls.items()}
    grow()
    after = {name: queries(client, url) for name, url in urls.items()}
    assert after == before, f"queries grew with the data: {before} -> {after}"
    over = {name: count for name, count in after.items() if count > bound[name]}
    assert not over, f"more queries than the bound {bound}: {over}"


# ------------------------------------------------------------------------------ list pages


@pytest.mark.django_db
def test_runs_list_queries_do_not_grow_with_runs_or_waiting_requests(
    client_as: Callable[..., Client],
) -> None:
    seed = _pages_bench().seed_runs
    client = client_as("Operator")
    seed(20, seed=1)
    urls = {
        "runs list": "/",
        "waiting runs": "/?status=waiting",
        "search": "/?q=ORD-1",
        "api runs": "/api/runs/?limit=200",
    }
    bound = {"runs list": 12, "waiting runs": 12, "search": 12, "api runs": 7}
    assert_flat(client, urls, lambda: seed(400, seed=2), bound)
    htmx = {"HX-Request": "true", "HX-Target": "runs-table"}
    assert queries(client, "/", **htmx) <= bound["runs list"]


@pytest.mark.django_db
def test_inbox_and_archive_queries_do_not_grow_with_requests(
    client_as: Callable[..., Client],
) -> None:
    seed = _pages_bench().seed_runs
    client = client_as("Approver")

    def decide_half() -> None:
        pending = ApprovalRequest.objects.filter(status=ApprovalStatus.PENDING)
        ids = list(pending.values_list("pk", flat=True)[::2])
        ApprovalRequest.objects.filter(pk__in=ids).update(
            status=ApprovalStatus.APPROVED, decided_at=timezone.now(), decided_by=client.user
        )

    seed(40, seed=3)
    decide_half()
    urls = {"inbox": "/approvals/", "archive": "/approvals/archive/", "api": "/api/approvals/"}
    bound = {"inbox": 15, "archive": 9, "api": 7}
    assert_flat(client, urls, lambda: (seed(400, seed=4), decide_half()), bound)


@pytest.mark.django_db
def test_storage_audit_and_retention_pages_do_not_grow_with_history(
    client_as: Callable[..., Client],
) -> None:
    seed = _pages_bench().seed_runs
    client = client_as("Admin")
    seed(20, seed=5)

    def more() -> None:
        seed(300, seed=6)
        now = timezone.now()
        AuditEntry.objects.bulk_create(
            AuditEntry(
                action="run_start",
                actor_name="ann",
                target=f"run {index}",
                created_at=now - dt.timedelta(seconds=index),
            )
            for index in range(300)
        )

    urls = {"storage": "/storage/", "audit": "/audit/", "retention": "/retention/"}
    bound = {"storage": 8, "audit": 9, "retention": 10}
    assert_flat(client, urls, more, bound)


@pytest.mark.django_db
def test_storage_figures_are_kept_until_a_run_starts_or_they_are_half_a_minute_old(
    client_as: Callable[..., Client],
    make_run: Callable[..., WorkflowRun],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    client = client_as("Viewer")
    make_run()
    counted = queries(client, "/storage/")  # the second GET: figures kept from the first
    views_storage._kept.clear()
    with CaptureQueriesContext(connection) as fresh:
        first = client.get("/storage/").context["totals"]
    assert len(fresh.captured_queries) == counted + 7  # the seven aggregates, once
    make_run()
    assert client.get("/storage/").context["totals"]["runs"] == first["runs"] + 1
    WorkflowRun.objects.filter(pk=WorkflowRun.objects.order_by("created_at")[0].pk).delete()
    assert client.get("/storage/").context["totals"]["runs"] == first["runs"] + 1  # kept
    monkeypatch.setattr(views_storage, "KEEP_SECONDS", 0.0)
    assert client.get("/storage/").context["totals"]["runs"] == first["runs"]


# ------------------------------------------------------------------------------ run pages


def _start(drive: Callable[..., WorkflowRun], user: Any, limit: int) -> WorkflowRun:
    return drive(
        services.run_start, workflow_name="squares", input={"limit": limit, "work_ms": 0}, user=user
    )


def _run_pages(run: WorkflowRun) -> dict[str, str]:
    checkpoint = Checkpoint.objects.filter(run=run).order_by("-created_at")[1]
    return {
        "run": f"/runs/{run.pk}/",
        "events": f"/runs/{run.pk}/events/",
        "actions": f"/runs/{run.pk}/actions/",
        "checkpoint": f"/runs/{run.pk}/checkpoints/{checkpoint.checkpoint_id}/",
        "api run": f"/api/runs/{run.pk}/",
        "api checkpoints": f"/api/runs/{run.pk}/checkpoints/",
        "api checkpoint": f"/api/runs/{run.pk}/checkpoints/{checkpoint.checkpoint_id}/",
        "api events": f"/api/runs/{run.pk}/events/",
    }


@pytest.mark.django_db(transaction=True)
def test_run_pages_queries_do_not_grow_with_supersteps_events_or_checkpoints(
    client_as: Callable[..., Client], drive: Callable[..., WorkflowRun]
) -> None:
    client = client_as("Operator")
    short = _start(drive, client.user, 2)  # type: ignore[attr-defined]
    long = _start(drive, client.user, 40)  # type: ignore[attr-defined]
    assert short.status == long.status == RunStatus.COMPLETED
    assert Checkpoint.objects.filter(run=long).count() > 10 * max(
        1, Checkpoint.objects.filter(run=short).count() // 4
    )
    few = {name: queries(client, url) for name, url in _run_pages(short).items()}
    many = {name: queries(client, url) for name, url in _run_pages(long).items()}
    assert many == few, f"queries grew with the run's history: {few} -> {many}"
    bound = {
        "run": 23,
        "events": 13,
        "actions": 12,
        "checkpoint": 16,
        "api run": 6,
        "api checkpoints": 7,
        "api checkpoint": 7,
        "api events": 7,
    }
    over = {name: count for name, count in many.items() if count > bound[name]}
    assert not over, f"more queries than the bound {bound}: {over}"


# ------------------------------------------------------------------------------ kept rows


def _tbody(html: str) -> str:
    return html.split("<tbody>", 1)[1].split("</tbody>", 1)[0]


@pytest.mark.django_db
def test_a_kept_row_is_the_row_the_page_renders_and_changes_with_its_run(
    client_as: Callable[..., Client],
    make_run: Callable[..., WorkflowRun],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    client = client_as("Operator")
    done = make_run(status="completed", current_superstep=7)
    make_run(status="failed", parent_run_id=done.pk)
    run_rows.forget_rows()
    kept = _tbody(client.get("/").content.decode())
    assert len(run_rows._kept) == 2
    monkeypatch.setattr(run_rows, "TERMINAL_RUN_STATUSES", frozenset())  # every row inline
    assert _tbody(client.get("/").content.decode()) == kept
    monkeypatch.undo()
    WorkflowRun.objects.filter(pk=done.pk).update(status="running", finished_at=None)
    live = client.get("/").content.decode()
    assert "status-running" in live and "status-completed" not in live
    WorkflowRun.objects.filter(pk=done.pk).update(
        status="completed", current_superstep=9, finished_at=timezone.now()
    )
    assert '<td data-label="Superstep" class="num">9</td>' in client.get("/").content.decode()


def test_kept_rows_are_bounded(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(run_rows, "KEPT_ROWS", 3)
    run_rows.forget_rows()
    now = timezone.now()
    for index in range(5):
        run = WorkflowRun(
            workflow_name="squares",
            status="completed",
            created_at=now,
            started_at=now,
            finished_at=now + dt.timedelta(seconds=index),
        )
        run_rows.run_row(
            run, [], RunDuration(run.started_at, run.finished_at, dt.timedelta(0), None)
        )
    assert len(run_rows._kept) == 3


# ------------------------------------------------------------------------------ components


MOMENT = dt.datetime(2026, 3, 4, 5, 6, 7, 890_000, tzinfo=dt.UTC)


@pytest.mark.parametrize(
    ("value", "mode", "until"),
    [
        (MOMENT, "", None),
        (MOMENT, "absolute", None),
        (MOMENT, "duration", MOMENT + dt.timedelta(minutes=4, seconds=12)),
        (MOMENT.replace(microsecond=0), "duration", MOMENT + dt.timedelta(days=3)),
        (None, "", None),
        (None, "duration", None),
    ],
)
def test_time_html_is_what_the_time_component_renders(
    value: dt.datetime | None, mode: str, until: dt.datetime | None
) -> None:
    expected = render_to_string(
        "components/time.html", {"value": value, "mode": mode, "until": until}
    )
    assert time_html(value, mode=mode, until=until) == expected


def test_time_html_of_a_running_duration_is_what_the_component_renders() -> None:
    began = timezone.now() - dt.timedelta(hours=2, minutes=3)
    expected = render_to_string("components/time.html", {"value": began, "mode": "duration"})
    assert time_html(began, mode="duration") == expected


@pytest.mark.parametrize(
    "status", [RunStatus.WAITING, "completed", "cancelled", "idle", "Weird Status", ""]
)
def test_status_pill_html_is_what_the_status_pill_component_renders(status: str) -> None:
    expected = render_to_string("components/status_pill.html", {"status": status})
    assert status_pill_html(status) == expected
