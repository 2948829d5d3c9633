"""Port of MAF's ``samples/03-workflows/orchestrations/group_chat_agent_manager.py``.

An orchestrator agent runs the group chat: after the task and after each turn it answers with
an ``AgentOrchestrationOutput`` naming the next speaker, here the researcher then the writer,
and then ends the chat with its own final message (before the four-assistant-message
termination condition is reached). Its model is scripted with those three decisions; the
researcher and the writer are scripted too, so the transcript reads like the sample's. The
participants' streamed turns are intermediate outputs; the orchestrator's closing message is
the workflow's output.
"""

import asyncio
from typing import cast

from agent_framework import (
    Agent,
    AgentResponseUpdate,
    Message,
)

from workflows.agents.local_chat import ScriptedChatClient
from workflows.orchestrations import GroupChatBuilder

ORCHESTRATOR_AGENT_INSTRUCTIONS = """
You coordinate a team conversation to solve the user's task.

Guidelines:
- Start with Researcher to gather information
- Then have Writer synthesize the final answer
- Only finish after both have contributed meaningfully
"""

# The orchestrator's decisions, one per call, as its structured output.
ORCHESTRATOR_SCRIPT = [
    {
        "terminate": False,
        "reason": "Facts come first.",
        "next_speaker": "Researcher",
        "final_message": None,
    },
    {
        "terminate": False,
        "reason": "The facts are in; time to write them up.",
        "next_speaker": "Writer",
        "final_message": None,
    },
    {
        "terminate": True,
        "reason": "Both have contributed.",
        "next_speaker": None,
        "final_message": "async/await lets one thread overlap many waits on I/O.",
    },
]


async def main() -> None:
    # Orchestrator agent that manages the conversation
    # Note: This agent (and the underlying chat client) must support structured outputs.
    # `response_format` is set internally by the GroupChat workflow when the agent is invoked.
    orchestrator_agent = Agent(
        name="Orchestrator",
        description="Coordinates multi-agent collaboration by selecting speakers",
        instructions=ORCHESTRATOR_AGENT_INSTRUCTIONS,
        client=ScriptedChatClient(ORCHESTRATOR_SCRIPT, name="orchestrator-model"),
    )

    # Participant agents
    researcher = Agent(
        name="Researcher",
        description="Collects relevant background information",
        instructions="Gather concise facts that help a teammate answer the question.",
        client=ScriptedChatClient(
            ["Coroutines suspend at await; the event loop runs others meanwhile."],
            name="researcher-model",
        ),
    )

    writer = Agent(
        name="Writer",
        description="Synthesizes polished answers from gathered information",
        instructions="Compose clear and structured answers using any notes provided.",
        client=ScriptedChatClient(
            ["Summary: async/await gives concurrency for I/O-bound code without threads."],
            name="writer-model",
        ),
    )

    # Build the group chat workflow
    # termination_condition: stop after 4 assistant messages
    # (The agent orchestrator will intelligently decide when to end before this limit but just in
    # case)
    # Mark participant responses as intermediate so the stream shows the
    # conversation as it unfolds while the orchestrator's transcript remains the
    # terminal workflow output.
    workflow = (
        GroupChatBuilder(
            participants=[researcher, writer],
            termination_condition=lambda messages: (
                sum(1 for msg in messages if msg.role == "assistant") >= 4
            ),
            intermediate_output_from=[researcher, writer],
            orchestrator_agent=orchestrator_agent,
        )
        # Set a hard termination condition: stop after 4 assistant messages
        # The agent orchestrator will intelligently decide when to end before this limit but just
        # in case
        .with_termination_condition(
            lambda messages: sum(1 for msg in messages if msg.role == "assistant") >= 4
        )
        .build()
    )

    task = "What are the key benefits of using async/await in Python? Provide a concise summary."

    print("\nStarting Group Chat with Agent-Based Manager...\n")
    print(f"TASK: {task}\n")
    print("=" * 80)

    # Keep track of the last response to format output nicely in streaming mode
    last_response_id: str | None = None
    async for event in workflow.run(task, stream=True):
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
            elif event.type == "output":
                # The output of the group chat workflow is a collection of chat messages from all
                # participants
                outputs = cast(list[Message], event.data)
                print("\n" + "=" * 80)
                print("\nFinal Conversation Transcript:\n")
                for message in outputs:
                    print(f"{message.author_name or message.role}: {message.text}\n")


if __name__ == "__main__":
    asyncio.run(main())
