"""Port of MAF's ``samples/03-workflows/checkpoint/workflow_as_agent_checkpoint.py``.

Sequential workflows run as agents with ``run(checkpoint_storage=...)``: a two-agent run whose
checkpoints are then listed; two turns of one session (history in the session, workflow state
in the checkpoints); and a streamed run with checkpoints. The Foundry client is one
``LocalChatClient`` per agent (so each answers under its own name).
"""

import asyncio

from agent_framework import Agent, InMemoryHistoryProvider

from workflows import InMemoryCheckpointStorage
from workflows.agents.local_chat import LocalChatClient
from workflows.orchestrations import SequentialBuilder


async def basic_checkpointing() -> None:
    """Checkpoints written by one workflow-agent call."""
    print("=" * 60)
    print("Basic Checkpointing with Workflow as Agent")
    print("=" * 60)

    assistant = Agent(
        client=LocalChatClient(name="assistant-model"),
        name="assistant",
        instructions="You are a helpful assistant. Keep responses brief.",
    )

    reviewer = Agent(
        client=LocalChatClient(name="reviewer-model"),
        name="reviewer",
        instructions=(
            "You are a reviewer. Provide a one-sentence summary of the assistant's response."
        ),
    )

    workflow = SequentialBuilder(participants=[assistant, reviewer]).build()
    agent = workflow.as_agent()

    checkpoint_storage = InMemoryCheckpointStorage()

    query = "What are the benefits of renewable energy?"
    print(f"\nUser: {query}")

    response = await agent.run(query, checkpoint_storage=checkpoint_storage)

    for msg in response.messages:
        speaker = msg.author_name or msg.role
        print(f"[{speaker}]: {msg.text}")

    checkpoints = await checkpoint_storage.list_checkpoints(workflow_name=workflow.name)
    print(f"\nCheckpoints created: {len(checkpoints)}")
    for i, cp in enumerate(checkpoints[:5], 1):
        print(f"  {i}. {cp.checkpoint_id}")


async def checkpointing_with_thread() -> None:
    """A session's history and the workflow's checkpoints, side by side over two turns."""
    print("\n" + "=" * 60)
    print("Checkpointing with Thread Conversation History")
    print("=" * 60)

    assistant = Agent(
        client=LocalChatClient(name="memory-model"),
        name="memory_assistant",
        instructions=(
            "You are a helpful assistant with good memory. Reference previous conversation "
            "when relevant."
        ),
    )

    workflow = SequentialBuilder(participants=[assistant]).build()
    agent = workflow.as_agent()

    session = agent.create_session()
    checkpoint_storage = InMemoryCheckpointStorage()

    query1 = "My favorite color is blue. Remember that."
    print(f"\n[Turn 1] User: {query1}")
    response1 = await agent.run(query1, session=session, checkpoint_storage=checkpoint_storage)
    if response1.messages:
        print(f"[assistant]: {response1.messages[0].text}")

    query2 = "What's my favorite color?"
    print(f"\n[Turn 2] User: {query2}")
    response2 = await agent.run(query2, session=session, checkpoint_storage=checkpoint_storage)
    if response2.messages:
        print(f"[assistant]: {response2.messages[0].text}")

    checkpoints = await checkpoint_storage.list_checkpoints(workflow_name=workflow.name)
    print(f"\nTotal checkpoints across both turns: {len(checkpoints)}")

    memory_state = session.state.get(InMemoryHistoryProvider.DEFAULT_SOURCE_ID, {})
    history = memory_state.get("messages", [])
    print(f"Messages in session history: {len(history)}")


async def streaming_with_checkpoints() -> None:
    """Checkpoints written by a streamed workflow-agent call."""
    print("\n" + "=" * 60)
    print("Streaming with Checkpointing")
    print("=" * 60)

    assistant = Agent(
        client=LocalChatClient(name="streaming-model"),
        name="streaming_assistant",
        instructions="You are a helpful assistant.",
    )

    workflow = SequentialBuilder(participants=[assistant]).build()
    agent = workflow.as_agent()

    checkpoint_storage = InMemoryCheckpointStorage()

    query = "List three interesting facts about the ocean."
    print(f"\nUser: {query}")
    print("[assistant]: ", end="", flush=True)

    async for update in agent.run(query, checkpoint_storage=checkpoint_storage, stream=True):
        if update.text:
            print(update.text, end="", flush=True)

    print()

    checkpoints = await checkpoint_storage.list_checkpoints(workflow_name=workflow.name)
    print(f"\nCheckpoints created during stream: {len(checkpoints)}")


async def main() -> None:
    """Run all checkpoint examples."""
    await basic_checkpointing()
    await checkpointing_with_thread()
    await streaming_with_checkpoints()


if __name__ == "__main__":
    asyncio.run(main())
