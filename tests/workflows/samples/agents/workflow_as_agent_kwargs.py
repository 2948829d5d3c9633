"""Port of MAF's ``samples/03-workflows/agents/workflow_as_agent_kwargs.py``.

A one-agent sequential workflow run as an agent, streamed, with
``run(function_invocation_kwargs=...)``: the values reach the agent's ``@tool`` functions as
their ``FunctionInvocationContext`` (the tools print which keys they got). The Foundry client
is a ``ScriptedChatClient`` that calls ``get_user_data``, then ``call_api``, then answers.

The original's tools read the values from ``**kwargs``, which MAF 1.23 leaves empty (its tools
get runtime values only through a ``FunctionInvocationContext`` parameter, as ``ctx.kwargs``):
the port's tools take that parameter instead, so the values are seen arriving.
"""

import asyncio
import json
from typing import Annotated

from agent_framework import Agent, FunctionInvocationContext, tool
from pydantic import Field

from workflows.agents.local_chat import ScriptedChatClient, ToolCall
from workflows.orchestrations import SequentialBuilder


@tool(approval_mode="never_require")
def get_user_data(
    query: Annotated[str, Field(description="What user data to retrieve")],
    ctx: FunctionInvocationContext,
) -> str:
    """Retrieve user-specific data based on the authenticated context."""
    kwargs = ctx.kwargs
    user_token = kwargs.get("user_token", {})
    user_name = user_token.get("user_name", "anonymous")
    access_level = user_token.get("access_level", "none")

    print(f"\n[get_user_data] Received kwargs keys: {list(kwargs.keys())}")
    print(f"[get_user_data] User: {user_name}")
    print(f"[get_user_data] Access level: {access_level}")

    return f"Retrieved data for user {user_name} with {access_level} access: {query}"


@tool(approval_mode="never_require")
def call_api(
    endpoint_name: Annotated[str, Field(description="Name of the API endpoint to call")],
    ctx: FunctionInvocationContext,
) -> str:
    """Call an API using the configured endpoints from custom_data."""
    kwargs = ctx.kwargs
    custom_data = kwargs.get("custom_data", {})
    api_config = custom_data.get("api_config", {})

    base_url = api_config.get("base_url", "unknown")
    endpoints = api_config.get("endpoints", {})

    print(f"\n[call_api] Received kwargs keys: {list(kwargs.keys())}")
    print(f"[call_api] Base URL: {base_url}")
    print(f"[call_api] Available endpoints: {list(endpoints.keys())}")

    if endpoint_name in endpoints:
        return f"Called {base_url}{endpoints[endpoint_name]} successfully"
    return f"Endpoint '{endpoint_name}' not found in configuration"


async def main() -> None:
    print("=" * 70)
    print("Workflow as Agent kwargs Flow Demo")
    print("=" * 70)

    client = ScriptedChatClient(
        [
            ToolCall("get_user_data", {"query": "profile"}),
            ToolCall("call_api", {"endpoint_name": "users"}),
            "Your profile is loaded and the users endpoint answered successfully.",
        ],
        name="assistant-model",
    )

    agent = Agent(
        client=client,
        name="assistant",
        instructions=(
            "You are a helpful assistant. Use the available tools to help users. "
            "When asked about user data, use get_user_data. "
            "When asked to call an API, use call_api."
        ),
        tools=[get_user_data, call_api],
    )

    workflow = SequentialBuilder(participants=[agent]).build()

    workflow_agent = workflow.as_agent()

    custom_data = {
        "api_config": {
            "base_url": "https://api.example.com",
            "endpoints": {
                "users": "/v1/users",
                "orders": "/v1/orders",
                "products": "/v1/products",
            },
        },
    }

    user_token = {
        "user_name": "bob@contoso.com",
        "access_level": "admin",
    }

    print("\nCustom Data being passed:")
    print(json.dumps(custom_data, indent=2))
    print(f"\nUser: {user_token['user_name']}")
    print("\n" + "-" * 70)
    print("Workflow Agent Execution (watch for [tool_name] logs showing kwargs received):")
    print("-" * 70)

    print("\n===== Streaming Response =====")
    async for update in workflow_agent.run(
        "Please get my user data and then call the users API endpoint.",
        function_invocation_kwargs={"custom_data": custom_data, "user_token": user_token},
        stream=True,
    ):
        if update.text:
            print(update.text, end="", flush=True)
    print()

    print("\n" + "=" * 70)
    print("Sample Complete")
    print("=" * 70)


if __name__ == "__main__":
    asyncio.run(main())
