"""An expense-approval workflow that ``test_hitl.py`` pauses in one process and answers in another.

It lives in its own module (not a test module) so both processes import its classes under the
same name, ``hitl_app``, and so build the same graph. The answering process runs::

    python -c "import hitl_app; hitl_app.answer_main()" <folder> <checkpoint id> <request id> <json>

and prints the run's outputs and final state as one JSON line.
"""

from __future__ import annotations

import asyncio
import json
import sys
from dataclasses import dataclass
from decimal import Decimal
from typing import Any, Never

from workflows import (
    Executor,
    FileCheckpointStorage,
    Workflow,
    WorkflowBuilder,
    WorkflowContext,
    handler,
    response_handler,
)

WORKFLOW_NAME = "expense-approval"


@dataclass
class ExpenseClaim:
    employee: str
    amount: Decimal


@dataclass
class ApprovalRequest:
    claim: ExpenseClaim
    reason: str


@dataclass
class Decision:
    approved: bool
    reviewer: str
    note: str = ""


class Intake(Executor):
    def __init__(self) -> None:
        super().__init__(id="intake")

    @handler
    async def take(self, claim: ExpenseClaim, ctx: WorkflowContext[ExpenseClaim]) -> None:
        ctx.set_state("claimed_by", claim.employee)
        await ctx.send_message(claim)


class Approver(Executor):
    def __init__(self) -> None:
        super().__init__(id="approver")
        self.asked = 0

    @handler
    async def review(self, claim: ExpenseClaim, ctx: WorkflowContext[Never, str]) -> None:
        self.asked += 1
        await ctx.request_info(
            ApprovalRequest(claim, "over the limit"),
            Decision,
            request_id=f"approve-{claim.employee}",
        )

    @response_handler
    async def decided(
        self, request: ApprovalRequest, decision: Decision, ctx: WorkflowContext[Never, str]
    ) -> None:
        verdict = "approved" if decision.approved else "rejected"
        who = ctx.get_state("claimed_by")
        await ctx.yield_output(
            f"{who}'s {request.claim.amount} claim {verdict} by {decision.reviewer}"
            f" (asked {self.asked}x)"
        )

    async def on_checkpoint_save(self) -> dict[str, Any]:
        return {"asked": self.asked}

    async def on_checkpoint_restore(self, state: dict[str, Any]) -> None:
        self.asked = state.get("asked", 0)


def build(storage: Any) -> Workflow:
    intake, approver = Intake(), Approver()
    return (
        WorkflowBuilder(start_executor=intake, checkpoint_storage=storage, name=WORKFLOW_NAME)
        .add_edge(intake, approver)
        .build()
    )


async def answer(folder: str, checkpoint_id: str, request_id: str, response: Any) -> dict[str, Any]:
    workflow = build(FileCheckpointStorage(folder))
    result = await workflow.run(checkpoint_id=checkpoint_id, responses={request_id: response})
    return {
        "outputs": result.get_outputs(),
        "state": result.get_final_state().value,
        "requests": [e.request_id for e in result.get_request_info_events()],
    }


def answer_main() -> None:
    folder, checkpoint_id, request_id, response = sys.argv[1:5]
    try:
        report = asyncio.run(answer(folder, checkpoint_id, request_id, json.loads(response)))
    except Exception as exc:  # noqa: BLE001 - the parent test reads the error type from stdout
        report = {"error": type(exc).__name__, "message": str(exc)}
    print(json.dumps(report))
