"""Three versions of one workflow, ``spend``, as a deployment would ship them over time.

* ``spend_v1``: a counter (which saves how many amounts it saw) passes the amount to a reviewer
  that asks a person;
* ``spend_v2_compatible``: v1 plus an auditor after the counter — a change a paused v1 run
  can continue on;
* ``spend_v3_incompatible``: the counter is now another class, so the state a v1 run saved
  for it may not fit; a paused v1 run needs migration.

Registered in the tests through ``settings.SUPERSTEP_WORKFLOWS`` (dotted paths, a list for
versions side by side); not a test module.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Never

from workflows import Executor, WorkflowBuilder, WorkflowContext, handler, response_handler

MODULE = __name__


@dataclass
class Spend:
    amount: int = 100


@dataclass
class SpendApproval:
    amount: int
    question: str


@dataclass
class SpendDecision:
    approved: bool = True
    note: str = ""


class Counter(Executor):
    def __init__(self) -> None:
        super().__init__(id="counter")
        self.seen = 0

    @handler
    async def take(self, spend: Spend, ctx: WorkflowContext[int]) -> None:
        self.seen += 1
        await ctx.send_message(spend.amount)

    async def on_checkpoint_save(self) -> dict[str, Any]:
        return {"seen": self.seen}

    async def on_checkpoint_restore(self, state: dict[str, Any]) -> None:
        self.seen = int(state.get("seen", 0))


class DoublingCounter(Counter):
    """v3's counter: counts twice; its saved count means something else."""

    @handler
    async def take(self, spend: Spend, ctx: WorkflowContext[int]) -> None:
        self.seen += 2
        await ctx.send_message(spend.amount)


class Reviewer(Executor):
    def __init__(self) -> None:
        super().__init__(id="reviewer")

    @handler
    async def ask(self, amount: int, ctx: WorkflowContext[Never, str]) -> None:
        await ctx.request_info(SpendApproval(amount, f"Spend {amount}?"), SpendDecision)

    @response_handler
    async def decided(
        self, request: SpendApproval, decision: SpendDecision, ctx: WorkflowContext[Never, str]
    ) -> None:
        verdict = "approved" if decision.approved else "rejected"
        await ctx.yield_output(f"{request.amount} {verdict}")


class Auditor(Executor):
    def __init__(self) -> None:
        super().__init__(id="auditor")

    @handler
    async def audit(self, amount: int, ctx: WorkflowContext[Never]) -> None:
        ctx.set_state("audited", amount)


def spend_v1(checkpoint_storage: Any = None) -> Any:
    counter, reviewer = Counter(), Reviewer()
    return (
        WorkflowBuilder(start_executor=counter, checkpoint_storage=checkpoint_storage, name="spend")
        .add_edge(counter, reviewer)
        .build()
    )


def spend_v2_compatible(checkpoint_storage: Any = None) -> Any:
    counter, reviewer, auditor = Counter(), Reviewer(), Auditor()
    return (
        WorkflowBuilder(start_executor=counter, checkpoint_storage=checkpoint_storage, name="spend")
        .add_fan_out_edges(counter, [reviewer, auditor])
        .build()
    )


def spend_v3_incompatible(checkpoint_storage: Any = None) -> Any:
    counter, reviewer = DoublingCounter(), Reviewer()
    return (
        WorkflowBuilder(start_executor=counter, checkpoint_storage=checkpoint_storage, name="spend")
        .add_edge(counter, reviewer)
        .build()
    )


V1 = f"{MODULE}.spend_v1"
V2 = f"{MODULE}.spend_v2_compatible"
V3 = f"{MODULE}.spend_v3_incompatible"
