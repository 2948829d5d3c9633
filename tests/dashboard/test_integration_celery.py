"""Production mode end to end: real ``celery -A dashboard worker`` processes on Redis and a
fresh PostgreSQL database, a real Daphne serving the JSON API, and SIGKILL.

* the return-replace run pauses, an approval through the API resumes it to completion;
* a worker killed with SIGKILL mid-run is recovered by another worker once its lease
  (``SUPERSTEP_LEASE_SECONDS=3`` here) has expired and the sweeper ran: same output as an
  uninterrupted run, one unbroken checkpoint chain;
* fifty concurrent approvals of one request: one decision (one 200, 49 x 409), one resume;
* a worker whose database connections were cut (PostgreSQL restarted) runs the next run.

Every process is started in its own session and killed in fixture teardown, whatever happens.
The test process reads the database with psycopg and acts through HTTP or
``integration_driver.py`` (a child process with the production settings).
"""

from __future__ import annotations

import itertools
import json
import os
import secrets
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import psycopg
import pytest
from psycopg.rows import dict_row

from dashboard.config.settings import BASE_DIR

pytestmark = [pytest.mark.slow, pytest.mark.postgres, pytest.mark.redis]

HERE = Path(__file__).parent
LEASE_SECONDS = 3
WAIT = 60.0


# ------------------------------------------------------------------------------ processes


class Stack:
    """The environment and the processes of one production-mode deployment."""

    def __init__(self, env: dict[str, str], db_url: str, logs: Path) -> None:
        self.env = env
        self.db_url = db_url
        self.logs = logs
        self.processes: dict[str, subprocess.Popen[bytes]] = {}
        self.base_url = ""

    def start(self, name: str, *command: str) -> subprocess.Popen[bytes]:
        with (self.logs / f"{name}.log").open("ab") as log:
            process = subprocess.Popen(
                command, cwd=BASE_DIR, env=self.env, stdout=log, stderr=subprocess.STDOUT,
                start_new_session=True,  # its own process group: teardown kills all of it
            )
        self.processes[name] = process
        return process

    def worker(self, name: str) -> subprocess.Popen[bytes]:
        return self.start(
            name, sys.executable, "-m", "celery", "-A", "dashboard", "worker", "--pool", "solo",
            "--loglevel", "INFO", "--without-mingle", "--without-gossip", "--hostname", f"{name}@%h",
        )

    def daphne(self) -> None:
        port = _free_port()
        self.start("daphne", sys.executable, "-m", "daphne", "-b", "127.0.0.1", "-p", str(port),
                   "dashboard.config.asgi:application")
        self.base_url = f"http://127.0.0.1:{port}"
        wait_for(lambda: _answers(self.base_url), "daphne to answer", self.log)

    def kill(self, name: str) -> None:
        process = self.processes.pop(name)
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
        process.wait(10)

    def stop_all(self) -> None:
        for name in list(self.processes):
            self.kill(name)

    def driver(self, *arguments: str) -> Any:
        result = subprocess.run(
            [sys.executable, str(HERE / "integration_driver.py"), *arguments],
            cwd=BASE_DIR, env=self.env, capture_output=True, text=True, timeout=120, check=False,
        )
        assert result.returncode == 0, result.stderr[-3000:]
        return json.loads(result.stdout.strip().splitlines()[-1])

    def log(self) -> str:
        return "\n".join(
            f"--- {path.name}\n{path.read_text(errors='replace')[-3000:]}"
            for path in sorted(self.logs.glob("*.log"))
        )

    # -------------------------------------------------------------------------- database

    def query(self, sql: str, *params: Any) -> list[dict[str, Any]]:
        with psycopg.connect(self.db_url, autocommit=True, row_factory=dict_row) as connection:
            return connection.execute(sql, params).fetchall()

    def run(self, run_id: str) -> dict[str, Any]:
        (row,) = self.query("SELECT * FROM dashboard_workflowrun WHERE id = %s", run_id)
        return row

    def wait_for_run(self, run_id: str, *statuses: str) -> dict[str, Any]:
        wait_for(lambda: self.run(run_id)["status"] in statuses, f"run {run_id} {statuses}", self.log)
        return self.run(run_id)

    def checkpoints(self, run_id: str) -> list[dict[str, Any]]:
        return self.query(
            "SELECT checkpoint_id, previous_checkpoint_id, superstep, engine_run_id,"
            " document->'metadata'->>'kind' AS kind FROM dashboard_checkpoint"
            " WHERE run_id = %s ORDER BY created_at, checkpoint_id", run_id,
        )

    def event_seqs(self, run_id: str) -> list[int]:
        rows = self.query("SELECT seq FROM dashboard_runevent WHERE run_id = %s ORDER BY seq", run_id)
        return [row["seq"] for row in rows]

    # ------------------------------------------------------------------------------- HTTP

    def api(self, method: str, path: str, token: str, body: Any = None) -> tuple[int, Any]:
        request = urllib.request.Request(
            self.base_url + path, method=method,
            data=None if body is None else json.dumps(body).encode(),
            headers={"Authorization": f"Bearer {token}", "Content-Type": "application/json"},
        )
        try:
            with urllib.request.urlopen(request, timeout=30) as response:
                return response.status, json.loads(response.read())
        except urllib.error.HTTPError as error:
            return error.code, json.loads(error.read() or b"null")

    def start_run(self, token: str, workflow: str, input: dict[str, Any]) -> str:
        status, body = self.api("POST", "/api/runs/", token, {"workflow": workflow, "input": input})
        assert status == 201, body
        return str(body["id"])


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _answers(base_url: str) -> bool:
    try:
        urllib.request.urlopen(base_url + "/api/workflows/", timeout=2)
    except urllib.error.HTTPError:
        return True  # 401: it answers
    except OSError:
        return False
    return True


