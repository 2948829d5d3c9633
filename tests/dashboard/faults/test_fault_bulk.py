"""A worker killed (SIGKILL) in the middle of a bulk cancel of 1,000 runs.

PostgreSQL and Redis are the test's own; ``celery worker`` ``w1`` and ``celery beat`` run with
the production settings. The action is asked for as the runs list asks for it
(``services.bulk_start``, from a process of its own that publishes the task), and ``w1`` works
through it a chunk at a time. The 510th run it cancels is held in the middle of its
transaction (``held_at``: the middle of the 21st chunk, the chunk's first nine runs cancelled)
and ``w1`` is killed right there. A second worker, ``w2``, started afterwards, finishes the
action: the broker keeps the dead worker's message for its visibility timeout (an hour), so it
is the ``sweep-bulk-actions`` job that queues the action again once ``w1``'s claim expired.

Each run is acted on exactly once: every run cancelled, with one ``cancelled`` status event and
one ``cancel`` audit entry; every one of the action's per-run records says done (none skipped
as "already cancelled" because the dead worker had cancelled it without recording it), and
the action's counts agree.
"""

from __future__ import annotations

import time
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

RUNS = 1000
HELD = 510  # the 21st chunk of 25, after nine of its runs
DRIVER = "bulk_driver.py"
LEASE_SECONDS = 3  # how long a bulk action's claim outlives its dead worker


@pytest.fixture(scope="module")
def stack(
    cluster: PostgresCluster,
    logs: Path,
    subprocess_env: Callable[..., dict[str, str]],
) -> Iterator[Stack]:
    """Worker ``w1`` and beat on the cluster and a Redis of their own, 1,000 waiting runs."""
    with own_deployment(
        cluster, logs, subprocess_env, SUPERSTEP_LEASE_SECONDS=str(LEASE_SECONDS)
    ) as deployment:
        assert deployment.driver("seed", str(RUNS), script=DRIVER) == {"runs": RUNS}
        deployment.worker("w1")
        deployment.beat()
        yield deployment


def progress(stack: Stack, bulk_id: str) -> dict[str, Any]:
    (row,) = stack.query(
        "SELECT status, done, skipped,"
        " (SELECT count(*) FROM dashboard_bulkactionitem i"
        "   WHERE i.bulk_id = b.id AND i.outcome <> '') AS recorded,"
        " (SELECT count(*) FROM dashboard_workflowrun WHERE status = 'cancelled') AS cancelled"
        " FROM dashboard_bulkaction b WHERE id = %s",
        bulk_id,
    )
    return row


def test_a_bulk_cancel_finished_by_a_second_worker_acts_on_each_run_once(stack: Stack) -> None:
    with held_at(stack, "dashboard_auditentry", "NEW.action = 'cancel'", HELD) as gate:
        bulk_id = stack.driver("start", "cancel", script=DRIVER)
        gate.wait(f"w1 to cancel its {HELD}th run")
        at_kill = progress(stack, bulk_id)
        stack.kill("w1")
        killed_at = time.monotonic()
    # The held transaction ended with its dead client (the trigger's drop waited for it).
    stack.worker("w2")
    wait_for(
        lambda: progress(stack, bulk_id)["status"] == "finished",
        "w2 to finish the bulk action",
        stack.log,
    )
    took_over_in = time.monotonic() - killed_at

    final = progress(stack, bulk_id)
    assert at_kill["status"] == "running" and at_kill["recorded"] < HELD, at_kill
    assert (final["done"], final["skipped"], final["recorded"]) == (RUNS, 0, RUNS), final
    items = stack.query(
        "SELECT outcome, message, count(*) AS n FROM dashboard_bulkactionitem"
        " WHERE bulk_id = %s GROUP BY outcome, message",
        bulk_id,
    )
    assert [(i["outcome"], i["message"], i["n"]) for i in items] == [("done", "cancelled", RUNS)]
    statuses = stack.query("SELECT status, count(*) AS n FROM dashboard_workflowrun GROUP BY 1")
    assert [(s["status"], s["n"]) for s in statuses] == [("cancelled", RUNS)]
    per_run = stack.query(
        "SELECT r.id,"
        " (SELECT count(*) FROM dashboard_auditentry a"
        "   WHERE a.run_id = r.id AND a.action = 'cancel') AS audited,"
        " (SELECT count(*) FROM dashboard_runevent e WHERE e.run_id = r.id"
        "   AND e.type = 'run_status' AND e.data->>'status' = 'cancelled') AS events"
        " FROM dashboard_workflowrun r"
    )
    not_once = [r for r in per_run if (r["audited"], r["events"]) != (1, 1)]
    assert not not_once, f"{len(not_once)} runs not acted on exactly once: {not_once[:5]}"
    w2_log = (stack.logs / "w2.log").read_text(errors="replace")
    assert "dashboard.execute_bulk" in w2_log, stack.log()
    assert not stack.exited(), stack.log()
    print(
        f"\nw1 killed with {at_kill['cancelled']} runs cancelled, {at_kill['recorded']} recorded;"
        f" w2 finished the action {took_over_in:.1f} s later; {RUNS} runs cancelled once each"
    )
