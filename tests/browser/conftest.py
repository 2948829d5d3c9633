"""Browser tests: a real Daphne server in embedded mode and Debian's Chromium via Playwright.

The server runs in a subprocess with a clean environment (no service URLs: embedded mode, its
own SQLite file under the session's temporary directory), after ``migrate`` and the creation of
the test users. Tests marked ``browser`` are skipped with the reason when Chromium or Playwright
is missing, and fail instead when ``CI`` is set.

Every page a test opens is watched (``watch``): JavaScript dialogs (``alert`` from injected
script), console errors, uncaught exceptions and Content-Security-Policy violations are
collected and must stay empty. Screenshots go to ``test-artifacts/screenshots/``.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

REPO = Path(__file__).resolve().parents[2]
CHROMIUM = os.environ.get("SUPERSTEP_CHROMIUM", "/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]
SCREENSHOTS = REPO / "test-artifacts" / "screenshots"
DESKTOP = {"width": 1280, "height": 800}
PHONE = {"width": 390, "height": 844}
# username -> roles (groups from the roles migration); "admin" is a superuser.
USERS = {
    "ops": ["Operator", "Approver"],
    "approver2": ["Approver"],
    "viewer": ["Viewer"],
}
PASSWORD = "browser-test-password"

# Records what must never happen on a page, from inside the page (CSP violations are events
# the page sees; the others Playwright reports).
WATCH_SCRIPT = """
window.__superstepProblems = [];
window.__superstepMessages = [];  // what the sockets delivered, for failure reports
document.addEventListener("htmx:wsAfterMessage", function (event) {
  window.__superstepMessages.push(String(event.detail.message).slice(0, 200));
});
document.addEventListener("securitypolicyviolation", function (event) {
  window.__superstepProblems.push("CSP " + event.violatedDirective + " " + event.blockedURI);
});
"""


def _in_ci() -> bool:
    return os.environ.get("CI", "").strip().lower() in {"1", "true"}


def _why_no_browser() -> str | None:
    if not Path(CHROMIUM).exists() and shutil.which("chromium") is None:
        return f"Debian's chromium is not installed ({CHROMIUM} missing; apt-get install chromium)"
    try:
        import playwright.sync_api  # noqa: F401
    except ImportError:
        return "the playwright package is not installed (pip install -e '.[test]')"
    return None


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item: pytest.Item) -> None:
    if item.get_closest_marker("browser") is None:
        return
    reason = _why_no_browser()
    if reason is None:
        return
    if _in_ci():
        pytest.fail(f"{reason} (CI is set, so browser tests may not be skipped)", pytrace=False)
    pytest.skip(reason)


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


def _server_env(db_path: Path) -> dict[str, str]:
    keep = {"PATH", "HOME", "LANG", "LC_ALL", "TMPDIR", "PYTHONPATH", "VIRTUAL_ENV"}
    env = {k: v for k, v in os.environ.items() if k in keep}
    env.update(
        DJANGO_SETTINGS_MODULE="dashboard.config.settings",
        DATABASE_URL=f"sqlite:///{db_path}",
        SECRET_KEY="browser-tests-secret-key-0123456789-abcdefghijklmnopqrstuvwxyz",
        DEBUG="1",
        PYTHONUNBUFFERED="1",
        SUPERSTEP_EMBEDDED_WORKERS="2",
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


@pytest.fixture(scope="session")
def server(
    tmp_path_factory: pytest.TempPathFactory, stop_process: Callable[[Any], None]
) -> Iterator[Server]:
    _require_browser()
    home = tmp_path_factory.mktemp("browser-server")
    found = launch(home, port=_free_port(), prepare=True)
    try:
        yield found
    finally:
        stop_process(found.process)


def _require_browser() -> None:
    reason = _why_no_browser()
    if reason is not None:
        if _in_ci():
            pytest.fail(f"{reason} (CI is set)", pytrace=False)
        pytest.skip(reason)


def launch(home: Path, *, port: int, prepare: bool, **extra_env: str) -> Server:
    """Daphne on ``port`` over the SQLite database in ``home``, answering when this returns.
    ``prepare`` migrates and creates the test users first; ``extra_env`` adds settings (a
    deployment's ``SUPERSTEP_WORKFLOWS``...)."""
    env = {**_server_env(home / "db.sqlite3"), **extra_env}
    manage = [sys.executable, str(REPO / "manage.py")]
    if prepare:
        subprocess.run([*manage, "migrate", "--no-input", "-v", "0"], env=env, cwd=REPO, check=True)
        script = CREATE_USERS.format(users=USERS, password=PASSWORD)
        subprocess.run(
            [*manage, "shell", "-c", script], env=env, cwd=REPO, check=True, capture_output=True
        )
    log = home / "daphne.log"
    with log.open("ab") as out:
        process = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "daphne",
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


@pytest.fixture
def deployment(
    tmp_path: Path, stop_process: Callable[[Any], None]
) -> Iterator[Callable[..., Server]]:
    """``deployment(**env)``: (re)deploy this test's own server, as a restart with new code
    does: the previous process stops, a new one starts on the same port and database with
    ``env`` (``SUPERSTEP_WORKFLOWS=...``). Open pages stay open and reconnect."""
    _require_browser()
    port = _free_port()
    running: list[Server] = []

    def deploy(**env: str) -> Server:
        if running:
            stop_process(running.pop().process)
        running.append(launch(tmp_path, port=port, prepare=not (tmp_path / "db.sqlite3").exists(), **env))
        return running[-1]

    yield deploy
    for found in running:
        stop_process(found.process)


def _wait_until_up(server: Server) -> None:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if server.process.poll() is not None:
            raise RuntimeError(f"daphne exited:\n{server.log_text()}")
        try:
            with urllib.request.urlopen(f"{server.url}/login/", timeout=2) as response:
                if response.status == 200:
                    return
        except (urllib.error.URLError, OSError):
            time.sleep(0.2)
    raise RuntimeError(f"daphne did not answer in 60 s:\n{server.log_text()}")


@pytest.fixture(scope="module")
def browser(server: Server) -> Iterator[Any]:
    # Module scope, not session: Playwright's sync API keeps an asyncio loop running on this
    # thread while it is open, and every async test collected after the browser tests would
    # then fail with "Cannot run the event loop while another loop is running".
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        executable = CHROMIUM if Path(CHROMIUM).exists() else shutil.which("chromium")
        launched = playwright.chromium.launch(executable_path=executable, args=CHROMIUM_ARGS)
        yield launched
        launched.close()


@dataclass
class Problems:
    """What went wrong on the watched pages: must stay empty."""

    dialogs: list[str] = field(default_factory=list)
    console: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    pages: list[Any] = field(default_factory=list)

    def all(self, *, allow: tuple[str, ...] = ()) -> list[str]:
        """Everything recorded, except console lines containing one of ``allow`` (Chromium
        logs an expected 409 answer as "Failed to load resource ... 409")."""
        found = [f"dialog: {d}" for d in self.dialogs]
        found += [f"console: {c}" for c in self.console if not any(a in c for a in allow)]
        found += [f"page error: {e}" for e in self.errors]
        for page in self.pages:
            if page.is_closed():
                continue
            from playwright.sync_api import Error as PlaywrightError

            try:
                found += list(page.evaluate("window.__superstepProblems || []"))
            except PlaywrightError:  # a page in the middle of navigating has no window to ask
                found.append(f"could not ask {page.url} for CSP violations")
        return found


@pytest.fixture
def problems() -> Problems:
    return Problems()


@pytest.fixture
def new_context(browser: Any, server: Server, problems: Problems) -> Iterator[Callable[..., Any]]:
    """``new_context(viewport=..., base_url=...)``: a fresh browser profile whose pages are
    watched (on the session's server unless ``base_url`` names another)."""
    contexts: list[Any] = []

    def make(viewport: dict[str, int] | None = None, base_url: str | None = None) -> Any:
        context = browser.new_context(viewport=viewport or DESKTOP, base_url=base_url or server.url)
        context.set_default_timeout(20_000)
        context.add_init_script(WATCH_SCRIPT)

        def watch(page: Any) -> None:
            problems.pages.append(page)

            def on_dialog(dialog: Any) -> None:
                problems.dialogs.append(f"{dialog.type}: {dialog.message}")
                dialog.dismiss()

            page.on("dialog", on_dialog)
            page.on(
                "console", lambda m: problems.console.append(m.text + " @ " + page.url + " " + str(m.location)) if m.type == "error" else None
            )
            page.on("pageerror", lambda e: problems.errors.append(str(e)))

        context.on("page", watch)
        contexts.append(context)
        return context

    yield make
    for context in contexts:
        context.close()


def login(page: Any, username: str, password: str = PASSWORD) -> None:
    page.goto("/login/")
    page.fill("#id_username", username)
    page.fill("#id_password", password)
    page.click("form button[type=submit]")
    page.wait_for_url(lambda url: "/login/" not in url)


def shoot(page: Any, name: str) -> Path:
    """A full-page screenshot named after the page and the viewport width."""
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    width = page.viewport_size["width"] if page.viewport_size else 0
    path = SCREENSHOTS / f"{name}-{width}.png"
    page.screenshot(path=str(path), full_page=True)
    return path


@pytest.fixture
def login_as() -> Callable[..., None]:
    """``login_as(page, "ops")``: sign in through the login form."""
    return login


@pytest.fixture
def screenshot() -> Callable[[Any, str], Path]:
    """``screenshot(page, "runs-list")``: test-artifacts/screenshots/runs-list-1280.png."""
    return shoot
