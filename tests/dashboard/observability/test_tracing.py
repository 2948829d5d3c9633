"""Traces of runs in a deployment: real processes write spans (to a JSON-lines file, or to an
OTLP receiver), a run resumed by another process continues the trace it started, and the run
page and the API link a run to its trace."""

from __future__ import annotations

import http.server
import json
import shutil
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from django.test import Client, override_settings

from dashboard.access.tokens import create_token
from dashboard.config.settings import BASE_DIR

Env = Callable[..., dict[str, str]]

DECIDE = """
from dashboard import services
from dashboard.execution import embedded
from dashboard.models import ApprovalRequest
from django.contrib.auth.models import Group, User
ana = User.objects.create_user("ana")
ana.groups.add(Group.objects.get(name="Approver"))
request = ApprovalRequest.objects.get(status="pending")
services.approval_decide(request.request_id, user=ana, approved=True,
                         response={"approved": True, "discount_percent": 5, "note": ""})
assert embedded.wait_for_background_tasks(60)
"""


def _deployment_env(subprocess_env: Env, database: Path) -> dict[str, str]:
    return subprocess_env(
        DATABASE_URL=f"sqlite:///{database}",
        DEBUG="1",
        SUPERSTEP_DEMO="1",
        SUPERSTEP_BACKGROUND_SERVICES="0",
        LOG_LEVEL="WARNING",
    )


def _manage(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(BASE_DIR / "manage.py"), *args],
        env=env,
        cwd=BASE_DIR,
        capture_output=True,
        text=True,
        timeout=180,
        check=False,
    )


@pytest.fixture(scope="module")
def migrated_database(tmp_path_factory: pytest.TempPathFactory, subprocess_env: Env) -> Path:
    """A SQLite database migrated once for the module, which each deployment starts from a
    copy of (migrating costs a Django start and seconds of CPU)."""
    database = tmp_path_factory.mktemp("tracing-template") / "db.sqlite3"
    done = _manage(_deployment_env(subprocess_env, database), "migrate", "-v0")
    assert done.returncode == 0, done.stderr
    return database


@pytest.fixture
def deployment(
    tmp_path: Path, subprocess_env: Env, migrated_database: Path
) -> Callable[..., subprocess.CompletedProcess[str]]:
    """``manage(*args, **env)`` in an embedded deployment of its own (SQLite in tmp_path, a
    copy of the migrated database)."""
    database = tmp_path / "db.sqlite3"
    shutil.copyfile(migrated_database, database)
    wal = migrated_database.with_name(migrated_database.name + "-wal")
    if wal.exists():  # what the migrating process left unfolded
        shutil.copyfile(wal, database.with_name(database.name + "-wal"))
    base = _deployment_env(subprocess_env, database)

    def manage(*args: str, **env: str) -> subprocess.CompletedProcess[str]:
        return _manage({**base, **env}, *args)

    return manage


def spans_in(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def test_a_run_resumed_by_another_process_continues_the_trace_it_started(
    deployment: Callable[..., subprocess.CompletedProcess[str]], tmp_path: Path
) -> None:
    spans_file = tmp_path / "spans.jsonl"
    # Embedded: the command's own process executes the run until it waits for a person.
    first = deployment(
        "run_workflow",
        "return-replace",
        "--no-follow",
        "--input",
        '{"order_id": "ORD-7", "work_ms": 0}',
        SUPERSTEP_TRACE_FILE=str(spans_file),
    )
    assert first.returncode == 0, first.stdout + first.stderr
    second = deployment("shell", "--no-imports", "-c", DECIDE, SUPERSTEP_TRACE_FILE=str(spans_file))
    assert second.returncode == 0, second.stderr

    spans = spans_in(spans_file)
    runs = [s for s in spans if s["name"] == "workflow.run"]
    assert len(runs) == 2 and runs[0]["pid"] != runs[1]["pid"]
    opened, resumed = runs
    assert resumed["trace_id"] == opened["trace_id"]
    assert resumed["parent_span_id"] == opened["span_id"]
    assert opened["attributes"]["workflow.name"] == "return-replace"
    assert opened["attributes"]["workflow.state"] == "IDLE_WITH_PENDING_REQUESTS"
    assert resumed["attributes"]["workflow.state"] == "IDLE"
    # Every superstep and invocation of both processes is in that one trace. (The resuming
    # process's task span starts a trace of its own: the run span continues the lineage's.)
    engine = [s for s in spans if s["name"].startswith(("workflow.", "executor."))]
    assert {s["trace_id"] for s in engine} == {opened["trace_id"]}
    executors = {s["attributes"]["executor.id"] for s in spans if s["name"] == "executor.process"}
    assert {"hitl-gate", "apply-discount"} <= executors

    # The run records its trace, which the API shows.
    shown = deployment(
        "shell",
        "--no-imports",
        "-c",
        "from dashboard.models import WorkflowRun; print(WorkflowRun.objects.get().trace_id)",
    )
    assert shown.stdout.strip() == opened["trace_id"]


class _Receiver(http.server.BaseHTTPRequestHandler):
    received: list[tuple[str, str, bytes]]

    def do_POST(self) -> None:  # the http.server API names it
        body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
        self.received.append((self.path, self.headers.get("Content-Type", ""), body))
        self.send_response(200)
        self.send_header("Content-Type", "application/x-protobuf")
        self.end_headers()

    def log_message(self, *args: Any) -> None:
        return None


@pytest.fixture
def otlp_receiver() -> Iterator[tuple[str, list[tuple[str, str, bytes]]]]:
    received: list[tuple[str, str, bytes]] = []
    handler = type("Receiver", (_Receiver,), {"received": received})
    server = http.server.HTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_port}", received
    server.shutdown()
    server.server_close()


