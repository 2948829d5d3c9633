"""Browser tests: a real Daphne server in embedded mode and Debian's Chromium via Playwright.

The server (``servers.py``) runs in a subprocess with its own SQLite file under the session's
temporary directory; tests that change what other tests would see deploy one of their own
(``deployment``). One Chromium serves the session's browser tests. Tests marked ``browser``
are skipped with the reason when Chromium or Playwright is missing, and fail instead when
``CI`` is set.

Every deadline grows with how busy the machine is (``deadlines.py``): Playwright's default
timeouts here, pytest-timeout's limit for each browser test, and the waits in the tests.

Every page a test opens is watched (``watch``): JavaScript dialogs (``alert`` from injected
script), console errors, uncaught exceptions and Content-Security-Policy violations are
collected and must stay empty, and so must the codec tags (``$model``, ``$t``...) that a
checkpoint's pages would show if a value reached them undecoded: the text of every checkpoint
page is scanned for them. Screenshots go to ``test-artifacts/screenshots/``.
"""

from __future__ import annotations

import os
import shutil
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from tests.browser import deadlines
from tests.browser.receivers import Receiver
from tests.browser.servers import (
    PASSWORD,
    REPO,
    Deployment,
    Server,
    free_port,
    launch,
    prepare_template,
)
from tests.helpers import sensitive_scan

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

# Records what must never happen on a page, from inside the page (CSP violations are events
# the page sees; the others Playwright reports).
WATCH_SCRIPT = r"""
window.__superstepProblems = [];
window.__superstepMessages = [];  // what the sockets delivered, for failure reports
document.addEventListener("htmx:wsAfterMessage", function (event) {
  window.__superstepMessages.push(String(event.detail.message).slice(0, 200));
});
document.addEventListener("securitypolicyviolation", function (event) {
  window.__superstepProblems.push("CSP " + event.violatedDirective + " " + event.blockedURI);
});
// A checkpoint's pages show values by their class name, never the codec's tags ($t, $model...):
// their visible text is scanned on load, after each htmx swap and after a tree node opens.
(function () {
  var CHECKPOINT_PAGE = /^\/runs\/[0-9a-f-]{36}\/checkpoints\/[^/]+\//;
  var TAGS = "t|model|dataclass|pydantic|enum|tuple|set|frozenset|dict|datetime|date|time|"
    + "timedelta|decimal|uuid|bytes|str|int|float|agent";
  var CODEC_KEY = new RegExp("(^|[\\s{(\\[,\"'])\\$(" + TAGS + ")\\b");
  var told = {};
  function scan() {
    if (!CHECKPOINT_PAGE.test(location.pathname) || !document.body) return;
    var text = document.body.innerText;
    var found = CODEC_KEY.exec(text);
    if (!found) return;
    var at = found.index + found[1].length;
    var problem = "codec key $" + found[2] + " shown on " + location.pathname + ": "
      + JSON.stringify(text.slice(Math.max(0, at - 40), at + 60));
    if (!told[problem]) {
      told[problem] = true;
      window.__superstepProblems.push(problem);
    }
  }
  window.__superstepScanCodecKeys = scan;
  window.addEventListener("load", function () { setTimeout(scan, 0); });
  document.addEventListener("htmx:afterSettle", function () { setTimeout(scan, 0); });
  document.addEventListener("toggle", function () { setTimeout(scan, 0); }, true);
})();
"""


def _in_ci() -> bool:
    return os.environ.get("CI", "").strip().lower() in {"1", "true"}


def _why_no_browser() -> str | None:
    if not Path(CHROMIUM).exists() and shutil.which("chromium") is None:
        return f"Debian's chromium is not installed ({CHROMIUM} missing; apt-get install chromium)"
    try:
        import playwright.sync_api  # noqa: F401
    except ImportError:
        return "the playwright package is not installed (bash .ci/bootstrap)"
    return None


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Scale pytest-timeout's limit of each browser test (its own marker's, else the ini's)."""
    default = float(config.getini("timeout") or 0)
    for item in items:
        if item.get_closest_marker("browser") is None:
            continue
        marker = item.get_closest_marker("timeout")
        limit = float(marker.args[0]) if marker is not None and marker.args else default
        if limit:
            item.add_marker(pytest.mark.timeout(deadlines.seconds(limit)), append=False)


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


