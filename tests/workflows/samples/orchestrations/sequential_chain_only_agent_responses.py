"""Port of MAF's ``samples/03-workflows/orchestrations/sequential_chain_only_agent_responses.py``:
writer -> translator -> reviewer with ``chain_only_agent_responses=True``, so each agent sees only
the previous agent's answer; the writer and translator are intermediate outputs and the run is
streamed, each update printed under its author.

The Foundry client is replaced by one ``ScriptedChatClient`` per agent whose replies say what the
agent was given (how many messages, and the last one), which makes the chaining visible."""

import asyncio
from collections.abc import Mapping
from typing import Any

from agent_framework import Agent, AgentResponseUpdate, Message

from workflows.agents.local_chat import ScriptedChatClient
from workflows.orchestrations import SequentialBuilder


def _reply(prefix: str):
    def reply(messages: list[Message], options: Mapping[str, Any]) -> str:
        conversation = [m for m in messages if m.role != "system"]
        return f"{prefix} ({len(conversation)} message seen): {conversation[-1].text}"

    return reply


async def main() -> None:
    # 1) Create agents
    writer = Agent(
        client=ScriptedChatClient(["Ride more, spend less: the eBike for every budget."]),
        instructions=(
            "You are a concise copywriter. Provide a single, punchy marketing sentence based on "
            "the prompt."
        ),
        name="writer",
    )

    translator = Agent(
        client=ScriptedChatClient([_reply("FR")]),
        instructions=(
            "You are a translator. Translate the given text into French. Output only the "
            "translation."
        ),
        name="translator",
    )

    reviewer = Agent(
        client=ScriptedChatClient([_reply("Review")]),
        instructions="You are a reviewer. Evaluate the quality of the marketing tagline.",
        name="reviewer",
    )

    # 2) Build sequential workflow: writer -> translator -> reviewer
    #    chain_only_agent_responses=True means each agent sees only the previous agent's reply,
    #    not the full conversation history.
    workflow = SequentialBuilder(
        participants=[writer, translator, reviewer],
        chain_only_agent_responses=True,
        intermediate_output_from=[writer, translator],
    ).build()

    # 3) Run and collect outputs
    last_agent: str | None = None
    async for event in workflow.run("Write a tagline for a budget-friendly eBike.", stream=True):
        if event.type in ("intermediate", "output") and isinstance(event.data, AgentResponseUpdate):
            if event.data.author_name != last_agent:
                last_agent = event.data.author_name
                print()
                print(f"{last_agent}: ", end="", flush=True)
            print(event.data.text, end="", flush=True)


if __name__ == "__main__":
    asyncio.run(main())
