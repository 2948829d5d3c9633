"""The demo's functional workflow: an order pipeline written as a plain async function.

``@step`` calls are durable: each result is saved when the step returns, so a resumed run (after
the approver answers in the inbox, or after a worker crash) gets the saved results back without
calling the steps again. The packing step is slow enough (``work_ms``) to watch on the run page.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass

from workflows import (
    CheckpointStorage,
    FunctionalWorkflow,
    RunContext,
    register_type,
    step,
    workflow,
)

__all__ = [
    "OrderDecision",
    "OrderQuestion",
    "OrderRequest",
    "build_order_pipeline",
]


@dataclass
class OrderRequest:
    """A customer's order; orders above ``approval_limit`` wait for an approver."""

    customer: str = "Ada"
    sku: str = "lamp-42"
    quantity: int = 3
    unit_price: float = 45.0
    approval_limit: float = 100.0
    work_ms: int = 1500


# A functional workflow names its requests' types where it calls ``ctx.request_info``, which a
# web process deciding an answer never runs: registered here, they are known to every process.
@register_type
@dataclass
class OrderQuestion:
    """What the approver is asked in the inbox."""

    customer: str
    total: float
    question: str


@register_type
@dataclass
class OrderDecision:
    """The approver's answer."""

    approved: bool
    note: str = ""


@step
async def price_order(order: OrderRequest) -> float:
    """The order's total."""
    return round(order.quantity * order.unit_price, 2)


@step
async def reserve_stock(sku: str, quantity: int) -> str:
    """A reservation number for the items."""
    return f"res-{sku}-{quantity}"


@step
async def pack_order(reservation: str, work_ms: int) -> str:
    """The slow step: packing takes ``work_ms``."""
    if work_ms > 0:
        await asyncio.sleep(min(work_ms, 10_000) / 1000)
    return f"parcel for {reservation}"


@step
async def ship_order(parcel: str, customer: str) -> dict[str, str]:
    """The shipment handed to the carrier."""
    return {"parcel": parcel, "customer": customer, "status": "shipped"}


@workflow(
    name="order-pipeline",
    description="An order priced, approved when large, packed and shipped, written as @step calls.",
)
async def order_pipeline(order: OrderRequest, ctx: RunContext) -> dict[str, str]:
    total = await price_order(order)
    if total > order.approval_limit:
        decision = await ctx.request_info(
            OrderQuestion(
                customer=order.customer,
                total=total,
                question=f"Approve {order.customer}'s order of {total:.2f}?",
            ),
            response_type=OrderDecision,
        )
        if not decision.approved:
            return {"customer": order.customer, "status": "rejected", "note": decision.note}
    reservation = await reserve_stock(order.sku, order.quantity)
    parcel = await pack_order(reservation, order.work_ms)
    return await ship_order(parcel, order.customer)


def build_order_pipeline(checkpoint_storage: CheckpointStorage | None = None) -> FunctionalWorkflow:
    return order_pipeline.build(checkpoint_storage=checkpoint_storage)
