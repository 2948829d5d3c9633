"""The workflows the dashboard ships with, registered by name in demo mode
(``dashboard.catalog.sources.DEMO_WORKFLOWS``).

Each builder takes an optional checkpoint storage and returns a fresh ``Workflow`` with fixed
executor ids and a fixed name, so any worker process rebuilds exactly the same graph. Handlers
sleep for a configurable ``work_ms`` so an operator can watch a run move through the graph.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Annotated, Any, Never

from pydantic import Field

from workflows import (
    CheckpointStorage,
    Executor,
    Workflow,
    WorkflowBuilder,
    WorkflowContext,
    WorkflowExecutor,
    handler,
    response_handler,
)

__all__ = [
    "build_expense_claim",
    "build_fail_at_step",
    "build_fan_out_fan_in",
    "build_manager_review",
    "build_refund",
    "build_return_replace",
    "build_squares",
]


async def _work(ms: int) -> None:
    if ms > 0:
        await asyncio.sleep(min(ms, 10_000) / 1000)


# ------------------------------------------------------------------------------------- refund


@dataclass
class RefundItem:
    """One returned line item."""

    item_refund: float = 5.0
    initial_refund: float = 10.0
    work_ms: int = 200


class ReturnRequestExecutor(Executor):
    """Keeps a running refund amount; its state lives in checkpoints, not in the constructor."""

    def __init__(self, initial_refund: float = 0.0) -> None:
        super().__init__(id="return-request")
        self.refund_amount = initial_refund
        self.seeded = False

    @handler
    async def handle(self, item: RefundItem, ctx: WorkflowContext[float]) -> None:
        await _work(item.work_ms)
        if not self.seeded:
            self.refund_amount, self.seeded = item.initial_refund, True
        self.refund_amount += item.item_refund
        await ctx.send_message(self.refund_amount)

    async def on_checkpoint_save(self) -> dict[str, Any]:
        return {"refund_amount": self.refund_amount, "seeded": self.seeded}

    async def on_checkpoint_restore(self, state: dict[str, Any]) -> None:
        self.refund_amount = float(state.get("refund_amount", 0.0))
        self.seeded = bool(state.get("seeded", False))


class FinalizeReturnExecutor(Executor):
    @handler
    async def finalize(self, refund_amount: float, ctx: WorkflowContext[None, float]) -> None:
        await ctx.yield_output(refund_amount)


def build_refund(checkpoint_storage: CheckpointStorage | None = None) -> Workflow:
    start, finish = ReturnRequestExecutor(), FinalizeReturnExecutor(id="finalize-return")
    return (
        WorkflowBuilder(
            start_executor=start,
            name="refund",
            description="Adds a returned item's refund to a running total and finalizes it.",
            checkpoint_storage=checkpoint_storage,
        )
        .add_edge(start, finish)
        .build()
    )


# ------------------------------------------------------------------------------------ squares


@dataclass
class SquaresInput:
    """Square the numbers 1..limit, one per superstep."""

    # Bounds declared on the type: the start form and the API refuse a limit out of range
    # before a run exists (the handler's own check stays for code that builds the input itself).
    limit: Annotated[int, Field(ge=1, le=1000, description="How many numbers to square")] = 10
    work_ms: Annotated[
        int, Field(ge=0, le=60_000, description="Simulated work per superstep, ms")
    ] = 100


@dataclass
class SquaresTask:
    remaining: list[int]
    work_ms: int = 0


class SquaresStart(Executor):
    @handler
    async def start(self, request: SquaresInput, ctx: WorkflowContext[SquaresTask]) -> None:
        if not 1 <= request.limit <= 1000:
            raise ValueError("limit must be between 1 and 1000")
        await ctx.send_message(SquaresTask(list(range(1, request.limit + 1)), request.work_ms))


class SquaresWorker(Executor):
    def __init__(self) -> None:
        super().__init__(id="worker")
        self._results: dict[int, int] = {}

    @handler
    async def compute(
        self, task: SquaresTask, ctx: WorkflowContext[SquaresTask, dict[int, int]]
    ) -> None:
        await _work(task.work_ms)
        num = task.remaining.pop(0)
        self._results[num] = num * num
        if task.remaining:
            await ctx.send_message(task)
        else:
            await ctx.yield_output(dict(self._results))

    async def on_checkpoint_save(self) -> dict[str, Any]:
        return {"results": self._results}

    async def on_checkpoint_restore(self, state: dict[str, Any]) -> None:
        self._results = dict(state.get("results", {}))


def build_squares(checkpoint_storage: CheckpointStorage | None = None) -> Workflow:
    start, worker = SquaresStart(id="start"), SquaresWorker()
    return (
        WorkflowBuilder(
            start_executor=start,
            name="squares",
            description="A self-loop: squares one number per superstep into an int-keyed dict.",
            checkpoint_storage=checkpoint_storage,
            max_iterations=1100,
        )
        .add_edge(start, worker)
        .add_edge(worker, worker)
        .build()
    )


# ---------------------------------------------------------------------------- fan-out / fan-in


@dataclass
class QuoteRequest:
    """Ask three carriers for a shipping quote in parallel, then pick the cheapest."""

    weight_kg: float = 2.5
    destination: str = "Lisbon"
    work_ms: int = 300


@dataclass
class Quote:
    carrier: str
    price: float


class QuoteDispatch(Executor):
    @handler
    async def dispatch(self, request: QuoteRequest, ctx: WorkflowContext[QuoteRequest]) -> None:
        if request.weight_kg <= 0:
            raise ValueError("weight_kg must be positive")
        ctx.set_state("destination", request.destination)
        await ctx.send_message(request)


class CarrierQuote(Executor):
    def __init__(self, carrier: str, base: float, per_kg: float) -> None:
        super().__init__(id=f"quote-{carrier}")
        self.carrier, self.base, self.per_kg = carrier, base, per_kg

    @handler
    async def quote(self, request: QuoteRequest, ctx: WorkflowContext[Quote]) -> None:
        await _work(request.work_ms)
        price = round(self.base + self.per_kg * request.weight_kg, 2)
        await ctx.send_message(Quote(self.carrier, price))


class PickCheapest(Executor):
    @handler
    async def pick(self, quotes: list[Quote], ctx: WorkflowContext[None, dict[str, Any]]) -> None:
        best = min(quotes, key=lambda q: q.price)
        await ctx.yield_output(
            {
                "destination": ctx.get_state("destination"),
                "carrier": best.carrier,
                "price": best.price,
                "quotes": {q.carrier: q.price for q in quotes},
            }
        )


def build_fan_out_fan_in(checkpoint_storage: CheckpointStorage | None = None) -> Workflow:
    dispatch = QuoteDispatch(id="dispatch")
    carriers = [
        CarrierQuote("swiftship", 4.0, 1.9),
        CarrierQuote("parcelpro", 6.5, 1.1),
        CarrierQuote("ecopost", 3.0, 2.4),
    ]
    pick = PickCheapest(id="pick-cheapest")
    return (
        WorkflowBuilder(
            start_executor=dispatch,
            name="fan-out-fan-in",
            description="Three carriers quote concurrently; a fan-in picks the cheapest.",
            checkpoint_storage=checkpoint_storage,
        )
        .add_fan_out_edges(dispatch, carriers)
        .add_fan_in_edges(carriers, pick)
        .build()
    )


# -------------------------------------------------------------------------------- fail at step


@dataclass
class FailAtStepInput:
    """Count up to ``steps``; step ``fail_at`` fails while a simulated outage lasts
    (``outage_seconds`` from the run's start), so a retry after the outage succeeds."""

    steps: Annotated[int, Field(ge=1, le=500, description="Supersteps to count")] = 5
    fail_at: Annotated[
        int, Field(ge=0, description="The step that fails during the outage (0: none)")
    ] = 3
    outage_seconds: Annotated[
        float, Field(ge=0, le=86_400, description="How long the outage lasts")
    ] = 15.0
    work_ms: Annotated[
        int, Field(ge=0, le=60_000, description="Simulated work per superstep, ms")
    ] = 150


@dataclass
class Tick:
    n: int
    steps: int
    fail_at: int
    outage_seconds: float
    work_ms: int


class TickStart(Executor):
    @handler
    async def start(self, request: FailAtStepInput, ctx: WorkflowContext[Tick]) -> None:
        if not 1 <= request.steps <= 500:
            raise ValueError("steps must be between 1 and 500")
        ctx.set_state("started_at", datetime.now(UTC))
        await ctx.send_message(
            Tick(1, request.steps, request.fail_at, request.outage_seconds, request.work_ms)
        )


class Counter(Executor):
    def __init__(self) -> None:
        super().__init__(id="counter")
        self.seen: list[int] = []

    @handler
    async def count(self, tick: Tick, ctx: WorkflowContext[Tick, dict[str, Any]]) -> None:
        await _work(tick.work_ms)
        started: datetime = ctx.get_state("started_at")
        outage_left = tick.outage_seconds - (datetime.now(UTC) - started).total_seconds()
        if tick.n == tick.fail_at and outage_left > 0:
            raise RuntimeError(
                f"simulated outage at step {tick.n}: the pricing service is down for another "
                f"{outage_left:.1f} s; retry the run after that"
            )
        self.seen.append(tick.n)
        if tick.n >= tick.steps:
            await ctx.yield_output({"counted": list(self.seen)})
        else:
            await ctx.send_message(
                Tick(tick.n + 1, tick.steps, tick.fail_at, tick.outage_seconds, tick.work_ms)
            )

    async def on_checkpoint_save(self) -> dict[str, Any]:
        return {"seen": self.seen}

    async def on_checkpoint_restore(self, state: dict[str, Any]) -> None:
        self.seen = list(state.get("seen", []))


def build_fail_at_step(checkpoint_storage: CheckpointStorage | None = None) -> Workflow:
    start, counter = TickStart(id="start"), Counter()
    return (
        WorkflowBuilder(
            start_executor=start,
            name="fail-at-step",
            description="Counts supersteps and fails at a chosen one, for retry and resume.",
            checkpoint_storage=checkpoint_storage,
            max_iterations=600,
        )
        .add_edge(start, counter)
        .add_edge(counter, counter)
        .build()
    )


# ------------------------------------------------------------------------------ return-replace


@dataclass
class ReturnReplaceRequest:
    """A customer returns an item and may get a replacement, subject to an operator's approval."""

    order_id: str = "ORD-1001"
    item_sku: str = "KETTLE-2L"
    refund_amount: float = 49.9
    reason: str = "damaged"
    work_ms: int = 300


@dataclass
class ReturnState:
    """Carried through the whole chain; every step records itself in ``completed_steps``."""

    order_id: str
    item_sku: str
    refund_amount: float
    reason: str
    work_ms: int = 0
    eligible: bool = False
    return_label: str = ""
    replacement_products: list[str] = field(default_factory=list)
    hitl_required: bool = True
    hitl_approved: bool | None = None
    discount_percent: int = 0
    operator_note: str = ""
    final_amount: float = 0.0
    completed_steps: list[str] = field(default_factory=list)


@dataclass
class ReplacementApproval:
    """What the operator is asked to decide."""

    order_id: str
    refund_amount: float
    replacement_products: list[str]
    question: str


@dataclass
class ApprovalDecision:
    """The operator's answer: approve or reject, a discount percent (0-100) and a note."""

    approved: bool
    discount_percent: Annotated[int, Field(ge=0, le=100, description="Discount on the refund")] = 0
    note: Annotated[str, Field(max_length=500, description="Shown to the customer")] = ""


_ELIGIBLE_REASONS = {"damaged", "defective", "wrong-item", "not-as-described"}
_CATALOGUE = {
    "KETTLE-2L": ["KETTLE-2L-V2", "KETTLE-1.7L-STEEL", "KETTLE-2L-GLASS"],
    "TOASTER-4": ["TOASTER-4-PRO", "TOASTER-2-SLIM"],
}


class CheckEligibility(Executor):
    @handler
    async def check(self, request: ReturnReplaceRequest, ctx: WorkflowContext[ReturnState]) -> None:
        if not request.order_id.strip():
            raise ValueError("order_id is required")
        if request.refund_amount < 0:
            raise ValueError("refund_amount cannot be negative")
        await _work(request.work_ms)
        state = ReturnState(
            order_id=request.order_id,
            item_sku=request.item_sku,
            refund_amount=request.refund_amount,
            reason=request.reason,
            work_ms=request.work_ms,
        )
        state.eligible = request.reason in _ELIGIBLE_REASONS and request.refund_amount <= 1000
        state.completed_steps.append(self.id)
        await ctx.send_message(state)


class InitiateReturn(Executor):
    @handler
    async def initiate(self, state: ReturnState, ctx: WorkflowContext[ReturnState]) -> None:
        await _work(state.work_ms)
        if state.eligible:
            state.return_label = f"RL-{state.order_id}-{len(state.item_sku)}"
        state.completed_steps.append(self.id)
        await ctx.send_message(state)


class SearchReplacements(Executor):
    @handler
    async def search(self, state: ReturnState, ctx: WorkflowContext[ReturnState]) -> None:
        await _work(state.work_ms)
        if state.eligible:
            state.replacement_products = list(_CATALOGUE.get(state.item_sku, []))
        state.hitl_required = state.eligible and bool(state.replacement_products)
        state.completed_steps.append(self.id)
        await ctx.send_message(state)


class HitlGate(Executor):
    """Pauses the run for an operator when a replacement is on the table."""

    @handler
    async def gate(self, state: ReturnState, ctx: WorkflowContext[ReturnState]) -> None:
        if not state.hitl_required:
            state.completed_steps.append(self.id)
            await ctx.send_message(state)
            return
        ctx.set_state(f"pending:{state.order_id}", state)
        await ctx.request_info(
            ReplacementApproval(
                order_id=state.order_id,
                refund_amount=state.refund_amount,
                replacement_products=state.replacement_products,
                question=f"Ship a replacement for {state.item_sku} on order {state.order_id}?",
            ),
            ApprovalDecision,
        )

    @response_handler
    async def decided(
        self,
        request: ReplacementApproval,
        decision: ApprovalDecision,
        ctx: WorkflowContext[ReturnState],
    ) -> None:
        if not 0 <= decision.discount_percent <= 100:
            raise ValueError("discount_percent must be between 0 and 100")
        state: ReturnState = ctx.get_state(f"pending:{request.order_id}")
        ctx.delete_state(f"pending:{request.order_id}")
        state.hitl_approved = decision.approved
        state.discount_percent = decision.discount_percent if decision.approved else 0
        state.operator_note = decision.note
        state.completed_steps.append(self.id)
        await ctx.send_message(state)


class ApplyDiscount(Executor):
    @handler
    async def apply(self, state: ReturnState, ctx: WorkflowContext[ReturnState]) -> None:
        await _work(state.work_ms)
        state.final_amount = round(state.refund_amount * (100 - state.discount_percent) / 100, 2)
        state.completed_steps.append(self.id)
        await ctx.send_message(state)


class Finalize(Executor):
    @handler
    async def finalize(
        self, state: ReturnState, ctx: WorkflowContext[None, dict[str, Any]]
    ) -> None:
        state.completed_steps.append(self.id)
        if not state.eligible:
            outcome = "not eligible"
        elif state.hitl_approved:
            outcome = "replacement approved"
        elif state.hitl_approved is False:
            outcome = "replacement rejected; refund only"
        else:
            outcome = "refund only"
        await ctx.yield_output(
            {
                "order_id": state.order_id,
                "outcome": outcome,
                "return_label": state.return_label,
                "replacement": state.replacement_products[0] if state.hitl_approved else None,
                "refund_amount": state.refund_amount,
                "discount_percent": state.discount_percent,
                "final_amount": state.final_amount,
                "operator_note": state.operator_note,
                "completed_steps": state.completed_steps,
            }
        )


def build_return_replace(checkpoint_storage: CheckpointStorage | None = None) -> Workflow:
    chain = [
        CheckEligibility(id="check-eligibility"),
        InitiateReturn(id="initiate-return"),
        SearchReplacements(id="search-replacements"),
        HitlGate(id="hitl-gate"),
        ApplyDiscount(id="apply-discount"),
        Finalize(id="finalize"),
    ]
    return (
        WorkflowBuilder(
            start_executor=chain[0],
            name="return-replace",
            description="Return an item and offer a replacement, with an operator approval gate.",
            checkpoint_storage=checkpoint_storage,
        )
        .add_chain(chain)
        .build()
    )


# ---------------------------------------------------------------------- expense claim (MAF-style)
#
# Written the way a Microsoft Agent Framework user writes it (only the import differs): a
# manager's review is a workflow of its own, used as one executor of the claim workflow through
# ``WorkflowExecutor(..., propagate_request=True)``, so the manager's question becomes a request
# of the outer run (the approval inbox shows it) and the answer resumes the inner workflow.
# ``output_from`` / ``intermediate_output_from`` say which yields are the outputs.


@dataclass
class ExpenseClaim:
    """An employee's expense claim; claims above ``auto_approve_limit`` need a manager."""

    employee: str = "Dana"
    amount: float = 420.0
    category: str = "travel"
    auto_approve_limit: float = 100.0
    work_ms: int = 200


@dataclass
class PolicyVerdict:
    """What the policy check found, handed to the manager's step inside the review."""

    employee: str
    amount: float
    category: str
    within_policy: bool
    needs_manager: bool
    work_ms: int = 0


@dataclass
class ManagerQuestion:
    """What the manager is asked inside the review sub-workflow."""

    employee: str
    amount: float
    category: str
    within_policy: bool
    question: str


@dataclass
class ManagerDecision:
    """The manager's answer: approve or reject the claim, with a note for the employee."""

    approved: bool
    note: Annotated[str, Field(max_length=500, description="Shown to the employee")] = ""


@dataclass
class ReviewOutcome:
    """The review sub-workflow's output: the parent's payout step takes it."""

    employee: str
    amount: float
    approved: bool
    reviewed_by: str
    note: str = ""


_CATEGORY_LIMITS = {"travel": 2000.0, "meals": 150.0, "equipment": 1500.0}


class ClaimIntake(Executor):
    @handler
    async def intake(self, claim: ExpenseClaim, ctx: WorkflowContext[ExpenseClaim, str]) -> None:
        if not claim.employee.strip():
            raise ValueError("employee is required")
        if claim.amount <= 0:
            raise ValueError("amount must be positive")
        await _work(claim.work_ms)
        ctx.set_state("claim", {"employee": claim.employee, "amount": claim.amount})
        # An intermediate output: shown as progress, not as the run's result.
        await ctx.yield_output(f"claim of {claim.amount:.2f} from {claim.employee} received")
        await ctx.send_message(claim)


class PolicyCheck(Executor):
    @handler
    async def check(self, claim: ExpenseClaim, ctx: WorkflowContext[PolicyVerdict, str]) -> None:
        await _work(claim.work_ms)
        limit = _CATEGORY_LIMITS.get(claim.category, 500.0)
        verdict = PolicyVerdict(
            employee=claim.employee,
            amount=claim.amount,
            category=claim.category,
            within_policy=claim.amount <= limit,
            needs_manager=claim.amount > claim.auto_approve_limit,
            work_ms=claim.work_ms,
        )
        ctx.set_state("policy", {"category_limit": limit, "within_policy": verdict.within_policy})
        await ctx.yield_output(
            f"policy check: {claim.category} limit {limit:.2f}, "
            + ("within policy" if verdict.within_policy else "over the limit")
        )
        await ctx.send_message(verdict)


class ManagerApproval(Executor):
    """Asks the manager when the amount needs one; otherwise approves by policy."""

    @handler
    async def ask(self, verdict: PolicyVerdict, ctx: WorkflowContext[Never, ReviewOutcome]) -> None:
        if not verdict.needs_manager:
            await ctx.yield_output(
                ReviewOutcome(
                    verdict.employee, verdict.amount, verdict.within_policy, "policy", "small claim"
                )
            )
            return
        ctx.set_state("asked", {"employee": verdict.employee, "amount": verdict.amount})
        await ctx.request_info(
            ManagerQuestion(
                employee=verdict.employee,
                amount=verdict.amount,
                category=verdict.category,
                within_policy=verdict.within_policy,
                question=f"Approve {verdict.employee}'s {verdict.category} claim of "
                f"{verdict.amount:.2f}?",
            ),
            ManagerDecision,
        )

    @response_handler
    async def decided(
        self,
        question: ManagerQuestion,
        decision: ManagerDecision,
        ctx: WorkflowContext[Never, ReviewOutcome],
    ) -> None:
        ctx.delete_state("asked")
        await ctx.yield_output(
            ReviewOutcome(
                question.employee, question.amount, decision.approved, "manager", decision.note
            )
        )


def build_manager_review() -> Workflow:
    """The inner workflow: a policy check, then the manager's approval when needed."""
    check, approval = PolicyCheck(id="policy-check"), ManagerApproval(id="manager-approval")
    return (
        WorkflowBuilder(
            start_executor=check,
            name="manager-review",
            description="Checks a claim against the policy and asks a manager to approve it.",
            output_from=[approval],
            intermediate_output_from=[check],
        )
        .add_edge(check, approval)
        .build()
    )


class Payout(Executor):
    @handler
    async def pay(self, outcome: ReviewOutcome, ctx: WorkflowContext[None, dict[str, Any]]) -> None:
        claim = ctx.get_state("claim") or {}
        await ctx.yield_output(
            {
                "employee": outcome.employee,
                "amount": outcome.amount,
                "paid": outcome.amount if outcome.approved else 0.0,
                "status": "paid" if outcome.approved else "rejected",
                "reviewed_by": outcome.reviewed_by,
                "note": outcome.note,
                "claimed": claim.get("amount"),
            }
        )


def build_expense_claim(checkpoint_storage: CheckpointStorage | None = None) -> Workflow:
    intake = ClaimIntake(id="intake")
    # A fresh inner workflow per build: the wrapper keeps its child's run in that instance.
    review = WorkflowExecutor(build_manager_review(), id="manager-review", propagate_request=True)
    payout = Payout(id="payout")
    return (
        WorkflowBuilder(
            start_executor=intake,
            name="expense-claim",
            description="An expense claim whose manager review is a sub-workflow asking for "
            "approval.",
            checkpoint_storage=checkpoint_storage,
            output_from=[payout],
            intermediate_output_from=[intake],
        )
        .add_edge(intake, review)
        .add_edge(review, payout)
        .build()
    )
