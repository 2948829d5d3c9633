"""Graceful shutdown with real processes: SIGTERM to the Celery worker that holds a run and to
the web servers holding websockets; and the workers' readiness, the heartbeat file
(dashboard/execution/heartbeat.py) and ``celery inspect ping``.

Two ``celery -A dashboard worker --pool prefork --concurrency 1`` (the production pool: the run
executes in a child, the signal reaches the main process only, as ``docker stop`` or Kubernetes
send it), Daphne, PostgreSQL and Redis; no beat and a 30 s lease, so nothing but the hand-back
can move the run. A ``squares`` run of 300 ms supersteps is signalled mid-run: the lease moves
to the other worker within 2 s of the signal, the signalled worker exits by itself (code 0),
and the run completes with the right output from one unbroken chain, every superstep once,
with no worker counted lost; the signalled worker's heartbeat file is gone. The workers log
JSON lines (``SUPERSTEP_LOG_FORMAT=json``): the hand-back's names the run, its workflow and
the superstep it stopped after.

A web server signalled with a browser's socket open closes it with a code static/js/live.js
reconnects on, and exits within a bound: the README's uvicorn command sends 1012 (service
restart) from each worker process; Daphne drops the connection, which the browser sees as
1006 (abnormal closure).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import websockets

from dashboard.config.settings import BASE_DIR
from dashboard.execution.heartbeat import EVERY
from tests.dashboard.integration.test_production_server import _on_port, readme_server_command
from tests.helpers.stack import (
    Stack,
    answers,
    free_port,
    lineage_is_unbroken,
    migrated_deployment,
    wait_for,
)

pytestmark = [pytest.mark.slow, pytest.mark.postgres, pytest.mark.redis]

SQUARES = {"limit": 10, "work_ms": 300}
MOVED_WITHIN = 2.0  # seconds from SIGTERM to the other worker's lease


@pytest.fixture(scope="module")
def stack(
    migrated_postgres: Callable[[str], contextlib.AbstractContextManager[str]],
    redis_url: str,
    subprocess_env: Callable[..., dict[str, str]],
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[Stack]:
    logs = tmp_path_factory.mktemp("graceful-shutdown")
    with migrated_deployment(
        migrated_postgres,
        "superstep_shutdown",
        redis_url,
        subprocess_env,
        logs,
        SUPERSTEP_LEASE_SECONDS="30",
        SUPERSTEP_BACKGROUND_SERVICES="0",
        SUPERSTEP_WORKER_HEARTBEAT_FILE=str(logs / "%n.heartbeat"),
        SUPERSTEP_LOG_FORMAT="json",
    ) as deployment:
        deployment.daphne()
        for name in ("w1", "w2"):
            deployment.worker(name, "--pool", "prefork", "--concurrency", "1")
        yield deployment


def parent_pid(pid: int) -> int:
    # /proc/<pid>/stat: "pid (comm) state ppid ..."; comm may hold spaces, not ")".
    stat = Path(f"/proc/{pid}/stat").read_text()
    return int(stat.rsplit(")", 1)[1].split()[1])


def heartbeat(stack: Stack, worker: str) -> Path:
    return stack.logs / f"{worker}.heartbeat"


def json_lines(log: Path) -> list[dict[str, Any]]:
    """The log's JSON lines (Celery's banner and its signal handler's words are plain text)."""
    text = log.read_text(errors="replace")
    return [json.loads(line) for line in text.splitlines() if line.startswith("{")]


def ready(stack: Stack, worker: str) -> bool:
    return "ready." in (stack.logs / f"{worker}.log").read_text(errors="replace")


def holder(stack: Stack, run_id: str) -> str | None:
    """The worker (main process) whose prefork child holds the run's lease, if any."""
    owner = stack.run(run_id)["lease_owner"]
    if not owner:
        return None
    pid = int(owner.split(":")[1])
    for name, process in stack.processes.items():
        with contextlib.suppress(OSError):
            if process.pid in (pid, parent_pid(pid)):
                return name
    return None