def test_spans_go_to_an_otlp_endpoint_with_the_standard_exporter(
    deployment: Callable[..., subprocess.CompletedProcess[str]],
    otlp_receiver: tuple[str, list[tuple[str, str, bytes]]],
) -> None:
    endpoint, received = otlp_receiver
    done = deployment(
        "run_workflow",
        "squares",
        "--input",
        '{"limit": 2, "work_ms": 0}',
        OTEL_EXPORTER_OTLP_ENDPOINT=endpoint,
        OTEL_SERVICE_NAME="superstep-test",
    )
    assert done.returncode == 0, done.stderr
    posts = [r for r in received if r[0] == "/v1/traces"]
    assert posts, received
    assert all(content_type == "application/x-protobuf" for _, content_type, _ in posts)
    payload = b"".join(body for _, _, body in posts)
    for name in (b"workflow.run", b"workflow.superstep", b"executor.process", b"superstep-test"):
        assert name in payload, name


def test_without_any_tracing_configured_no_spans_and_no_trace_id(
    deployment: Callable[..., subprocess.CompletedProcess[str]], tmp_path: Path
) -> None:
    done = deployment("run_workflow", "squares", "--input", '{"limit": 2, "work_ms": 0}')
    assert done.returncode == 0, done.stderr
    shown = deployment(
        "shell",
        "--no-imports",
        "-c",
        "from dashboard.models import WorkflowRun; print(repr(WorkflowRun.objects.get().trace_id))",
    )
    assert shown.stdout.strip() == "''"


@pytest.mark.django_db
def test_the_api_links_a_run_to_its_trace(
    client_as: Callable[..., Client], make_run: Callable[..., Any]
) -> None:
    operator = client_as("Operator")
    run = make_run(trace_id="4bf92f3577b34da6a3ce929d0e0e4736")
    untraced = make_run()
    headers = {"Authorization": f"Bearer {create_token(operator.user, 't')}"}  # type: ignore[attr-defined]
    with override_settings(SUPERSTEP_TRACE_URL="https://traces.example/t/{trace_id}?from=run"):
        shown = Client().get(f"/api/runs/{run.pk}/", headers=headers).json()
        plain = Client().get(f"/api/runs/{untraced.pk}/", headers=headers).json()
    assert shown["trace_id"] == "4bf92f3577b34da6a3ce929d0e0e4736"
    assert (
        shown["trace_url"] == "https://traces.example/t/4bf92f3577b34da6a3ce929d0e0e4736?from=run"
    )
    assert plain["trace_id"] is None and plain["trace_url"] is None


def test_a_trace_url_without_its_placeholder_is_refused_at_startup(
    subprocess_env: Env, tmp_path: Path
) -> None:
    done = subprocess.run(
        [sys.executable, str(BASE_DIR / "manage.py"), "check"],
        env=subprocess_env(
            DATABASE_URL=f"sqlite:///{tmp_path / 'db.sqlite3'}",
            DEBUG="1",
            SUPERSTEP_TRACE_URL="https://traces.example/",
        ),
        cwd=BASE_DIR,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode != 0
    assert "SUPERSTEP_TRACE_URL must contain {trace_id}" in done.stderr


@pytest.mark.django_db
def test_the_run_page_links_a_traced_run_to_its_trace(
    client_as: Callable[..., Client], make_run: Callable[..., Any]
) -> None:
    viewer = client_as("Viewer")
    run = make_run(trace_id="4bf92f3577b34da6a3ce929d0e0e4736")
    with override_settings(SUPERSTEP_TRACE_URL="https://traces.example/t/{trace_id}"):
        linked = viewer.get(f"/runs/{run.pk}/").content.decode()
    plain = viewer.get(f"/runs/{run.pk}/").content.decode()
    assert 'href="https://traces.example/t/4bf92f3577b34da6a3ce929d0e0e4736"' in linked
    assert "4bf92f3577b34da6…" in plain and "traces.example" not in plain
    assert "<dt>Trace</dt>" not in viewer.get(f"/runs/{make_run().pk}/").content.decode()
