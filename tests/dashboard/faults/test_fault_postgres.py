"""PostgreSQL restarted under a deployment that is executing runs.

A PostgreSQL cluster of the test's own (never the shared one on 5432), Redis of its own,
Daphne, two ``celery worker``s and ``celery beat`` (the lease sweeper), all with the production
settings and persistent database connections.

* 200 ``squares`` runs started through the API while the cluster is stopped (``pg_ctl stop -m
  fast``: every connection cut), left down for up to 3 s and started again, at random intervals
  of 2–8 s until every run has ended. Every run completes with the right output; each run's
  checkpoints form one unbroken chain, each superstep committed once with its events once; and
  every process reconnected by itself: the test restarts none, and after each restart Daphne
  answers the API and both workers take runs again. The work is sized so the runs outlast
  three restarts whatever the draw (the third comes at most 3 × 8 s of waiting and 2 × 3 s down
  after the start; 200 runs of four 120 ms supersteps keep two workers busy for at least 48 s
  of work alone). Restarts come often rather than seldom: each one cuts runs mid-superstep all
  the same, and the suite does not wait minutes between them. ``SUPERSTEP_FAULT_SEED`` replays
  a draw.
* The worst instants of a restart, made exact: the connection is cut (the backend terminates
  itself from a trigger) in the middle of a superstep's commit, and in the middle of the
  transaction that finishes the run, with the database back at once, as after a failover.
  Either way the run completes with its output, from one unbroken chain.
"""

from __future__ import annotations

import collections
import contextlib
import dataclasses
import os
import random
import re
import time
import urllib.error
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor

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

RUNS = 200
SQUARES = {"limit": 4, "work_ms": 120}
EXPECTED_OUTPUT = {"$t": "dict", "v": [[n, n * n] for n in range(1, SQUARES["limit"] + 1)]}
# The entry checkpoint (the input), the start executor's superstep, one per number squared.
CHECKPOINTS = SQUARES["limit"] + 2
RESTART_EVERY = (2.0, 8.0)
DOWN_FOR = (0.0, 3.0)
LEASE_SECONDS = 5
TERMINAL = ("completed", "failed", "cancelled")


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
    """Daphne, workers ``w1`` and ``w2`` and beat, on the cluster and a Redis of their own."""
    logs = tmp_path_factory.mktemp("fault-postgres")
    db_url = cluster.create_database("superstep")
    with redis_server(logs) as redis:
        env = production_env(
            subprocess_env,
            database_url=db_url,
            redis_url=redis.url,
            SUPERSTEP_LEASE_SECONDS=str(LEASE_SECONDS),
        )
        with deployed(env, db_url, logs) as deployment:
            deployment.daphne()
            deployment.worker("w1")
            deployment.worker("w2")
            deployment.beat()
            yield deployment


@pytest.fixture(scope="module")
def token(stack: Stack) -> str:
    return str(stack.driver("user", "olga", "Operator"))


# ------------------------------------------------------------------------------ checks


def runs_completed_correctly(stack: Stack, run_ids: list[str]) -> None:
    """Completed, the right output, one unbroken chain of every superstep once, and an event
    log 1..last holding one checkpoint marker per checkpoint and one output."""
    runs = {
        row["id"]: row
        for row in stack.query(
            "SELECT id::text, status, output, error_type, error_message, last_event_seq"
            " FROM dashboard_workflowrun WHERE id::text = ANY(%s)",
            run_ids,
        )
    }
    failed = {
        rid: (r["status"], r["error_type"], r["error_message"][:300])
        for rid, r in runs.items()
        if r["status"] != "completed"
    }
    assert not failed, f"{len(failed)} of {len(run_ids)} runs did not complete: {failed}"
    wrong = {rid: r["output"] for rid, r in runs.items() if r["output"] != EXPECTED_OUTPUT}
    assert not wrong, f"{len(wrong)} runs have a wrong output: {list(wrong.items())[:3]}"

    chains = collections.defaultdict(list)
    for row in stack.query(
        "SELECT run_id::text, checkpoint_id, previous_checkpoint_id, superstep, engine_run_id,"
        " document->'metadata'->>'kind' AS kind FROM dashboard_checkpoint"
        " WHERE run_id::text = ANY(%s) ORDER BY created_at, checkpoint_id",
        run_ids,
    ):
        chains[row.pop("run_id")].append(row)
    events = collections.defaultdict(list)
    for row in stack.query(
        "SELECT run_id::text, seq, type FROM dashboard_runevent WHERE run_id::text = ANY(%s)"
        " ORDER BY run_id, seq",
        run_ids,
    ):
        events[row["run_id"]].append(row)
    for run_id, run in runs.items():
        lineage_is_unbroken(chains[run_id])
        assert len(chains[run_id]) == CHECKPOINTS, (run_id, chains[run_id])
        assert [e["seq"] for e in events[run_id]] == list(range(1, run["last_event_seq"] + 1))
        kinds = collections.Counter(e["type"] for e in events[run_id])
        assert kinds["checkpoint"] + kinds["superstep_completed"] == CHECKPOINTS, (run_id, kinds)
        assert kinds["output"] == 1, (run_id, kinds)


