"""The traffic of tests/bench/load_bench.py: what an operator clicks, and the tally of it.

Plain asyncio and aiohttp, no Django: this runs in the load generator's event loop. What the
users may click on (recent runs and checkpoints) is read again every few seconds on a thread,
so the pages they open are the ones a live deployment has.
"""

from __future__ import annotations

import asyncio
import itertools
import random
import time
from collections import defaultdict
from dataclasses import dataclass, field
from typing import TextIO

import aiohttp
import psycopg

__all__ = ["PAGES", "Targets", "Tally", "browse", "listen", "start_runs"]

# (page, weight): where an operator's next click goes. The run pages and the list dominate.
PAGES = (
    ("runs list", 22),
    ("runs list, filtered", 6),
    ("runs list (htmx refresh)", 6),
    ("run detail", 20),
    ("run event log", 8),
    ("checkpoint detail", 6),
    ("approval inbox", 8),
    ("storage", 4),
    ("api: runs", 10),
    ("api: run", 10),
)
_NAMES = [page for page, _ in PAGES]
_WEIGHTS = [weight for _, weight in PAGES]
# Runs a deployment keeps executing meanwhile: a loop, a fan-out and one that waits on a person.
STARTS = (
    {"workflow": "squares", "input": {"limit": 20, "work_ms": 20}},
    {"workflow": "fan-out-fan-in", "input": {"work_ms": 50}},
    {"workflow": "return-replace", "input": {"order_id": "ORD-LOAD", "work_ms": 20}},
)
REFRESH_SECONDS = 5.0


class Targets:
    """Ids worth clicking on, read again every few seconds on a thread (psycopg, autocommit)."""

    def __init__(self, database_url: str) -> None:
        self._url = database_url
        self.runs: list[str] = []
        self.checkpoints: list[tuple[str, str]] = []

    async def refresh(self) -> None:
        self.runs, self.checkpoints = await asyncio.to_thread(self._read)

    async def keep_fresh(self, deadline: float) -> None:
        while time.monotonic() + REFRESH_SECONDS < deadline:
            await asyncio.sleep(REFRESH_SECONDS)
            await self.refresh()

    def _read(self) -> tuple[list[str], list[tuple[str, str]]]:
        with psycopg.connect(self._url, autocommit=True) as connection:
            runs = connection.execute(
                "SELECT id::text FROM dashboard_workflowrun ORDER BY created_at DESC LIMIT 300"
            ).fetchall()
            checkpoints = connection.execute(
                "SELECT run_id::text, checkpoint_id FROM dashboard_checkpoint"
                " ORDER BY created_at DESC LIMIT 300"
            ).fetchall()
        return [row[0] for row in runs], [(row[0], row[1]) for row in checkpoints]


@dataclass
class Tally:
    """Latencies (ms) per page, and what went wrong."""

    times: dict[str, list[float]] = field(default_factory=lambda: defaultdict(list))
    errors: dict[str, int] = field(default_factory=lambda: defaultdict(int))
    samples: list[str] = field(default_factory=list)
    sockets: int = 0
    live_messages: int = 0
    socket_errors: list[str] = field(default_factory=list)
    # (seconds since the first request, ms) of every request: a p95 that drifts over the
    # run (a cache filling, a table growing) shows in the per-minute figures.
    timeline: list[tuple[float, float]] = field(default_factory=list)
    began: float = field(default_factory=time.monotonic)

    def record(self, page: str, millis: float, problem: str | None) -> None:
        self.times[page].append(millis)
        self.timeline.append((time.monotonic() - self.began, millis))
        if problem is not None:
            self.errors[page] += 1
            if len(self.samples) < 10:
                self.samples.append(f"{page}: {problem}")

    def error_rate(self) -> float:
        total = sum(len(times) for times in self.times.values())
        return sum(self.errors.values()) / total if total else 0.0

    def error_samples(self) -> list[str]:
        return list(self.samples)

    def report(self, out: TextIO, duration: float) -> None:
        every = [millis for times in self.times.values() for millis in times]
        rows = [(page, times) for page, times in sorted(self.times.items())]
        rows.append(("overall", every))
        width = max(len(page) for page, _ in rows)
        out.write(f"\n{'page':<{width}}  requests  errors    p50 ms    p95 ms    p99 ms\n")
        for page, times in rows:
            errors = sum(self.errors.values()) if page == "overall" else self.errors[page]
            p50, p95, p99 = (_percentile(times, share) for share in (0.50, 0.95, 0.99))
            out.write(
                f"{page:<{width}}  {len(times):>8}  {errors:>6}  {p50:8.1f}  {p95:8.1f}"
                f"  {p99:8.1f}\n"
            )
        minutes: dict[int, list[float]] = defaultdict(list)
        for at, millis in self.timeline:
            minutes[int(at // 60)].append(millis)
        if len(minutes) > 1:
            out.write(
                "\nby minute: "
                + ", ".join(
                    f"{minute + 1}: p50 {_percentile(times, 0.5):.0f} "
                    f"p95 {_percentile(times, 0.95):.0f}"
                    for minute, times in sorted(minutes.items())
                )
                + " ms\n"
            )
        out.write(
            f"\n{len(every)} requests in {duration:.0f} s ({len(every) / duration:.1f}/s), "
            f"error rate {self.error_rate():.3%}\n"
        )
        out.write(
            f"live: {self.sockets} websockets opened, {self.live_messages} messages received, "
            f"{len(self.socket_errors)} failed or ended{': ' if self.socket_errors else ''}"
            f"{'; '.join(sorted(set(self.socket_errors))[:3])}\n"
        )


def _percentile(values: list[float], share: float) -> float:
    """Nearest-rank percentile; 0 for no values."""
    if not values:
        return 0.0
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(share * len(ordered)) - 1))]


