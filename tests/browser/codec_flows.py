"""A deployment's workflow module (``SUPERSTEP_WORKFLOWS=tests.browser.codec_flows``) whose
checkpoints hold a dataclass and a pydantic model in flight, then a pydantic request waiting
for a decision: what the checkpoint pages must show by class name, never by the codec's tags.
Not a test module."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Never

from pydantic import BaseModel

from workflows import Executor, WorkflowBuilder, WorkflowContext, handler, response_handler


@dataclass
class Shipment:
    order: str = "ORD-CODEC"


@dataclass
class Crate:
    order: str
    items: list[str] = field(default_factory=list)
    fragile: bool | None = None


class ShippingLabel(BaseModel):
    order: str
    express: bool = False


class PackingQuestion(BaseModel):
    order: str
    question: str


@dataclass
class PackingAnswer:
    approved: bool = True


class Dispatch(Executor):
    @handler
    async def dispatch(
        self, shipment: Shipment, ctx: WorkflowContext[Crate | ShippingLabel]
    ) -> None:
        await ctx.send_message(Crate(shipment.order, ["kettle", "lid"]))
        await ctx.send_message(ShippingLabel(order=shipment.order, express=True))


class Packer(Executor):
    @handler
    async def pack(self, crate: Crate, ctx: WorkflowContext[Never, str]) -> None:
        question = PackingQuestion(order=crate.order, question=f"Pack {crate.order}?")
        await ctx.request_info(question, PackingAnswer)

    @handler
    async def label(self, label: ShippingLabel, ctx: WorkflowContext[Never, str]) -> None:
        ctx.set_state("express", label.express)

    @response_handler
    async def answered(
        self, request: PackingQuestion, answer: PackingAnswer, ctx: WorkflowContext[Never, str]
    ) -> None:
        await ctx.yield_output(f"{request.order} {'packed' if answer.approved else 'held'}")


def parcels(checkpoint_storage: object = None) -> object:
    dispatch, packer = Dispatch(id="dispatch"), Packer(id="packer")
    return (
        WorkflowBuilder(
            start_executor=dispatch,
            name="parcels",
            description="A dataclass and a pydantic message, then a pydantic request.",
            checkpoint_storage=checkpoint_storage,  # type: ignore[arg-type]
        )
        .add_edge(dispatch, packer)
        .build()
    )


WORKFLOWS = {"parcels": parcels}
