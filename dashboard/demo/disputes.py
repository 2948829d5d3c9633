"""A card dispute: a customer's contact details and card, masked on every page.

It shows both ways of declaring sensitive fields (``dashboard.access.masking``): the types
mark the customer's e-mail address, phone number, card digits and a refund's bank account
(``workflows.Sensitive``), so they are masked wherever those values travel; the registration
names by path the plain dicts that copy two of them: the contact the intake keeps in shared
state and the e-mail address the output repeats. Admins, and whoever holds the "Sensitive
data" role, reveal them one at a time.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated, Any, Never

from pydantic import Field

from workflows import (
    CheckpointStorage,
    Executor,
    Sensitive,
    Workflow,
    WorkflowBuilder,
    WorkflowContext,
    handler,
    response_handler,
)

__all__ = ["CARD_DISPUTE", "build_card_dispute"]


@dataclass
class Dispute:
    """A customer disputes a card payment."""

    customer: str = "Dana Whitfield"
    email: Annotated[str, Sensitive("e-mail address")] = "dana.whitfield@example.com"
    phone: Annotated[str, Sensitive("phone number")] = "+44 7700 900123"
    card_last4: Annotated[str, Sensitive("payment card")] = "4242"
    amount: float = 89.90
    merchant: str = "Northwind Travel"


@dataclass
class DisputeReview:
    """What the reviewer is asked: the dispute, with the customer's details."""

    customer: str
    email: Annotated[str, Sensitive("e-mail address")]
    card_last4: Annotated[str, Sensitive("payment card")]
    amount: float
    merchant: str
    question: str


@dataclass
class DisputeDecision:
    """Refund the customer or not; a refund goes to the account given."""

    approved: bool
    refund_iban: Annotated[
        str, Sensitive("bank account"), Field(max_length=34, description="Where the refund goes")
    ] = ""
    note: Annotated[str, Field(max_length=500)] = ""


class DisputeIntake(Executor):
    @handler
    async def intake(self, dispute: Dispute, ctx: WorkflowContext[Dispute]) -> None:
        if dispute.amount <= 0:
            raise ValueError("a disputed amount must be above zero")
        # Kept for the reviewer's call back; masked by the registration's path.
        ctx.set_state("contact", {"customer": dispute.customer, "phone": dispute.phone})
        await ctx.send_message(dispute)


class DisputeReviewer(Executor):
    @handler
    async def ask(self, dispute: Dispute, ctx: WorkflowContext[Never, dict[str, Any]]) -> None:
        await ctx.request_info(
            DisputeReview(
                customer=dispute.customer,
                email=dispute.email,
                card_last4=dispute.card_last4,
                amount=dispute.amount,
                merchant=dispute.merchant,
                question=f"Refund {dispute.customer} {dispute.amount:.2f} disputed at "
                f"{dispute.merchant}?",
            ),
            DisputeDecision,
        )

    @response_handler
    async def decided(
        self,
        review: DisputeReview,
        decision: DisputeDecision,
        ctx: WorkflowContext[Never, dict[str, Any]],
    ) -> None:
        await ctx.yield_output(
            {
                "customer": review.customer,
                "email": review.email,
                "refunded": review.amount if decision.approved else 0.0,
                "status": "refunded" if decision.approved else "declined",
                "note": decision.note,
            }
        )


def build_card_dispute(checkpoint_storage: CheckpointStorage | None = None) -> Workflow:
    intake, reviewer = DisputeIntake(id="intake"), DisputeReviewer(id="reviewer")
    return (
        WorkflowBuilder(
            start_executor=intake,
            name="card-dispute",
            description="A disputed card payment reviewed by a person; the customer's "
            "contact and card details are masked.",
            checkpoint_storage=checkpoint_storage,
            output_from=[reviewer],
        )
        .add_edge(intake, reviewer)
        .build()
    )


# The registration: the builder and the paths of what its types cannot mark.
CARD_DISPUTE = {
    "builder": build_card_dispute,
    "sensitive": ["$.state.contact.phone", "$.output.email"],
}
