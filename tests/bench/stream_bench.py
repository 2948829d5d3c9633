"""``tests/bench/stream_bench.py [--runs 20] [--tokens 60] [--pace-ms 20]``: token to browser.

How long a streamed token takes from the model server sending it to a browser's websocket
receiving it, with ``--runs`` agent runs streaming at once through the production path: a real
``celery worker`` (prefork, one process per run, as ``--concurrency`` sets), Redis (the channel
layer and the cache that holds replies while they stream), uvicorn serving the websockets (the
README's recipe), PostgreSQL. The runs are the demo's ``research-report`` (three agents, one
after the other) on MAF's real ``OpenAIChatClient``, pointed (``SUPERSTEP_DEMO_MODEL=openai``)
at an OpenAI-compatible server this script runs on 127.0.0.1, which streams every reply one
word per ``--pace-ms`` and notes when it wrote each word. Every word is unique (``k<call>x<n>``),
so each socket's HTML fragments say when each word arrived. The target: p95 ≤ 50 ms.

The browsers are aiohttp websockets on the run pages' own stream (``/ws/runs/<id>/?view=html``,
what htmx's websocket extension opens), signed in as an operator. The model holds every reply
until all sockets are open, so none misses its run's first words.

It starts, and removes again, a PostgreSQL database of its own (on
``SUPERSTEP_BENCH_POSTGRES_URL``, default the local server) and a ``redis-server`` on a free
port. Prints the latency percentiles, the words seen and missed, and the ratio to the target.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(ROOT / "tests" / "workflows" / "agents"))

import aiohttp  # noqa: E402
from aiohttp import web  # noqa: E402
from load_bench import SERVER_URL, _environment, _operator_sessions, _server_command  # noqa: E402
from openai_wire import WireTurn, encode_sse, is_text_delta, response_body, response_events  # noqa: E402
from scratch_database import create_database, drop_database  # noqa: E402

TARGET_MS = 50.0
WORD = re.compile(r"k\d+x\d+")
MODEL = "bench-stream"
DEBUG = bool(os.environ.get("STREAM_BENCH_DEBUG"))


class PacedModel:
    """An OpenAI-compatible Responses endpoint that streams unique words at a steady pace and
    notes when it sent each one; it holds every reply until ``release()``."""

    def __init__(self, words: int, pace: float) -> None:
        self.words, self.pace = words, pace
        self.sent: dict[str, float] = {}
        self.calls = 0
        self.port = 0
        self._go: asyncio.Event | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._ready = threading.Event()

    def start(self) -> None:
        threading.Thread(target=self._serve, daemon=True).start()
        if not self._ready.wait(30):
            raise RuntimeError("the model server did not start")

    def release(self) -> None:
        assert self._loop is not None and self._go is not None
        self._loop.call_soon_threadsafe(self._go.set)

    def _serve(self) -> None:
        asyncio.run(self._main())

    async def _main(self) -> None:
        self._loop, self._go = asyncio.get_running_loop(), asyncio.Event()
        app = web.Application()
        app.router.add_post("/v1/responses", self._respond)
        runner = web.AppRunner(app, access_log=None)
        await runner.setup()
        site = web.TCPSite(runner, "127.0.0.1", 0)
        await site.start()
        self.port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
        self._ready.set()
        await asyncio.Event().wait()

    async def _respond(self, request: web.Request) -> web.StreamResponse:
        body = await request.json()
        self.calls += 1
        number = self.calls
        text = " ".join(f"k{number}x{n}" for n in range(self.words))
        turn = WireTurn(number, MODEL, text, (), input_tokens=50, output_tokens=self.words)
        if not body.get("stream"):
            return web.json_response(response_body(turn))
        assert self._go is not None
        await self._go.wait()
        response = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
        await response.prepare(request)
        for event in response_events(turn):
            if is_text_delta(event):
                await asyncio.sleep(self.pace)
                for word in WORD.findall(json.loads(event.data)["delta"]):
                    self.sent[word] = time.time()
            await response.write(encode_sse(event))
        await response.write_eof()
        return response


def _prepare() -> dict[str, Any]:
    """In a child with the deployment's environment: migrate, collectstatic, one signed-in
    operator, an API token."""
    import django

    django.setup()
    from django.conf import settings
    from django.contrib.auth import get_user_model
    from django.core.management import call_command

    from dashboard.access.tokens import create_token

    call_command("migrate", interactive=False, verbosity=0)
    call_command("collectstatic", interactive=False, verbosity=0)
    [key] = _operator_sessions(1)
    user = get_user_model().objects.get(username="load-operator-0")
    return {
        "cookie": f"{settings.SESSION_COOKIE_NAME}={key}",
        "token": create_token(user, "stream bench"),
    }


async def _watch(
    client: aiohttp.ClientSession,
    run_id: str,
    cookie: str,
    origin: str,
    seen: dict[str, float],
    opened: asyncio.Event,
    done: asyncio.Event,
) -> None:
    async with client.ws_connect(
        f"/ws/runs/{run_id}/?view=html", headers={"Cookie": cookie, "Origin": origin}
    ) as socket:
        opened.set()
        while not done.is_set():
            try:
                message = await socket.receive(timeout=1.0)
            except TimeoutError:
                continue
            if message.type != aiohttp.WSMsgType.TEXT:
                return
            now = time.time()
            if DEBUG:
                print(f"{run_id[:8]} {now:.3f} {message.data[:300]!r}", file=sys.stderr)
            for word in WORD.findall(message.data):
                seen.setdefault(word, now)


async def _drive(
    base_url: str, prepared: dict[str, Any], model: PacedModel, runs: int, timeout: float
) -> tuple[dict[str, float], list[str]]:
    headers = {"Authorization": f"Bearer {prepared['token']}"}
    seen: dict[str, float] = {}
    done = asyncio.Event()
    async with aiohttp.ClientSession(base_url) as client:
        ids = []
        for index in range(runs):
            body = {"workflow": "research-report", "input": f"Report {index} on tide pools"}
            async with client.post("/api/runs/", json=body, headers=headers) as answer:
                if answer.status != 201:
                    raise RuntimeError(f"start answered {answer.status}: {await answer.text()}")
                ids.append(str((await answer.json())["id"]))
        opened = [asyncio.Event() for _ in ids]
        watchers = [
            asyncio.create_task(
                _watch(client, run_id, prepared["cookie"], base_url, seen, opened[i], done)
            )
            for i, run_id in enumerate(ids)
        ]
        await asyncio.wait_for(asyncio.gather(*(event.wait() for event in opened)), 60)
        model.release()
        deadline = time.monotonic() + timeout
        left = set(ids)
        # One request a second for every run's status: asking for each run twice a second
        # cost the web server, which also serves the sockets measured, 40 requests a second.
        listed = f"/api/runs/?workflow=research-report&limit={runs}"
        while left and time.monotonic() < deadline:
            async with client.get(listed, headers=headers) as answer:
                statuses = {run["id"]: run["status"] for run in (await answer.json())["runs"]}
            for run_id in list(left):
                status = statuses.get(run_id)
                if status in ("completed", "failed", "cancelled"):
                    if status != "completed":
                        raise RuntimeError(f"run {run_id} ended {status}")
                    left.discard(run_id)
            await asyncio.sleep(1.0)
        done.set()
        for failure in await asyncio.gather(*watchers, return_exceptions=True):
            if failure is not None:
                print(f"a socket failed: {failure!r}", file=sys.stderr)
        if left:
            raise RuntimeError(f"{len(left)} runs did not finish in {timeout:.0f} s")
    return seen, ids


def _rows_per_run(database_url: str, ids: list[str]) -> tuple[set[int], set[int]]:
    """The event rows and the checkpoint commits each run wrote: what a reply's length must
    not change."""
    import psycopg

    with psycopg.connect(database_url) as connection:
        events = connection.execute(
            "SELECT run_id, count(*) FROM dashboard_runevent WHERE run_id = ANY(%s::uuid[])"
            " GROUP BY run_id",
            (ids,),
        ).fetchall()
        commits = connection.execute(
            "SELECT run_id, count(*) FROM dashboard_checkpoint WHERE run_id = ANY(%s::uuid[])"
            " GROUP BY run_id",
            (ids,),
        ).fetchall()
    return {count for _, count in events}, {count for _, count in commits}


def _report(model: PacedModel, seen: dict[str, float], args: argparse.Namespace) -> None:
    latencies = sorted(
        (seen[word] - sent) * 1000 for word, sent in model.sent.items() if word in seen
    )
    missed = len(model.sent) - len(latencies)
    if DEBUG:
        for word, sent in sorted(model.sent.items(), key=lambda item: item[1]):
            arrived = seen.get(word)
            late = f"{(arrived - sent) * 1000:.0f} ms" if arrived else "never"
            print(f"{word} sent {sent:.3f} seen after {late}", file=sys.stderr)
    if not latencies:
        raise RuntimeError("no word reached a socket")
    cuts = statistics.quantiles(latencies, n=100, method="inclusive")
    p50, p95, p99 = cuts[49], cuts[94], cuts[98]
    print(
        f"{args.runs} runs streaming at once, {model.calls} model calls, one word per "
        f"{args.pace_ms} ms; {len(latencies)} words timed, {missed} never seen by a socket"
    )
    print(
        f"token to browser: p50 {p50:.1f} ms, p95 {p95:.1f} ms, p99 {p99:.1f} ms, "
        f"max {latencies[-1]:.1f} ms"
    )
    print(f"p95 / target ({TARGET_MS:.0f} ms): {p95 / TARGET_MS:.2f}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=20)
    parser.add_argument("--tokens", type=int, default=60, help="words per model reply")
    parser.add_argument("--pace-ms", type=float, default=20.0)
    parser.add_argument("--web-workers", type=int, default=2)
    parser.add_argument("--timeout", type=float, default=600.0)
    parser.add_argument("--prepare", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.prepare:
        print(json.dumps(_prepare()))
        return 0
    from tests.helpers.stack import RedisServer, Stack, answers, free_port

    model = PacedModel(args.tokens, args.pace_ms / 1000)
    model.start()
    with tempfile.TemporaryDirectory(prefix="stream-bench-") as folder:
        logs = Path(folder)
        database_url = create_database(SERVER_URL, "superstep_stream")
        redis = RedisServer(logs)
        stack: Stack | None = None
        try:
            redis.start()
            env = {
                **_environment(database_url, redis.url, logs, pool=8),
                "SUPERSTEP_DEMO_MODEL": "openai",
                "OPENAI_BASE_URL": f"http://127.0.0.1:{model.port}/v1",
                "OPENAI_API_KEY": "bench-key",
                "OPENAI_MODEL": MODEL,
            }
            stack = Stack(env, database_url, logs)
            prepared = subprocess.run(
                [sys.executable, __file__, "--prepare"],
                env=env,
                cwd=ROOT,
                capture_output=True,
                text=True,
                timeout=600,
                check=False,
            )
            if prepared.returncode != 0:
                raise RuntimeError(f"preparing failed:\n{prepared.stderr[-3000:]}")
            stack.start(
                "worker", sys.executable, "-m", "celery", "-A", "dashboard", "worker",
                "--concurrency", str(args.runs), "--loglevel", "WARNING",
                "--without-mingle", "--without-gossip",
            )  # fmt: skip
            port = free_port()
            server = argparse.Namespace(server="uvicorn", web_workers=args.web_workers)
            stack.start("web", *_server_command(server, port))
            base_url = f"http://127.0.0.1:{port}"
            began = time.monotonic()
            while not answers(base_url):
                if time.monotonic() - began > 120:
                    raise RuntimeError(f"the web server did not answer:\n{stack.log()}")
                time.sleep(0.2)
            data = json.loads(prepared.stdout.splitlines()[-1])
            seen, ids = asyncio.run(_drive(base_url, data, model, args.runs, args.timeout))
            _report(model, seen, args)
            events, commits = _rows_per_run(database_url, ids)
            print(
                f"per run, with {args.tokens} words per reply: event rows {sorted(events)}, "
                f"checkpoints committed {sorted(commits)}"
            )
        finally:
            if stack is not None:
                stack.stop_all()
            redis.stop()
            with contextlib.suppress(Exception):
                drop_database(database_url)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
