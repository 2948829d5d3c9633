"""Port of MAF's ``samples/03-workflows/human-in-the-loop/agents_with_HITL.py``.

A writer agent drafts; a ``Coordinator`` executor asks a human for feedback
(``request_info``) and either sends the writer the conversation plus the guidance, or, on
"approve", sends it to a final editor agent. Both agents are passed straight to the builder.
The run is streamed (each agent update printed under its author) and resumed with the answers
until no request is left.

The Foundry clients are ``ScriptedChatClient``s (the writer drafts twice, the editor once);
``input()`` is answered from ``INPUTS``: one revision, then approval.
"""

import asyncio
from collections.abc import AsyncIterable
from dataclasses import dataclass, field
from typing import Never

from agent_framework import Agent, AgentResponse, AgentResponseUpdate, Message

from workflows import (
    AgentExecutorRequest,
    AgentExecutorResponse,
    Executor,
    WorkflowBuilder,
    WorkflowContext,
    WorkflowEvent,
    handler,
    response_handler,
)
from workflows.agents.local_chat import ScriptedChatClient

INPUTS = ["Warmer, and name the USB-C charging pad.", "approve"]


@dataclass
class DraftFeedbackRequest:
    """Payload sent for human review."""

    prompt: str = ""
    conversation: list[Message] = field(default_factory=list)


class Coordinator(Executor):
    """Bridge between the writer agent, human feedback, and final editor."""

    def __init__(self, id: str, writer_name: str, final_editor_name: str) -> None:
        super().__init__(id)
        self.writer_name = writer_name
        self.final_editor_name = final_editor_name

    @handler
    async def on_writer_response(
        self,
        draft: AgentExecutorResponse,
        ctx: WorkflowContext[Never, AgentResponse],
    ) -> None:
        """Handle responses from the writer and final editor agents."""
        if draft.executor_id == self.final_editor_name:
            return

        conversation = list(draft.full_conversation)

        prompt = (
            "Review the draft from the writer and provide a short directional note "
            "(tone tweaks, must-have detail, target audience, etc.). "
            "Keep it under 30 words."
        )
        await ctx.request_info(
            request_data=DraftFeedbackRequest(prompt=prompt, conversation=conversation),
            response_type=str,
        )

    @response_handler
    async def on_human_feedback(
        self,
        original_request: DraftFeedbackRequest,
        feedback: str,
        ctx: WorkflowContext[AgentExecutorRequest],
    ) -> None:
        """Process human feedback and forward to the appropriate agent."""
        note = feedback.strip()
        if note.lower() == "approve":
            await ctx.send_message(
                AgentExecutorRequest(
                    messages=original_request.conversation
                    + [Message("user", contents=["The draft is approved as-is."])],
                    should_respond=True,
                ),
                target_id=self.final_editor_name,
            )
            return

        conversation: list[Message] = list(original_request.conversation)
        instruction = (
            "A human reviewer shared the following guidance:\n"
            f"{note or 'No specific guidance provided.'}\n\n"
            "Rewrite the draft from the previous assistant message into a polished final version. "
            "Keep the response under 120 words and reflect any requested tone adjustments."
        )
        conversation.append(Message("user", contents=[instruction]))
        await ctx.send_message(
            AgentExecutorRequest(messages=conversation, should_respond=True),
            target_id=self.writer_name,
        )


async def process_event_stream(stream: AsyncIterable[WorkflowEvent]) -> dict[str, str] | None:
    """Print agent updates and collect the human feedback the run asks for."""
    last_author: str | None = None

    requests: list[tuple[str, DraftFeedbackRequest]] = []
    async for event in stream:
        if event.type == "request_info" and isinstance(event.data, DraftFeedbackRequest):
            requests.append((event.request_id, event.data))
        elif event.type == "output" and isinstance(event.data, AgentResponseUpdate):
            update = event.data
            author = update.author_name
            if author != last_author:
                if last_author is not None:
                    print()
                print(f"{author}: {update.text}", end="", flush=True)
                last_author = author
            else:
                print(update.text, end="", flush=True)

    if requests:
        responses: dict[str, str] = {}
        for request_id, _ in requests:
            print("\nProvide guidance for the editor (or 'approve' to accept the draft).")
            answer = input("Human feedback: ").strip()
            if answer.lower() == "exit":
                print("Exiting...")
                return None
            responses[request_id] = answer
        return responses
    return None


async def main() -> None:
    """Run the workflow and bridge human feedback between two agents."""
    writer_agent = Agent(
        client=ScriptedChatClient(
            [
                "LumenX: bend the light to your desk, from cool focus to warm evenings.",
                (
                    "LumenX bends its warm glow to your evening and charges your phone on its "
                    "USB-C pad while you read."
                ),
            ],
            name="writer-model",
        ),
        name="writer_agent",
        instructions=("You are a marketing writer."),
        default_options={
            "tool_choice": "required",
        },
    )

    final_editor_agent = Agent(
        client=ScriptedChatClient(
            [
                (
                    "LumenX bends its warm glow to your evening and charges your phone on its "
                    "built-in USB-C pad while you read."
                )
            ],
            name="editor-model",
        ),
        name="final_editor_agent",
        instructions=(
            "You are an editor who polishes marketing copy after human approval. "
            "Correct any legal or factual issues. Return the final version even if no changes "
            "are made. "
        ),
    )

    coordinator = Coordinator(
        id="coordinator",
        writer_name=writer_agent.name,
        final_editor_name=final_editor_agent.name,
    )

    workflow = (
        WorkflowBuilder(start_executor=writer_agent)
        .add_edge(writer_agent, coordinator)
        .add_edge(coordinator, writer_agent)
        .add_edge(final_editor_agent, coordinator)
        .add_edge(coordinator, final_editor_agent)
        .build()
    )

    print(
        "Interactive mode. When prompted, provide a short feedback note for the editor.",
        flush=True,
    )

    stream = workflow.run(
        "Create a short launch blurb for the LumenX desk lamp. Emphasize adjustability and warm "
        "lighting.",
        stream=True,
    )

    pending_responses = await process_event_stream(stream)
    while pending_responses is not None:
        stream = workflow.run(stream=True, responses=pending_responses)
        pending_responses = await process_event_stream(stream)

    print("\nWorkflow complete.")


if __name__ == "__main__":
    asyncio.run(main())
