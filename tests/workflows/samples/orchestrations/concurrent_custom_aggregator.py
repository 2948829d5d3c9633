"""Port of MAF's ``samples/03-workflows/orchestrations/concurrent_custom_aggregator.py``: three
agents answer at once and a custom async callback aggregator asks a chat client to consolidate
their answers; the string it returns is the workflow's output.

Each agent has its own ``LocalChatClient``; the aggregator calls another one directly (the
sample's shared Foundry client)."""

import asyncio
from typing import Any

from agent_framework import Agent, Message

from workflows.agents.local_chat import LocalChatClient
from workflows.orchestrations import ConcurrentBuilder


async def main() -> None:
    client = LocalChatClient(name="summary-model")

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

    # Define a custom aggregator callback that uses the chat client to summarize
    async def summarize_results(results: list[Any]) -> str:
        # Extract one final assistant message per agent
        expert_sections: list[str] = []
        for r in results:
            try:
                messages = getattr(r.agent_response, "messages", [])
                final_text = (
                    messages[-1].text
                    if messages and hasattr(messages[-1], "text")
                    else "(no content)"
                )
                expert_sections.append(f"{getattr(r, 'executor_id', 'expert')}:\n{final_text}")
            except Exception as e:  # noqa: BLE001 - the sample's own guard
                expert_sections.append(
                    f"{getattr(r, 'executor_id', 'expert')}: (error: {type(e).__name__}: {e})"
                )

        # Ask the model to synthesize a concise summary of the experts' outputs
        system_msg = Message(
            "system",
            contents=[
                (
                    "You are a helpful assistant that consolidates multiple domain expert outputs "
                    "into one cohesive, concise summary with clear takeaways. Keep it under 200 "
                    "words."
                )
            ],
        )
        user_msg = Message("user", contents=["\n\n".join(expert_sections)])

        response = await client.get_response([system_msg, user_msg])
        # Return the model's final assistant text as the completion result
        return response.messages[-1].text if response.messages else ""

    # Build with a custom aggregator callback function
    workflow = (
        ConcurrentBuilder(participants=[researcher, marketer, legal])
        .with_aggregator(summarize_results)
        .build()
    )

    events = await workflow.run(
        "We are launching a new budget-friendly electric bike for urban commuters."
    )
    outputs = events.get_outputs()

    if outputs:
        print("===== Final Consolidated Output =====")
        print(outputs[0])  # Get the first (and typically only) output


if __name__ == "__main__":
    asyncio.run(main())
