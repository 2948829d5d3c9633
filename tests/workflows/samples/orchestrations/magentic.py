"""Port of MAF's ``samples/03-workflows/orchestrations/magentic.py``.

A Magentic-One team (a researcher and a coder) works on an energy-efficiency report under a
standard manager; the run is streamed: the participants' turns as intermediate outputs, the
manager's plan and progress ledgers as ``magentic_orchestrator`` events, each request to a
participant as a ``group_chat`` event, and the final answer as the output.

The hosted Foundry client is replaced: the manager's model is a ``ScriptedChatClient`` whose
one entry reads the prompt it is given (fact sheet, plan, progress ledger, final answer) and
answers it, deciding the next speaker from who has spoken so far; its second ledger comes in a
Markdown fence with Python's ``True``/``False``, which the manager still reads. The
participants run on local models, one each. The coder's hosted code interpreter tool is left
out (the local model has none).
"""

import asyncio
import json
import logging
from typing import cast

from agent_framework import (
    Agent,
    AgentResponseUpdate,
    Message,
)

from workflows import WorkflowEvent
from workflows.agents.local_chat import LocalChatClient, ScriptedChatClient
from workflows.orchestrations import (
    GroupChatRequestSentEvent,
    MagenticBuilder,
    MagenticOrchestrator,
    MagenticProgressLedger,
)

logging.basicConfig(level=logging.WARNING)
logger = logging.getLogger(__name__)

TEAM = ("ResearcherAgent", "CoderAgent")


def _ledger(done: bool, speaker: str, instruction: str) -> dict[str, object]:
    return {
        "is_request_satisfied": {"reason": "Checked against the request.", "answer": done},
        "is_in_loop": {"reason": "Each turn asked for something new.", "answer": False},
        "is_progress_being_made": {"reason": "The last turn added facts.", "answer": True},
        "next_speaker": {"reason": "Best placed for the next step.", "answer": speaker},
        "instruction_or_question": {"reason": "The next step of the plan.", "answer": instruction},
    }


def manager_model(messages: list[Message], options: object) -> str:
    """The manager's model: it answers whichever Magentic prompt it was sent."""
    prompt = messages[-1].text
    if "pre-survey" in prompt:
        return (
            "1. GIVEN OR VERIFIED FACTS\n- Models: ResNet-50, BERT-base, GPT-2.\n"
            "2. FACTS TO LOOK UP\n- Published training compute of each model.\n"
            "3. FACTS TO DERIVE\n- Energy and CO2 for 24 hours on one V100 VM.\n"
            "4. EDUCATED GUESSES\n- GPT-2 costs the most to train."
        )
    if "bullet-point plan" in prompt:
        return (
            "- ResearcherAgent: gather published energy figures.\n"
            "- CoderAgent: compute CO2 for a 24 hour Standard_NC6s_v3 run."
        )
    if "final answer" in prompt:
        return (
            "ResNet-50 is the most efficient for images, BERT-base for text classification "
            "and GPT-2 for generation; a 24 hour run emits about 7 kg of CO2."
        )
    spoken = [m.author_name for m in messages if m.role == "assistant" and m.author_name in TEAM]
    if not spoken:
        return json.dumps(_ledger(False, "ResearcherAgent", "Gather published energy figures."))
    if spoken == ["ResearcherAgent"]:
        # A model that ignored "pure JSON": fenced, with Python's literals.
        ledger = json.dumps(_ledger(False, "CoderAgent", "Compute the CO2 estimates."), indent=2)
        return "Here is the ledger:\n```json\n" + ledger.replace("false", "False") + "\n```"
    return json.dumps(_ledger(True, "CoderAgent", "Nothing more is needed."))


async def main() -> None:
    researcher_agent = Agent(
        name="ResearcherAgent",
        description="Specialist in research and information gathering",
        instructions=(
            "You are a Researcher. You find information without additional computation or "
            "quantitative analysis."
        ),
        client=LocalChatClient(name="researcher-model"),
    )

    coder_agent = Agent(
        name="CoderAgent",
        description=(
            "A helpful assistant that writes and executes code to process and analyze data."
        ),
        instructions=(
            "You solve questions using code. Please provide detailed analysis and computation "
            "process."
        ),
        client=LocalChatClient(name="coder-model"),
    )

    # Create a manager agent for orchestration
    manager_agent = Agent(
        name="MagenticManager",
        description="Orchestrator that coordinates the research and coding workflow",
        instructions="You coordinate a team to complete complex tasks efficiently.",
        client=ScriptedChatClient([manager_model] * 20, name="manager-model"),
    )

    print("\nBuilding Magentic Workflow...")

    # Mark participant responses as intermediate so the stream shows the
    # conversation as it unfolds while the manager's final answer remains the
    # terminal workflow output.
    workflow = MagenticBuilder(
        participants=[researcher_agent, coder_agent],
        intermediate_output_from=[researcher_agent, coder_agent],
        manager_agent=manager_agent,
        max_round_count=10,
        max_stall_count=3,
        max_reset_count=2,
    ).build()

    task = (
        "I am preparing a report on the energy efficiency of different machine learning model "
        "architectures. Compare the estimated training and inference energy consumption of "
        "ResNet-50, BERT-base, and GPT-2 on standard datasets (e.g., ImageNet for ResNet, GLUE "
        "for BERT, WebText for GPT-2). Then, estimate the CO2 emissions associated with each, "
        "assuming training on an Azure Standard_NC6s_v3 VM for 24 hours. Provide tables for "
        "clarity, and recommend the most energy-efficient model per task type (image "
        "classification, text classification, and text generation)."
    )

    print(f"\nTask: {task}")
    print("\nStarting workflow execution...")

    # Keep track of the last executor to format output nicely in streaming mode
    last_message_id: str | None = None
    output_event: WorkflowEvent | None = None
    async for event in workflow.run(task, stream=True):
        if event.type in ("intermediate", "output"):
            if event.executor_id == MagenticOrchestrator.MANAGER_NAME:
                output_event = event
            else:
                event_data = cast(AgentResponseUpdate, event.data)
                message_id = event_data.message_id
                if message_id != last_message_id:
                    if last_message_id is not None:
                        print("\n")
                    print(f"- {event.executor_id}:", end=" ", flush=True)
                    last_message_id = message_id
                print(event_data, end="", flush=True)

        elif event.type == "magentic_orchestrator":
            print(f"\n[Magentic Orchestrator Event] Type: {event.data.event_type.name}")
            if isinstance(event.data.content, Message):
                print(f"Please review the plan:\n{event.data.content.text}")
            elif isinstance(event.data.content, MagenticProgressLedger):
                ledger = json.dumps(event.data.content.to_dict(), indent=2)
                print(f"Please review progress ledger:\n{ledger}")
            else:
                print(f"Unknown data type in MagenticOrchestratorEvent: {type(event.data.content)}")

        elif event.type == "group_chat" and isinstance(event.data, GroupChatRequestSentEvent):
            print(
                f"\n[REQUEST SENT ({event.data.round_index})] to agent: "
                f"{event.data.participant_name}"
            )

    if not output_event:
        raise RuntimeError("Workflow did not produce a final output event.")

    print("\n\nWorkflow completed!")
    print("Final Output:")
    # The output of the Magentic workflow is an AgentResponse or AgentResponseUpdate,
    # which contains the final message text.
    output_message = cast(AgentResponseUpdate, output_event.data)
    print(output_message.text)


if __name__ == "__main__":
    asyncio.run(main())
