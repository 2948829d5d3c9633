"""The workflows ``worker_bench.py`` has a real Celery worker run (``SUPERSTEP_WORKFLOWS``).

* ``bench-loop``: one executor that loops to itself, holding ``state_bytes`` of records (the
  engine benchmark's workload) of which one changes every superstep.
* ``bench-fanout``: a dispatcher holding that state fans out to 8 branches, a fan-in joins
  them and hands back to the dispatcher; every superstep is checkpointed as well.

With ``SUPERSTEP_BENCH_TRACE`` set to a folder, every database connection Django opens in the
process writes libpq's protocol trace there (one file per connection): the benchmark counts
round trips (``ReadyForQuery`` messages) and transactions from it. Not a test module.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any

from engine_bench import make_items  # the engine benchmark's records (tests/bench on the path)
from pydantic import Field

from workflows import (
    CheckpointStorage,
    Executor,
    Workflow,
    WorkflowBuilder,
    WorkflowContext,
    handler,
)

BRANCHES = 8


@dataclass
class BenchInput:
    supersteps: Annotated[int, Field(ge=1, le=100_000)] = 100
    state_bytes: Annotated[int, Field(ge=0, le=1 << 20)] = 1024


class _Holder(Executor):
    """State that changes one record per superstep (a new blob every checkpoint)."""

    def __init__(self, id: str) -> None:
        super().__init__(id=id)
        self.items: list[dict[str, Any]] = []
        self.counter = 0
        self.supersteps = 0

    def advance(self) -> bool:
        self.counter += 1
        if self.items:
            self.items[self.counter % len(self.items)]["qty"] += 1
        return self.counter < self.supersteps

    async def on_checkpoint_save(self) -> dict[str, Any]:
        return {"items": self.items, "counter": self.counter, "supersteps": self.supersteps}

    async def on_checkpoint_restore(self, state: dict[str, Any]) -> None:
        self.items, self.counter = state["items"], state["counter"]
        self.supersteps = state["supersteps"]


class Loop(_Holder):
    @handler
    async def start(self, request: BenchInput, ctx: WorkflowContext[int, int]) -> None:
        self.items, self.supersteps = make_items(request.state_bytes), request.supersteps
        await self.step(0, ctx)

    @handler
    async def step(self, message: int, ctx: WorkflowContext[int, int]) -> None:
        if self.advance():
            await ctx.send_message(message + 1)
        else:
            await ctx.yield_output(self.counter)


class Dispatch(_Holder):
    @handler
    async def start(self, request: BenchInput, ctx: WorkflowContext[int, int]) -> None:
        self.items, self.supersteps = make_items(request.state_bytes), request.supersteps
        await ctx.send_message(0)

    @handler
    async def joined(self, parts: list[int], ctx: WorkflowContext[int, int]) -> None:
        # A cycle is three supersteps (dispatch, branches, join).
        self.counter += 2
        if self.advance():
            await ctx.send_message(sum(parts))
        else:
            await ctx.yield_output(self.counter)


class Branch(Executor):
    @handler
    async def work(self, message: int, ctx: WorkflowContext[int]) -> None:
        await ctx.send_message(message + 1)


class Join(Executor):
    @handler
    async def join(self, parts: list[int], ctx: WorkflowContext[list[int]]) -> None:
        await ctx.send_message(parts)


def build_loop(checkpoint_storage: CheckpointStorage | None = None) -> Workflow:
    loop = Loop("loop")
    return (
        WorkflowBuilder(
            start_executor=loop,
            name="bench-loop",
            checkpoint_storage=checkpoint_storage,
            max_iterations=200_000,
        )
        .add_edge(loop, loop)
        .build()
    )


def build_fanout(checkpoint_storage: CheckpointStorage | None = None) -> Workflow:
    dispatch, join = Dispatch("dispatch"), Join(id="join")
    branches = [Branch(id=f"branch-{i}") for i in range(BRANCHES)]
    return (
        WorkflowBuilder(
            start_executor=dispatch,
            name="bench-fanout",
            checkpoint_storage=checkpoint_storage,
            max_iterations=200_000,
        )
        .add_fan_out_edges(dispatch, branches)
        .add_fan_in_edges(branches, join)
        .add_edge(join, dispatch)
        .build()
    )


WORKFLOWS = {"bench-loop": build_loop, "bench-fanout": build_fanout}


def _trace_connections(folder: Path) -> None:
    from django.db.backends.signals import connection_created

    def trace(sender: Any, connection: Any, **kwargs: Any) -> None:
        if connection.vendor != "postgresql":
            return
        path = folder / f"{os.getpid()}-{id(connection.connection)}.trace"
        handle = path.open("a")
        connection.connection.pgconn.trace(handle.fileno())
        connection.connection._bench_trace = handle  # kept open as long as the connection

    connection_created.connect(trace, weak=False)


if folder := os.environ.get("SUPERSTEP_BENCH_TRACE"):
    _trace_connections(Path(folder))
