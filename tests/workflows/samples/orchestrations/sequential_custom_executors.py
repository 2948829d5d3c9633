"""Port of MAF's ``samples/03-workflows/orchestrations/sequential_custom_executors.py``: a content
agent then a custom ``Summarizer`` executor that ends the chain by yielding an ``AgentResponse``
summary of the conversation it received.

The Foundry client is replaced by a ``LocalChatClient``."""

import asyncio
from typing import Never

from agent_framework import Agent, AgentResponse, Message

from workflows import AgentExecutorResponse, Executor, WorkflowContext, handler
from workflows.agents.local_chat import LocalChatClient
from workflows.orchestrations import SequentialBuilder


class Summarizer(Executor):
    """Terminator custom executor: synthesizes a one-line summary as the workflow's final answer."""

    @handler
    async def summarize(
        self,
        agent_response: AgentExecutorResponse,
        ctx: WorkflowContext[Never, AgentResponse],
    ) -> None:
        """Yield a terminal AgentResponse containing the summary of the conversation so far."""
        if not agent_response.full_conversation:
            await ctx.yield_output(
                AgentResponse(messages=[Message("assistant", ["No conversation to summarize."])])
            )
            return

        users = sum(1 for m in agent_response.full_conversation if m.role == "user")
        assistants = sum(1 for m in agent_response.full_conversation if m.role == "assistant")
        summary = Message("assistant", [f"Summary -> users:{users} assistants:{assistants}"])
        await ctx.yield_output(AgentResponse(messages=[summary]))


async def main() -> None:
    # 1) Create a content agent
    content = Agent(
        client=LocalChatClient(name="content-model"),
        instructions="Produce a concise paragraph answering the user's request.",
        name="content",
    )

    # 2) Build sequential workflow: content -> summarizer
    summarizer = Summarizer(id="summarizer")
    workflow = SequentialBuilder(participants=[content, summarizer]).build()

    # 3) Run workflow and extract the final summary
    events = await workflow.run("Explain the benefits of budget eBikes for commuters.")
    outputs = events.get_outputs()

    if outputs:
        print("===== Final Summary =====")
        final: AgentResponse = outputs[0]
        for msg in final.messages:
            print(msg.text)


if __name__ == "__main__":
    asyncio.run(main())
