"""Every task delivered three times, as a broker that redelivers would.

The workers load ``celery_test_tasks`` with ``DELIVER_EACH_RUN_TASK_TIMES=3``: each
``dashboard.execute_run`` message, whoever published it (Daphne for a start or a decision, a
worker going round again), is delivered three times with the same task id: once, a copy at
once (the other worker takes it while the first runs) and a copy 1.5 s later (mid-run, or
after the run ended or began waiting). PostgreSQL and Redis are the test's own.

``squares`` runs and ``return-replace`` runs that wait for an approval decided through the
API (a second message per run). Each superstep is committed exactly once: the checkpoint chain
holds every superstep once, each checkpoint's events are in the log once, the output once, and
each run executed once per message that had work for it (one "running" per start or decision),
with the right output. The worker logs prove each message did arrive three times.
"""

from __future__ import annotations

import collections
import re
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.helpers.stack import (
    PostgresCluster,
    Stack,
    deployed,
    lineage_is_unbroken,
    postgres_cluster,
    production_env,
    redis_server,
    wait_for,
)

pytestmark = [pytest.mark.slow, pytest.mark.postgres, pytest.mark.redis]

DELIVERIES = 3
SQUARES = {"limit": 5, "work_ms": 200}
SQUARES_RUNS = 8
RETURNS = 4
RECEIVED = re.compile(r"Task dashboard\.execute_run\[([-0-9a-f]+)\] received")


@pytest.fixture(scope="module")
def cluster() -> Iterator[PostgresCluster]:
    with postgres_cluster() as own:
        yield own


@pytest.fixture(scope="module")
def stack(
    cluster: PostgresCluster,
    subprocess_env: Callable[..., dict[str, str]],
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[Stack]:
    logs = tmp_path_factory.mktemp("fault-redelivery")
    db_url = cluster.create_database("superstep")
    with redis_server(logs) as redis:
        env = production_env(
            subprocess_env,
            database_url=db_url,
            redis_url=redis.url,
            DELIVER_EACH_RUN_TASK_TIMES=str(DELIVERIES),
        )
        with deployed(env, db_url, logs) as deployment:
            deployment.daphne()
            deployment.worker("w1", "--include", "celery_test_tasks")
            deployment.worker("w2", "--include", "celery_test_tasks")
            yield deployment


def deliveries(logs: Path) -> collections.Counter[str]:
    """How many times each execute_run message (by task id) reached a worker."""
    return collections.Counter(
        task_id
        for log in logs.glob("w*.log")
        for task_id in RECEIVED.findall(log.read_text(errors="replace"))
    )


def committed_once(stack: Stack, run_id: str, executions: int) -> list[dict[str, Any]]:
    """The run's checkpoints, after checking each superstep and its events were committed
    once and the run executed ``executions`` times."""
    run = stack.run(run_id)
    chain = stack.checkpoints(run_id)
    lineage_is_unbroken(chain)
    assert len({c["checkpoint_id"] for c in chain}) == len(chain)
    rows = stack.query(
        "SELECT seq, type, data FROM dashboard_runevent WHERE run_id = %s ORDER BY seq", run_id
    )
    assert [r["seq"] for r in rows] == list(range(1, run["last_event_seq"] + 1))
    markers = [
        r["data"]["checkpoint_id"]
        for r in rows
        if r["type"] in ("checkpoint", "superstep_completed")
    ]
    assert markers == [c["checkpoint_id"] for c in chain], "a checkpoint's events twice, or none"
    kinds = collections.Counter(r["type"] for r in rows)
    assert kinds["output"] == 1, kinds
    running = [r for r in rows if r["type"] == "run_status" and r["data"]["status"] == "running"]
    assert len(running) == executions, running
    return chain


def test_each_superstep_is_committed_once_when_every_task_is_delivered_three_times(
    stack: Stack,
) -> None:
    token = str(stack.driver("user", "olga", "Operator", "Approver"))
    squares = [stack.start_run(token, "squares", SQUARES) for _ in range(SQUARES_RUNS)]
    returns = [
        stack.start_run(token, "return-replace", {"order_id": f"ORD-{n}", "work_ms": 0})
        for n in range(RETURNS)
    ]
    for run_id in returns:
        stack.wait_for_run(run_id, "waiting")
        (approval,) = stack.query(
            "SELECT request_id FROM dashboard_approvalrequest WHERE run_id = %s", run_id
        )
        status, decided = stack.api(
            "POST",
            f"/api/approvals/{approval['request_id']}/decide/",
            token,
            {"decision": "approve", "response": {"discount_percent": 10, "note": "thrice"}},
        )
        assert status == 200, decided

    for run_id in squares + returns:
        run = stack.wait_for_run(run_id, "completed", "failed", "cancelled")
        assert run["status"] == "completed", (run["error_type"], run["error_message"])
    # The last copies land after the runs ended: wait for every message's third delivery.
    messages = SQUARES_RUNS + 2 * RETURNS  # a start each, and a decision for each return
    wait_for(
        lambda: sum(deliveries(stack.logs).values()) >= messages * DELIVERIES,
        "every message's last delivery",
        stack.log,
        timeout=30,
    )
    received = deliveries(stack.logs)
    assert len(received) == messages and set(received.values()) == {DELIVERIES}, received

    for run_id in squares:
        chain = committed_once(stack, run_id, executions=1)
        assert len(chain) == SQUARES["limit"] + 2  # entry, start, one per number
        assert stack.run(run_id)["output"] == {
            "$t": "dict",
            "v": [[n, n * n] for n in range(1, SQUARES["limit"] + 1)],
        }
    for run_id in returns:
        chain = committed_once(stack, run_id, executions=2)  # the start, the decision
        assert [c["kind"] for c in chain].count("responses") == 1
        output = stack.run(run_id)["output"]
        assert output["outcome"] == "replacement approved" and output["operator_note"] == "thrice"
    assert not stack.exited(), stack.log()
