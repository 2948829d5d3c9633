"""Port of MAF's
``samples/03-workflows/orchestrations/handoff_with_tool_approval_checkpoint_resume.py``: a
handoff workflow with a tool that needs approval, resumed from a file checkpoint in a freshly
built workflow ("a new process") at every pause.

The hosted Foundry client is replaced by a ``ScriptedChatClient`` built with each workflow,
every one reading the next replies of one shared script: a resumed workflow that asked the
model again for a finished turn would take the wrong reply and print something else. The path:
triage hands off to the refund agent, which asks for details; the user's details make it call
``submit_refund`` (an approval request); once approved, it confirms, and the user's replies
reach the termination condition (five user messages, the approval answer being one of them).
The checkpoints go to a temporary directory rather than next to the sample, and the storage is
given ``allowed_checkpoint_types=["types:GenericAlias"]``: without it MAF 1.23 cannot restore the
pending ``HandoffAgentUserRequest`` (its ``list[Message]`` response type is refused by the
storage's type allow-list), so the checkpoints written while it waits fail to save and the
first resume finds no pending request.

``compare`` allows two differences, described in its docstring: the module of the request class
the sample prints, and where a resumed run announces its pending requests.
"""

import asyncio
import itertools
import json
import re
import tempfile
from pathlib import Path
from typing import Any

from agent_framework import (
    Agent,
    Content,
    tool,
)

from workflows import (
    FileCheckpointStorage,
    Workflow,
    WorkflowEvent,
)
from workflows.agents.local_chat import ScriptedChatClient, ToolCall
from workflows.orchestrations import HandoffAgentUserRequest, HandoffBuilder

CHECKPOINT_DIR = Path(tempfile.mkdtemp(prefix="handoff_checkpoints_"))

# The model's replies, in call order, across every workflow built below.
SCRIPT = iter(
    [
        ToolCall("handoff_to_refund_agent", call_id="call-handoff-refund"),
        "I'm sorry your order arrived damaged. Could you describe the damage and the refund?",
        ToolCall(
            "submit_refund",
            {
                "refund_description": "Headphones arrived cracked",
                "amount": "89.99",
                "order_id": "12345",
            },
            call_id="call-submit-refund",
        ),
        "Your refund of $89.99 for order 12345 is recorded. Does that cover everything?",
        "Thank you for confirming. Is there anything else about the refund?",
    ]
)
_PROCESSES = itertools.count(1)


def _next_reply(messages: Any, options: Any) -> Any:
    return next(SCRIPT)


@tool(approval_mode="always_require")
def submit_refund(refund_description: str, amount: str, order_id: str) -> str:
    """Capture a refund request for manual review before processing."""
    return (
        f"refund recorded for order {order_id} (amount: {amount}) with details: "
        f"{refund_description}"
    )


def create_agents(client: ScriptedChatClient) -> tuple[Agent, Agent, Agent]:
    """Create a simple handoff scenario: triage, refund, and order specialists."""
    triage = Agent(
        client=client,
        name="triage_agent",
        instructions=(
            "You are a customer service triage agent. Listen to customer issues and determine "
            "if they need refund help or order tracking. Use handoff_to_refund_agent or "
            "handoff_to_order_agent to transfer them."
        ),
        require_per_service_call_history_persistence=True,
    )

    refund = Agent(
        client=client,
        name="refund_agent",
        instructions=(
            "You are a refund specialist. Help customers with refund requests. "
            "Be empathetic and ask for order numbers if not provided. "
            "When the user confirms they want a refund and supplies order details, call "
            "submit_refund to record the request before continuing."
        ),
        tools=[submit_refund],
        require_per_service_call_history_persistence=True,
    )

    order = Agent(
        client=client,
        name="order_agent",
        instructions=(
            "You are an order tracking specialist. Help customers track their orders. "
            "Ask for order numbers and provide shipping updates."
        ),
        require_per_service_call_history_persistence=True,
    )

    return triage, refund, order


def create_workflow(checkpoint_storage: FileCheckpointStorage) -> Workflow:
    """Build the handoff workflow with checkpointing enabled."""
    client = ScriptedChatClient([_next_reply] * 10, name=f"model-{next(_PROCESSES)}")
    triage, refund, order = create_agents(client)

    return (
        HandoffBuilder(
            name="checkpoint_handoff_demo",
            participants=[triage, refund, order],
            checkpoint_storage=checkpoint_storage,
            termination_condition=lambda conv: sum(1 for msg in conv if msg.role == "user") >= 5,
        )
        .with_start_agent(triage)
        .build()
    )


def print_handoff_agent_user_request(request: HandoffAgentUserRequest, request_id: str) -> None:
    """Log pending handoff request details for debugging."""
    print(f"\n{'=' * 60}")
    print("User input needed")
    print(f"Request ID: {request_id}")

    response = request.agent_response
    if not response.messages:
        print("(No agent messages)")
        return

    for message in response.messages:
        if not message.text:
            continue
        speaker = message.author_name or message.role
        print(f"{speaker}: {message.text}")

    print(f"{'=' * 60}\n")


