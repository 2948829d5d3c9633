"""Redis killed (SIGKILL) and started again on the same port while runs execute and an operator
watches one of them live in Chromium.

Redis is the deployment's broker and channel layer, and a Redis of the test's own, without
persistence: it comes back empty, every queued task message and every websocket group gone.
PostgreSQL is a cluster of the test's own too; Daphne, two ``celery worker``s and ``celery beat``
run with the production settings.

* Killed for 4 s while runs execute and the run page is open. Once Redis is back: every run
  completes with the right output, from one unbroken chain; no process was restarted; the run
  page, never reloaded, reconnected by itself, replayed what it missed and shows the run
  completed, with every event of the run exactly once (its rows are 1..last of the database's
  event log, no gap and no duplicate).
* Killed and started again at once under 40 API clients of the run's websocket (JSON, resuming
  with ``?after=`` the last sequence number they saw when their socket closes). Each one ends
  with every event of the run exactly once: none was left connected but deaf, a member of a
  group the restarted Redis had forgotten (dashboard/web/live/consumers.py re-joins).
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import json
import os
import shutil
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import websockets

from tests.conftest import in_ci
from tests.helpers.stack import (
    PostgresCluster,
    RedisServer,
    Stack,
    deployed,
    lineage_is_unbroken,
    manage,
    postgres_cluster,
    production_env,
    redis_server,
    wait_for,
)

pytestmark = [pytest.mark.slow, pytest.mark.postgres, pytest.mark.redis, pytest.mark.timeout(300)]

WATCHED = {"limit": 16, "work_ms": 500}
OTHERS = {"limit": 6, "work_ms": 300}
OTHER_RUNS = 9
REDIS_DOWN_SECONDS = 4.0
LEASE_SECONDS = 5
PASSWORD = "fault-test-password"
CHROMIUM = os.environ.get("SUPERSTEP_CHROMIUM", "/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]
# When each of the page's sockets opened (ms since the epoch), as the page saw it.
RECORD_OPENS = """
window.__opens = [];
document.addEventListener("htmx:wsOpen", function (event) {
  window.__opens.push([Date.now() / 1000, event.target.id]);
});
"""
API_CLIENTS = 40
ROW_SEQS = (
    "() => Array.from(document.querySelectorAll('#event-log-rows .event-row'), r => +r.id.slice(6))"
)


def squares_output(limit: int) -> dict[str, Any]:
    return {"$t": "dict", "v": [[n, n * n] for n in range(1, limit + 1)]}


def chromium() -> str:
    """Debian's chromium and Playwright; else skip, or fail when ``CI`` is set."""
    found = CHROMIUM if Path(CHROMIUM).exists() else shutil.which("chromium")
    try:
        import playwright.sync_api  # noqa: F401
    except ImportError:
        found = None
    if found is None:
        reason = "Debian's chromium or the playwright package is not installed"
        if in_ci():
            pytest.fail(f"{reason} (CI is set, so this test may not be skipped)", pytrace=False)
        pytest.skip(reason)
    return found


@pytest.fixture(scope="module")
def cluster() -> Iterator[PostgresCluster]:
    with postgres_cluster() as own:
        yield own


@pytest.fixture(scope="module")
def logs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("fault-redis")


@pytest.fixture(scope="module")
def redis(logs: Path) -> Iterator[RedisServer]:
    with redis_server(logs) as own:
        yield own


@pytest.fixture(scope="module")
def stack(
    cluster: PostgresCluster,
    redis: RedisServer,
    logs: Path,
    subprocess_env: Callable[..., dict[str, str]],
) -> Iterator[Stack]:
    """Daphne (serving pages: hashed static files, as in production), workers and beat."""
    db_url = cluster.create_database("superstep")
    env = production_env(
        subprocess_env,
        database_url=db_url,
        redis_url=redis.url,
        SUPERSTEP_LEASE_SECONDS=str(LEASE_SECONDS),
        STATIC_ROOT=str(logs / "static"),
    )
    manage(env, "collectstatic", "--noinput")
    with deployed(env, db_url, logs) as deployment:
        deployment.daphne()
        deployment.worker("w1")
        deployment.worker("w2")
        deployment.beat()
        yield deployment


