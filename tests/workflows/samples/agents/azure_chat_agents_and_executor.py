"""Port of MAF's ``samples/03-workflows/agents/azure_chat_agents_and_executor.py``.

A research agent drafts, a function executor (``@executor``) reads the draft's
``AgentExecutorResponse`` and sends an ``AgentExecutorRequest`` carrying the whole conversation
plus an "external note" as a new user turn, and a final editor agent answers it. The run is
streamed and every agent update is printed under its author. The Foundry client is a
``LocalChatClient`` per agent.
"""

import asyncio
from typing import Final

from agent_framework import Agent, AgentResponseUpdate, Message

from workflows import (
    AgentExecutorRequest,
    AgentExecutorResponse,
    WorkflowBuilder,
    WorkflowContext,
    executor,
)
from workflows.agents.local_chat import LocalChatClient

# Simulated external content keyed by a simple topic hint.
EXTERNAL_REFERENCES: Final[dict[str, str]] = {
    "workspace": (
        "From Workspace Weekly: Adjustable monitor arms and sit-stand desks can reduce "
        "neck strain by up to 30%. Consider adding a reminder to move every 45 minutes."
    ),
    "travel": (
        "Checklist excerpt: Always confirm baggage limits for budget airlines. "
        "Keep a photocopy of your passport stored separately from the original."
    ),
    "wellness": (
        "Recent survey: Employees who take two 5-minute breaks per hour report 18% higher focus "
        "scores. Encourage scheduling micro-breaks alongside hydration reminders."
    ),
}


def _lookup_external_note(prompt: str) -> str | None:
    """Return the first matching external note based on a keyword search."""
    lowered = prompt.lower()
    for keyword, note in EXTERNAL_REFERENCES.items():
        if keyword in lowered:
            return note
    return None


@executor(id="enrich_with_references")
async def enrich_with_references(
    draft: AgentExecutorResponse,
    ctx: WorkflowContext[AgentExecutorRequest],
) -> None:
    """Add a follow-up user turn holding an external note, for the next agent."""
    conversation = list(draft.full_conversation or draft.agent_response.messages)
    original_prompt = next((message.text for message in conversation if message.role == "user"), "")
    external_note = _lookup_external_note(original_prompt) or (
        "No additional references were found. Please refine the previous assistant response for "
        "clarity."
    )

    follow_up = (
        "External knowledge snippet:\n"
        f"{external_note}\n\n"
        "Please update the prior assistant answer so it weaves this note into the guidance."
    )
    conversation.append(Message("user", [follow_up]))
    await ctx.send_message(AgentExecutorRequest(messages=conversation))


async def main() -> None:
    research_agent = Agent(
        client=LocalChatClient(name="research-model"),
        name="research_agent",
        instructions=(
            "Produce a short, bullet-style briefing with two actionable ideas. Label the section "
            "as 'Initial Draft'."
        ),
    )

    final_editor_agent = Agent(
        client=LocalChatClient(name="editor-model"),
        name="final_editor_agent",
        instructions=(
            "Use all conversation context (including external notes) to produce the final "
            "answer. Merge the draft and extra note into a concise recommendation under 150 words."
        ),
    )

    workflow = (
        WorkflowBuilder(start_executor=research_agent)
        .add_edge(research_agent, enrich_with_references)
        .add_edge(enrich_with_references, final_editor_agent)
        .build()
    )

    events = workflow.run(
        "Create quick workspace wellness tips for a remote analyst working across two monitors.",
        stream=True,
    )

    last_author: str | None = None
    async for event in events:
        if event.type == "output" and isinstance(event.data, AgentResponseUpdate):
            update = event.data
            author = update.author_name
            if author != last_author:
                if last_author is not None:
                    print("\n")
                print(f"{author}: {update.text}", end="", flush=True)
                last_author = author
            else:
                print(update.text, end="", flush=True)


if __name__ == "__main__":
    asyncio.run(main())
