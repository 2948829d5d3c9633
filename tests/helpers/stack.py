"""Production-mode deployments for the integration and fault tests.

``Stack`` starts the processes of a deployment with the production settings (``daphne``,
``celery -A dashboard worker``, ``celery -A dashboard beat``), each in its own session so
teardown kills all of it, and reads the database with psycopg the way an operator would.
``integration_driver.py`` acts inside a child process with the same environment.

The fault tests break the services a deployment depends on, so they bring their own:
``PostgresCluster`` (``initdb`` into a temporary folder, on a free port, run as the
``postgres`` OS user when the tests run as root) and ``RedisServer`` (a ``redis-server`` on a
free port, without persistence). Restarting or killing those never touches the shared servers
on 5432 and 6379 (``own_deployment`` is a ``Stack`` on them). Where their programs are missing,
``require_program`` skips the test with the reason, or fails it when ``CI`` is set (as
tests/conftest.py does for the shared servers). ``held_at`` holds one insert of a worker's in
the middle of its transaction, so that a fault lands at an exact instant of its work.

Not a test module: the test modules import it as ``tests.helpers.stack``.
"""

from __future__ import annotations

import contextlib
import glob
import itertools
import json
import os
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import psycopg
import pytest
from psycopg import sql
from psycopg.rows import dict_row

from dashboard.config.settings import BASE_DIR
from tests.browser.deadlines import seconds
from tests.conftest import in_ci
from tests.helpers.ports import free_port

HERE = Path(__file__).parent
WAIT = 60.0


# ------------------------------------------------------------------------------ the deployment


def production_env(
    subprocess_env: Callable[..., dict[str, str]],
    *,
    database_url: str,
    redis_url: str,
    **overrides: str,
) -> dict[str, str]:
    """The environment of every process of one deployment: production settings (DEBUG off),
    the demo workflows, persistent database connections as a tuned deployment runs them."""
    return subprocess_env(
        DEBUG="0",
        SECRET_KEY=secrets.token_urlsafe(50),
        DATABASE_URL=database_url,
        REDIS_URL=redis_url,
        ALLOWED_HOSTS="127.0.0.1,localhost",
        SECURE_SSL_REDIRECT="0",
        SUPERSTEP_DEMO="1",
        DATABASE_CONN_MAX_AGE="60",
        # The tests' webhook receivers listen on this machine: admitted on purpose.
        SUPERSTEP_OUTBOUND_ALLOW="127.0.0.0/8,::1,localhost",
        # One address signs in as every test user, and load tests call the API in loops.
        SUPERSTEP_RATE_API_TOKEN="off",
        SUPERSTEP_RATE_API_USER="off",
        SUPERSTEP_RATE_SIGNIN_ADDRESS="off",
        SUPERSTEP_RATE_SIGNIN_ACCOUNT="off",
        PYTHONPATH=str(HERE),  # integration_driver.py and celery_test_tasks.py
        **overrides,
    )


