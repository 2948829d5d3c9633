"""Port of MAF's ``samples/03-workflows/agents/magentic_workflow_as_agent.py``.

A Magentic-One team (a researcher and a coder under a standard manager) is wrapped with
``workflow.as_agent()`` and run as one streaming agent: the participants' turns, marked
intermediate, arrive as reasoning updates, and the manager's final answer as the answer text.
The sample prints each response's author once and the text of its later updates.

The hosted Foundry clients are replaced: the manager's model is a ``ScriptedChatClient`` whose
one entry answers whichever Magentic prompt it is sent (the researcher first, then the coder,
then done), and each participant runs on its own local model. The coder's hosted code
interpreter tool is left out (the local model has none).
"""

import asyncio
import json

from agent_framework import (
    Agent,
    Message,
)

from workflows.agents.local_chat import LocalChatClient, ScriptedChatClient
from workflows.orchestrations import MagenticBuilder

TEAM = ("ResearcherAgent", "CoderAgent")


def _ledger(done: bool, speaker: str, instruction: str) -> str:
    return json.dumps(
        {
            "is_request_satisfied": {"reason": "Compared with the request.", "answer": done},
            "is_in_loop": {"reason": "No repetition.", "answer": False},
            "is_progress_being_made": {"reason": "New figures arrived.", "answer": True},
            "next_speaker": {"reason": "Owns the next step.", "answer": speaker},
            "instruction_or_question": {"reason": "The next step.", "answer": instruction},
        }
    )


def manager_model(messages: list[Message], options: object) -> str:
    """The manager's model: it answers whichever Magentic prompt it was sent."""
    prompt = messages[-1].text
    if "pre-survey" in prompt:
        return "1. GIVEN OR VERIFIED FACTS\n- Three models and one VM type are named."
    if "bullet-point plan" in prompt:
        return "- ResearcherAgent: find energy figures.\n- CoderAgent: compute CO2 estimates."
    if "final answer" in prompt:
        return "ResNet-50, BERT-base and GPT-2 are the most efficient picks for their tasks."
    spoken = [m.author_name for m in messages if m.role == "assistant" and m.author_name in TEAM]
    if not spoken:
        return _ledger(False, "ResearcherAgent", "Find published energy figures.")
    if spoken == ["ResearcherAgent"]:
        return _ledger(False, "CoderAgent", "Compute CO2 for 24 hours on Standard_NC6s_v3.")
    return _ledger(True, "CoderAgent", "Nothing more.")


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

    # Mark participant responses as intermediate so workflow.as_agent() maps
    # them to text_reasoning content while the final answer remains normal text.
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

    try:
        # Wrap the workflow as an agent for composition scenarios
        print("\nWrapping workflow as an agent and running...")
        workflow_agent = workflow.as_agent()

        last_response_id: str | None = None
        async for update in workflow_agent.run(task, stream=True):
            # Fallback for any other events with text
            if last_response_id != update.response_id:
                if last_response_id is not None:
                    print()  # Newline between different responses
                print(f"{update.author_name}: ", end="", flush=True)
                last_response_id = update.response_id
            else:
                print(update.text, end="", flush=True)

    except Exception as e:  # noqa: BLE001 - the sample reports any failure
        print(f"Workflow execution failed: {e}")


if __name__ == "__main__":
    asyncio.run(main())
