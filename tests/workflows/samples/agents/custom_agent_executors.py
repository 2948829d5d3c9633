"""Port of MAF's ``samples/03-workflows/agents/custom_agent_executors.py``.

Two custom executors each own an agent: a Writer runs its agent on the incoming ``Message``
and sends the conversation on as a ``list[Message]``; a Reviewer runs its agent on that list
and yields the answer's text. The run is not streamed; the last output is printed.

The Foundry client is a ``LocalChatClient`` per agent (the agents have no names, so each
answers as "assistant").
"""

import asyncio

from agent_framework import Agent, Message

from workflows import Executor, WorkflowBuilder, WorkflowContext, handler
from workflows.agents.local_chat import LocalChatClient


class Writer(Executor):
    """Owns a content-writing agent; sends the conversation on after its answer."""

    agent: Agent

    def __init__(self, id: str = "writer"):
        self.agent = Agent(
            client=LocalChatClient(name="writer-model"),
            instructions=(
                "You are an excellent content writer. You create new content and edit contents "
                "based on the feedback."
            ),
        )
        super().__init__(id=id)

    @handler
    async def handle(self, message: Message, ctx: WorkflowContext[list[Message], str]) -> None:
        messages: list[Message] = [message]
        response = await self.agent.run(messages)
        messages.extend(response.messages)
        await ctx.send_message(messages)


class Reviewer(Executor):
    """Owns a reviewing agent; yields its verdict on the whole conversation."""

    agent: Agent

    def __init__(self, id: str = "reviewer"):
        self.agent = Agent(
            client=LocalChatClient(name="reviewer-model"),
            instructions=(
                "You are an excellent content reviewer. You review the content and provide "
                "feedback to the writer."
            ),
        )
        super().__init__(id=id)

    @handler
    async def handle(
        self, messages: list[Message], ctx: WorkflowContext[list[Message], str]
    ) -> None:
        response = await self.agent.run(messages)
        await ctx.yield_output(response.text)


async def main():
    writer = Writer()
    reviewer = Reviewer()

    workflow = WorkflowBuilder(start_executor=writer).add_edge(writer, reviewer).build()

    events = await workflow.run(
        Message(
            "user", ["Create a slogan for a new electric SUV that is affordable and fun to drive."]
        )
    )
    outputs = events.get_outputs()
    if outputs:
        print(outputs[-1])


if __name__ == "__main__":
    asyncio.run(main())
