"""Port of MAF's ``samples/03-workflows/agents/handoff_workflow_as_agent.py``: the customer
support handoff workflow used as an agent (``workflow.as_agent()``), its user-input requests
answered as ``request_info`` function results in the next agent call.

The hosted Foundry client is replaced by one ``ScriptedChatClient`` shared by the four agents
(as the sample shares its client). Its script, in call order: triage asks a question, hands off
to the return agent on the user's answer; the return agent calls its tool and answers, then
hands off to the refund agent, which calls its tool and answers; its last answer says no
"welcome", so the termination condition never holds and, the scripted replies used up, the
sample ends the conversation with ``HandoffAgentUserRequest.terminate()``.
"""

import asyncio
from typing import Annotated

from agent_framework import (
    Agent,
    AgentResponse,
    Content,
    Message,
    tool,
)

from workflows import WorkflowAgent
from workflows.agents.local_chat import ScriptedChatClient, ToolCall
from workflows.orchestrations import HandoffAgentUserRequest, HandoffBuilder

SCRIPT = [
    "Could you describe the problem with your recent purchase?",
    ToolCall("handoff_to_return_agent"),
    ToolCall("process_return", {"order_number": "1234"}),
    "The return for order 1234 is initiated; instructions will follow by email.",
    ToolCall("handoff_to_refund_agent"),
    ToolCall("process_refund", {"order_number": "1234"}),
    "The refund for order 1234 is processed. Can I help with anything else?",
    "Glad I could help. Goodbye!",
]


# NOTE: approval_mode="never_require" is for sample brevity. Use "always_require" in production.
@tool(approval_mode="never_require")
def process_refund(order_number: Annotated[str, "Order number to process refund for"]) -> str:
    """Simulated function to process a refund for a given order number."""
    return f"Refund processed successfully for order {order_number}."


@tool(approval_mode="never_require")
def check_order_status(order_number: Annotated[str, "Order number to check status for"]) -> str:
    """Simulated function to check the status of a given order number."""
    return f"Order {order_number} is currently being processed and will ship in 2 business days."


@tool(approval_mode="never_require")
def process_return(order_number: Annotated[str, "Order number to process return for"]) -> str:
    """Simulated function to process a return for a given order number."""
    return (
        f"Return initiated successfully for order {order_number}. "
        "You will receive return instructions via email."
    )


def create_agents(client: ScriptedChatClient) -> tuple[Agent, Agent, Agent, Agent]:
    """Create the triage agent and the three specialists on one client."""
    triage_agent = Agent(
        client=client,
        instructions=(
            "You are frontline support triage. Route customer issues to the appropriate "
            "specialist agents based on the problem described."
        ),
        name="triage_agent",
        require_per_service_call_history_persistence=True,
    )
    refund_agent = Agent(
        client=client,
        instructions="You process refund requests.",
        name="refund_agent",
        tools=[process_refund],
        require_per_service_call_history_persistence=True,
    )
    order_agent = Agent(
        client=client,
        instructions="You handle order and shipping inquiries.",
        name="order_agent",
        tools=[check_order_status],
        require_per_service_call_history_persistence=True,
    )
    return_agent = Agent(
        client=client,
        instructions="You manage product return requests.",
        name="return_agent",
        tools=[process_return],
        require_per_service_call_history_persistence=True,
    )
    return triage_agent, refund_agent, order_agent, return_agent


def handle_response_and_requests(response: AgentResponse) -> dict[str, HandoffAgentUserRequest]:
    """Print the agent's messages and return its pending user-input requests by id."""
    pending_requests: dict[str, HandoffAgentUserRequest] = {}
    for message in response.messages:
        if message.text:
            print(f"- {message.author_name or message.role}: {message.text}")
        for content in message.contents:
            if (
                content.type == "function_call"
                and content.name == WorkflowAgent.REQUEST_INFO_FUNCTION_NAME
            ):
                request_function_args = WorkflowAgent.RequestInfoFunctionArgs.from_dict(
                    content.arguments  # type: ignore
                )
                request_id = request_function_args.request_id
                request_event = request_function_args.request_event
                pending_requests[request_id] = request_event.data

    return pending_requests


async def main() -> None:
    client = ScriptedChatClient(SCRIPT)
    triage, refund, order, support = create_agents(client)

    agent = (
        HandoffBuilder(
            name="customer_support_handoff",
            participants=[triage, refund, order, support],
            termination_condition=lambda conversation: (
                len(conversation) > 0 and "welcome" in conversation[-1].text.lower()
            ),
        )
        .with_start_agent(triage)
        .build()
        .as_agent()
    )

    scripted_responses = [
        "My order 1234 arrived damaged and the packaging was destroyed. I'd like to return it.",
        "Please also process a refund for order 1234.",
        "Thanks for resolving this.",
    ]

    print("[Starting workflow with initial user message...]\n")
    initial_message = "Hello, I need assistance with my recent purchase."
    print(f"- User: {initial_message}")
    response = await agent.run(initial_message)
    pending_requests = handle_response_and_requests(response)

    while pending_requests:
        if not scripted_responses:
            responses = {req_id: HandoffAgentUserRequest.terminate() for req_id in pending_requests}
        else:
            user_response = scripted_responses.pop(0)
            print(f"\n- User: {user_response}")
            responses = {
                req_id: HandoffAgentUserRequest.create_response(user_response)
                for req_id in pending_requests
            }

        function_results = [
            Content("function_result", call_id=req_id, result=response)
            for req_id, response in responses.items()
        ]
        response = await agent.run(Message("tool", function_results))
        pending_requests = handle_response_and_requests(response)


if __name__ == "__main__":
    asyncio.run(main())
