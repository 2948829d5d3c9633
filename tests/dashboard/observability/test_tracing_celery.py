"""One trace per run across Celery workers: a run that starts on one ``celery worker``, waits
for a person and is resumed by another worker (the first one gone meanwhile) stays one trace,
the resumed ``workflow.run`` span a child of the first. And with the Django, Celery and psycopg
instrumentations the request that starts a run, the task that executes it and their SQL are
that same trace."""

from __future__ import annotations

import contextlib
import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.helpers.stack import Stack, deployed, production_env, wait_for

pytestmark = [pytest.mark.slow, pytest.mark.postgres, pytest.mark.redis]

# The Celery instrumentation's span of the worker executing a run.
TASK_SPAN = "run/dashboard.execute_run"


@pytest.fixture
def traced(
    migrated_postgres: Callable[[str], contextlib.AbstractContextManager[str]],
    redis_url: str,
    subprocess_env: Callable[..., dict[str, str]],
    tmp_path: Path,
) -> Iterator[tuple[Stack, Path]]:
    spans = tmp_path / "spans.jsonl"
    with migrated_postgres("superstep_traced") as database:
        env = production_env(
            subprocess_env,
            database_url=database,
            redis_url=redis_url,
            SUPERSTEP_BACKGROUND_SERVICES="0",
            SUPERSTEP_TRACE_FILE=str(spans),
        )
        with deployed(env, database, tmp_path, migrate=False) as stack:
            stack.daphne()
            yield stack, spans


def spans_in(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


def test_a_run_resumed_by_another_celery_worker_continues_its_trace(
    traced: tuple[Stack, Path],
) -> None:
    stack, spans_file = traced
    token = str(stack.driver("user", "tracy", "Operator", "Approver"))
    first = stack.worker("w1")
    run_id = stack.start_run(token, "return-replace", {"order_id": "ORD-TRACE", "work_ms": 0})
    stack.wait_for_run(run_id, "waiting")
    stack.kill("w1")  # gone for good: the run can only go on elsewhere
    stack.worker("w2")

    stack.approve(token, run_id, {"discount_percent": 5, "note": ""})
    run = stack.wait_for_run(run_id, "completed", "failed")
    assert run["status"] == "completed", run["traceback"]

    wait_for(
        lambda: len([s for s in spans_in(spans_file) if s["name"] == "workflow.run"]) == 2,
        "both attempts' run spans",
        stack.log,
    )
    spans = spans_in(spans_file)
    # In the order they ended, which is the order the file has them.
    opened, resumed = (s for s in spans if s["name"] == "workflow.run")
    assert opened["pid"] == first.pid and resumed["pid"] != first.pid
    assert resumed["trace_id"] == opened["trace_id"] == run["trace_id"]
    assert resumed["parent_span_id"] == opened["span_id"]
    engine = [s for s in spans if s["name"].startswith(("workflow.", "executor."))]
    assert {s["trace_id"] for s in engine} == {opened["trace_id"]}
    by_process = {s["pid"] for s in spans if s["name"] == "executor.process"}
    assert by_process == {opened["pid"], resumed["pid"]}


def test_the_request_starting_a_run_its_task_and_their_sql_are_one_trace(
    traced: tuple[Stack, Path],
) -> None:
    stack, spans_file = traced
    token = str(stack.driver("user", "tracy", "Operator"))
    worker = stack.worker("w1")
    run_id = stack.start_run(token, "squares", {"limit": 2, "work_ms": 0})
    run = stack.wait_for_run(run_id, "completed", "failed")
    assert run["status"] == "completed", run["traceback"]

    def ended(name: str) -> dict[str, Any] | None:
        found = [s for s in spans_in(spans_file) if s["name"].startswith(name)]
        return found[0] if found else None

    # The task's span ends after the run's, once the task returns: wait for both.
    wait_for(lambda: ended(TASK_SPAN) is not None, "the task span", stack.log)
    run_span = ended("workflow.run")
    assert run_span is not None
    trace = [s for s in spans_in(spans_file) if s["trace_id"] == run["trace_id"]]
    by_id = {s["span_id"]: s for s in trace}
    (root,) = [s for s in trace if s["parent_span_id"] is None]
    # The trace starts at the web server's request span.
    attributes = root["attributes"]
    assert attributes.get("http.request.method", attributes.get("http.method")) == "POST", root
    assert root["pid"] != worker.pid
    # The worker's task span hangs under the request (through the message's headers)...
    (task,) = [s for s in trace if s["name"] == TASK_SPAN and s["pid"] == worker.pid]
    assert _ancestors(task, by_id)[-1] == root
    # ...and the engine's run span under the task.
    assert task in _ancestors(by_id[run_span["span_id"]], by_id)
    sql = [s for s in trace if s["attributes"].get("db.system") == "postgresql"]
    assert {s["pid"] for s in sql} == {root["pid"], worker.pid}


def _ancestors(span: dict[str, Any], by_id: dict[str, dict[str, Any]]) -> list[dict[str, Any]]:
    """The span's parent, its parent's parent, ... up to the trace's root."""
    chain = []
    while span["parent_span_id"] is not None:
        span = by_id[span["parent_span_id"]]
        chain.append(span)
    return chain