def runs_completed_correctly(stack: Stack, expected: dict[str, dict[str, Any]]) -> None:
    """Every run completed with ``expected[run_id]`` as its output, from one unbroken chain,
    with an event log 1..last holding one marker per checkpoint."""
    for run_id, output in expected.items():
        run = stack.run(run_id)
        assert run["status"] == "completed", (run_id, run["error_type"], run["error_message"])
        assert run["output"] == output, run_id
        chain = stack.checkpoints(run_id)
        lineage_is_unbroken(chain)
        assert len(chain) == len(output["v"]) + 2, chain  # entry, start, one per number
        assert stack.event_seqs(run_id) == list(range(1, run["last_event_seq"] + 1))
        markers = collections.Counter(
            row["type"]
            for row in stack.query(
                "SELECT type FROM dashboard_runevent WHERE run_id = %s"
                " AND type IN ('checkpoint', 'superstep_completed')",
                run_id,
            )
        )
        assert sum(markers.values()) == len(chain), (run_id, markers)


@pytest.mark.browser
def test_runs_and_a_live_page_come_through_redis_killed_and_restarted(
    stack: Stack, redis: RedisServer
) -> None:
    from playwright.sync_api import sync_playwright

    executable = chromium()
    token = str(stack.driver("person", "rita", PASSWORD, "Operator"))
    pids = {name: process.pid for name, process in stack.processes.items()}
    watched = stack.start_run(token, "squares", WATCHED)
    others = [stack.start_run(token, "squares", OTHERS) for _ in range(OTHER_RUNS)]

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=executable, args=CHROMIUM_ARGS)
        context = browser.new_context(base_url=stack.base_url)
        context.set_default_timeout(30_000)
        context.add_init_script(RECORD_OPENS)
        page = context.new_page()
        errors: list[str] = []
        page.on("pageerror", lambda error: errors.append(str(error)))
        page.goto("/login/")
        page.fill("#id_username", "rita")
        page.fill("#id_password", PASSWORD)
        page.click("form button[type=submit]")
        page.wait_for_url(lambda url: "/login/" not in url)
        page.goto(f"/runs/{watched}/")
        page.evaluate("window.__stillTheSamePage = true")
        page.wait_for_selector("#live-indicator[data-state=live]")
        wait_for(
            lambda: stack.run(watched)["current_superstep"] >= 3,
            "the watched run to run",
            stack.log,
        )

        killed_at = time.time()
        redis.kill()
        time.sleep(REDIS_DOWN_SECONDS)
        redis.start()  # the same port, empty
        back_at = time.time()

        page.wait_for_selector("#run-header .pill.status-completed", timeout=150_000)
        page.wait_for_selector("#live-indicator[data-state=live]")
        final_seq = int(page.get_attribute("#run-live", "data-last-seq") or "0")
        rows = page.evaluate(ROW_SEQS)
        still_the_same_page = page.evaluate("window.__stillTheSamePage === true")
        opens = page.evaluate("window.__opens")
        browser.close()

    for run_id in others:
        stack.wait_for_run(run_id, "completed", "failed", "cancelled", timeout=120)
    runs_completed_correctly(
        stack,
        {
            watched: squares_output(WATCHED["limit"]),
            **{run_id: squares_output(OTHERS["limit"]) for run_id in others},
        },
    )
    assert not stack.exited(), stack.log()
    assert {name: process.pid for name, process in stack.processes.items()} == pids

    last_seq = stack.run(watched)["last_event_seq"]
    assert still_the_same_page, "the page reloaded instead of reconnecting"
    assert rows == list(range(last_seq, 0, -1)), "the page lost or repeated events"
    assert final_seq == last_seq
    reopened = {
        name: min((at for at, id_ in opens if id_ == name and at > killed_at), default=None)
        for name in ("run-live", "approvals-live")
    }
    assert None not in reopened.values(), f"a socket never reconnected: {opens}"
    assert errors == []
    print(
        f"\nRedis down {back_at - killed_at:.1f} s; the page's sockets open again"
        f" {', '.join(f'{k} {v - back_at:.1f} s' for k, v in reopened.items())} after it was back;"
        f" {1 + OTHER_RUNS} runs completed, the watched one with {last_seq} events"
    )