def wait_for(condition: Callable[[], bool], what: str, log: Callable[[], str], timeout: float = WAIT) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            pytest.fail(f"timed out waiting for {what}\n{log()}")
        time.sleep(0.05)


@pytest.fixture(scope="module")
def stack(
    postgres_db_url: str, redis_url: str, subprocess_env: Callable[..., dict[str, str]],
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[Stack]:
    """A migrated database, Daphne, and two workers (``w1``, ``w2``)."""
    env = subprocess_env(
        DEBUG="0",
        SECRET_KEY=secrets.token_urlsafe(50),
        DATABASE_URL=postgres_db_url,
        REDIS_URL=redis_url,
        ALLOWED_HOSTS="127.0.0.1,localhost",
        SECURE_SSL_REDIRECT="0",
        SUPERSTEP_LEASE_SECONDS=str(LEASE_SECONDS),
        SUPERSTEP_BACKGROUND_SERVICES="0",  # the test sweeps when it means to
        SUPERSTEP_DEMO="1",  # the demo workflows, in production mode
        DATABASE_CONN_MAX_AGE="60",  # persistent connections, as a tuned deployment runs
        PYTHONPATH=str(HERE),
    )
    deployment = Stack(env, postgres_db_url, tmp_path_factory.mktemp("integration"))
    migrate = subprocess.run(
        [sys.executable, "manage.py", "migrate", "--noinput"],
        cwd=BASE_DIR, env=env, capture_output=True, text=True, timeout=300, check=False,
    )
    assert migrate.returncode == 0, migrate.stderr[-3000:]
    try:
        deployment.daphne()
        deployment.worker("w1")
        deployment.worker("w2")
        yield deployment
    finally:
        deployment.stop_all()


@pytest.fixture(scope="module")
def operator_token(stack: Stack) -> str:
    return str(stack.driver("user", "olga", "Operator", "Approver"))


def lineage_is_unbroken(checkpoints: list[dict[str, Any]]) -> None:
    """One chain: each checkpoint follows the one before it, supersteps contiguous, none twice."""
    assert checkpoints[0]["previous_checkpoint_id"] is None
    for before, after in itertools.pairwise(checkpoints):
        assert after["previous_checkpoint_id"] == before["checkpoint_id"], (before, after)
    steps = [c["superstep"] for c in checkpoints if c["kind"] in ("entry", "superstep")]
    assert steps == list(range(len(steps))), steps
    assert len({c["engine_run_id"] for c in checkpoints}) == 1


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
        "POST", f"/api/approvals/{approval['request_id']}/decide/", operator_token,
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
    victim = next(name for name, p in stack.processes.items() if f":{p.pid}:" in owner)
    reference_id = stack.start_run(operator_token, "squares", squares)  # the survivor runs it

    stack.kill(victim)  # SIGKILL: no goodbye, the lease just stops being renewed
    stack.worker(f"{victim}-replacement")
    killed_at = stack.run(run_id)["current_superstep"]
    wait_for(lambda: stack.driver("sweep") == [run_id], "the sweeper to requeue the run", stack.log,
             timeout=LEASE_SECONDS * 10)

    run = stack.wait_for_run(run_id, "completed", "failed")
    reference = stack.wait_for_run(reference_id, "completed", "failed")
    assert run["status"] == "completed", run["traceback"]
    assert run["output"] == reference["output"]
    assert 3 <= killed_at < 10
    attempts = stack.query(
        "SELECT data FROM dashboard_runevent WHERE run_id = %s AND type = 'run_status'"
        " AND data->>'status' = 'running' ORDER BY seq", run_id)
    assert [a["data"]["attempt"] for a in attempts] == [1, 2]
    assert attempts[0]["data"]["worker"] == owner != attempts[1]["data"]["worker"]
    chain = stack.checkpoints(run_id)
    lineage_is_unbroken(chain)
    assert [c["superstep"] for c in chain] == [c["superstep"] for c in stack.checkpoints(reference_id)]
    assert stack.event_seqs(run_id) == list(range(1, run["last_event_seq"] + 1))
    requeued = stack.query(
        "SELECT data FROM dashboard_runevent WHERE run_id = %s AND type = 'run_requeued'", run_id)
    assert [r["data"] for r in requeued] == [{"reason": "lease expired"}]


def test_fifty_concurrent_approvals_give_one_decision_and_one_resume(
    stack: Stack, operator_token: str
) -> None:
    run_id = stack.start_run(operator_token, "return-replace", {"work_ms": 0})
    stack.wait_for_run(run_id, "waiting")
    (approval,) = stack.query(
        "SELECT request_id FROM dashboard_approvalrequest WHERE run_id = %s", run_id)

    statuses = stack.driver("decide", approval["request_id"], "50", operator_token)

    assert statuses == [200] + [409] * 49
    run = stack.wait_for_run(run_id, "completed", "failed")
    assert run["status"] == "completed"
    kinds = [c["kind"] for c in stack.checkpoints(run_id)]
    assert kinds.count("responses") == 1  # one resume
    decided = stack.query(
        "SELECT count(*) AS n FROM dashboard_runevent WHERE run_id = %s AND type = 'approval_decided'",
        run_id)
    assert decided[0]["n"] == 1
    (row,) = stack.query(
        "SELECT status, decided_at FROM dashboard_approvalrequest WHERE run_id = %s", run_id)
    assert row["status"] == "approved" and row["decided_at"] is not None


def test_a_worker_keeps_working_after_the_database_cut_its_connections(
    stack: Stack, operator_token: str
) -> None:
    first = stack.start_run(operator_token, "squares", {"limit": 2, "work_ms": 0})
    stack.wait_for_run(first, "completed")

    # What a PostgreSQL restart or failover does to every open connection.
    cut = stack.query(
        "SELECT pg_terminate_backend(pid) AS cut FROM pg_stat_activity"
        " WHERE datname = current_database() AND pid <> pg_backend_pid()")
    assert cut

    runs = [stack.start_run(operator_token, "squares", {"limit": 2, "work_ms": 0}) for _ in range(3)]
    for run_id in runs:
        run = stack.wait_for_run(run_id, "completed", "failed")
        assert run["status"] == "completed", run["traceback"]