def test_sigterm_moves_the_run_to_the_other_worker_within_2_s_and_it_completes(
    stack: Stack,
) -> None:
    token = str(stack.driver("user", "olga", "Operator"))
    for name in ("w1", "w2"):
        wait_for(lambda n=name: ready(stack, n), f"{name} to be ready", stack.log)
    run_id = stack.start_run(token, "squares", SQUARES)
    wait_for(lambda: stack.run(run_id)["current_superstep"] >= 3, "superstep 3", stack.log)
    victim = holder(stack, run_id)
    assert victim in ("w1", "w2"), stack.run(run_id)["lease_owner"]
    survivor = "w2" if victim == "w1" else "w1"
    process = stack.processes[victim]

    signalled = time.time()
    os.kill(process.pid, signal.SIGTERM)  # the main process only, as an orchestrator sends it
    wait_for(lambda: holder(stack, run_id) == survivor, "the survivor to take the run", stack.log)
    noticed = time.time() - signalled

    assert process.wait(30) == 0  # the warm shutdown ended: its task returned
    assert not heartbeat(stack, victim).exists() and heartbeat(stack, survivor).exists()
    run = stack.wait_for_run(run_id, "completed", "failed")
    assert run["status"] == "completed", run["traceback"]
    assert run["output"] == {"$t": "dict", "v": [[n, n * n] for n in range(1, 11)]}
    assert run["lost_workers"] == 0
    chain = stack.checkpoints(run_id)
    lineage_is_unbroken(chain)
    assert [c["superstep"] for c in chain] == list(range(SQUARES["limit"] + 2))  # each once
    attempts = stack.running_attempts(run_id)
    assert [a["attempt"] for a in attempts] == [1, 2]
    (requeued,) = stack.query(
        "SELECT extract(epoch FROM created_at)::float AS at, data->>'reason' AS reason"
        " FROM dashboard_runevent WHERE run_id = %s AND type = 'run_requeued'",
        run_id,
    )
    (taken,) = stack.query(
        "SELECT extract(epoch FROM created_at)::float AS at FROM dashboard_runevent"
        " WHERE run_id = %s AND type = 'run_status' AND (data->>'attempt')::int = 2"
        " AND data->>'status' = 'running'",
        run_id,
    )
    assert requeued["reason"] == "worker shutting down"
    (handed_back,) = [
        line
        for line in json_lines(stack.logs / f"{victim}.log")
        if line["message"].endswith("(worker shutting down)")
    ]
    assert (handed_back["run_id"], handed_back["workflow"]) == (run_id, "squares")
    assert handed_back["superstep"] in {c["superstep"] for c in chain}
    moved = taken["at"] - signalled
    print(
        f"\nSIGTERM → released {requeued['at'] - signalled:.2f} s → taken by {survivor}"
        f" {moved:.2f} s (seen by the test after {noticed:.2f} s)"
    )
    assert moved < MOVED_WITHIN, moved


def test_a_running_worker_keeps_touching_its_heartbeat_file_and_answers_a_ping(
    stack: Stack,
) -> None:
    worker = next(name for name in ("w1", "w2") if stack.processes[name].poll() is None)
    beat = heartbeat(stack, worker)
    wait_for(beat.exists, f"{worker}'s heartbeat file", stack.log)
    first = beat.stat().st_mtime
    wait_for(
        lambda: beat.exists() and beat.stat().st_mtime > first,
        "the file touched again",
        stack.log,
        timeout=EVERY * 4,
    )

    ping = subprocess.run(
        [sys.executable, "-m", "celery", "-A", "dashboard", "inspect", "ping", "-t", "10"],
        cwd=BASE_DIR,
        env=stack.env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert ping.returncode == 0 and f"{worker}@" in ping.stdout, ping.stdout + ping.stderr
    assert "pong" in ping.stdout


ENDS_WITHIN = 10.0  # seconds from SIGTERM to a web server's exit, its sockets closed


async def close_after_sigterm(base_url: str, cookie: str, pid: int) -> tuple[int, float]:
    """Open the runs socket, SIGTERM ``pid``: the code the socket closed with (1006 when no
    close frame came), and the seconds until it closed."""
    url = base_url.replace("http://", "ws://") + "/ws/runs/"
    headers = {"Cookie": cookie, "Origin": base_url}
    async with websockets.connect(url, additional_headers=headers) as socket:
        signalled = time.monotonic()
        os.kill(pid, signal.SIGTERM)
        try:
            async with asyncio.timeout(ENDS_WITHIN):
                while True:
                    await socket.recv()
        except websockets.ConnectionClosed as closed:
            code = closed.rcvd.code if closed.rcvd is not None else 1006
        return code, time.monotonic() - signalled


@pytest.fixture(scope="module")
def cookie(stack: Stack) -> str:
    stack.driver("user", "uma", "Viewer")
    return f"sessionid={stack.driver('session', 'uma')}"


@pytest.mark.parametrize(
    ("server", "code"),
    [pytest.param("uvicorn", 1012, id="uvicorn"), pytest.param("daphne", 1006, id="daphne")],
)
def test_a_web_server_signalled_closes_its_sockets_with_a_code_the_page_reconnects_on(
    stack: Stack, cookie: str, server: str, code: int
) -> None:
    port = free_port()
    if server == "uvicorn":
        command = [sys.executable, "-m", *_on_port(readme_server_command(), port)]
    else:
        command = [sys.executable, "-m", "daphne", "-b", "127.0.0.1", "-p", str(port)]
        command.append("dashboard.config.asgi:application")
    process = stack.start(f"web-{server}", *command)
    base_url = f"http://127.0.0.1:{port}"
    wait_for(lambda: answers(base_url), f"{server} to answer", stack.log)

    closed, after = asyncio.run(close_after_sigterm(base_url, cookie, process.pid))

    assert closed == code
    live_js = (BASE_DIR / "static" / "js" / "live.js").read_text()
    assert f"{code}: 1" in live_js.split("FINAL_CLOSE_CODES", 1)[0]  # retried, not final
    assert process.wait(ENDS_WITHIN) == 0, stack.log()
    print(f"\n{server}: socket closed {code} {after:.2f} s after SIGTERM")
