"""Port of MAF's ``samples/03-workflows/orchestrations/handoff_simple.py``: a triage agent and
three specialists in a mesh, each able to hand the customer to any other.

The hosted Foundry client is replaced by one ``ScriptedChatClient`` shared by the four agents
(as the sample shares its client). Its script, in call order, drives the conversation through
the sample's interesting paths: triage asks a question (a user-input request), hands off to the
return agent, which calls its tool, answers and hands off to the refund agent on the next user
turn; the refund agent calls its tool, and its closing "welcome" meets the termination
condition, so the third scripted reply ends the run.
"""

import asyncio
from typing import Annotated, cast

from agent_framework import (
    Agent,
    AgentResponse,
    Message,
    tool,
)

from workflows import WorkflowEvent, WorkflowRunState
from workflows.agents.local_chat import ScriptedChatClient, ToolCall
from workflows.orchestrations import HandoffAgentUserRequest, HandoffBuilder

SCRIPT = [
    # triage, first user message
    "Could you please tell me more about the issue with your recent purchase?",
    # triage, after the user describes the damaged order
    ToolCall("handoff_to_return_agent"),
    # return_agent
    ToolCall("process_return", {"order_number": "1234"}),
    "The return for order 1234 has been initiated. Return instructions are on their way.",
    # return_agent, after the user asks for a refund
    ToolCall("handoff_to_refund_agent"),
    # refund_agent
    ToolCall("process_refund", {"order_number": "1234"}),
    "Your refund for order 1234 has been processed. Is there anything else?",
    # refund_agent, after the user's thanks
    "You're welcome! Have a great day.",
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


def _handle_events(events: list[WorkflowEvent]) -> list[WorkflowEvent[HandoffAgentUserRequest]]:
    """Print what the events say and return the pending user-input requests."""
    requests: list[WorkflowEvent[HandoffAgentUserRequest]] = []

    for event in events:
        if event.type == "handoff_sent":
            print(f"\n[Handoff from {event.data.source} to {event.data.target} initiated.]")
        elif event.type == "status" and event.state in {
            WorkflowRunState.IDLE,
            WorkflowRunState.IDLE_WITH_PENDING_REQUESTS,
        }:
            print(f"\n[Workflow Status] {event.state}")
        elif event.type == "output":
            data = event.data
            if isinstance(data, AgentResponse):
                for message in data.messages:
                    if not message.text:
                        continue
                    speaker = message.author_name or message.role
                    print(f"- {speaker}: {message.text}")
            elif event.type == "output":
                conversation = cast(list[Message], event.data)
                if isinstance(conversation, list):
                    print("\n=== Final Conversation Snapshot ===")
                    for message in conversation:
                        speaker = message.author_name or message.role
                        text = message.text or [content.type for content in message.contents]
                        print(f"- {speaker}: {text}")
                    print("===================================")
        elif event.type == "request_info" and isinstance(event.data, HandoffAgentUserRequest):
            _print_handoff_agent_user_request(event.data.agent_response)
            requests.append(cast(WorkflowEvent[HandoffAgentUserRequest], event))

    return requests


def _print_handoff_agent_user_request(response: AgentResponse) -> None:
    """Print the answer of the agent that waits for the user."""
    if not response.messages:
        raise RuntimeError("Cannot print agent responses: response has no messages.")

    print("\n[Agent is requesting your input...]")
    for message in response.messages:
        if not message.text:
            continue
        speaker = message.author_name or message.role
        print(f"- {speaker}: {message.text}")


async def main() -> None:
    client = ScriptedChatClient(SCRIPT)
    triage, refund, order, support = create_agents(client)

    workflow = (
        HandoffBuilder(
            name="customer_support_handoff",
            participants=[triage, refund, order, support],
            termination_condition=lambda conversation: (
                len(conversation) > 0 and "welcome" in conversation[-1].text.lower()
            ),
        )
        .with_start_agent(triage)
        .build()
    )

    scripted_responses = [
        "My order 1234 arrived damaged and the packaging was destroyed. I'd like to return it.",
        "Please also process a refund for order 1234.",
        "Thanks for resolving this.",
    ]

    print("[Starting workflow with initial user message...]\n")
    initial_message = "Hello, I need assistance with my recent purchase."
    print(f"- User: {initial_message}")
    workflow_result = workflow.run(initial_message, stream=True)
    pending_requests = _handle_events([event async for event in workflow_result])

    while pending_requests:
        if not scripted_responses:
            responses = {
                req.request_id: HandoffAgentUserRequest.terminate() for req in pending_requests
            }
        else:
            user_response = scripted_responses.pop(0)
            print(f"\n- User: {user_response}")
            responses = {
                req.request_id: HandoffAgentUserRequest.create_response(user_response)
                for req in pending_requests
            }

        events = await workflow.run(responses=responses)
        pending_requests = _handle_events(events)


if __name__ == "__main__":
    asyncio.run(main())
