"""Port of MAF's ``samples/03-workflows/functional/naive_group_chat.py``: a round-robin group
chat as a plain loop in a ``@workflow`` function; each agent sees the whole conversation so far
(a ``list[Message]``) and adds its answer to it.

Adapted to MAF 1.23: ``group_chat.run(...)`` is ``group_chat.build().run(...)``. The Foundry
client is replaced by a scripted one per agent.
"""

import asyncio

from agent_framework import Agent, Message

from workflows import workflow
from workflows.agents.local_chat import ScriptedChatClient

# ---------------------------------------------------------------------------
# Create agents
# ---------------------------------------------------------------------------

expert = Agent(
    name="PythonExpert",
    instructions=(
        "You are a Python expert in a group discussion. "
        "Answer questions about Python and refine your answer based on feedback. "
        "Keep responses concise (2-3 sentences)."
    ),
    client=ScriptedChatClient(
        [
            (
                "A list is mutable and a tuple is immutable. Tuples can be dictionary keys and "
                "are slightly cheaper to create."
            )
        ],
        name="expert-model",
    ),
)

critic = Agent(
    name="Critic",
    instructions=(
        "You are a constructive critic in a group discussion. "
        "Point out edge cases, gotchas, or missing nuances in the previous answer. "
        "If the answer is solid, say so briefly."
    ),
    client=ScriptedChatClient(
        [
            (
                "Solid, but a tuple is hashable only when all of its items are: (1, [2]) "
                "cannot be a key."
            )
        ],
        name="critic-model",
    ),
)

summarizer = Agent(
    name="Summarizer",
    instructions=(
        "You are a summarizer in a group discussion. "
        "After the discussion, provide a final concise summary that incorporates "
        "the expert's answer and the critic's feedback. Keep it to 2-3 sentences."
    ),
    client=ScriptedChatClient(
        [
            (
                "Lists are mutable, tuples are not; a tuple can be a dictionary key only when "
                "everything inside it is hashable."
            )
        ],
        name="summarizer-model",
    ),
)

# ---------------------------------------------------------------------------
# A naive group chat is just a loop
# ---------------------------------------------------------------------------


@workflow
async def group_chat(question: str) -> str:
    """Round-robin group chat: expert answers, critic reviews, summarizer wraps up."""
    participants = [expert, critic, summarizer]
    # A list[Message] keeps roles and authors between turns.
    conversation: list[Message] = [Message("user", [question])]

    # Each agent sees the whole conversation so far.
    for agent in participants:
        response = await agent.run(conversation)
        conversation.extend(response.messages)

    return "\n\n".join(f"{m.author_name or m.role}: {m.text}" for m in conversation)


async def main():
    result = await group_chat.build().run(
        "What's the difference between a list and a tuple in Python?"
    )
    print(result.get_outputs()[0])


if __name__ == "__main__":
    asyncio.run(main())
