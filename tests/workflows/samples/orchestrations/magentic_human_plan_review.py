"""Port of MAF's ``samples/03-workflows/orchestrations/magentic_human_plan_review.py``.

A researcher and an analyst work under a standard manager whose every plan a person reviews.
The run below walks each review path: the first plan is revised by the reviewer (the manager
replans and asks again), the second approved; after the researcher's turn the analyst stalls
twice, which with ``max_stall_count=1`` resets the team and replans, and that plan comes for
review marked stalled, with the progress ledger that caused it; once approved, the analyst
finishes and the manager answers.

The hosted Foundry client is replaced: the manager's model is a ``ScriptedChatClient`` whose
one entry answers whichever Magentic prompt it is sent, judging progress from the conversation;
the participants run on local models, one each. ``input()`` is answered from ``INPUTS``.
"""

import asyncio
import json
from collections.abc import AsyncIterable
from typing import cast

from agent_framework import (
    Agent,
    AgentResponseUpdate,
    Message,
)

from workflows import WorkflowEvent
from workflows.agents.local_chat import LocalChatClient, ScriptedChatClient
from workflows.orchestrations import (
    MagenticBuilder,
    MagenticPlanReviewRequest,
    MagenticPlanReviewResponse,
)

INPUTS = ["Please add a step where the analyst compares production costs.", "", ""]

FEEDBACK_MARK = "compares production costs"
TEAM = ("ResearcherAgent", "AnalystAgent")


def _ledger(done: bool, progress: bool, speaker: str, instruction: str) -> str:
    return json.dumps(
        {
            "is_request_satisfied": {"reason": "Compared with the request.", "answer": done},
            "is_in_loop": {"reason": "No repeated requests yet.", "answer": False},
            "is_progress_being_made": {"reason": "Judged from the last turn.", "answer": progress},
            "next_speaker": {"reason": "Owns the next step.", "answer": speaker},
            "instruction_or_question": {"reason": "The next step.", "answer": instruction},
        }
    )


def _replan(messages: list[Message]) -> str:
    if any(FEEDBACK_MARK in m.text for m in messages):
        return "Plan v2:\n- ResearcherAgent: gather SAF pathways.\n- AnalystAgent: compare costs."
    return "Plan v3:\n- AnalystAgent: summarize the gathered pathways in one table."


def _progress(messages: list[Message]) -> str:
    spoken = [m.author_name for m in messages if m.role == "assistant" and m.author_name in TEAM]
    if any("Plan v3" in m.text for m in messages):
        if not spoken:
            return _ledger(False, True, "AnalystAgent", "Summarize the pathways in one table.")
        return _ledger(True, True, "AnalystAgent", "Done.")
    if not spoken:
        return _ledger(False, True, "ResearcherAgent", "Gather the main SAF pathways.")
    if spoken == ["ResearcherAgent"]:
        return _ledger(False, True, "AnalystAgent", "Compare the production costs.")
    return _ledger(False, False, "AnalystAgent", "Compare the production costs again.")


def manager_model(messages: list[Message], options: object) -> str:
    """The manager's model: it answers whichever Magentic prompt it was sent."""
    prompt = messages[-1].text
    if "pre-survey" in prompt:
        return "1. GIVEN OR VERIFIED FACTS\n- The topic is sustainable aviation fuel (SAF)."
    if "bullet-point plan" in prompt:
        return "Plan v1:\n- ResearcherAgent: gather SAF pathways."
    if "rewrite the following fact sheet" in prompt:
        return "1. GIVEN OR VERIFIED FACTS\n- SAF pathways include HEFA and alcohol-to-jet."
    if "new plan" in prompt:
        return _replan(messages)
    if "final answer" in prompt:
        return "SAF from HEFA is mature today; alcohol-to-jet and e-fuels scale next."
    return _progress(messages)


# Keep track of the last response to format output nicely in streaming mode
last_response_id: str | None = None