# ------------------------------------------------------------------------- API clients


def lagging(seen: list[list[int]], run: dict[str, Any]) -> str:
    """Which clients have not seen the last event, and where each of them stopped."""
    behind = [(i, s[-3:]) for i, s in enumerate(seen) if not s or s[-1] != run["last_event_seq"]]
    return f"clients behind event {run['last_event_seq']}: {behind}\n"


async def follow(url: str, headers: dict[str, str], seen: list[int], stop: threading.Event) -> int:
    """A JSON client of a run's socket: reconnects after any close, resuming after the last
    sequence number it saw; returns how many times its socket opened."""
    opened = 0
    while not stop.is_set():
        after = seen[-1] if seen else 0
        try:
            async with websockets.connect(
                f"{url}?after={after}", additional_headers=headers
            ) as socket:
                opened += 1
                while not stop.is_set():
                    with contextlib.suppress(TimeoutError):
                        message = json.loads(await asyncio.wait_for(socket.recv(), 0.5))
                        if "seq" in message:
                            seen.append(message["seq"])
        except (OSError, websockets.WebSocketException):
            await asyncio.sleep(0.5)
    return opened


def test_no_api_client_of_a_run_goes_deaf_when_redis_restarts_empty(
    stack: Stack, redis: RedisServer
) -> None:
    token = str(stack.driver("user", "sam", "Operator"))
    stack.driver("person", "nina", PASSWORD, "Viewer")
    headers = {"Cookie": f"sessionid={stack.driver('session', 'nina')}", "Origin": stack.base_url}
    run_id = stack.start_run(token, "squares", {"limit": 30, "work_ms": 300})
    url = stack.base_url.replace("http://", "ws://") + f"/ws/runs/{run_id}/"
    seen: list[list[int]] = [[] for _ in range(API_CLIENTS)]
    stop = threading.Event()
    opened: list[int] = []

    async def clients() -> None:
        opened.extend(await asyncio.gather(*(follow(url, headers, s, stop) for s in seen)))

    thread = threading.Thread(target=asyncio.run, args=(clients(),))
    thread.start()
    try:
        wait_for(lambda: stack.run(run_id)["current_superstep"] >= 5, "the run to run", stack.log)
        redis.kill()
        redis.start()  # at once: consumers whose receive did not fail stay connected
        run = stack.wait_for_run(run_id, "completed", "failed", timeout=120)
        wait_for(
            lambda: all(s and s[-1] == run["last_event_seq"] for s in seen),
            "every client to see the last event",
            lambda: lagging(seen, run) + stack.log(),
            timeout=90,
        )
    finally:
        stop.set()
        thread.join(30)

    assert run["status"] == "completed"
    every_event = list(range(1, run["last_event_seq"] + 1))
    assert all(s == every_event for s in seen), [(len(s), s[-3:]) for s in seen]
    print(
        f"\n{API_CLIENTS} clients: {sum(n > 1 for n in opened)} reconnected, "
        f"{sum(n == 1 for n in opened)}"
        f" stayed connected; each saw all {len(every_event)} events once"
    )


def test_the_consumers_own_closes_reach_the_client_through_daphne(stack: Stack) -> None:
    """Daphne only sends close codes 1000 and 3000-4999; a consumer closing with any other code
    would leave the socket open. The closes the live pages rely on must arrive, with their code."""
    stack.driver("person", "olga", PASSWORD, "Viewer")
    headers = {"Cookie": f"sessionid={stack.driver('session', 'olga')}", "Origin": stack.base_url}
    url = stack.base_url.replace("http://", "ws://") + "/ws/approvals/"

    async def too_big() -> int | None:
        async with websockets.connect(url, additional_headers=headers) as socket:
            await socket.send("x" * 5000)
            with contextlib.suppress(websockets.ConnectionClosed):
                await asyncio.wait_for(socket.recv(), 10)
            await asyncio.wait_for(socket.wait_closed(), 10)
            return socket.close_code

    assert asyncio.run(too_big()) == 4009
