"""Port of MAF's ``samples/03-workflows/agents/azure_ai_agents_streaming.py``: a Writer agent
then a Reviewer agent, passed straight to the builder as executors, the run streamed and each
update printed under its author.

Despite its name the sample (at MAF's HEAD) runs both agents on one ``FoundryChatClient``, a
plain chat model with no server-side state, so the port replaces it with a
``LocalChatClient`` per agent (one each, so each answers under its own name).
"""

import asyncio

from agent_framework import Agent, AgentResponseUpdate

from workflows import WorkflowBuilder
from workflows.agents.local_chat import LocalChatClient


async def main() -> None:
    writer_agent = Agent(
        client=LocalChatClient(name="writer-model"),
        name="Writer",
        instructions=(
            "You are an excellent content writer. You create new content and edit contents "
            "based on the feedback."
        ),
    )

    reviewer_agent = Agent(
        client=LocalChatClient(name="reviewer-model"),
        name="Reviewer",
        instructions=(
            "You are an excellent content reviewer. "
            "Provide actionable feedback to the writer about the provided content. "
            "Provide the feedback in the most concise manner possible."
        ),
    )

    workflow = (
        WorkflowBuilder(start_executor=writer_agent).add_edge(writer_agent, reviewer_agent).build()
    )

    last_author: str | None = None

    events = workflow.run(
        "Create a slogan for a new electric SUV that is affordable and fun to drive.", stream=True
    )
    async for event in events:
        if event.type == "output" and isinstance(event.data, AgentResponseUpdate):
            update = event.data
            author = update.author_name
            if author != last_author:
                if last_author is not None:
                    print()
                print(f"{author}: {update.text}", end="", flush=True)
                last_author = author
            else:
                print(update.text, end="", flush=True)


if __name__ == "__main__":
    asyncio.run(main())