# -------------------------------------------------------------- a cut at the worst instant


@contextlib.contextmanager
def connection_cut_once(
    stack: Stack, table: str, on: str, condition: str
) -> Iterator[Callable[[], bool]]:
    """The first ``on`` (INSERT or UPDATE) of a ``table`` row for which ``condition`` holds
    loses its connection in the middle of its transaction: the backend terminates itself, as
    a restart or failover at that instant would end it. Yields whether the cut happened."""
    stack.execute(f"""
        CREATE SEQUENCE cuts;  -- nextval is not rolled back with the transaction it cuts
        CREATE FUNCTION cut() RETURNS trigger LANGUAGE plpgsql AS $$
        BEGIN
          IF {condition} THEN
            IF nextval('cuts') = 1 THEN
              PERFORM pg_terminate_backend(pg_backend_pid());
            END IF;
          END IF;
          RETURN NEW;
        END $$;
        CREATE TRIGGER cut BEFORE {on} ON {table} FOR EACH ROW EXECUTE FUNCTION cut();
    """)
    try:
        yield lambda: bool(stack.query("SELECT is_called FROM cuts")[0]["is_called"])
    finally:
        stack.execute(f"DROP TRIGGER cut ON {table}; DROP FUNCTION cut(); DROP SEQUENCE cuts;")


def attempts(stack: Stack, run_id: str) -> int:
    rows = stack.query(
        "SELECT count(*) AS n FROM dashboard_runevent WHERE run_id = %s AND type = 'run_status'"
        " AND data->>'status' = 'running'",
        run_id,
    )
    return int(rows[0]["n"])


def test_a_connection_lost_in_the_middle_of_a_superstep_commit_does_not_fail_the_run(
    stack: Stack, token: str
) -> None:
    with connection_cut_once(stack, "dashboard_checkpoint", "INSERT", "NEW.superstep = 2") as cut:
        run_id = stack.start_run(token, "squares", SQUARES)
        stack.wait_for_run(run_id, *TERMINAL, timeout=90)
        assert cut()

    runs_completed_correctly(stack, [run_id])
    assert attempts(stack, run_id) == 2  # the cut attempt, and the one that resumed after it


def test_a_connection_lost_while_the_run_finishes_keeps_it_completed_with_its_output(
    stack: Stack, token: str
) -> None:
    with connection_cut_once(
        stack,
        "dashboard_workflowrun",
        "UPDATE",
        "NEW.status = 'completed' AND OLD.status <> 'completed'",
    ) as cut:
        run_id = stack.start_run(token, "squares", SQUARES)
        stack.wait_for_run(run_id, *TERMINAL, timeout=90)
        assert cut()

    runs_completed_correctly(stack, [run_id])
    assert attempts(stack, run_id) == 2


# ------------------------------------------------------------------------- 200 runs, restarts


@dataclasses.dataclass
class Restart:
    stopped_at: float  # wall clock (time.time()), comparable with the rows' timestamps
    up_at: float
    api_after: float = 0.0  # seconds from up_at to Daphne's first 200