@pytest.fixture(scope="session")
def database_template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The migrated database with the test users that every server starts from."""
    _require_browser()
    return prepare_template(tmp_path_factory.mktemp("browser-template"))


@pytest.fixture(scope="session")
def server(
    tmp_path_factory: pytest.TempPathFactory,
    database_template: Path,
    stop_process: Callable[[Any], None],
) -> Iterator[Server]:
    home = tmp_path_factory.mktemp("browser-server")
    found = launch(home, port=free_port(), database=database_template)
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


@pytest.fixture
def deployment(
    tmp_path: Path, database_template: Path, stop_process: Callable[[Any], None]
) -> Iterator[Deployment]:
    """This test's own server, deployed on demand (``Deployment``)."""
    found = Deployment(tmp_path, database_template, stop_process)
    yield found
    found.stop()


class _Chromium:
    """The session's one Chromium, started for the first browser test and closed after the
    last one in a row: Playwright's sync API keeps an asyncio loop running on this thread
    while it is open, and an async test run meanwhile would fail with "Cannot run the event
    loop while another loop is running"."""

    def __init__(self) -> None:
        self._playwright: Any = None
        self._browser: Any = None

    def get(self) -> Any:
        if self._browser is None:
            from playwright.sync_api import sync_playwright

            self._playwright = sync_playwright().start()
            executable = CHROMIUM if Path(CHROMIUM).exists() else shutil.which("chromium")
            self._browser = self._playwright.chromium.launch(
                executable_path=executable, args=CHROMIUM_ARGS
            )
        return self._browser

    def close(self) -> None:
        if self._browser is not None:
            self._browser.close()
            self._playwright.stop()
            self._browser = self._playwright = None


CHROMIUM_SESSION = _Chromium()


@pytest.hookimpl(wrapper=True)
def pytest_runtest_teardown(item: pytest.Item, nextitem: pytest.Item | None) -> Iterator[None]:
    try:
        return (yield)  # the test's fixtures first: they close their contexts in it
    finally:
        if nextitem is None or nextitem.get_closest_marker("browser") is None:
            CHROMIUM_SESSION.close()


@pytest.fixture
def browser(server: Server) -> Any:
    return CHROMIUM_SESSION.get()


@dataclass(frozen=True)
class ConsoleLine:
    text: str
    page_url: str
    location: str

    def __str__(self) -> str:
        return f"{self.text} @ {self.page_url} {self.location}"


def restart_noise(server_url: str) -> Callable[[ConsoleLine], bool]:
    """Whether a console line is what a page of ``server_url`` logs while that server
    restarts, and nothing else: its sockets' failed reconnects (Chromium's own line, and
    htmx's ws extension logging the error event) and a live region's reload that found the
    server gone (Chromium's failed load, and htmx's two error events on the region)."""
    sockets = "WebSocket connection to '" + server_url.replace("http://", "ws://", 1) + "/ws/"
    htmx_events = {
        f"htmx:{name}, [object HTMLDivElement]" for name in ("afterRequest", "sendError")
    }

    def expected(line: ConsoleLine) -> bool:
        if not line.page_url.startswith(server_url + "/"):
            return False
        return (
            (line.text.startswith(sockets) and " failed" in line.text)
            or line.text == "[object Event]"
            or line.text == "Failed to load resource: net::ERR_CONNECTION_REFUSED"
            or line.text in htmx_events
        )

    return expected


