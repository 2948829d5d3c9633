"""An order pipeline of three ``@step`` calls that ``test_functional_crash.py`` kills mid-step.

It lives in its own module (not a test module) so the killed process and the resuming one
import the same code under the same name, ``crash_app``, and so compute the same step
fingerprints. Each step call, and each pass through the plain code between them, appends a line
to ``<folder>/calls.log``; the ``charge`` step, when ``CRASH_APP_HANG=1``, writes
``<folder>/charge.started`` and then waits forever, for the test to kill the process there::

    python -c "import crash_app; crash_app.main()" start <folder>
    python -c "import crash_app; crash_app.main()" resume <folder>

Both print the run's outputs and final state as one JSON line.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
from dataclasses import dataclass
from decimal import Decimal
from pathlib import Path

from workflows import FileCheckpointStorage, FunctionalWorkflow, step, workflow

WORKFLOW_NAME = "order-pipeline"
FOLDER = Path(os.environ.get("CRASH_APP_FOLDER", "."))


@dataclass
class Receipt:
    order_id: str
    amount: Decimal


def record(name: str) -> None:
    with (FOLDER / "calls.log").open("a") as log:
        log.write(name + "\n")


@step
async def fetch_order(order_id: str) -> dict[str, str]:
    record("fetch_order")
    return {"order_id": order_id, "amount": "42.50"}


@step
async def charge(order: dict[str, str]) -> Receipt:
    record("charge")
    if os.environ.get("CRASH_APP_HANG") == "1":
        (FOLDER / "charge.started").write_text("charging\n")
        await asyncio.Event().wait()  # the test kills the process here
    return Receipt(order["order_id"], Decimal(order["amount"]))


@step
async def notify(receipt: Receipt) -> str:
    record("notify")
    return f"charged {receipt.amount} for {receipt.order_id}"


@workflow(name=WORKFLOW_NAME)
async def order_pipeline(order_id: str) -> str:
    order = await fetch_order(order_id)
    record("plain")  # plain code: runs again on every resume
    receipt = await charge(order)
    return await notify(receipt)


def build(folder: Path) -> FunctionalWorkflow:
    return order_pipeline.build(checkpoint_storage=FileCheckpointStorage(folder / "checkpoints"))


async def _start(folder: Path) -> dict[str, object]:
    result = await build(folder).run("order-42")
    return {"outputs": result.get_outputs(), "state": result.get_final_state().value}


async def _resume(folder: Path) -> dict[str, object]:
    pipeline = build(folder)
    latest = await FileCheckpointStorage(folder / "checkpoints").get_latest(
        workflow_name=WORKFLOW_NAME
    )
    assert latest is not None, "no checkpoint to resume from"
    result = await pipeline.run(checkpoint_id=latest.checkpoint_id)
    return {"outputs": result.get_outputs(), "state": result.get_final_state().value}


def main() -> None:
    command, folder = sys.argv[1], Path(sys.argv[2])
    global FOLDER
    FOLDER = folder
    outcome = asyncio.run(_start(folder) if command == "start" else _resume(folder))
    print(json.dumps(outcome))
