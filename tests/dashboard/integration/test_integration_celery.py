"""Production mode end to end: real ``celery -A dashboard worker`` processes on Redis and a
fresh PostgreSQL database, a real Daphne serving the JSON API, and SIGKILL.

* the return-replace run pauses, an approval through the API resumes it to completion;
* a worker killed with SIGKILL mid-run is recovered by another worker once its lease
  (``SUPERSTEP_LEASE_SECONDS=3`` here) has expired and the sweeper ran: same output as an
  uninterrupted run, one unbroken checkpoint chain;
* fifty concurrent approvals of one request: one decision (one 200, 49 x 409), one resume;
* a worker whose database connections were cut (PostgreSQL restarted) runs the next run.

The deployment (tests/helpers/stack.py) starts every process in its own session and kills it
in fixture teardown, whatever happens. The test process reads the database with psycopg and acts
through HTTP or ``integration_driver.py`` (a child process with the production settings).
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator

import pytest

from tests.helpers.stack import Stack, deployed, lineage_is_unbroken, production_env, wait_for

pytestmark = [pytest.mark.slow, pytest.mark.postgres, pytest.mark.redis]

LEASE_SECONDS = 3


@pytest.fixture(scope="module")
def stack(
    migrated_postgres: Callable[[str], contextlib.AbstractContextManager[str]],
    redis_url: str,
    subprocess_env: Callable[..., dict[str, str]],
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[Stack]:
    """A migrated database of the module's own, Daphne, and two workers (``w1``, ``w2``)."""
    with contextlib.ExitStack() as cleanup:
        database = cleanup.enter_context(migrated_postgres("superstep_integration"))
        env = production_env(
            subprocess_env,
            database_url=database,
            redis_url=redis_url,
            SUPERSTEP_LEASE_SECONDS=str(LEASE_SECONDS),
            SUPERSTEP_BACKGROUND_SERVICES="0",  # the test sweeps when it means to
        )
        logs = tmp_path_factory.mktemp("integration")
        deployment = cleanup.enter_context(deployed(env, database, logs, migrate=False))
        deployment.daphne()
        deployment.worker("w1")
        deployment.worker("w2")
        yield deployment


@pytest.fixture(scope="module")
def operator_token(stack: Stack) -> str:
    return str(stack.driver("user", "olga", "Operator", "Approver"))


# ------------------------------------------------------------------------------ the scenarios


def test_return_replace_pauses_and_an_api_approval_resumes_it_on_a_worker(
    stack: Stack, operator_token: str
) -> None:
    run_id = stack.start_run(operator_token, "return-replace", {"order_id": "ORD-IT", "work_ms": 0})

    stack.wait_for_run(run_id, "waiting")
    status, body = stack.api("GET", "/api/approvals/", operator_token)
    assert status == 200
    (approval,) = [a for a in body["approvals"] if a["run_id"] == run_id]
    status, decided = stack.api(
        "POST",
        f"/api/approvals/{approval['request_id']}/decide/",
        operator_token,
        {"decision": "approve", "response": {"discount_percent": 10, "note": "from the API"}},
    )
    assert status == 200 and decided["status"] == "approved", decided

    run = stack.wait_for_run(run_id, "completed", "failed")
    assert run["status"] == "completed", run["traceback"]
    assert run["output"]["outcome"] == "replacement approved"
    assert run["output"]["operator_note"] == "from the API"
    assert run["output"]["completed_steps"][-2:] == ["apply-discount", "finalize"]
    assert stack.event_seqs(run_id) == list(range(1, run["last_event_seq"] + 1))
    status, via_api = stack.api("GET", f"/api/runs/{run_id}/", operator_token)
    assert status == 200 and via_api["status"] == "completed"


def test_a_worker_killed_mid_run_is_recovered_by_another_with_the_same_output(
    stack: Stack, operator_token: str
) -> None:
    squares = {"limit": 10, "work_ms": 400}
    run_id = stack.start_run(operator_token, "squares", squares)
    wait_for(lambda: stack.run(run_id)["current_superstep"] >= 3, "superstep 3", stack.log)
    owner = stack.run(run_id)["lease_owner"]
    victim = stack.lease_holder(run_id)
    reference_id = stack.start_run(operator_token, "squares", squares)  # the survivor runs it

    stack.kill(victim)  # SIGKILL: no goodbye, the lease just stops being renewed
    stack.worker(f"{victim}-replacement")
    killed_at = stack.run(run_id)["current_superstep"]
    wait_for(
        lambda: stack.driver("sweep") == [run_id],
        "the sweeper to requeue the run",
        stack.log,
        timeout=LEASE_SECONDS * 10,
    )

    run = stack.wait_for_run(run_id, "completed", "failed")
    reference = stack.wait_for_run(reference_id, "completed", "failed")
    assert run["status"] == "completed", run["traceback"]
    assert run["output"] == reference["output"]
    assert 3 <= killed_at < 10
    attempts = stack.running_attempts(run_id)
    assert [a["attempt"] for a in attempts] == [1, 2]
    assert attempts[0]["worker"] == owner != attempts[1]["worker"]
    chain = stack.checkpoints(run_id)
    lineage_is_unbroken(chain)
    assert [c["superstep"] for c in chain] == [
        c["superstep"] for c in stack.checkpoints(reference_id)
    ]
    assert stack.event_seqs(run_id) == list(range(1, run["last_event_seq"] + 1))
    requeued = stack.query(
        "SELECT data FROM dashboard_runevent WHERE run_id = %s AND type = 'run_requeued'", run_id
    )
    assert [r["data"] for r in requeued] == [{"reason": "lease expired"}]


def test_fifty_concurrent_approvals_give_one_decision_and_one_resume(
    stack: Stack, operator_token: str
) -> None:
    run_id = stack.start_run(operator_token, "return-replace", {"work_ms": 0})
    stack.wait_for_run(run_id, "waiting")
    (approval,) = stack.query(
        "SELECT request_id FROM dashboard_approvalrequest WHERE run_id = %s", run_id
    )

    statuses = stack.driver("decide", approval["request_id"], "50", operator_token)

    assert statuses == [200] + [409] * 49
    run = stack.wait_for_run(run_id, "completed", "failed")
    assert run["status"] == "completed"
    kinds = [c["kind"] for c in stack.checkpoints(run_id)]
    assert kinds.count("responses") == 1  # one resume
    decided = stack.query(
        "SELECT count(*) AS n FROM dashboard_runevent"
        " WHERE run_id = %s AND type = 'approval_decided'",
        run_id,
    )
    assert decided[0]["n"] == 1
    (row,) = stack.query(
        "SELECT status, decided_at FROM dashboard_approvalrequest WHERE run_id = %s", run_id
    )
    assert row["status"] == "approved" and row["decided_at"] is not None


def test_a_worker_keeps_working_after_the_database_cut_its_connections(
    stack: Stack, operator_token: str
) -> None:
    first = stack.start_run(operator_token, "squares", {"limit": 2, "work_ms": 0})
    stack.wait_for_run(first, "completed")

    # What a PostgreSQL restart or failover does to every open connection.
    cut = stack.query(
        "SELECT pg_terminate_backend(pid) AS cut FROM pg_stat_activity"
        " WHERE datname = current_database() AND pid <> pg_backend_pid()"
    )
    assert cut

    runs = [
        stack.start_run(operator_token, "squares", {"limit": 2, "work_ms": 0}) for _ in range(3)
    ]
    for run_id in runs:
        run = stack.wait_for_run(run_id, "completed", "failed")
        assert run["status"] == "completed", run["traceback"]
