"""The demo's agent workflows: a research report, a support refund that needs a person, a
handoff triage and a Magentic team whose plan a person reviews, on a model that works offline.

By default every agent talks to ``LocalChatClient``, the engine's small deterministic model:
it streams its replies word by word (slowly enough to watch), reports token usage, calls the
tool that fits the conversation and needs no key or network. With
``SUPERSTEP_DEMO_MODEL=openai`` the same workflows use MAF's ``OpenAIChatClient``, which reads
``OPENAI_BASE_URL``, ``OPENAI_API_KEY`` and ``OPENAI_MODEL`` (any OpenAI-compatible endpoint;
``pip install agent-framework-openai``). Builders make fresh agents and clients each time, as
the catalog asks: any worker rebuilds the same graph.
"""

from __future__ import annotations

import os
from typing import Annotated, Any

from agent_framework import Agent, tool

from dashboard.catalog.tools import EDITABLE_ARGUMENTS
from workflows import CheckpointStorage, Workflow
from workflows.agents.local_chat import LocalChatClient
from workflows.orchestrations import HandoffBuilder, MagenticBuilder, SequentialBuilder

from .planner import ChecklistManager

__all__ = [
    "LOCAL_MODEL",
    "build_handoff_triage",
    "build_product_brief",
    "build_research_report",
    "build_support_refund",
    "demo_model",
]

# The name the local model reports, which the price table can price like any other.
LOCAL_MODEL = "superstep-local"
# Seconds per streamed word: a reply takes a second or two to write, as a real model's does.
_WORD_DELAY = float(os.environ.get("SUPERSTEP_DEMO_WORD_DELAY", "0.04"))


def demo_model() -> Any:
    """A chat client for one demo agent: the local model, or OpenAI's when configured."""
    chosen = os.environ.get("SUPERSTEP_DEMO_MODEL", "local").strip().lower()
    if chosen == "openai":
        try:
            from agent_framework.openai import OpenAIChatClient
        except ImportError as exc:
            raise RuntimeError(
                "SUPERSTEP_DEMO_MODEL=openai needs MAF's OpenAI client: "
                "pip install agent-framework-openai"
            ) from exc
        return OpenAIChatClient()
    if chosen != "local":
        raise RuntimeError(f"SUPERSTEP_DEMO_MODEL must be 'local' or 'openai', not {chosen!r}")
    return LocalChatClient(name=LOCAL_MODEL, delay=_WORD_DELAY)


def build_research_report(checkpoint_storage: CheckpointStorage | None = None) -> Workflow:
    """An overnight research report: a researcher gathers, a writer drafts, an editor polishes
    (MAF's sequential orchestration, each agent seeing the conversation so far)."""
    researcher = Agent(
        client=demo_model(),
        name="researcher",
        instructions="Gather the facts the report needs, as short notes.",
    )
    writer = Agent(
        client=demo_model(),
        name="writer",
        instructions="Write the report from the researcher's notes.",
    )
    editor = Agent(
        client=demo_model(),
        name="editor",
        instructions="Tighten the report and give it a title.",
    )
    built: Workflow = SequentialBuilder(
        participants=[researcher, writer, editor], checkpoint_storage=checkpoint_storage
    ).build()
    return built


# An approver may change the order or the amount before the refund is paid (the inbox shows
# the arguments as a form); the tool then runs with what they approved.
@tool(approval_mode="always_require", additional_properties={EDITABLE_ARGUMENTS: True})
def refund_order(
    order: Annotated[str, "the order id, such as A-17"],
    amount: Annotated[float, "the amount to refund, in euros"],
) -> str:
    """Refund an order. A person approves every refund before it is paid."""
    return f"refunded {amount:.2f} EUR on order {order}"


@tool
def order_status(order: Annotated[str, "the order id, such as A-17"]) -> str:
    """Look up where an order is and when it shipped."""
    return f"order {order} was delivered two days ago"


def build_support_refund(checkpoint_storage: CheckpointStorage | None = None) -> Workflow:
    """A support agent that may refund an order, but only once a person approved the call."""
    agent = Agent(
        client=demo_model(),
        name="support",
        instructions="Help the customer; refund broken orders with the refund tool.",
        tools=[refund_order, order_status],
    )
    built: Workflow = SequentialBuilder(
        participants=[agent], checkpoint_storage=checkpoint_storage
    ).build()
    return built


def build_handoff_triage(checkpoint_storage: CheckpointStorage | None = None) -> Workflow:
    """A triage agent hands the customer to billing or to technical support; the specialist
    answers, then the run waits for the customer's next message (MAF's handoff)."""
    triage = Agent(
        client=demo_model(),
        name="triage",
        require_per_service_call_history_persistence=True,
        description="Reads the customer's message and hands it to the right specialist.",
        instructions="Hand billing questions to billing, technical problems to technical.",
    )
    billing = Agent(
        client=demo_model(),
        name="billing",
        require_per_service_call_history_persistence=True,
        description="Billing: invoices, charges, payments and refunds.",
        instructions="Answer questions about invoices, charges and payments.",
    )
    technical = Agent(
        client=demo_model(),
        name="technical",
        require_per_service_call_history_persistence=True,
        description="Technical support: errors, crashes, login and setup problems.",
        instructions="Solve technical problems step by step.",
    )
    built: Workflow = (
        HandoffBuilder(
            name="handoff-triage",
            participants=[triage, billing, technical],
            checkpoint_storage=checkpoint_storage,
        )
        .with_start_agent(triage)
        .add_handoff(triage, [billing, technical])
        .add_handoff(billing, [triage])
        .add_handoff(technical, [triage])
        .build()
    )
    return built


def build_product_brief(checkpoint_storage: CheckpointStorage | None = None) -> Workflow:
    """A Magentic team writes a product brief: its manager plans one step per member, a person
    reviews the plan (and may reorder or drop steps), then each member takes its step."""
    members = [
        Agent(
            client=demo_model(),
            name=name,
            description=description,
            instructions=description,
        )
        for name, description in (
            ("analyst", "Lists what customers asked for and what competitors offer."),
            ("writer", "Writes the brief from the analyst's list."),
            ("reviewer", "Checks the brief against the task and says what is missing."),
        )
    ]
    built: Workflow = (
        MagenticBuilder(
            participants=members,
            manager=ChecklistManager(),
            checkpoint_storage=checkpoint_storage,
        )
        .with_plan_review()
        .build()
    )
    return built
