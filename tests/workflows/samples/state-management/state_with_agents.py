"""Port of MAF's ``samples/03-workflows/state-management/state_with_agents.py``.

An email is stored once in the workflow state under an id; a spam detection agent classifies
it with a structured output, a function executor turns that into a ``DetectionResult`` read
against the state, and conditional edges route it either to an email assistant agent or to a
spam notice. Both agents are passed straight to the builder.

The Foundry clients are ``ScriptedChatClient``s: the detector finds the sample's default
email to be spam (the original's ``resources/spam.txt`` is not ported, so the default text is
used, as the original does when the file is missing). As on MAF 1.23, nothing designates
``output_from``, so the agents' responses are workflow outputs too and the "final result"
printed, the first output, is the detector's answer.
"""

import asyncio
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Never
from uuid import uuid4

from agent_framework import Agent, Message
from agent_framework.openai import OpenAIChatOptions
from pydantic import BaseModel

from workflows import (
    AgentExecutorRequest,
    AgentExecutorResponse,
    WorkflowBuilder,
    WorkflowContext,
    executor,
)
from workflows.agents.local_chat import ScriptedChatClient

EMAIL_STATE_PREFIX = "email:"
CURRENT_EMAIL_ID_KEY = "current_email_id"


class DetectionResultAgent(BaseModel):
    """Structured output returned by the spam detection agent."""

    is_spam: bool
    reason: str


class EmailResponse(BaseModel):
    """Structured output returned by the email assistant agent."""

    response: str


@dataclass
class DetectionResult:
    """Internal detection result enriched with the state email_id for later lookups."""

    is_spam: bool
    reason: str
    email_id: str


@dataclass
class Email:
    """In memory record stored in state to avoid re-sending large bodies on edges."""

    email_id: str
    email_content: str


def get_condition(expected_result: bool):
    """Create a condition predicate for DetectionResult.is_spam.

    Contract:
    - If the message is not a DetectionResult, allow it to pass to avoid accidental dead ends.
    - Otherwise, return True only when is_spam matches expected_result.
    """

    def condition(message: Any) -> bool:
        if not isinstance(message, DetectionResult):
            return True
        return message.is_spam == expected_result

    return condition


@executor(id="store_email")
async def store_email(email_text: str, ctx: WorkflowContext[AgentExecutorRequest]) -> None:
    """Persist the raw email content in state and trigger spam detection.

    Responsibilities:
    - Generate a unique email_id (UUID) for downstream retrieval.
    - Store the Email object under a namespaced key and set the current id pointer.
    - Emit an AgentExecutorRequest asking the detector to respond.
    """
    new_email = Email(email_id=str(uuid4()), email_content=email_text)
    ctx.set_state(f"{EMAIL_STATE_PREFIX}{new_email.email_id}", new_email)
    ctx.set_state(CURRENT_EMAIL_ID_KEY, new_email.email_id)

    await ctx.send_message(
        AgentExecutorRequest(
            messages=[Message("user", contents=[new_email.email_content])], should_respond=True
        )
    )


@executor(id="to_detection_result")
async def to_detection_result(
    response: AgentExecutorResponse, ctx: WorkflowContext[DetectionResult]
) -> None:
    """Parse spam detection JSON into a structured model and enrich with email_id.

    Steps:
    1) Validate the agent's JSON output into DetectionResultAgent.
    2) Retrieve the current email_id from workflow state.
    3) Send a typed DetectionResult for conditional routing.
    """
    parsed = DetectionResultAgent.model_validate_json(response.agent_response.text)
    email_id: str = ctx.get_state(CURRENT_EMAIL_ID_KEY)
    await ctx.send_message(
        DetectionResult(is_spam=parsed.is_spam, reason=parsed.reason, email_id=email_id)
    )


@executor(id="submit_to_email_assistant")
async def submit_to_email_assistant(
    detection: DetectionResult, ctx: WorkflowContext[AgentExecutorRequest]
) -> None:
    """Forward non spam email content to the drafting agent.

    Guard:
    - This path should only receive non spam. Raise if misrouted.
    """
    if detection.is_spam:
        raise RuntimeError("This executor should only handle non-spam messages.")

    email: Email = ctx.get_state(f"{EMAIL_STATE_PREFIX}{detection.email_id}")
    await ctx.send_message(
        AgentExecutorRequest(
            messages=[Message("user", contents=[email.email_content])], should_respond=True
        )
    )


@executor(id="finalize_and_send")
async def finalize_and_send(
    response: AgentExecutorResponse, ctx: WorkflowContext[Never, str]
) -> None:
    """Validate the drafted reply and yield the final output."""
    parsed = EmailResponse.model_validate_json(response.agent_response.text)
    await ctx.yield_output(f"Email sent: {parsed.response}")


@executor(id="handle_spam")
async def handle_spam(detection: DetectionResult, ctx: WorkflowContext[Never, str]) -> None:
    """Yield output describing why the email was marked as spam."""
    if detection.is_spam:
        await ctx.yield_output(f"Email marked as spam: {detection.reason}")
    else:
        raise RuntimeError("This executor should only handle spam messages.")


def create_spam_detection_agent() -> Agent:
    """Creates a spam detection agent."""
    return Agent(
        client=ScriptedChatClient(
            [
                {
                    "is_spam": True,
                    "reason": "Unrealistic prize claim and a click-here link: a lottery scam.",
                }
            ],
            name="detector-model",
        ),
        instructions=(
            "You are a spam detection assistant that identifies spam emails. "
            "Always return JSON with fields is_spam (bool) and reason (string)."
        ),
        default_options=OpenAIChatOptions[Any](response_format=DetectionResultAgent),
        name="spam_detection_agent",
    )


def create_email_assistant_agent() -> Agent:
    """Creates an email assistant agent."""
    return Agent(
        client=ScriptedChatClient([], name="assistant-model"),
        instructions=(
            "You are an email assistant that helps users draft responses to emails with "
            "professionalism. "
            "Return JSON with a single field 'response' containing the drafted reply."
        ),
        default_options=OpenAIChatOptions[Any](response_format=EmailResponse),
        name="email_assistant_agent",
    )


async def main() -> None:
    """Build and run the workflow state with agents and conditional routing workflow."""

    spam_detection_agent = create_spam_detection_agent()
    email_assistant_agent = create_email_assistant_agent()

    workflow = (
        WorkflowBuilder(start_executor=store_email)
        .add_edge(store_email, spam_detection_agent)
        .add_edge(spam_detection_agent, to_detection_result)
        .add_edge(to_detection_result, submit_to_email_assistant, condition=get_condition(False))
        .add_edge(to_detection_result, handle_spam, condition=get_condition(True))
        .add_edge(submit_to_email_assistant, email_assistant_agent)
        .add_edge(email_assistant_agent, finalize_and_send)
        .build()
    )

    current_file = Path(__file__)
    resources_path = current_file.parent.parent / "resources" / "spam.txt"
    if resources_path.exists():
        email = resources_path.read_text(encoding="utf-8")
    else:
        print("Unable to find resource file, using default text.")
        email = "You are a WINNER! Click here for a free lottery offer!!!"

    events = await workflow.run(email)
    outputs = events.get_outputs()

    if outputs:
        print(f"Final result: {outputs[0]}")


if __name__ == "__main__":
    asyncio.run(main())
