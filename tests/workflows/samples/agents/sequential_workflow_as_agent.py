"""Port of MAF's ``samples/03-workflows/agents/sequential_workflow_as_agent.py``: a writer ->
reviewer ``SequentialBuilder`` workflow run through ``workflow.as_agent()``; the agent's response
holds only the last agent's answer, which is printed.

Each agent has its own ``LocalChatClient`` in place of the shared Foundry client."""

import asyncio

from agent_framework import Agent

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
    workflow = SequentialBuilder(participants=[writer, reviewer]).build()

    # 3) Treat the workflow itself as an agent for follow-up invocations
    agent = workflow.as_agent()
    prompt = "Write a tagline for a budget-friendly eBike."
    agent_response = await agent.run(prompt)

    if agent_response.messages:
        print("\n===== Conversation =====")
        for i, msg in enumerate(agent_response.messages, start=1):
            name = msg.author_name or msg.role
            print(f"{'-' * 60}\n{i:02d} [{name}]\n{msg.text}")


if __name__ == "__main__":
    asyncio.run(main())
