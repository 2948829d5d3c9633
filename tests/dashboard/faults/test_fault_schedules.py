"""Workers killed and PostgreSQL restarted while the ``fire-schedules`` job fires ticks.

PostgreSQL and Redis are the test's own; two ``celery worker``s and ``celery beat`` (which
publishes ``fire-schedules`` every 5 s) run with the production settings. Six schedules tick
every second, none skipping a tick while its previous run is unfinished, so each pass fires a
tick of each and starts its run (``services.schedules``: one short transaction per tick).

Twice a pass is held in the middle (``held_at``: its fourth tick waits inside its transaction,
three ticks of the pass committed, two not yet begun):

1. both workers are killed (SIGKILL) there, PostgreSQL is restarted, new workers are started;
2. PostgreSQL is restarted there under the running workers, which reconnect by themselves.

After each, the passes go on. At the end, exactly one run per tick: every tick started a run,
no run belongs to two ticks or to none, and every run completed.
"""

from __future__ import annotations

import collections
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.browser.deadlines import seconds
from tests.helpers.stack import (
    PostgresCluster,
    Stack,
    held_at,
    own_deployment,
    wait_for,
)

pytestmark = [
    pytest.mark.slow,
    pytest.mark.postgres,
    pytest.mark.redis,
    pytest.mark.timeout(seconds(200)),
]

SCHEDULES = 6
EVERY_SECONDS = 1  # shorter than the job's period: each pass fires one tick of each schedule
HELD = SCHEDULES // 2 + 1  # the held insert: the middle of a pass
LEASE_SECONDS = 5
TERMINAL = ("completed", "failed", "cancelled")


@pytest.fixture(scope="module")
def stack(
    cluster: PostgresCluster,
    logs: Path,
    subprocess_env: Callable[..., dict[str, str]],
) -> Iterator[Stack]:
    """Workers ``w1`` and ``w2`` and beat on the cluster and a Redis of their own."""
    with own_deployment(
        cluster, logs, subprocess_env, SUPERSTEP_LEASE_SECONDS=str(LEASE_SECONDS)
    ) as deployment:
        seeded = deployment.driver(
            "every", str(SCHEDULES), str(EVERY_SECONDS), script="schedule_fire_driver.py"
        )
        assert seeded == {"schedules": SCHEDULES}
        deployment.worker("w1")
        deployment.worker("w2")
        deployment.beat()
        yield deployment


def ticks(stack: Stack) -> list[dict[str, Any]]:
    return stack.query(
        "SELECT t.id, t.schedule_id, t.tick_at, t.outcome, t.detail, t.run_id::text AS run_id,"
        " r.schedule_id AS run_schedule_id, r.status AS run_status"
        " FROM dashboard_scheduletick t LEFT JOIN dashboard_workflowrun r ON r.id = t.run_id"
        " ORDER BY t.id"
    )


def ticks_fired(stack: Stack) -> int:
    return int(stack.query("SELECT count(*) AS n FROM dashboard_scheduletick")[0]["n"])


def passes_go_on(stack: Stack, after: str) -> None:
    """Two more passes' worth of ticks fired (a pass cut short is made up by the next)."""
    before = ticks_fired(stack)
    wait_for(
        lambda: ticks_fired(stack) >= before + 2 * SCHEDULES,
        f"schedules to fire again after {after}",
        stack.log,
    )


def test_each_tick_starts_one_run_through_killed_workers_and_postgres_restarts(
    stack: Stack, cluster: PostgresCluster
) -> None:
    wait_for(lambda: ticks_fired(stack) >= SCHEDULES, "the first pass", stack.log)

    with held_at(stack, "dashboard_scheduletick", "TRUE", HELD) as gate:
        gate.wait("a pass to reach its fourth tick")
        stack.kill("w1")
        stack.kill("w2")
        cluster.stop("fast")  # the held transaction ends with the server
        cluster.start()
    stack.worker("w1")
    stack.worker("w2")
    passes_go_on(stack, "the workers were killed and PostgreSQL restarted")

    pids = {name: process.pid for name, process in stack.processes.items()}
    with held_at(stack, "dashboard_scheduletick", "TRUE", HELD) as gate:
        gate.wait("another pass to reach its fourth tick")
        cluster.stop("fast")
        cluster.start()
    passes_go_on(stack, "PostgreSQL restarted under the workers")

    stack.execute("UPDATE dashboard_schedule SET paused = true")  # no more ticks
    wait_for(
        lambda: all(t["run_status"] in TERMINAL for t in ticks(stack)),
        "every tick's run to end",
        stack.log,
    )
    fired = ticks(stack)
    bad = [t for t in fired if t["outcome"] != "started" or t["run_id"] is None]
    assert not bad, f"ticks that started no run: {bad}"
    assert all(t["run_schedule_id"] == t["schedule_id"] for t in fired), fired
    per_run = collections.Counter(t["run_id"] for t in fired)
    assert max(per_run.values()) == 1, [r for r, n in per_run.items() if n > 1]
    runs = stack.query(
        "SELECT id::text, status FROM dashboard_workflowrun WHERE schedule_id IS NOT NULL"
    )
    assert {r["id"] for r in runs} == set(per_run), "a run of a schedule without its tick"
    assert {r["status"] for r in runs} == {"completed"}, collections.Counter(
        r["status"] for r in runs
    )
    per_tick = collections.Counter((t["schedule_id"], t["tick_at"]) for t in fired)
    assert max(per_tick.values()) == 1
    assert not stack.exited(), stack.log()
    assert {name: process.pid for name, process in stack.processes.items()} == pids
    print(f"\n{len(fired)} ticks of {SCHEDULES} schedules, one run each, all completed")
