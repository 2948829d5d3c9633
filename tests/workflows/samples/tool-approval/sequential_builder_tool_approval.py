"""Port of MAF's ``samples/03-workflows/tool-approval/sequential_builder_tool_approval.py``: a
one-agent ``SequentialBuilder`` whose database agent reads the schema (no approval) and then runs
an update query that needs approval; the run pauses on the ``function_approval_request``, the
sample approves it and streams the run on to the agent's final answer.

The Foundry client is replaced by a ``ScriptedChatClient`` that calls the schema tool, then the
query tool, then answers. In MAF 1.23 a streamed sequential run's outputs are
``AgentResponseUpdate`` chunks, not a list of messages, so the port gathers the updates of one
stream and prints their messages once it ends."""

import asyncio
from collections.abc import AsyncIterable
from typing import Annotated

from agent_framework import (
    Agent,
    AgentResponse,
    AgentResponseUpdate,
    Content,
    tool,
)

from workflows import WorkflowEvent
from workflows.agents.local_chat import ScriptedChatClient, ToolCall
from workflows.orchestrations import SequentialBuilder

UPDATE_QUERY = "UPDATE orders SET status = 'processing' WHERE status = 'pending'"


# 1. Define tools - one requiring approval, one that doesn't
@tool(approval_mode="always_require")
def execute_database_query(
    query: Annotated[str, "The SQL query to execute against the production database"],
) -> str:
    """Execute a SQL query against the production database. Requires human approval."""
    # In a real implementation, this would execute the query
    return f"Query executed successfully. Results: 3 rows affected by '{query}'"


@tool(approval_mode="never_require")
def get_database_schema() -> str:
    """Get the current database schema. Does not require approval."""
    return """
    Tables:
    - users (id, name, email, created_at)
    - orders (id, user_id, total, status, created_at)
    - products (id, name, price, stock)
    """


async def process_event_stream(stream: AsyncIterable[WorkflowEvent]) -> dict[str, Content] | None:
    """Process events from the workflow stream to capture human feedback requests."""
    requests: dict[str, Content] = {}
    updates: list[AgentResponseUpdate] = []
    async for event in stream:
        if event.type == "request_info" and isinstance(event.data, Content):
            # We are only expecting tool approval requests in this sample
            requests[event.request_id] = event.data
        elif event.type == "output" and isinstance(event.data, AgentResponseUpdate):
            updates.append(event.data)

    if updates:
        # The output of the workflow is the last agent's answer, streamed as updates
        print("\n" + "=" * 60)
        print("Workflow summary:")
        for msg in AgentResponse.from_updates(updates).messages:
            speaker = msg.author_name or msg.role
            print(f"[{speaker}]: {msg.text}")

    responses: dict[str, Content] = {}
    if requests:
        for request_id, request in requests.items():
            if request.type == "function_approval_request" and request.function_call is not None:
                print("\n[APPROVAL REQUIRED]")
                print(f"  Tool: {request.function_call.name}")
                print(f"  Arguments: {request.function_call.arguments}")
                print(f"Simulating human approval for: {request.function_call.name}")
                # Create approval response
                responses[request_id] = request.to_function_approval_response(approved=True)

    return responses if responses else None


async def main() -> None:
    # 2. Create the agent with tools (approval mode is set per-tool via decorator)
    client = ScriptedChatClient(
        [
            ToolCall("get_database_schema"),
            ToolCall("execute_database_query", {"query": UPDATE_QUERY}),
            (
                f"I've checked the schema and executed the update query: {UPDATE_QUERY}. "
                "3 rows were affected."
            ),
        ],
        name="database-model",
    )
    database_agent = Agent(
        client=client,
        name="DatabaseAgent",
        instructions=(
            "You are a database assistant. You can view the database schema and execute "
            "queries. Always check the schema before running queries. Be careful with "
            "queries that modify data."
        ),
        tools=[get_database_schema, execute_database_query],
    )

    # 3. Build a sequential workflow with the agent
    workflow = SequentialBuilder(participants=[database_agent]).build()

    # 4. Start the workflow with a user task
    print("Starting sequential workflow with tool approval...")
    print("-" * 60)

    # Initiate the first run of the workflow.
    # Runs are not isolated; state is preserved across multiple calls to run.
    stream = workflow.run(
        "Check the schema and then update all orders with status 'pending' to 'processing'",
        stream=True,
    )

    pending_responses = await process_event_stream(stream)
    while pending_responses is not None:
        # Run the workflow until there is no more human feedback to provide,
        # in which case this workflow completes.
        stream = workflow.run(stream=True, responses=pending_responses)
        pending_responses = await process_event_stream(stream)


if __name__ == "__main__":
    asyncio.run(main())
