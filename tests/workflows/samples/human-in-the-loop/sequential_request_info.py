"""Port of MAF's ``samples/03-workflows/human-in-the-loop/sequential_request_info.py``: drafter ->
editor -> finalizer with ``.with_request_info(agents=["editor"])``; after the editor answers the
run pauses with its ``AgentExecutorResponse``, the person first sends guidance (the editor answers
again, and is reviewed again) and then approves, and the finalizer ends the run.

Each agent has its own ``LocalChatClient`` in place of the shared Foundry client; ``input()`` is
answered from ``INPUTS``. In MAF 1.23 the streamed output is the finalizer's
``AgentResponseUpdate`` chunks, not a list of messages, so the port gathers them and prints the
final messages when the stream ends."""

import asyncio
from collections.abc import AsyncIterable

from agent_framework import (
    Agent,
    AgentResponse,
    AgentResponseUpdate,
)

from workflows import AgentExecutorResponse, WorkflowEvent
from workflows.agents.local_chat import LocalChatClient
from workflows.orchestrations import AgentRequestInfoResponse, SequentialBuilder

INPUTS = ["Please mention machine learning and keep it friendly.", "skip"]


async def process_event_stream(
    stream: AsyncIterable[WorkflowEvent],
) -> dict[str, AgentRequestInfoResponse] | None:
    """Process events from the workflow stream to capture human feedback requests."""
    requests: dict[str, AgentExecutorResponse] = {}
    updates: list[AgentResponseUpdate] = []
    async for event in stream:
        if event.type == "request_info" and isinstance(event.data, AgentExecutorResponse):
            requests[event.request_id] = event.data

        elif event.type == "output" and isinstance(event.data, AgentResponseUpdate):
            updates.append(event.data)

    if updates:
        # The output of the sequential workflow is the finalizer's answer, streamed
        print("\n" + "=" * 60)
        print("WORKFLOW COMPLETE")
        print("=" * 60)
        print("Final output:")
        for message in AgentResponse.from_updates(updates).messages:
            print(f"[{message.author_name or message.role}]: {message.text}")

    responses: dict[str, AgentRequestInfoResponse] = {}
    if requests:
        for request_id, request in requests.items():
            # Display agent response and conversation context for review
            print("\n" + "-" * 40)
            print("REQUEST INFO: INPUT REQUESTED")
            print(
                f"Agent {request.executor_id} just responded with: "
                f"'{request.agent_response.text}'. Please provide your feedback."
            )
            print("-" * 40)
            if request.full_conversation:
                print("Conversation context:")
                recent = (
                    request.full_conversation[-2:]
                    if len(request.full_conversation) > 2
                    else request.full_conversation
                )
                for msg in recent:
                    name = msg.author_name or msg.role
                    text = (msg.text or "")[:150]
                    print(f"  [{name}]: {text}...")
                print("-" * 40)

            # Get feedback on the agent's response (approve or request iteration)
            user_input = input("Your guidance (or 'skip' to approve): ")
            if user_input.lower() == "skip":
                user_input = AgentRequestInfoResponse.approve()
            else:
                user_input = AgentRequestInfoResponse.from_strings([user_input])

            responses[request_id] = user_input

    return responses if responses else None


async def main() -> None:
    # Create agents for a sequential document review workflow
    drafter = Agent(
        client=LocalChatClient(name="drafter-model"),
        name="drafter",
        instructions=(
            "You are a document drafter. When given a topic, create a brief draft (2-3 sentences)."
        ),
    )

    editor = Agent(
        client=LocalChatClient(name="editor-model"),
        name="editor",
        instructions=(
            "You are an editor. Review the draft and make improvements. "
            "Incorporate any human feedback that was provided."
        ),
    )

    finalizer = Agent(
        client=LocalChatClient(name="finalizer-model"),
        name="finalizer",
        instructions=(
            "You are a finalizer. Take the edited content and create a polished final version. "
            "Incorporate any additional feedback provided."
        ),
    )

    # Build workflow with request info enabled (pauses after each agent responds)
    workflow = (
        SequentialBuilder(participants=[drafter, editor, finalizer])
        # Only enable request info for the editor agent
        .with_request_info(agents=["editor"])
        .build()
    )

    # Initiate the first run of the workflow.
    # Runs are not isolated; state is preserved across multiple calls to run.
    stream = workflow.run("Write a brief introduction to artificial intelligence.", stream=True)

    pending_responses = await process_event_stream(stream)
    while pending_responses is not None:
        # Run the workflow until there is no more human feedback to provide,
        # in which case this workflow completes.
        stream = workflow.run(stream=True, responses=pending_responses)
        pending_responses = await process_event_stream(stream)


if __name__ == "__main__":
    asyncio.run(main())