@dataclass
class Problems:
    """What went wrong on the watched pages: must stay empty."""

    dialogs: list[str] = field(default_factory=list)
    console: list[ConsoleLine] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    pages: list[Any] = field(default_factory=list)

    def all(self, *, allow: tuple[str, ...] = (), restarted: str | None = None) -> list[str]:
        """Everything recorded, except console lines containing one of ``allow`` (Chromium
        logs an expected 409 answer as "Failed to load resource ... 409") and, for a test that
        restarts the server at ``restarted``, the lines its restarts cause (``restart_noise``)."""
        noise = restart_noise(restarted) if restarted else (lambda line: False)
        found = [f"dialog: {d}" for d in self.dialogs]
        found += [
            f"console: {line}"
            for line in self.console
            if not any(a in line.text for a in allow) and not noise(line)
        ]
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
def problems() -> Iterator[Problems]:
    yield Problems()
    sensitive_scan.IN_PLAY.clear()


def scan_sensitive(page: Any, problems: Problems) -> None:
    """Every page, fragment, JSON answer and websocket frame the page receives while a test
    has sensitive values in play (``sensitive_scan.in_play``) is scanned for them."""

    def on_response(response: Any) -> None:
        if not sensitive_scan.IN_PLAY or response.request.resource_type not in _SCANNED:
            return
        try:
            body = response.body()
        except Exception:  # noqa: BLE001 - a redirect or a page gone has no body to read
            return
        for value in sensitive_scan.leaked(response.url, body):
            problems.errors.append(f"sensitive value {value!r} in {response.url}")

    def on_socket(socket: Any) -> None:
        def on_frame(payload: Any) -> None:
            for value in sensitive_scan.leaked(socket.url, payload):
                problems.errors.append(f"sensitive value {value!r} in a frame of {socket.url}")

        socket.on("framereceived", on_frame)

    page.on("response", on_response)
    page.on("websocket", on_socket)


_SCANNED = frozenset({"document", "xhr", "fetch"})


@pytest.fixture
def new_context(browser: Any, server: Server, problems: Problems) -> Iterator[Callable[..., Any]]:
    """``new_context(viewport=..., base_url=...)``: a fresh browser profile whose pages are
    watched (on the session's server unless ``base_url`` names another)."""
    contexts: list[Any] = []

    def make(viewport: dict[str, int] | None = None, base_url: str | None = None) -> Any:
        context = browser.new_context(viewport=viewport or DESKTOP, base_url=base_url or server.url)
        context.set_default_timeout(deadlines.ms(20_000))
        context.add_init_script(WATCH_SCRIPT)

        def watch(page: Any) -> None:
            problems.pages.append(page)

            def on_dialog(dialog: Any) -> None:
                problems.dialogs.append(f"{dialog.type}: {dialog.message}")
                dialog.dismiss()

            page.on("dialog", on_dialog)
            page.on(
                "console",
                lambda m: (
                    problems.console.append(ConsoleLine(m.text, page.url, str(m.location)))
                    if m.type == "error"
                    else None
                ),
            )
            page.on("pageerror", lambda e: problems.errors.append(str(e)))
            scan_sensitive(page, problems)

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


def shoot(page: Any, name: str, *, full_page: bool = True) -> Path:
    """A screenshot named after the page and the viewport width: the whole page (from its top,
    so that the sticky navigation sits where it does on screen), or what the window shows."""
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    width = page.viewport_size["width"] if page.viewport_size else 0
    path = SCREENSHOTS / f"{name}-{width}.png"
    if full_page:
        page.evaluate("window.scrollTo(0, 0)")
    page.screenshot(path=str(path), full_page=full_page)
    return path


@pytest.fixture
def login_as() -> Callable[..., None]:
    """``login_as(page, "ops")``: sign in through the login form."""
    return login


@pytest.fixture
def screenshot() -> Callable[..., Path]:
    """``screenshot(page, "runs-list")``: test-artifacts/screenshots/runs-list-1280.png."""
    return shoot


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    """A webhook endpoint for an alert rule (``tests/browser/receivers.py``), for this test."""
    running = Receiver()
    thread = threading.Thread(target=running.server.serve_forever, daemon=True)
    thread.start()
    yield running
    running.server.shutdown()
    running.server.server_close()
