"""Port of MAF's ``samples/03-workflows/agents/group_chat_workflow_as_agent.py``.

A group chat led by an orchestrator agent (a researcher, then a writer, then the orchestrator
ends the chat with its own final message) is run as an agent with ``workflow.as_agent()``.
The participants are intermediate outputs, so their turns come back as reasoning contents
beside the orchestrator's final answer. Every model is scripted (the orchestrator's with its
three decisions); each agent has its own client.
"""

import asyncio

from agent_framework import Agent

from workflows.agents.local_chat import ScriptedChatClient
from workflows.orchestrations import GroupChatBuilder

ORCHESTRATOR_SCRIPT = [
    {
        "terminate": False,
        "reason": "We need the facts first.",
        "next_speaker": "Researcher",
        "final_message": None,
    },
    {
        "terminate": False,
        "reason": "Time to turn the notes into a plan.",
        "next_speaker": "Writer",
        "final_message": None,
    },
    {
        "terminate": True,
        "reason": "The plan is complete.",
        "next_speaker": None,
        "final_message": "Plan: book the venue, recruit mentors, open sign-ups, run the day.",
    },
]


async def main() -> None:
    researcher = Agent(
        name="Researcher",
        description="Collects relevant background information.",
        instructions="Gather concise facts that help a teammate answer the question.",
        client=ScriptedChatClient(
            ["Key considerations: venue, date, sponsors, mentors, judging, code of conduct."],
            name="researcher-model",
        ),
    )

    writer = Agent(
        name="Writer",
        description="Synthesizes a polished answer using the gathered notes.",
        instructions="Compose clear and structured answers using any notes provided.",
        client=ScriptedChatClient(
            ["1. Pick a date and venue. 2. Find sponsors and mentors. 3. Publish the rules."],
            name="writer-model",
        ),
    )

    _orch_client = ScriptedChatClient(ORCHESTRATOR_SCRIPT, name="orchestrator-model")

    # Mark participant responses as intermediate so workflow.as_agent() maps
    # them to text_reasoning content while the final answer remains normal text.
    workflow = GroupChatBuilder(
        participants=[researcher, writer],
        intermediate_output_from=[researcher, writer],
        orchestrator_agent=Agent(
            client=_orch_client,
            name="Orchestrator",
            instructions="You coordinate a team conversation to solve the user's task.",
        ),
    ).build()

    task = (
        "Outline the core considerations for planning a community hackathon, and finish with a "
        "concise action plan."
    )

    print("\nStarting Group Chat Workflow...\n")
    print(f"Input: {task}\n")

    try:
        workflow_agent = workflow.as_agent()
        agent_result = await workflow_agent.run(task)

        if agent_result.messages:
            # The output should contain a message from the researcher, a message from the writer,
            # and a final synthesized answer from the orchestrator.
            print("\n===== as_agent() Transcript =====")
            for i, msg in enumerate(agent_result.messages, start=1):
                role_value = getattr(msg.role, "value", msg.role)
                speaker = msg.author_name or role_value
                print(f"{'-' * 50}\n{i:02d} [{speaker}]\n{msg.text}")

    except Exception as e:  # noqa: BLE001 - the sample reports any failure
        print(f"Workflow execution failed: {e}")


if __name__ == "__main__":
    asyncio.run(main())