async def process_event_stream(
    stream: AsyncIterable[WorkflowEvent],
) -> dict[str, MagenticPlanReviewResponse] | None:
    """Process events from the workflow stream to capture human feedback requests."""
    global last_response_id

    requests: dict[str, MagenticPlanReviewRequest] = {}
    async for event in stream:
        if event.type == "request_info" and event.request_type is MagenticPlanReviewRequest:
            requests[event.request_id] = cast(MagenticPlanReviewRequest, event.data)

        if event.type in ("intermediate", "output"):
            data = event.data
            if isinstance(data, AgentResponseUpdate):
                rid = data.response_id
                if rid != last_response_id:
                    if last_response_id is not None:
                        print("\n")
                    print(f"{data.author_name}:", end=" ", flush=True)
                    last_response_id = rid
                print(data.text, end="", flush=True)
            else:
                # The output of the workflow comes from the orchestrator and it's a list of messages
                print("\n" + "=" * 60)
                print("DISCUSSION COMPLETE")
                print("=" * 60)
                print("Final discussion summary:")
                # To make the type checker happy, we cast event.data to the expected type
                outputs = cast(list[Message], event.data)
                for msg in outputs:
                    speaker = msg.author_name or msg.role
                    print(f"[{speaker}]: {msg.text}")

    responses: dict[str, MagenticPlanReviewResponse] = {}
    if requests:
        for request_id, request in requests.items():
            print("\n\n[Magentic Plan Review Request]")
            if request.current_progress is not None:
                print("Current Progress Ledger:")
                print(json.dumps(request.current_progress.to_dict(), indent=2))
                print()
            print(f"Proposed Plan:\n{request.plan.text}\n")
            print("Please provide your feedback (press Enter to approve):")

            reply = input("> ")
            if reply.strip() == "":
                print("Plan approved.\n")
                responses[request_id] = request.approve()
            else:
                print("Plan revised by human.\n")
                responses[request_id] = request.revise(reply)

    return responses if responses else None


async def main() -> None:
    researcher_agent = Agent(
        name="ResearcherAgent",
        description="Specialist in research and information gathering",
        instructions="You are a Researcher. You find information and gather facts.",
        client=LocalChatClient(name="researcher-model"),
    )

    analyst_agent = Agent(
        name="AnalystAgent",
        description="Data analyst who processes and summarizes research findings",
        instructions="You are an Analyst. You analyze findings and create summaries.",
        client=LocalChatClient(name="analyst-model"),
    )

    manager_agent = Agent(
        name="MagenticManager",
        description="Orchestrator that coordinates the workflow",
        instructions="You coordinate a team to complete tasks efficiently.",
        client=ScriptedChatClient([manager_model] * 30, name="manager-model"),
    )

    print("\nBuilding Magentic Workflow with Human Plan Review...")

    # enable_plan_review=True: Request human input for plan review.
    # Mark participant responses as intermediate so the stream shows the
    # conversation as it unfolds while the manager's final answer remains the
    # terminal workflow output.
    workflow = MagenticBuilder(
        participants=[researcher_agent, analyst_agent],
        enable_plan_review=True,
        intermediate_output_from=[researcher_agent, analyst_agent],
        manager_agent=manager_agent,
        max_round_count=10,
        max_stall_count=1,
        max_reset_count=2,
    ).build()

    task = "Research sustainable aviation fuel technology and summarize the findings."

    print(f"\nTask: {task}")
    print("\nStarting workflow execution...")
    print("=" * 60)

    # Initiate the first run of the workflow.
    # Runs are not isolated; state is preserved across multiple calls to run.
    stream = workflow.run(task, stream=True)

    pending_responses = await process_event_stream(stream)
    while pending_responses is not None:
        # Run the workflow until there is no more human feedback to provide,
        # in which case this workflow completes.
        stream = workflow.run(stream=True, responses=pending_responses)
        pending_responses = await process_event_stream(stream)


if __name__ == "__main__":
    asyncio.run(main())
