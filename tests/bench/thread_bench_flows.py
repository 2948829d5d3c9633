"""The workflow ``thread_bench.py`` runs (``SUPERSTEP_WORKFLOWS``): an agent handed a long
conversation, which it reads and answers, so that its checkpointed state holds ``messages``
messages, as an agent's does after a long day with a customer."""

from __future__ import annotations

from typing import Annotated, Any

from agent_framework import Agent, Message
from pydantic import Field

from workflows import (
    AgentExecutor,
    AgentExecutorRequest,
    CheckpointStorage,
    Workflow,
    WorkflowBuilder,
    WorkflowContext,
    executor,
)
from workflows.agents.local_chat import LocalChatClient


@executor(id="history")
async def history(
    messages: Annotated[int, Field(ge=1, le=20_000)], ctx: WorkflowContext[AgentExecutorRequest]
) -> None:
    """A customer and an assistant taking turns, ``messages`` messages in all."""
    said = [
        Message(
            role="user" if n % 2 == 0 else "assistant",
            contents=[f"turn {n}: " + "words of a long and patient conversation " * 3],
            author_name=None if n % 2 == 0 else "support",
        )
        for n in range(messages - 1)
    ]
    said.append(Message(role="user", contents=["So, where is my order A-17?"]))
    await ctx.send_message(AgentExecutorRequest(messages=said, should_respond=True))


def build(checkpoint_storage: CheckpointStorage | None = None) -> Workflow:
    agent: Agent[Any] = Agent(client=LocalChatClient(name="bench-local"), name="support")
    built: Workflow = (
        WorkflowBuilder(start_executor=history, checkpoint_storage=checkpoint_storage)
        .add_edge(history, AgentExecutor(agent, id="support"))
        .build()
    )
    return built


WORKFLOWS = {"bench-long-thread": build}
