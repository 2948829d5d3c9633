"""Port of MAF's ``samples/03-workflows/agents/concurrent_workflow_as_agent.py``: a researcher,
a marketer and a legal reviewer in a ``ConcurrentBuilder`` workflow run through
``workflow.as_agent()``; the response's messages (one per participant, from the default
aggregator) are printed under their authors.

Each agent has its own ``LocalChatClient`` in place of the shared Foundry client."""

import asyncio

from agent_framework import Agent

from workflows.agents.local_chat import LocalChatClient
from workflows.orchestrations import ConcurrentBuilder


async def main() -> None:
    # 1) Create three domain agents
    researcher = Agent(
        client=LocalChatClient(name="researcher-model"),
        instructions=(
            "You're an expert market and product researcher. Given a prompt, provide concise, "
            "factual insights, opportunities, and risks."
        ),
        name="researcher",
    )

    marketer = Agent(
        client=LocalChatClient(name="marketer-model"),
        instructions=(
            "You're a creative marketing strategist. Craft compelling value propositions and "
            "target messaging aligned to the prompt."
        ),
        name="marketer",
    )

    legal = Agent(
        client=LocalChatClient(name="legal-model"),
        instructions=(
            "You're a cautious legal/compliance reviewer. Highlight constraints, disclaimers, and "
            "policy concerns based on the prompt."
        ),
        name="legal",
    )

    # 2) Build a concurrent workflow
    workflow = ConcurrentBuilder(participants=[researcher, marketer, legal]).build()

    # 3) Expose the concurrent workflow as an agent for easy reuse
    agent = workflow.as_agent()
    prompt = "We are launching a new budget-friendly electric bike for urban commuters."

    agent_response = await agent.run(prompt)
    print("===== Final Aggregated Response =====\n")
    for message in agent_response.messages:
        # The agent_response contains messages from all participants concatenated
        # into a single message.
        print(f"{message.author_name}: {message.text}\n")


if __name__ == "__main__":
    asyncio.run(main())
