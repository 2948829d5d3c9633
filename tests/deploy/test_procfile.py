"""deploy/Procfile runs a deployment: honcho (a Foreman clone from PyPI) runs its release step
against a new, empty PostgreSQL database, then its web, worker and beat processes, and an
approval run goes from the JSON API through a person's decision to completed.

The processes run the Procfile's own commands, found on PATH (this interpreter's ``bin``), on
a free port (honcho's ``PORT``), one web and one Celery worker process (the Procfile's
``WEB_CONCURRENCY`` and ``CELERY_CONCURRENCY``: this machine shares two cores), beat's schedule
file in the test's folder.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from dashboard.config.settings import BASE_DIR
from tests.conftest import scratch_postgres_database
from tests.helpers.stack import (
    Stack,
    answers,
    free_port,
    production_env,
    require_program,
    wait_for,
)

pytestmark = [pytest.mark.slow, pytest.mark.postgres, pytest.mark.redis]

PROCFILE = BASE_DIR / "deploy" / "Procfile"


def honcho(stack: Stack, name: str, *arguments: str) -> subprocess.Popen[bytes]:
    program = require_program(shutil.which("honcho", path=stack.env["PATH"]), "honcho")
    return stack.start(
        name, program, "--procfile", str(PROCFILE), "--app-root", str(BASE_DIR), *arguments
    )


def children(pid: int) -> set[int]:
    """The live child processes of ``pid``: honcho starts each in a session of its own, which
    is also its process group."""
    found = set()
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            # pid (comm) state ppid ...: comm may hold spaces, so read after its closing bracket.
            state, parent = stat.read_text().rsplit(")", 1)[1].split()[:2]
        except (OSError, IndexError):
            continue  # the process ended while we looked
        if int(parent) == pid and state != "Z":
            found.add(int(stat.parent.name))
    return found


def kill_groups(groups: set[int]) -> None:
    for group in groups:
        try:
            os.killpg(group, signal.SIGKILL)
        except ProcessLookupError:
            pass


@pytest.fixture
def stack(
    redis_url: str, subprocess_env: Callable[..., dict[str, str]], tmp_path: Path
) -> Iterator[Stack]:
    with scratch_postgres_database("superstep_procfile") as database:
        env = production_env(
            subprocess_env,
            database_url=database,
            redis_url=redis_url,
            PATH=f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}",
            STATIC_ROOT=str(tmp_path / "static"),
            WEB_CONCURRENCY="1",
            CELERY_CONCURRENCY="1",
            CELERY_BEAT_SCHEDULE=str(tmp_path / "celerybeat-schedule"),
        )
        env.pop("DATABASE_CONN_MAX_AGE")  # the Procfile's deployment as the README sets it
        stack = Stack(env, database, tmp_path)
        try:
            yield stack
        finally:
            for process in stack.processes.values():
                kill_groups(children(process.pid) | {process.pid})
            stack.stop_all()


def test_the_procfile_migrates_serves_and_completes_an_approval_run(stack: Stack) -> None:
    release = honcho(stack, "release", "start", "release")
    assert release.wait(300) == 0, stack.log()
    assert stack.query("SELECT count(*) AS n FROM django_migrations")[0]["n"] > 0
    assert (Path(stack.env["STATIC_ROOT"]) / "staticfiles.json").exists()  # collectstatic ran

    port = free_port()
    running = honcho(stack, "processes", "start", "--port", str(port), "web", "worker", "beat")
    stack.base_url = f"http://127.0.0.1:{port}"

    def web_answers() -> bool:
        assert running.poll() is None, stack.log()  # honcho stops when any process exits
        return answers(stack.base_url)

    wait_for(web_answers, "the Procfile's web process", stack.log)

    token = str(stack.driver("user", "pat", "Operator", "Approver"))
    run_id = stack.start_run(token, "return-replace", {"order_id": "ORD-PROC", "work_ms": 0})
    stack.wait_for_run(run_id, "waiting")
    stack.approve(token, run_id, {"discount_percent": 5, "note": "via Procfile"})
    run = stack.wait_for_run(run_id, "completed", "failed")
    assert run["status"] == "completed", run["traceback"]
    # Beat ran from the Procfile too: it published the periodic jobs, which the worker ran.
    wait_for(
        lambda: bool(stack.query("SELECT 1 FROM dashboard_periodicjobrun LIMIT 1")),
        "a periodic job published by beat",
        stack.log,
    )

    # SIGTERM to honcho stops every process it started, and honcho with them.
    started = children(running.pid)
    assert len(started) == 3, started
    running.send_signal(signal.SIGTERM)
    running.wait(60)
    wait_for(
        lambda: not any(Path(f"/proc/{pid}").exists() for pid in started),
        "honcho's processes to stop",
        stack.log,
    )
    assert not answers(stack.base_url)