def print_function_approval_request(request: Content, request_id: str) -> None:
    """Log pending tool approval details for debugging."""
    args = request.function_call.parse_arguments() or {}  # type: ignore
    print(f"\n{'=' * 60}")
    print("Tool approval required")
    print(f"Request ID: {request_id}")
    print(f"Function: {request.function_call.name}")  # type: ignore
    print(f"Arguments:\n{json.dumps(args, indent=2)}")
    print(f"{'=' * 60}\n")


async def main() -> None:
    """Pause at every request, then answer it in a freshly built workflow from the checkpoint."""
    for file in CHECKPOINT_DIR.glob("*.json"):
        file.unlink()
    for file in CHECKPOINT_DIR.glob("*.json.tmp"):
        file.unlink()

    # MAF 1.23's FileCheckpointStorage refuses to restore a pending HandoffAgentUserRequest
    # (its response type, list[Message], is a types.GenericAlias) unless it is allowed.
    storage = FileCheckpointStorage(
        storage_path=CHECKPOINT_DIR, allowed_checkpoint_types=["types:GenericAlias"]
    )
    workflow = create_workflow(checkpoint_storage=storage)

    handoff_responses = [
        (
            "The headphones in order 12345 arrived cracked. "
            "Please submit the refund for $89.99 and send a replacement to my original address."
        ),
        "Yes, that covers the damage and refund request.",
        "That's everything I needed for the refund.",
        "Thanks for handling the refund.",
    ]

    print("=" * 60)
    print("HANDOFF WORKFLOW CHECKPOINT DEMO")
    print("=" * 60)

    initial_request = "Hi, my order 12345 arrived damaged. I need a refund."

    print("Running initial workflow...")
    results = await workflow.run(message=initial_request, stream=True)

    request_events: list[WorkflowEvent] = []
    async for event in results:
        event: WorkflowEvent
        if event.type == "request_info":
            request_events.append(event)

    if not request_events:
        print("Workflow completed without needing user input")
        return

    print("=" * 60)
    print("WORKFLOW PAUSED with pending requests")
    print("=" * 60)

    while request_events:
        print("\n" + "=" * 60)
        print("Simulating process restart...")
        print("=" * 60)

        workflow = create_workflow(checkpoint_storage=storage)

        responses: dict[str, Any] = {}
        for request_event in request_events:
            print(
                f"Pending request ID: {request_event.request_id}, Type: {type(request_event.data)}"
            )
            if isinstance(request_event.data, HandoffAgentUserRequest):
                print_handoff_agent_user_request(request_event.data, request_event.request_id)
                response = handoff_responses.pop(0)
                print(f"Responding with: {response}")
                responses[request_event.request_id] = HandoffAgentUserRequest.create_response(
                    response
                )
            elif (
                isinstance(request_event.data, Content)
                and request_event.data.type == "function_approval_request"
            ):
                print_function_approval_request(request_event.data, request_event.request_id)
                print("Approving tool call...")
                responses[request_event.request_id] = (
                    request_event.data.to_function_approval_response(approved=True)
                )
            else:
                raise ValueError(f"Unsupported request type: {type(request_event.data)}")

        checkpoint = await storage.get_latest(workflow_name=workflow.name)
        if not checkpoint:
            raise RuntimeError("No checkpoints found.")
        checkpoint_id = checkpoint.checkpoint_id

        print("Resuming workflow from checkpoint...")
        results = await workflow.run(responses=responses, checkpoint_id=checkpoint_id, stream=True)

        request_events: list[WorkflowEvent] = []
        async for event in results:
            if event.type == "request_info":
                request_events.append(event)

    print("\n" + "=" * 60)
    print("DEMO COMPLETE")
    print("=" * 60)


_REQUEST_CLASS = re.compile(r"<class '[\w.]+\.HandoffAgentUserRequest'>")


def _without_resume_replays(events: list[str]) -> list[str]:
    """The events less ``status`` and the request_info events MAF replays as it restores."""
    kept = []
    for index, label in enumerate(events):
        if label == "status":
            continue
        replayed = index >= 2 and events[index - 2] == "started"
        if label.startswith("request_info:") and replayed:
            continue
        kept.append(label)
    return kept


def compare(maf: Any, ours: Any) -> None:
    """Everything agrees but two things.

    The sample prints the request's class, and ours lives in ``workflows.orchestrations``.
    And on ``run(responses=..., checkpoint_id=...)`` MAF's runner re-emits the restored
    pending requests (its public stream then hides those being answered) and announces
    ``IN_PROGRESS_PENDING_REQUESTS`` there, where the engine announces it with the next new
    request: an engine difference (see the handoff helper's report), not a handoff one.
    """
    assert maf.error is None and ours.error is None, (maf.error, ours.error)
    same_class = "<class 'HandoffAgentUserRequest'>"
    assert _REQUEST_CLASS.sub(same_class, ours.normalized) == _REQUEST_CLASS.sub(
        same_class, maf.normalized
    )
    assert _without_resume_replays(ours.events) == _without_resume_replays(maf.events)


if __name__ == "__main__":
    asyncio.run(main())