def _url(page: str, rng: random.Random, targets: Targets) -> tuple[str, dict[str, str]]:
    run = rng.choice(targets.runs) if targets.runs else "00000000-0000-4000-8000-000000000000"
    if page == "runs list, filtered":
        return rng.choice(("/?status=waiting", "/?workflow=squares", "/?status=completed")), {}
    if page == "runs list (htmx refresh)":
        return "/", {"HX-Request": "true", "HX-Target": "runs-table"}
    if page == "run detail":
        return f"/runs/{run}/", {}
    if page == "run event log":
        return f"/runs/{run}/events/", {}
    if page == "checkpoint detail" and targets.checkpoints:
        run_id, checkpoint_id = rng.choice(targets.checkpoints)
        return f"/runs/{run_id}/checkpoints/{checkpoint_id}/", {}
    fixed = {
        "approval inbox": "/approvals/",
        "storage": "/storage/",
        "api: runs": "/api/runs/",
        "api: run": f"/api/runs/{run}/",
    }
    return fixed.get(page, "/"), {}


async def browse(
    client: aiohttp.ClientSession,
    cookie: str,
    rng: random.Random,
    deadline: float,
    targets: Targets,
    tally: Tally,
    *,
    think: tuple[float, float],
) -> None:
    """One operator: a click, a pause, until the deadline."""
    await asyncio.sleep(rng.uniform(0, think[1]))  # users do not all arrive in the same ms
    while time.monotonic() < deadline:
        (page,) = rng.choices(_NAMES, _WEIGHTS)
        url, headers = _url(page, rng, targets)
        began = time.perf_counter()
        problem: str | None = None
        try:
            async with client.get(
                url, headers={"Cookie": cookie, **headers}, allow_redirects=False
            ) as response:
                await response.read()
                if response.status != 200:
                    problem = f"HTTP {response.status} for {url}"
        except (aiohttp.ClientError, TimeoutError) as exc:
            problem = f"{type(exc).__name__} for {url}: {exc}"
        tally.record(page, (time.perf_counter() - began) * 1000, problem)
        await asyncio.sleep(rng.uniform(*think))


async def start_runs(
    client: aiohttp.ClientSession, token: str, deadline: float, every: float, targets: Targets
) -> None:
    """Keep the worker busy: start a run through the API every ``every`` seconds."""
    headers = {"Authorization": f"Bearer {token}"}
    for body in itertools.cycle(STARTS):
        if time.monotonic() + every >= deadline:
            return
        async with client.post("/api/runs/", json=body, headers=headers) as response:
            answer = await response.json()
            if response.status != 201:
                raise RuntimeError(f"starting a run answered {response.status}: {answer}")
            targets.runs.insert(0, str(answer["id"]))
        await asyncio.sleep(every)


async def listen(
    client: aiohttp.ClientSession, cookie: str, origin: str, deadline: float, tally: Tally
) -> None:
    """The runs list's live socket, held for the whole test as a browser tab holds it, and
    opened again a second later when it fails or ends (as htmx's websocket extension does)."""
    while (left := deadline - time.monotonic()) > 1:
        try:
            async with client.ws_connect(
                "/ws/runs/?view=html", headers={"Cookie": cookie, "Origin": origin}
            ) as socket:
                tally.sockets += 1
                while (left := deadline - time.monotonic()) > 0:
                    try:
                        message = await socket.receive(timeout=left)
                    except TimeoutError:
                        return
                    if message.type != aiohttp.WSMsgType.TEXT:
                        tally.socket_errors.append(f"socket ended: {message.type.name}")
                        break
                    tally.live_messages += 1
        except (aiohttp.ClientError, TimeoutError) as exc:
            tally.socket_errors.append(f"{type(exc).__name__}: {exc}")
        await asyncio.sleep(1.0)
