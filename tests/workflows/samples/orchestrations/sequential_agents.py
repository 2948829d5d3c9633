"""Port of MAF's ``samples/03-workflows/orchestrations/sequential_agents.py``: a writer then a
reviewer in a ``SequentialBuilder`` chain over one shared conversation, ``output_from="all"`` so
both answers are outputs; the prompt and both answers are printed as one conversation.

Each agent has its own ``LocalChatClient`` in place of the shared Foundry client."""

import asyncio
from typing import cast

from agent_framework import Agent, AgentResponse, Message

from workflows.agents.local_chat import LocalChatClient
from workflows.orchestrations import SequentialBuilder


async def main() -> None:
    # 1) Create agents
    writer = Agent(
        client=LocalChatClient(name="writer-model"),
        instructions=(
            "You are a concise copywriter. Provide a single, punchy marketing sentence based on "
            "the prompt."
        ),
        name="writer",
    )

    reviewer = Agent(
        client=LocalChatClient(name="reviewer-model"),
        instructions=(
            "You are a thoughtful reviewer. Give brief feedback on the previous assistant message."
        ),
        name="reviewer",
    )

    # 2) Build sequential workflow: writer -> reviewer
    workflow = SequentialBuilder(participants=[writer, reviewer], output_from="all").build()

    # 3) Run and collect outputs
    prompt = "Write a tagline for a budget-friendly eBike."
    result = await workflow.run(prompt)
    conversation = [Message(role="user", contents=[prompt])]
    for output in result.get_outputs():
        response = cast(AgentResponse, output)
        conversation.extend(response.messages)

    if conversation:
        print("===== Final Conversation =====")
        for i, msg in enumerate(conversation, start=1):
            name = msg.author_name or ("assistant" if msg.role == "assistant" else "user")
            print(f"{'-' * 60}\n{i:02d} [{name}]\n{msg.text}")


if __name__ == "__main__":
    asyncio.run(main())
