"""The servers browser tests run against: Daphne in embedded mode, in a subprocess.

The server runs with a clean environment (no service URLs: embedded mode, its own SQLite file
in the directory it is given). Its database starts as a copy of one template, migrated and
given the test users once per session (``prepare_template``): migrating costs a Django start
and some seconds of CPU per server, and the migrations do not depend on a server's settings.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tests.browser.deadlines import seconds
from tests.helpers.ports import free_port

REPO = Path(__file__).resolve().parents[2]
# username -> roles (groups from the roles migration); "admin" is a superuser.
USERS = {
    "ops": ["Operator", "Approver"],
    "operator": ["Operator"],  # operates runs but may not decide
    "approver2": ["Approver"],
    "viewer": ["Viewer"],
    "steward": ["Viewer", "Sensitive data"],  # may reveal masked fields
}
PASSWORD = "browser-test-password"


def _server_env(db_path: Path) -> dict[str, str]:
    keep = {"PATH", "HOME", "LANG", "LC_ALL", "TMPDIR", "PYTHONPATH", "VIRTUAL_ENV"}
    env = {k: v for k, v in os.environ.items() if k in keep}
    env.update(
        DJANGO_SETTINGS_MODULE="tests.browser.server_settings",
        DATABASE_URL=f"sqlite:///{db_path}",
        SECRET_KEY="browser-tests-secret-key-0123456789-abcdefghijklmnopqrstuvwxyz",
        DEBUG="1",
        PYTHONUNBUFFERED="1",
        SUPERSTEP_EMBEDDED_WORKERS="2",
        # The demo's local model writes a word every 0.3 s: a reply takes seconds to stream,
        # long enough for a second browser to join while it is being written.
        SUPERSTEP_DEMO_WORD_DELAY="0.3",
    )
    return env


CREATE_USERS = """
from django.contrib.auth.models import Group, User
users = {users!r}
User.objects.create_superuser("admin", password={password!r})
for name, roles in users.items():
    user = User.objects.create_user(name, password={password!r})
    user.groups.set(Group.objects.filter(name__in=roles))
"""


@dataclass
class Server:
    url: str
    process: subprocess.Popen[bytes]
    log: Path

    def log_text(self) -> str:
        return self.log.read_text(errors="replace")


def prepare_template(home: Path) -> Path:
    """A migrated SQLite database with the test users, in ``home``, for servers to copy."""
    env = _server_env(home / "db.sqlite3")
    manage = [sys.executable, str(REPO / "manage.py")]
    subprocess.run([*manage, "migrate", "--no-input", "-v", "0"], env=env, cwd=REPO, check=True)
    script = CREATE_USERS.format(users=USERS, password=PASSWORD)
    subprocess.run(
        [*manage, "shell", "-c", script], env=env, cwd=REPO, check=True, capture_output=True
    )
    return home / "db.sqlite3"


def launch(home: Path, *, port: int, database: Path | None, **extra_env: str) -> Server:
    """Daphne on ``port`` over the SQLite database in ``home``, answering when this returns.
    ``database`` (a ``prepare_template``) is copied there first, for a server's first start;
    ``extra_env`` adds settings (a deployment's ``SUPERSTEP_WORKFLOWS``...)."""
    env = {**_server_env(home / "db.sqlite3"), **extra_env}
    if database is not None:
        _copy_database(database, home / "db.sqlite3")
    log = home / "daphne.log"
    with log.open("ab") as out:
        process = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "daphne",
                # Daphne's command refuses a websocket whose consumer has not accepted within
                # 5 s (its Server class allows 20): on a machine this busy, a page's socket
                # then fails with a 403 that is the clock's, not the product's refusal.
                "--websocket_connect_timeout",
                "20",
                "--bind",
                "127.0.0.1",
                "--port",
                str(port),
                "dashboard.config.asgi:application",
            ],
            env=env,
            cwd=REPO,
            stdout=out,
            stderr=subprocess.STDOUT,
        )
    found = Server(f"http://127.0.0.1:{port}", process, log)
    try:
        _wait_until_up(found)
    except BaseException:
        process.kill()
        raise
    return found


class Deployment:
    """``deployment(**env)``: (re)deploy this test's own server, as a restart with new code
    does: the previous process stops, a new one starts on the same port and database with
    ``env`` (``SUPERSTEP_WORKFLOWS=...``). Open pages stay open and reconnect. ``url`` is
    known before the first start, for settings that name the server itself
    (``SUPERSTEP_BASE_URL=deployment.url``)."""

    def __init__(self, home: Path, template: Path, stop_process: Callable[[Any], None]) -> None:
        self.home = home
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self._template: Path | None = template
        self._stop = stop_process
        self.running: list[Server] = []

    def __call__(self, **env: str) -> Server:
        if self.running:
            self._stop(self.running.pop().process)
        found = launch(self.home, port=self.port, database=self._template, **env)
        self._template = None  # a redeploy keeps the data of the one before
        self.running.append(found)
        return found

    def stop(self) -> None:
        for found in self.running:
            self._stop(found.process)


def _copy_database(source: Path, target: Path) -> None:
    """Copy a SQLite file whose writers have exited, with its write-ahead log if one is left
    (the last connection to close folds it in, but only if it closes)."""
    shutil.copyfile(source, target)
    wal = source.with_name(source.name + "-wal")
    if wal.exists():
        shutil.copyfile(wal, target.with_name(target.name + "-wal"))


def _wait_until_up(server: Server) -> None:
    deadline = time.monotonic() + seconds(60)
    while time.monotonic() < deadline:
        if server.process.poll() is not None:
            raise RuntimeError(f"daphne exited:\n{server.log_text()}")
        try:
            with urllib.request.urlopen(f"{server.url}/login/", timeout=2) as response:
                if response.status == 200:
                    return
        except (urllib.error.URLError, OSError):
            time.sleep(0.2)
    raise RuntimeError(f"daphne did not answer in {seconds(60):.0f} s:\n{server.log_text()}")
