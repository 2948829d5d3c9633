"""Port of MAF's ``samples/03-workflows/orchestrations/concurrent_agents.py``: a researcher, a
marketer and a legal reviewer answer one prompt at once (``ConcurrentBuilder``); the default
aggregator yields one ``AgentResponse`` with each agent's answer, printed in participant order.

Each agent has its own ``LocalChatClient`` in place of the shared Foundry client."""

import asyncio

from agent_framework import Agent, AgentResponse

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
    # Participants are either Agents (type of SupportsAgentRun) or Executors
    workflow = ConcurrentBuilder(participants=[researcher, marketer, legal]).build()

    # 3) Run with a single prompt and pretty-print the final combined messages
    events = await workflow.run(
        "We are launching a new budget-friendly electric bike for urban commuters."
    )
    outputs = events.get_outputs()

    if outputs:
        print("===== Final Aggregated Conversation (messages) =====")
        for output in outputs:
            if not isinstance(output, AgentResponse):
                continue
            for i, msg in enumerate(output.messages, start=1):
                name = msg.author_name if msg.author_name else "user"
                print(f"{'-' * 60}\n\n{i:02d} [{name}]:\n{msg.text}")


if __name__ == "__main__":
    asyncio.run(main())
