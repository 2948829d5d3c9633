"""``manage.py demo``: a ready database, known logins, then a real Daphne server."""

from __future__ import annotations

import io
import subprocess
import sys
import time
import types
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from importlib.machinery import ModuleSpec
from pathlib import Path

import pytest
from django.contrib.auth.models import User
from django.core.management import CommandError, call_command
from django.test import override_settings

from dashboard.config.settings import BASE_DIR
from tests.helpers.ports import free_port

EnvBuilder = Callable[..., dict[str, str]]


def run_demo(*args: str) -> str:
    out = io.StringIO()
    with override_settings(DEBUG=True):
        call_command("demo", "--no-serve", *args, stdout=out)
    return out.getvalue()


@pytest.mark.django_db(transaction=True)
def test_demo_creates_the_demo_users_and_prints_how_to_log_in() -> None:
    output = run_demo("--port", "8123")

    admin = User.objects.get(username="admin")
    assert admin.is_superuser and admin.is_staff and admin.check_password("admin")
    for name in ("operator", "approver", "viewer"):
        user = User.objects.get(username=name)
        assert user.check_password(name) and not user.is_staff
    assert "http://localhost:8123/" in output
    assert "admin     / admin" in output
    assert "approver  / approver" in output


@pytest.mark.django_db(transaction=True)
def test_demo_leaves_existing_users_untouched() -> None:
    User.objects.create_user("operator", password="changed-by-someone")

    output = run_demo()

    assert User.objects.get(username="operator").check_password("changed-by-someone")
    assert "existing user, password unchanged" in output


@pytest.mark.django_db(transaction=True)
def test_demo_seeds_demo_runs_when_the_seed_module_exists(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    seeded: list[bool] = []
    module = types.ModuleType("dashboard.demo.data")
    module.__spec__ = ModuleSpec("dashboard.demo.data", None)
    module.seed = lambda: seeded.append(True)  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "dashboard.demo.data", module)

    run_demo()

    assert seeded == [True]


@pytest.mark.django_db(transaction=True)
def test_demo_refuses_to_create_known_logins_with_debug_off() -> None:
    with pytest.raises(CommandError, match="DEBUG off"):
        call_command("demo", "--no-serve", stdout=io.StringIO())

    assert not User.objects.exists()


WELCOME = [
    "Superstep demo is ready.",
    "  Dashboard: http://localhost:8000/",
    "  Admin:     http://localhost:8000/admin/",
    "  Logins (username / password):",
    "    admin     / admin",
    "    operator  / operator",
    "    approver  / approver",
    "    viewer    / viewer",
]


def test_demo_prints_its_url_and_logins_first_and_nothing_else_at_the_default_level(
    subprocess_env: EnvBuilder, tmp_path: Path
) -> None:
    # A fresh database: the demo migrates, seeds its runs (which build and run every demo
    # workflow, some asking for input) and prints; its stdout and stderr as a terminal shows.
    env = subprocess_env(DEBUG="1", DATABASE_URL=f"sqlite:///{tmp_path}/demo.sqlite3")
    result = subprocess.run(
        [sys.executable, str(BASE_DIR / "manage.py"), "demo", "--no-serve"],
        cwd=tmp_path,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        timeout=300,
        check=False,
    )

    assert result.returncode == 0, result.stdout
    assert result.stdout.splitlines() == WELCOME


def fetch(url: str) -> int:
    try:
        with urllib.request.urlopen(url, timeout=5) as response:
            status: int = response.status
            return status
    except urllib.error.HTTPError as error:
        return error.code


@pytest.fixture
def demo_server(
    subprocess_env: EnvBuilder,
    tmp_path: Path,
    stop_process: Callable[[subprocess.Popen[bytes]], None],
) -> Iterator[tuple[str, subprocess.Popen[bytes], Path]]:
    """``manage.py demo`` on a free port with its own SQLite file; yields (url, process, log)."""
    port = free_port()
    log_path = tmp_path / "demo.log"
    env = subprocess_env(DEBUG="1", DATABASE_URL=f"sqlite:///{tmp_path}/demo.sqlite3")
    with log_path.open("wb") as log:
        process = subprocess.Popen(
            [sys.executable, str(BASE_DIR / "manage.py"), "demo", "--port", str(port)],
            cwd=tmp_path,  # the command must not depend on being started from the repo
            env=env,
            stdout=log,
            stderr=subprocess.STDOUT,
        )
    try:
        yield f"http://127.0.0.1:{port}", process, log_path
    finally:
        stop_process(process)  # Daphne replaced the command in this very process


@pytest.mark.slow
def test_demo_serves_the_app_and_static_files_with_daphne(
    demo_server: tuple[str, subprocess.Popen[bytes], Path],
) -> None:
    url, process, log_path = demo_server
    deadline = time.monotonic() + 60
    status = 0
    while status != 200 and process.poll() is None and time.monotonic() < deadline:
        try:
            status = fetch(f"{url}/admin/login/")
        except OSError:
            time.sleep(0.2)

    assert status == 200, f"demo did not serve:\n{log_path.read_text()}"
    assert fetch(f"{url}/static/admin/css/base.css") == 200
    log = log_path.read_text()
    assert log.startswith("Superstep demo is ready.\n"), log[:2000]
    assert "background services started" in log
    assert "workflows.validation" not in log  # the catalog keeps build notes at DEBUG
