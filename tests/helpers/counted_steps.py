"""A functional workflow whose steps count their calls, for the lost-worker test of functional
runs (``tests/dashboard/faults/test_fault_functional_worker.py``).

Registered in the test's deployment with ``SUPERSTEP_WORKFLOWS=counted_steps`` (this folder is
on the workers' ``PYTHONPATH``). Each step call appends its name to ``<folder>/calls.log``; the
``pack`` step also appends ``pack done`` when it returns. Its first call writes
``<folder>/pack.started`` and then waits, for the test to kill the worker there; a later call
(the resumed run, on another worker) finds that file and returns.

Not a test module: workers import it as ``counted_steps``.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from pathlib import Path

from workflows import CheckpointStorage, FunctionalWorkflow, step, workflow


@dataclass
class CountedRun:
    folder: str


def record(folder: str, line: str) -> None:
    with (Path(folder) / "calls.log").open("a") as log:
        log.write(line + "\n")


@step
async def fetch(folder: str) -> int:
    record(folder, "fetch")
    return 20


@step
async def price(folder: str, amount: int) -> int:
    record(folder, "price")
    return amount + 1


@step
async def pack(folder: str, total: int) -> str:
    record(folder, "pack")
    started = Path(folder) / "pack.started"
    if not started.exists():
        started.write_text("packing\n")
        await asyncio.Event().wait()  # the worker is killed here
    record(folder, "pack done")
    return f"parcel of {total}"


@step
async def ship(folder: str, parcel: str) -> str:
    record(folder, "ship")
    return f"shipped {parcel}"


@workflow(name="counted-steps")
async def counted_steps(run: CountedRun) -> str:
    total = await price(run.folder, await fetch(run.folder))
    return await ship(run.folder, await pack(run.folder, total))


def build(checkpoint_storage: CheckpointStorage | None = None) -> FunctionalWorkflow:
    return counted_steps.build(checkpoint_storage=checkpoint_storage)


WORKFLOWS = {"counted-steps": build}
