"""Port of MAF's ``samples/03-workflows/orchestrations/concurrent_custom_agent_executors.py``:
three custom executors, each owning its agent, take the dispatcher's ``AgentExecutorRequest``
and send an ``AgentExecutorResponse``, so ``ConcurrentBuilder``'s default aggregator combines
them.

Each executor's agent gets its own ``LocalChatClient`` in place of the shared Foundry client (the
executors take a client factory instead of a client). The sample prints ``outputs[0]`` as if it
were a list of messages; in MAF 1.23 the default aggregator's output is an ``AgentResponse``, so
the port iterates its ``messages``."""

import asyncio
from collections.abc import Callable
from typing import Any

from agent_framework import Agent, Message

from workflows import (
    AgentExecutorRequest,
    AgentExecutorResponse,
    Executor,
    WorkflowContext,
    handler,
)
from workflows.agents.local_chat import LocalChatClient
from workflows.orchestrations import ConcurrentBuilder

ClientFactory = Callable[[str], LocalChatClient]


class ResearcherExec(Executor):
    agent: Agent

    def __init__(self, client: ClientFactory, id: str = "researcher"):
        self.agent = Agent(
            client=client(id),
            instructions=(
                "You're an expert market and product researcher. Given a prompt, provide "
                "concise, factual insights, opportunities, and risks."
            ),
            name=id,
        )
        super().__init__(id=id)

    @handler
    async def run(
        self, request: AgentExecutorRequest, ctx: WorkflowContext[AgentExecutorResponse]
    ) -> None:
        response = await self.agent.run(request.messages)
        full_conversation = list(request.messages) + list(response.messages)
        await ctx.send_message(
            AgentExecutorResponse(self.id, response, full_conversation=full_conversation)
        )


class MarketerExec(Executor):
    agent: Agent

    def __init__(self, client: ClientFactory, id: str = "marketer"):
        self.agent = Agent(
            client=client(id),
            instructions=(
                "You're a creative marketing strategist. Craft compelling value propositions and "
                "target messaging aligned to the prompt."
            ),
            name=id,
        )
        super().__init__(id=id)

    @handler
    async def run(
        self, request: AgentExecutorRequest, ctx: WorkflowContext[AgentExecutorResponse]
    ) -> None:
        response = await self.agent.run(request.messages)
        full_conversation = list(request.messages) + list(response.messages)
        await ctx.send_message(
            AgentExecutorResponse(self.id, response, full_conversation=full_conversation)
        )


class LegalExec(Executor):
    agent: Agent

    def __init__(self, client: ClientFactory, id: str = "legal"):
        self.agent = Agent(
            client=client(id),
            instructions=(
                "You're a cautious legal/compliance reviewer. Highlight constraints, "
                "disclaimers, and policy concerns based on the prompt."
            ),
            name=id,
        )
        super().__init__(id=id)

    @handler
    async def run(
        self, request: AgentExecutorRequest, ctx: WorkflowContext[AgentExecutorResponse]
    ) -> None:
        response = await self.agent.run(request.messages)
        full_conversation = list(request.messages) + list(response.messages)
        await ctx.send_message(
            AgentExecutorResponse(self.id, response, full_conversation=full_conversation)
        )


def client(agent_name: str) -> LocalChatClient:
    return LocalChatClient(name=f"{agent_name}-model")


async def main() -> None:
    researcher = ResearcherExec(client)
    marketer = MarketerExec(client)
    legal = LegalExec(client)

    workflow = ConcurrentBuilder(participants=[researcher, marketer, legal]).build()

    events = await workflow.run(
        "We are launching a new budget-friendly electric bike for urban commuters."
    )
    outputs = events.get_outputs()

    if outputs:
        print("===== Final Aggregated Conversation (messages) =====")
        messages: list[Message] | Any = outputs[0].messages  # the aggregated AgentResponse
        for i, msg in enumerate(messages, start=1):
            name = msg.author_name if msg.author_name else "user"
            print(f"{'-' * 60}\n\n{i:02d} [{name}]:\n{msg.text}")


if __name__ == "__main__":
    asyncio.run(main())
