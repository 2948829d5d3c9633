"""Port of MAF's ``samples/03-workflows/human-in-the-loop/group_chat_request_info.py``.

An orchestrator agent leads a three-person discussion; ``with_request_info(agents=[pragmatist])``
pauses the run after each of the pragmatist's turns for a person to review it. The first
review sends feedback (the pragmatist answers again and is reviewed again), the others approve;
``max_rounds=6`` ends the discussion. The orchestrator's picks and every answer are scripted,
the person's answers are ``INPUTS``. MAF 1.23 outputs the orchestrator's closing message, not
the list of messages the sample iterates, so the port reads that message instead.
"""

import asyncio
from collections.abc import AsyncIterable
from typing import cast

from agent_framework import (
    Agent,
    AgentResponse,
    Message,
)

from workflows import AgentExecutorResponse, WorkflowEvent
from workflows.agents.local_chat import ScriptedChatClient
from workflows.orchestrations import AgentRequestInfoResponse, GroupChatBuilder


def _pick(speaker: str) -> dict[str, object]:
    return {
        "terminate": False,
        "reason": f"{speaker} has not spoken for a while.",
        "next_speaker": speaker,
        "final_message": None,
    }


# The orchestrator rotates through everyone twice; max_rounds=6 then ends the discussion. The
# pragmatist's first answer gets feedback and is redone (INPUTS), every other answer approved.
SCRIPTS: dict[str, list[object]] = {
    "orchestrator": [_pick(name) for name in ("optimist", "pragmatist", "creative") * 2],
    "optimist": [
        "AI assistants could take the drudgery out of our week and free time for real work.",
        "With a pilot in place, we can show quick wins to the rest of the company.",
    ],
    "pragmatist": [
        "Let's adopt every tool at once.",
        "Start with one team and one tool for a month, measure, then decide.",
        "The pilot needs a data policy before anyone pastes customer data into a prompt.",
    ],
    "creative": [
        "What if each team nominated an 'AI scout' who tries tools and reports back?",
        "We could run a hack week where teams build their own small AI helpers.",
    ],
}

INPUTS = [
    "Too risky: propose a small pilot with a measurable goal.",
    "skip",
    "skip",
]


async def process_event_stream(
    stream: AsyncIterable[WorkflowEvent],
) -> dict[str, AgentRequestInfoResponse] | None:
    """Process events from the workflow stream to capture human feedback requests."""
    requests: dict[str, AgentExecutorResponse] = {}
    async for event in stream:
        if event.type == "request_info" and isinstance(event.data, AgentExecutorResponse):
            requests[event.request_id] = event.data

        if event.type == "output":
            # The output of the workflow comes from the orchestrator. In MAF 1.23 it is the
            # orchestrator's closing message, an AgentResponseUpdate in a streaming run (the
            # sample, written for a later MAF, reads a list of messages).
            print("\n" + "=" * 60)
            print("DISCUSSION COMPLETE")
            print("=" * 60)
            print("Final discussion summary:")
            # To make the type checker happy, we cast event.data to the expected type
            data = event.data
            outputs = cast(
                list[Message], data.messages if isinstance(data, AgentResponse) else [data]
            )
            for msg in outputs:
                speaker = msg.author_name or msg.role
                print(f"[{speaker}]: {msg.text}")

    responses: dict[str, AgentRequestInfoResponse] = {}
    if requests:
        for request_id, request in requests.items():
            # Display pre-agent context for human input
            print("\n" + "-" * 40)
            print("INPUT REQUESTED")
            print(
                f"Agent {request.executor_id} just responded with: "
                f"'{request.agent_response.text}'. "
                "Please provide your feedback."
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

            # Get human input to steer the agent
            user_input = input(f"Feedback for {request.executor_id} (or 'skip' to approve): ")
            if user_input.lower() == "skip":
                user_input = AgentRequestInfoResponse.approve()
            else:
                user_input = AgentRequestInfoResponse.from_strings([user_input])

            responses[request_id] = user_input

    return responses if responses else None


async def main() -> None:
    # Create agents for a group discussion
    optimist = Agent(
        client=ScriptedChatClient(SCRIPTS["optimist"], name="optimist-model"),
        name="optimist",
        instructions=(
            "You are an optimistic team member. You see opportunities and potential "
            "in ideas. Engage constructively with the discussion, building on others' "
            "points while maintaining a positive outlook. Keep responses to 2-3 sentences."
        ),
    )

    pragmatist = Agent(
        client=ScriptedChatClient(SCRIPTS["pragmatist"], name="pragmatist-model"),
        name="pragmatist",
        instructions=(
            "You are a pragmatic team member. You focus on practical implementation "
            "and realistic timelines. Sometimes you disagree with overly optimistic views. "
            "Keep responses to 2-3 sentences."
        ),
    )

    creative = Agent(
        client=ScriptedChatClient(SCRIPTS["creative"], name="creative-model"),
        name="creative",
        instructions=(
            "You are a creative team member. You propose innovative solutions and "
            "think outside the box. You may suggest alternatives to conventional approaches. "
            "Keep responses to 2-3 sentences."
        ),
    )

    # Orchestrator coordinates the discussion
    orchestrator = Agent(
        client=ScriptedChatClient(SCRIPTS["orchestrator"], name="orchestrator-model"),
        name="orchestrator",
        instructions=(
            "You are a discussion manager coordinating a team conversation between participants. "
            "Your job is to select who speaks next.\n\n"
            "RULES:\n"
            "1. Rotate through ALL participants - do not favor any single participant\n"
            "2. Each participant should speak at least once before any participant speaks twice\n"
            "3. Continue for at least 5 rounds before ending the discussion\n"
            "4. Do NOT select the same participant twice in a row"
        ),
    )

    # Build workflow with request info enabled
    # Using agents= filter to only pause before pragmatist speaks (not every turn)
    # max_rounds=6: Limit to 6 rounds
    workflow = (
        GroupChatBuilder(
            participants=[optimist, pragmatist, creative],
            max_rounds=6,
            orchestrator_agent=orchestrator,
        )
        .with_request_info(agents=[pragmatist])  # Only pause before pragmatist speaks
        .build()
    )

    # Initiate the first run of the workflow.
    # Runs are not isolated; state is preserved across multiple calls to run.
    stream = workflow.run(
        "Discuss how our team should approach adopting AI tools for productivity. "
        "Consider benefits, risks, and implementation strategies.",
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
