"""The README's production recipe serves HTTP and websockets from several processes.

The uvicorn command is read from the README's "Production" block, not copied here, so the
documented command is the one tested. With two workers behind one port and a Celery worker
executing the run: pages answer, every browser's runs socket hears the run that starts whichever
process holds it (the Redis channel layer joins them), and a worker killed with SIGKILL is
replaced while the other keeps answering.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import shlex
import signal
import sys
import urllib.request
from collections.abc import Callable
from pathlib import Path

import pytest
import websockets

from dashboard.config.settings import BASE_DIR
from tests.helpers.stack import (
    Stack,
    answers,
    deployed,
    free_port,
    manage,
    production_env,
    redis_server,
    wait_for,
)

pytestmark = [pytest.mark.slow, pytest.mark.postgres, pytest.mark.redis]

SOCKETS = 6


def readme_server_command() -> list[str]:
    """The ``uvicorn …`` line of the README's production recipe, continuation lines joined."""
    readme = (BASE_DIR / "README.md").read_text(encoding="utf-8")
    block = readme.split("## Production", 1)[1].split("```sh", 1)[1].split("```", 1)[0]
    joined = block.replace("\\\n", " ")
    (line,) = [line for line in joined.splitlines() if line.startswith("uvicorn ")]
    return shlex.split(line.split("#", 1)[0])


def _on_port(command: list[str], port: int) -> list[str]:
    """The command bound to 127.0.0.1:``port`` instead of the documented address."""
    values = {"--host": "127.0.0.1", "--port": str(port)}
    return [
        values.get(before, word) for before, word in zip(["", *command[:-1]], command, strict=True)
    ]


def _workers(supervisor: int) -> set[int]:
    """uvicorn's live worker processes: children of ``supervisor`` started by
    multiprocessing's spawn (its resource tracker is a child too)."""
    found = set()
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            # pid (comm) state ppid …: comm may hold spaces, so read after its closing bracket.
            state, parent = stat.read_text().rsplit(")", 1)[1].split()[:2]
            command = (stat.parent / "cmdline").read_bytes()
        except (OSError, IndexError):
            continue  # the process ended while we looked
        if int(parent) == supervisor and state != "Z" and b"spawn_main" in command:
            found.add(int(stat.parent.name))
    return found


def _get(url: str, cookie: str) -> int:
    request = urllib.request.Request(url, headers={"Cookie": cookie})
    with urllib.request.urlopen(request, timeout=30) as response:
        response.read()
        return int(response.status)


async def _every_socket_hears(stack: Stack, cookie: str, token: str) -> list[bool]:
    """Open the runs socket ``SOCKETS`` times, start a run, and see which sockets hear of it."""
    url = stack.base_url.replace("http://", "ws://") + "/ws/runs/"
    headers = {"Cookie": cookie, "Origin": stack.base_url}
    sockets = [await websockets.connect(url, additional_headers=headers) for _ in range(SOCKETS)]
    try:
        run_id = await asyncio.to_thread(
            stack.start_run, token, "squares", {"limit": 2, "work_ms": 0}
        )

        async def hears(socket: websockets.ClientConnection) -> bool:
            async with asyncio.timeout(60):
                while True:
                    if run_id in str(await socket.recv()):
                        return True

        return list(await asyncio.gather(*(hears(socket) for socket in sockets)))
    finally:
        for socket in sockets:
            await socket.close()


def test_the_readme_recipe_serves_pages_and_live_updates_from_several_worker_processes(
    migrated_postgres: Callable[[str], contextlib.AbstractContextManager[str]],
    subprocess_env: Callable[..., dict[str, str]],
    tmp_path: Path,
) -> None:
    command = readme_server_command()
    assert command[:1] == ["uvicorn"] and "--workers" in command, command
    workers = int(command[command.index("--workers") + 1])
    assert workers >= 2
    with (
        migrated_postgres("superstep_readme") as database,
        redis_server(tmp_path) as redis,  # its own: the worker takes no other test's tasks
    ):
        env = production_env(subprocess_env, database_url=database, redis_url=redis.url)
        # As the README tells a deployment: pooled connections, which exclude persistent ones.
        env.update(
            DATABASE_CONN_MAX_AGE="0", DATABASE_POOL_SIZE="8", STATIC_ROOT=str(tmp_path / "static")
        )
        manage(env, "collectstatic", "--noinput")
        _serve(env, database, tmp_path, command, workers)


def _serve(
    env: dict[str, str], database_url: str, logs: Path, command: list[str], workers: int
) -> None:
    with deployed(env, database_url, logs, migrate=False) as stack:
        stack.worker("w1")
        port = free_port()
        server = stack.start("web", sys.executable, "-m", *_on_port(command, port))
        stack.base_url = f"http://127.0.0.1:{port}"
        wait_for(lambda: answers(stack.base_url), "uvicorn to answer", stack.log)
        wait_for(lambda: len(_workers(server.pid)) == workers, "its workers", stack.log)

        token = str(stack.driver("user", "uma", "Operator"))
        cookie = f"sessionid={stack.driver('session', 'uma')}"
        assert {_get(f"{stack.base_url}{path}", cookie) for path in ("/", "/approvals/") * 10} == {
            200
        }
        assert asyncio.run(_every_socket_hears(stack, cookie, token)) == [True] * SOCKETS

        killed = min(_workers(server.pid))
        os.kill(killed, signal.SIGKILL)
        wait_for(
            lambda: killed not in _workers(server.pid) and len(_workers(server.pid)) == workers,
            "uvicorn to replace the killed worker",
            stack.log,
        )
        assert {_get(f"{stack.base_url}/", cookie) for _ in range(10)} == {200}
        assert server.poll() is None, stack.log()
