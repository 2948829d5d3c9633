"""Port of MAF's ``samples/03-workflows/human-in-the-loop/agents_with_declaration_only_tools.py``.

An agent (passed straight to the builder) has a declaration-only tool (``FunctionTool`` with
``func=None``): when the model calls it, the workflow pauses with a ``request_info`` whose data
is the ``function_call`` content; the caller supplies a ``function_result`` through
``run(responses=...)`` and the agent finishes with it.

The Foundry client is a ``LocalChatClient``: it calls the one tool offered, then answers from
the tool's result.
"""

import asyncio
import json
from typing import Any

from agent_framework import Agent, Content, FunctionTool

from workflows import WorkflowBuilder
from workflows.agents.local_chat import LocalChatClient

get_user_location = FunctionTool(
    name="get_user_location",
    func=None,
    description="Get the user's current city. Only the client application can resolve this.",
    input_model={
        "type": "object",
        "properties": {
            "reason": {"type": "string", "description": "Why the location is needed"},
        },
        "required": ["reason"],
    },
)


async def main() -> None:
    _client = LocalChatClient(name="weather-model")
    agent = Agent(
        client=_client,
        name="WeatherBot",
        instructions=(
            "You are a helpful weather assistant. "
            "When the user asks about weather, call get_user_location first, "
            "then make up a plausible forecast for that city."
        ),
        tools=[get_user_location],
    )

    workflow = WorkflowBuilder(start_executor=agent).build()

    print(">>> Sending: 'What's the weather like today?'")
    result = await workflow.run("What's the weather like today?")

    requests = result.get_request_info_events()
    if not requests:
        print(f"Agent replied without calling the tool: {result.get_outputs()}")
        return

    for req in requests:
        data = req.data
        args = json.loads(data.arguments) if isinstance(data.arguments, str) else data.arguments
        print(f"Workflow paused — agent called: {data.name}({args})")

    responses: dict[str, Any] = {}
    for req in requests:
        client_result = "Seattle, WA"
        print(f"Client provides result for {req.data.name}: {client_result!r}")
        responses[req.request_id] = Content.from_function_result(
            call_id=req.data.call_id,
            result=client_result,
        )

    result = await workflow.run(responses=responses)

    for output in result.get_outputs():
        print(f"\nAgent: {output.text}")


if __name__ == "__main__":
    asyncio.run(main())
