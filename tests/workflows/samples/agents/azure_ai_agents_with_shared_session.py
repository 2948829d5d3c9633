"""Port of MAF's ``samples/03-workflows/agents/azure_ai_agents_with_shared_session.py``.

A writer agent and a reviewer agent run in one shared ``AgentSession`` (both executors are
given it), each agent keeping its history with an ``InMemoryHistoryProvider`` of the same
source id, so the reviewer reads the writer's turn from the session. Between them a function
executor sends an empty ``AgentExecutorRequest`` so that the writer's answer is not added to
the session a second time. ``run(client_kwargs={"store": False})`` reaches the chat client.

The sample (at MAF's HEAD) uses a ``FoundryChatClient``, a chat model whose history lives in
the local session, not on the service, so the port replaces it with a ``LocalChatClient``
(one per agent, so each answers under its own name).
"""

import asyncio

from agent_framework import Agent, InMemoryHistoryProvider

from workflows import (
    AgentExecutor,
    AgentExecutorRequest,
    AgentExecutorResponse,
    WorkflowBuilder,
    WorkflowContext,
    WorkflowRunState,
    executor,
)
from workflows.agents.local_chat import LocalChatClient


@executor(id="intercept_agent_response")
async def intercept_agent_response(
    agent_response: AgentExecutorResponse, ctx: WorkflowContext[AgentExecutorRequest]
) -> None:
    """Ask the next agent to answer without new messages: the shared session has them."""
    await ctx.send_message(AgentExecutorRequest(messages=[]))


async def main() -> None:
    writer = Agent(
        client=LocalChatClient(name="writer-model"),
        instructions=(
            "You are a concise copywriter. Provide a single, punchy marketing sentence based on "
            "the prompt."
        ),
        name="writer",
        context_providers=[InMemoryHistoryProvider()],
    )

    reviewer = Agent(
        client=LocalChatClient(name="reviewer-model"),
        instructions=(
            "You are a thoughtful reviewer. Give brief feedback on the previous assistant message."
        ),
        name="reviewer",
        context_providers=[InMemoryHistoryProvider()],
    )

    shared_session = writer.create_session()
    writer_executor = AgentExecutor(writer, session=shared_session)
    reviewer_executor = AgentExecutor(reviewer, session=shared_session)

    workflow = (
        WorkflowBuilder(start_executor=writer_executor)
        .add_chain([writer_executor, intercept_agent_response, reviewer_executor])
        .build()
    )

    result = await workflow.run(
        "Write a tagline for a budget-friendly eBike.",
        client_kwargs={"store": False},
    )

    assert result.get_final_state() == WorkflowRunState.IDLE

    print("=== Shared Session Conversation ===")
    memory_state = shared_session.state.get(InMemoryHistoryProvider.DEFAULT_SOURCE_ID, {})
    for message in memory_state.get("messages", []):
        print(f"{message.author_name or message.role}: {message.text}")


if __name__ == "__main__":
    asyncio.run(main())