def start_runs(stack: Stack, token: str) -> list[str]:
    with ThreadPoolExecutor(max_workers=4) as pool:
        return list(pool.map(lambda _: stack.start_run(token, "squares", SQUARES), range(RUNS)))


def unfinished(stack: Stack, run_ids: list[str]) -> int:
    (row,) = stack.query(
        "SELECT count(*) AS n FROM dashboard_workflowrun"
        " WHERE id::text = ANY(%s) AND status <> ALL(%s)",
        run_ids,
        list(TERMINAL),
    )
    return int(row["n"])


def api_answers(stack: Stack, token: str, run_id: str) -> bool:
    try:
        status, _ = stack.api("GET", f"/api/runs/{run_id}/", token)
    except (urllib.error.URLError, OSError):
        return False
    return status == 200


def restart_until_all_end(
    stack: Stack, cluster: PostgresCluster, token: str, run_ids: list[str], draw: random.Random
) -> list[Restart]:
    restarts: list[Restart] = []
    while True:
        deadline = time.monotonic() + draw.uniform(*RESTART_EVERY)
        while time.monotonic() < deadline:
            if unfinished(stack, run_ids) == 0:
                return restarts
            time.sleep(0.5)
        stopped_at = time.time()
        cluster.stop("fast")
        time.sleep(draw.uniform(*DOWN_FOR))
        cluster.start()
        restart = Restart(stopped_at, time.time())
        wait_for(
            lambda: api_answers(stack, token, run_ids[0]),
            "Daphne to answer again",
            stack.log,
            timeout=60,
        )
        restart.api_after = time.time() - restart.up_at
        restarts.append(restart)


def worker_reconnections(stack: Stack, restarts: list[Restart]) -> list[float]:
    """For each restart and worker, the seconds until the worker took a run again (none when
    the worker found nothing left to take)."""
    workers = [f":{stack.processes[name].pid}:" for name in ("w1", "w2")]
    leases = stack.query(
        "SELECT extract(epoch FROM created_at)::float AS at, data->>'worker' AS worker"
        " FROM dashboard_runevent WHERE type = 'run_status' AND data->>'status' = 'running'"
        " ORDER BY created_at"
    )
    delays = []
    for restart in restarts:
        for mark in workers:
            after = [
                row["at"] for row in leases if mark in row["worker"] and row["at"] > restart.up_at
            ]
            if after:
                delays.append(after[0] - restart.up_at)
    return delays


@pytest.mark.timeout(480)
def test_200_runs_complete_while_postgres_restarts_every_2_to_8_seconds(
    stack: Stack, cluster: PostgresCluster, token: str
) -> None:
    pids = {name: process.pid for name, process in stack.processes.items()}
    seed = int(os.environ.get("SUPERSTEP_FAULT_SEED") or random.randrange(1 << 30))
    started = time.monotonic()

    run_ids = start_runs(stack, token)
    restarts = restart_until_all_end(stack, cluster, token, run_ids, random.Random(seed))
    elapsed = time.monotonic() - started

    assert len(restarts) >= 3, f"seed {seed}: only {len(restarts)} restarts"
    assert not stack.exited(), stack.log()
    assert {name: process.pid for name, process in stack.processes.items()} == pids
    assert api_answers(stack, token, run_ids[-1])  # Daphne, after the last restart
    runs_completed_correctly(stack, run_ids)

    reconnections = worker_reconnections(stack, restarts)
    dropped = sum(  # execute_run messages a worker consumed while the database was away
        len(
            re.findall(
                r"execute_run\[[-0-9a-f]+\] raised unexpected: (Operational|Interface)Error",
                log.read_text(errors="replace"),
            )
        )
        for log in stack.logs.glob("w*.log")
    )
    print(
        f"\n{RUNS} runs in {elapsed:.0f} s (seed {seed}); {len(restarts)} restarts, down"
        f" {[round(r.up_at - r.stopped_at, 1) for r in restarts]} s; Daphne answered"
        f" {max(r.api_after for r in restarts):.2f} s after a restart at most, a worker took a"
        f" run {max(reconnections, default=0):.1f} s after at most; {dropped} run messages"
        " dropped on a database error"
    )
