"""One trace per run across Celery workers: a run that starts on one ``celery worker``, waits
for a person and is resumed by another worker (the first one gone meanwhile) stays one trace,
the resumed ``workflow.run`` span a child of the first."""

from __future__ import annotations

import contextlib
import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.helpers.stack import Stack, deployed, production_env, wait_for

pytestmark = [pytest.mark.slow, pytest.mark.postgres, pytest.mark.redis]


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

    status, body = stack.api("GET", "/api/approvals/", token)
    (request,) = [a for a in body["approvals"] if a["run_id"] == run_id]
    status, decided = stack.api(
        "POST",
        f"/api/approvals/{request['request_id']}/decide/",
        token,
        {"decision": "approve", "response": {"discount_percent": 5, "note": ""}},
    )
    assert status == 200, decided
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
    assert {s["trace_id"] for s in spans} == {opened["trace_id"]}
    by_process = {s["pid"] for s in spans if s["name"] == "executor.process"}
    assert by_process == {opened["pid"], resumed["pid"]}