def manage(env: dict[str, str], *arguments: str) -> None:
    """``manage.py`` in the deployment's environment (``migrate``, ``collectstatic``)."""
    result = subprocess.run(
        [sys.executable, "manage.py", *arguments],
        cwd=BASE_DIR,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert result.returncode == 0, result.stderr[-3000:]


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
                command,
                cwd=BASE_DIR,
                env=self.env,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,  # its own process group: teardown kills all of it
            )
        self.processes[name] = process
        return process

    def worker(self, name: str, *options: str) -> subprocess.Popen[bytes]:
        return self.start(
            name,
            sys.executable,
            "-m",
            "celery",
            "-A",
            "dashboard",
            "worker",
            "--pool",
            "solo",
            "--loglevel",
            "INFO",
            "--without-mingle",
            "--without-gossip",
            "--hostname",
            f"{name}@%h",
            *options,
        )

    def beat(self) -> subprocess.Popen[bytes]:
        """Celery beat, which publishes the periodic jobs (the lease sweeper...)."""
        return self.start(
            "beat",
            sys.executable,
            "-m",
            "celery",
            "-A",
            "dashboard",
            "beat",
            "--loglevel",
            "INFO",
            "--schedule",
            str(self.logs / "beat-schedule"),
        )

    def daphne(self) -> None:
        port = free_port()
        self.start(
            "daphne",
            sys.executable,
            "-m",
            "daphne",
            "-b",
            "127.0.0.1",
            "-p",
            str(port),
            "dashboard.config.asgi:application",
        )
        self.base_url = f"http://127.0.0.1:{port}"
        wait_for(lambda: answers(self.base_url), "daphne to answer", self.log)

    def kill(self, name: str) -> None:
        process = self.processes.pop(name)
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
        process.wait(10)

    def stop_all(self) -> None:
        for name in list(self.processes):
            self.kill(name)

    def exited(self) -> dict[str, int]:
        """The processes that are no longer running, with their exit codes."""
        return {
            name: code
            for name, process in self.processes.items()
            if (code := process.poll()) is not None
        }

    def driver(self, *arguments: str, script: str = "integration_driver.py") -> Any:
        """The JSON value a driver in tests/helpers (``script``) printed last, run in the
        deployment's environment."""
        result = subprocess.run(
            [sys.executable, str(HERE / script), *arguments],
            cwd=BASE_DIR,
            env=self.env,
            capture_output=True,
            text=True,
            timeout=seconds(120),
            check=False,
        )
        assert result.returncode == 0, result.stderr[-3000:]
        return json.loads(result.stdout.strip().splitlines()[-1])

    def log(self) -> str:
        return "\n".join(
            f"--- {path.name}\n{path.read_text(errors='replace')[-3000:]}"
            for path in sorted(self.logs.glob("*.log"))
        )

    # -------------------------------------------------------------------------- database

    def query(self, statement: str, *params: Any) -> list[dict[str, Any]]:
        with psycopg.connect(self.db_url, autocommit=True, row_factory=dict_row) as connection:
            return connection.execute(statement, params).fetchall()

    def execute(self, statements: str) -> None:
        """SQL that returns no rows (DDL), in one autocommitted batch."""
        with psycopg.connect(self.db_url, autocommit=True) as connection:
            connection.execute(statements)

    def run(self, run_id: str) -> dict[str, Any]:
        (row,) = self.query("SELECT * FROM dashboard_workflowrun WHERE id = %s", run_id)
        return row

    def wait_for_run(self, run_id: str, *statuses: str, timeout: float = WAIT) -> dict[str, Any]:
        wait_for(
            lambda: self.run(run_id)["status"] in statuses,
            f"run {run_id} {statuses}",
            self.log,
            timeout,
        )
        return self.run(run_id)

    def lease_holder(self, run_id: str) -> str:
        """The name of the worker process that holds the run's lease."""
        owner = self.run(run_id)["lease_owner"]
        return next(name for name, p in self.processes.items() if f":{p.pid}:" in owner)

    def running_attempts(self, run_id: str) -> list[dict[str, Any]]:
        """The data of the run's ``running`` status events: each attempt and its worker."""
        rows = self.query(
            "SELECT data FROM dashboard_runevent WHERE run_id = %s AND type = 'run_status'"
            " AND data->>'status' = 'running' ORDER BY seq",
            run_id,
        )
        return [row["data"] for row in rows]

    def checkpoints(self, run_id: str) -> list[dict[str, Any]]:
        return self.query(
            "SELECT checkpoint_id, previous_checkpoint_id, superstep, engine_run_id,"
            " document->'metadata'->>'kind' AS kind FROM dashboard_checkpoint"
            " WHERE run_id = %s ORDER BY created_at, checkpoint_id",
            run_id,
        )

    def event_seqs(self, run_id: str) -> list[int]:
        rows = self.query(
            "SELECT seq FROM dashboard_runevent WHERE run_id = %s ORDER BY seq", run_id
        )
        return [row["seq"] for row in rows]

    # ------------------------------------------------------------------------------- HTTP

    def api(self, method: str, path: str, token: str, body: Any = None) -> tuple[int, Any]:
        request = urllib.request.Request(
            self.base_url + path,
            method=method,
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

    def approve(self, token: str, run_id: str, response: dict[str, Any]) -> None:
        """Approve the run's one pending request through the API, as its approver would."""
        status, body = self.api("GET", "/api/approvals/", token)
        assert status == 200, body
        (request,) = [a for a in body["approvals"] if a["run_id"] == run_id]
        status, decided = self.api(
            "POST",
            f"/api/approvals/{request['request_id']}/decide/",
            token,
            {"decision": "approve", "response": response},
        )
        assert status == 200, decided


@contextlib.contextmanager
def deployed(
    env: dict[str, str], db_url: str, logs: Path, *, migrate: bool = True
) -> Iterator[Stack]:
    """A migrated database and a ``Stack`` whose processes are killed on leaving; ``migrate``
    False for a database that comes migrated (the ``migrated_postgres`` fixture's)."""
    if migrate:
        manage(env, "migrate", "--noinput")
    stack = Stack(env, db_url, logs)
    try:
        yield stack
    finally:
        stack.stop_all()


@contextlib.contextmanager
def migrated_deployment(
    migrated_postgres: Callable[[str], contextlib.AbstractContextManager[str]],
    name: str,
    redis_url: str,
    subprocess_env: Callable[..., dict[str, str]],
    logs: Path,
    **overrides: str,
) -> Iterator[Stack]:
    """``deployed`` on a migrated copy of the suite's PostgreSQL template named ``name`` and
    the given Redis, with ``production_env`` and ``overrides``; no process started yet."""
    with migrated_postgres(name) as database:
        env = production_env(
            subprocess_env, database_url=database, redis_url=redis_url, **overrides
        )
        with deployed(env, database, logs, migrate=False) as deployment:
            yield deployment


@contextlib.contextmanager
def own_deployment(
    cluster: PostgresCluster,
    logs: Path,
    subprocess_env: Callable[..., dict[str, str]],
    *,
    redis: RedisServer | None = None,
    **overrides: str,
) -> Iterator[Stack]:
    """``deployed`` on a new database of ``cluster`` and a Redis of its own (or ``redis``, for
    a test that kills it), with ``production_env`` and ``overrides``; no process started yet."""
    db_url = cluster.create_database("superstep")
    with contextlib.ExitStack() as resources:
        broker = redis or resources.enter_context(redis_server(logs))
        env = production_env(subprocess_env, database_url=db_url, redis_url=broker.url, **overrides)
        yield resources.enter_context(deployed(env, db_url, logs))


def answers(base_url: str) -> bool:
    try:
        urllib.request.urlopen(base_url + "/api/workflows/", timeout=2)
    except urllib.error.HTTPError:
        return True  # 401: it answers
    except OSError:
        return False
    return True


def wait_for(
    condition: Callable[[], bool], what: str, log: Callable[[], str], timeout: float = WAIT
) -> None:
    """Poll ``condition`` until it holds; fail after ``timeout`` seconds of a quiet machine,
    scaled to how busy this one is (``deadlines.seconds``): a busy machine is not a bug."""
    allowed = seconds(timeout)
    deadline = time.monotonic() + allowed
    while not condition():
        if time.monotonic() > deadline:
            pytest.fail(f"timed out after {allowed:.0f} s waiting for {what}\n{log()}")
        time.sleep(0.05)


def lineage_is_unbroken(checkpoints: list[dict[str, Any]]) -> None:
    """One chain: each checkpoint follows the one before it, supersteps contiguous, none twice."""
    assert checkpoints[0]["previous_checkpoint_id"] is None
    for before, after in itertools.pairwise(checkpoints):
        assert after["previous_checkpoint_id"] == before["checkpoint_id"], (before, after)
    steps = [c["superstep"] for c in checkpoints if c["kind"] in ("entry", "superstep")]
    assert steps == list(range(len(steps))), steps
    assert len({c["engine_run_id"] for c in checkpoints}) == 1


class Gate:
    """See ``held_at``: ``wait()`` until the chosen insert is held, ``release()`` it."""

    def __init__(self, stack: Stack, holder: psycopg.Connection[Any]) -> None:
        self.stack = stack
        self.holder = holder

    def held(self) -> bool:
        rows = self.stack.query(
            "SELECT 1 FROM pg_stat_activity WHERE wait_event_type = 'Lock'"
            " AND wait_event = 'advisory' AND datname = current_database()"
        )
        return bool(rows)

    def wait(self, what: str) -> None:
        wait_for(self.held, what, self.stack.log)

    def release(self) -> None:
        """Let the held insert go on; harmless once PostgreSQL restarted (the hold went too)."""
        with contextlib.suppress(psycopg.Error):
            self.holder.close()


@contextlib.contextmanager
def held_at(stack: Stack, table: str, condition: str, nth: int) -> Iterator[Gate]:
    """The ``nth`` INSERT into ``table`` whose ``NEW`` row meets ``condition`` waits, inside
    its transaction, until the test releases it: a trigger takes a shared advisory lock that
    the test holds. So a fault can be made at an exact instant of a worker's work (in the
    middle of a bulk action's chunk, of a pass firing schedules) instead of at a guessed one.
    The trigger is dropped on leaving."""
    stack.execute(f"""
        CREATE SEQUENCE gate_inserts;  -- nextval is not rolled back with its transaction
        CREATE FUNCTION gate() RETURNS trigger LANGUAGE plpgsql AS $$
        BEGIN
          IF {condition} THEN
            IF nextval('gate_inserts') = {int(nth)} THEN
              PERFORM pg_advisory_xact_lock_shared({GATE_KEY});
            END IF;
          END IF;
          RETURN NEW;
        END $$;
        CREATE TRIGGER gate BEFORE INSERT ON {table} FOR EACH ROW EXECUTE FUNCTION gate();
    """)
    holder = psycopg.connect(stack.db_url, autocommit=True)
    holder.execute("SELECT pg_advisory_lock(%s)", (GATE_KEY,))
    gate = Gate(stack, holder)
    try:
        yield gate
    finally:
        gate.release()
        stack.execute(
            f"DROP TRIGGER gate ON {table}; DROP FUNCTION gate(); DROP SEQUENCE gate_inserts;"
        )


GATE_KEY = 0x5E5E


# ------------------------------------------------------------------------------ own services


def require_program(program: str | None, what: str) -> str:
    """The path of ``program``; else skip the test, or fail it when ``CI`` is set."""
    if program is not None:
        return program
    reason = f"{what} is not installed"
    if in_ci():
        pytest.fail(f"{reason} (CI is set, so this test may not be skipped)", pytrace=False)
    pytest.skip(reason)


def _postgres_bindir() -> str | None:
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"), key=_version)
    if found:
        return str(Path(found[-1]).parent)
    initdb = shutil.which("initdb")
    return str(Path(initdb).parent) if initdb else None


def _version(initdb: str) -> int:
    return int(Path(initdb).parts[-3]) if Path(initdb).parts[-3].isdecimal() else 0


class PostgresCluster:
    """A PostgreSQL cluster of the test's own, on a free port, trusting local connections.

    ``initdb`` refuses to run as root, so as root the cluster belongs to the ``postgres`` OS
    user (in a folder it owns); otherwise to whoever runs the tests.
    """

    def __init__(self) -> None:
        self.bindir = require_program(_postgres_bindir(), "PostgreSQL's initdb")
        self.home = Path(tempfile.mkdtemp(prefix="superstep-pg-"))
        self.data = self.home / "data"
        self.port = free_port()
        self.as_postgres = os.geteuid() == 0
        if self.as_postgres:
            shutil.chown(self.home, "postgres", "postgres")
        self._ctl(
            "initdb",
            "-D",
            str(self.data),
            "--auth=trust",
            "-U",
            "postgres",
            "-E",
            "UTF8",
            "--no-sync",
        )
        options = [
            f"-p {self.port}",
            f"-k {self.home}",
            "-c listen_addresses=127.0.0.1",
            # A restart loses nothing without fsync: the operating system keeps the pages.
            "-c fsync=off",
            "-c max_connections=200",
        ]
        self._options = " ".join(options)

    def _ctl(self, program: str, *arguments: str) -> None:
        command = [str(Path(self.bindir) / program), *arguments]
        if self.as_postgres:
            command = ["runuser", "-u", "postgres", "--", *command]
        result = subprocess.run(command, capture_output=True, text=True, timeout=120, check=False)
        assert result.returncode == 0, f"{' '.join(command)}:\n{result.stdout}\n{result.stderr}"

    def start(self) -> None:
        self._ctl(
            "pg_ctl",
            "-D",
            str(self.data),
            "-l",
            str(self.home / "server.log"),
            "-o",
            self._options,
            "-w",
            "-t",
            "60",
            "start",
        )

    def stop(self, mode: str = "fast") -> None:
        self._ctl("pg_ctl", "-D", str(self.data), "-m", mode, "-w", "-t", "60", "stop")

    def url(self, dbname: str = "postgres") -> str:
        return f"postgres://postgres@127.0.0.1:{self.port}/{dbname}"

    def create_database(self, name: str) -> str:
        with psycopg.connect(self.url(), autocommit=True) as connection:
            connection.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
        return self.url(name)

    def log(self) -> str:
        path = self.home / "server.log"
        return path.read_text(errors="replace")[-3000:] if path.exists() else ""

    def destroy(self) -> None:
        with contextlib.suppress(AssertionError):
            self.stop("immediate")
        shutil.rmtree(self.home, ignore_errors=True)


@contextlib.contextmanager
def postgres_cluster() -> Iterator[PostgresCluster]:
    cluster = PostgresCluster()
    try:
        cluster.start()
        yield cluster
    finally:
        cluster.destroy()


class RedisServer:
    """A ``redis-server`` of the test's own on a free port, without persistence: killed, it
    comes back empty, as a Redis without AOF does after a crash."""

    def __init__(self, home: Path) -> None:
        self.program = require_program(shutil.which("redis-server"), "redis-server")
        self.home = home
        self.port = free_port()
        self.url = f"redis://127.0.0.1:{self.port}/0"
        self.process: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        with (self.home / "redis.log").open("ab") as log:
            self.process = subprocess.Popen(
                [
                    self.program,
                    "--port",
                    str(self.port),
                    "--bind",
                    "127.0.0.1",
                    "--save",
                    "",
                    "--appendonly",
                    "no",
                    "--dir",
                    str(self.home),
                ],
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        wait_for(self._answers, f"redis-server on {self.port}", lambda: "")

    def _answers(self) -> bool:
        with socket.socket() as probe:
            probe.settimeout(1)
            try:
                probe.connect(("127.0.0.1", self.port))
                probe.sendall(b"PING\r\n")
                return probe.recv(16).startswith(b"+PONG")
            except OSError:
                return False

    def kill(self) -> None:
        """SIGKILL: no shutdown, every queued message and group membership is gone."""
        assert self.process is not None
        self.process.kill()
        self.process.wait(10)
        self.process = None

    def stop(self) -> None:
        if self.process is not None:
            self.kill()


@contextlib.contextmanager
def redis_server(home: Path) -> Iterator[RedisServer]:
    server = RedisServer(home)
    try:
        server.start()
        yield server
    finally:
        server.stop()
