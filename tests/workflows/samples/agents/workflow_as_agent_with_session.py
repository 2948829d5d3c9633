"""Port of MAF's ``samples/03-workflows/agents/workflow_as_agent_with_session.py``.

A sequential workflow (assistant, then summarizer) run as an agent over three turns of one
``AgentSession``: each call's input is the session's history plus the new message, and the
session's in-memory history grows by each turn's input and answer. A second part serializes
a session with ``to_dict()`` and goes on with ``AgentSession.from_dict()``.

Changes: the Foundry client is one ``LocalChatClient`` per agent (so each answers under its own
name); the original runs its two parts one after the other under ``__main__``, the port's
``main()`` does the same, the first part renamed ``multi_turn_conversation``.
"""

import asyncio

from agent_framework import Agent, AgentSession, InMemoryHistoryProvider

from workflows.agents.local_chat import LocalChatClient
from workflows.orchestrations import SequentialBuilder


async def multi_turn_conversation() -> None:
    assistant = Agent(
        client=LocalChatClient(name="assistant-model"),
        name="assistant",
        instructions=(
            "You are a helpful assistant. Answer questions based on the conversation "
            "history. If the user asks about something mentioned earlier, reference it."
        ),
    )

    summarizer = Agent(
        client=LocalChatClient(name="summarizer-model"),
        name="summarizer",
        instructions=(
            "You are a summarizer. After the assistant responds, provide a brief "
            "one-sentence summary of the key point from the conversation so far."
        ),
    )

    workflow = SequentialBuilder(participants=[assistant, summarizer]).build()

    agent = workflow.as_agent()

    session = agent.create_session()

    print("=" * 60)
    print("Workflow as Agent with Session - Multi-turn Conversation")
    print("=" * 60)

    query1 = "My name is Alex and I'm learning about machine learning."
    print(f"\n[Turn 1] User: {query1}")

    response1 = await agent.run(query1, session=session)
    if response1.messages:
        for msg in response1.messages:
            speaker = msg.author_name or msg.role
            print(f"[{speaker}]: {msg.text}")

    query2 = "What was my name again, and what am I learning about?"
    print(f"\n[Turn 2] User: {query2}")

    response2 = await agent.run(query2, session=session)
    if response2.messages:
        for msg in response2.messages:
            speaker = msg.author_name or msg.role
            print(f"[{speaker}]: {msg.text}")

    query3 = "Can you suggest a good first project for me to try?"
    print(f"\n[Turn 3] User: {query3}")

    response3 = await agent.run(query3, session=session)
    if response3.messages:
        for msg in response3.messages:
            speaker = msg.author_name or msg.role
            print(f"[{speaker}]: {msg.text}")

    print("\n" + "=" * 60)
    print("Full Session History")
    print("=" * 60)
    memory_state = session.state.get(InMemoryHistoryProvider.DEFAULT_SOURCE_ID, {})
    history = memory_state.get("messages", [])
    for i, msg in enumerate(history, start=1):
        role = msg.role if hasattr(msg.role, "value") else str(msg.role)
        speaker = msg.author_name or role
        text_preview = msg.text[:80] + "..." if len(msg.text) > 80 else msg.text
        print(f"{i:02d}. [{speaker}]: {text_preview}")


async def demonstrate_session_serialization() -> None:
    """Serialize a workflow agent's session and go on with the restored one."""
    memory_assistant = Agent(
        client=LocalChatClient(name="memory-model"),
        name="memory_assistant",
        instructions=(
            "You are a helpful assistant with good memory. Remember details from our conversation."
        ),
    )

    workflow = SequentialBuilder(participants=[memory_assistant]).build()
    agent = workflow.as_agent()

    session = agent.create_session()

    print("\n" + "=" * 60)
    print("Session Serialization Demo")
    print("=" * 60)

    query = "Remember this: the secret code is ALPHA-7."
    print(f"\n[Session 1] User: {query}")
    response = await agent.run(query, session=session)
    if response.messages:
        print(f"[assistant]: {response.messages[0].text}")

    serialized_state = session.to_dict()
    print("\n[Serialized session state for persistence]")

    restored_session = AgentSession.from_dict(serialized_state)

    query = "What was the secret code I told you?"
    print(f"\n[Session 2 - Restored] User: {query}")
    response = await agent.run(query, session=restored_session)
    if response.messages:
        print(f"[assistant]: {response.messages[0].text}")


async def main() -> None:
    await multi_turn_conversation()
    await demonstrate_session_serialization()


if __name__ == "__main__":
    asyncio.run(main())
