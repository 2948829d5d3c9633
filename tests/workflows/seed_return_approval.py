"""Seed 001's capstone: a return refund paused for approval in one process, approved in another.

Chapter 18 ends with its payoff: the return pipeline pauses on ``ctx.request_info``, the process
that paused goes away, and a later request — possibly another process — builds a *fresh* workflow
and resumes "purely from checkpoint_id plus the human's approval". ``ReturnRequestExecutor`` below
is the chapter's code verbatim (only the import line differs from MAF's); the approval gate, the
finalizer and the two command-line halves are the scaffolding the chapter describes.

Both halves run in fresh interpreters (``test_seed_state_and_checkpoints.py`` starts them)::

    python -c "import seed_return_approval as m; m.cli()" pause <folder> <finalize declaration>
    python -c "import seed_return_approval as m; m.cli()" approve <folder> <finalize declaration> \
        <checkpoint id> <request id> <approval as JSON>

Each prints one JSON line. Importing the module by its own name (not running it as
``__main__``) keeps the qualified names of its types identical in both processes.
"""

from __future__ import annotations

import asyncio
import json
import sys
from dataclasses import dataclass
from typing import Any

from workflows import (
    Executor,
    FileCheckpointStorage,
    WorkflowBuilder,
    WorkflowContext,
    handler,
    response_handler,
)

WORKFLOW_NAME = "return-approval"


# ------------------------------------------------------------------ the chapter's code, verbatim


class ReturnRequestExecutor(Executor):
    def __init__(self, initial_refund: float) -> None:
        super().__init__(id="return-request")
        self.refund_amount = initial_refund

    @handler
    async def handle(self, item_refund: float, ctx: WorkflowContext[float, None]) -> None:
        self.refund_amount += item_refund
        await ctx.send_message(self.refund_amount)

    async def on_checkpoint_save(self) -> dict[str, Any]:
        return {"refund_amount": self.refund_amount}

    async def on_checkpoint_restore(self, state: dict[str, Any]) -> None:
        self.refund_amount = float(state.get("refund_amount", 0.0))


# --------------------------------------------------------------------------------- scaffolding


@dataclass
class RefundApprovalRequest:
    refund_amount: float


@dataclass
class Approval:
    approved: bool
    reviewer: str


class HitlGate(Executor):
    """Holds every refund for a human; an approved one goes on to be finalized."""

    def __init__(self) -> None:
        super().__init__(id="hitl-gate")

    @handler
    async def hold(self, refund_amount: float, ctx: WorkflowContext[float]) -> None:
        await ctx.request_info(RefundApprovalRequest(refund_amount), Approval)

    @response_handler
    async def decided(
        self, request: RefundApprovalRequest, approval: Approval, ctx: WorkflowContext[float, str]
    ) -> None:
        if approval.approved:
            await ctx.send_message(request.refund_amount)
        else:
            await ctx.yield_output(
                f"refund of {request.refund_amount} rejected by {approval.reviewer}"
            )


# The last executor, declared the ways MAF users write an output-only executor. MAF builds all
# of them; "Any" is the one our engine refused before a dead-end sender became a warning.
class FinalizeReturnNone(Executor):
    def __init__(self) -> None:
        super().__init__(id="finalize-return")

    @handler
    async def finalize(self, refund_amount: float, ctx: WorkflowContext[None, float]) -> None:
        await ctx.yield_output(refund_amount)


class FinalizeReturnAny(Executor):
    def __init__(self) -> None:
        super().__init__(id="finalize-return")

    @handler
    async def finalize(self, refund_amount: float, ctx: WorkflowContext[Any, float]) -> None:
        await ctx.yield_output(refund_amount)


FINALIZERS: dict[str, type[Executor]] = {"None": FinalizeReturnNone, "Any": FinalizeReturnAny}


def storage_at(folder: str) -> FileCheckpointStorage:
    # MAF's security advice: name every custom type a checkpoint may hold.
    return FileCheckpointStorage(
        folder,
        allowed_checkpoint_types=[
            "seed_return_approval:RefundApprovalRequest",
            "seed_return_approval:Approval",
        ],
    )


def build_workflow(initial_refund: float, finalize: str, storage: Any = None) -> Any:
    request, gate, final = ReturnRequestExecutor(initial_refund), HitlGate(), FINALIZERS[finalize]()
    return (
        WorkflowBuilder(start_executor=request, checkpoint_storage=storage, name=WORKFLOW_NAME)
        .add_edge(request, gate)
        .add_edge(gate, final)
        .build()
    )


async def pause(folder: str, finalize: str) -> dict[str, Any]:
    """The first HTTP request: start the return, run until it waits for a human, report."""
    storage = storage_at(folder)
    workflow = build_workflow(10.0, finalize, storage)
    result = await workflow.run(5.0)
    (request,) = result.get_request_info_events()
    paused = await storage.get_latest(workflow_name=WORKFLOW_NAME)
    return {
        "state": result.get_final_state().name,
        "outputs": result.get_outputs(),
        "request_id": request.request_id,
        "request": request.data.refund_amount,
        "checkpoint_id": paused.checkpoint_id,
    }


async def approve(
    folder: str, finalize: str, checkpoint_id: str, request_id: str, approval: dict[str, Any]
) -> dict[str, Any]:
    """A later request in another process: nothing is alive but the files and the two ids."""
    storage = storage_at(folder)
    paused = await storage.load(checkpoint_id)
    pending = {
        rid: event.data.refund_amount for rid, event in paused.pending_request_info_events.items()
    }
    # A deliberately wrong seed, as in the chapter's Phase 2: the checkpoint must win.
    workflow = build_workflow(999.0, finalize)
    outputs, states = [], []
    async for event in workflow.run(
        stream=True,
        checkpoint_id=checkpoint_id,
        checkpoint_storage=storage,
        responses={request_id: Approval(**approval)},
    ):
        if event.type == "output":
            outputs.append(event.data)
        elif event.type == "status":
            states.append(event.state.name)
    request_executor = workflow.executors["return-request"]
    return {
        "pending": pending,
        "outputs": outputs,
        "state": states[-1],
        "refund_amount": request_executor.refund_amount,
    }


def cli() -> None:
    command, folder, finalize, *rest = sys.argv[1:]
    if command == "pause":
        report = asyncio.run(pause(folder, finalize))
    else:
        checkpoint_id, request_id, approval = rest
        report = asyncio.run(
            approve(folder, finalize, checkpoint_id, request_id, json.loads(approval))
        )
    print(json.dumps(report))
