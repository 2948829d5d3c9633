"""Port of MAF's ``samples/03-workflows/human-in-the-loop/agents_with_approval_requests.py``.

An email preprocessor feeds an email writer agent (passed straight to the builder) whose tools
include two that require approval. Each approval request the agent raises becomes a workflow
``request_info`` whose data is the ``function_approval_request`` content; the sample approves
them all with ``to_function_approval_response(approved=True)`` and reruns with the responses
until none is left; a function executor, the only ``output_from``, yields the agent's final text.

The Foundry client is a ``ScriptedChatClient`` whose turns follow the original's sample
output: the three lookup tools (no approval), then three ``read_historical_email_data`` calls
in one turn (three approvals in one batch), then ``send_email`` (one more), then the answer.
``send_email``'s one-second sleep is removed.
"""

import asyncio
import json
from dataclasses import dataclass
from typing import Annotated, Never

from agent_framework import Agent, Content, tool

from workflows import (
    AgentExecutorResponse,
    Executor,
    WorkflowBuilder,
    WorkflowContext,
    executor,
    handler,
)
from workflows.agents.local_chat import ScriptedChatClient, ToolCall


@tool(approval_mode="never_require")
def get_current_date() -> str:
    """Get the current date in YYYY-MM-DD format."""
    return "2025-11-07"


@tool(approval_mode="never_require")
def get_team_members_email_addresses() -> list[dict[str, str]]:
    """Get the email addresses of team members."""
    return [
        {
            "name": "Alice",
            "email": "alice@contoso.com",
            "position": "Software Engineer",
            "manager": "John Doe",
        },
        {
            "name": "Bob",
            "email": "bob@contoso.com",
            "position": "Product Manager",
            "manager": "John Doe",
        },
        {
            "name": "Charlie",
            "email": "charlie@contoso.com",
            "position": "Senior Software Engineer",
            "manager": "John Doe",
        },
        {
            "name": "Mike",
            "email": "mike@contoso.com",
            "position": "Principal Software Engineer Manager",
            "manager": "VP of Engineering",
        },
    ]


@tool(approval_mode="never_require")
def get_my_information() -> dict[str, str]:
    """Get my personal information."""
    return {
        "name": "John Doe",
        "email": "john@contoso.com",
        "position": "Software Engineer Manager",
        "manager": "Mike",
    }


@tool(approval_mode="always_require")
async def read_historical_email_data(
    email_address: Annotated[str, "The email address to read historical data from"],
    start_date: Annotated[str, "The start date in YYYY-MM-DD format"],
    end_date: Annotated[str, "The end date in YYYY-MM-DD format"],
) -> list[dict[str, str]]:
    """Read historical email data for a given email address and date range."""
    historical_data = {
        "alice@contoso.com": [
            {
                "from": "alice@contoso.com",
                "to": "john@contoso.com",
                "date": "2025-11-05",
                "subject": "Bug Bash Results",
                "body": (
                    "We just completed the bug bash and found a few issues that need immediate "
                    "attention."
                ),
            },
            {
                "from": "alice@contoso.com",
                "to": "john@contoso.com",
                "date": "2025-11-03",
                "subject": "Code Freeze",
                "body": "We are entering code freeze starting tomorrow.",
            },
        ],
        "bob@contoso.com": [
            {
                "from": "bob@contoso.com",
                "to": "john@contoso.com",
                "date": "2025-11-04",
                "subject": "Team Outing",
                "body": "Don't forget about the team outing this Friday!",
            },
            {
                "from": "bob@contoso.com",
                "to": "john@contoso.com",
                "date": "2025-11-02",
                "subject": "Requirements Update",
                "body": (
                    "The requirements for the new feature have been updated. Please review them."
                ),
            },
        ],
        "charlie@contoso.com": [
            {
                "from": "charlie@contoso.com",
                "to": "john@contoso.com",
                "date": "2025-11-05",
                "subject": "Project Update",
                "body": (
                    "The bug bash went well. A few critical bugs but should be fixed by the end "
                    "of the week."
                ),
            },
            {
                "from": "charlie@contoso.com",
                "to": "john@contoso.com",
                "date": "2025-11-06",
                "subject": "Code Review",
                "body": "Please review my latest code changes.",
            },
        ],
    }

    emails = historical_data.get(email_address, [])
    return [email for email in emails if start_date <= email["date"] <= end_date]


@tool(approval_mode="always_require")
async def send_email(
    to: Annotated[str, "The recipient email address"],
    subject: Annotated[str, "The email subject"],
    body: Annotated[str, "The email body"],
) -> str:
    """Send an email."""
    return "Email successfully sent."


def _history(address: str) -> ToolCall:
    return ToolCall(
        "read_historical_email_data",
        {"email_address": address, "start_date": "2025-10-31", "end_date": "2025-11-07"},
    )


EMAIL_WRITER_SCRIPT = [
    [
        ToolCall("get_my_information"),
        ToolCall("get_team_members_email_addresses"),
        ToolCall("get_current_date"),
    ],
    [_history("alice@contoso.com"), _history("bob@contoso.com"), _history("charlie@contoso.com")],
    ToolCall(
        "send_email",
        {
            "to": "mike@contoso.com",
            "subject": "Team's Status Update on the Project",
            "body": "Hi Mike, the bug bash is done, code freeze started on Nov 4, and the new "
            "feature's requirements are under review. Best regards, John",
        },
    ),
    "I've sent the status update to Mike with the relevant information from the team.",
]


@dataclass
class Email:
    sender: str
    subject: str
    body: str


class EmailPreprocessor(Executor):
    def __init__(self, special_email_addresses: set[str]) -> None:
        super().__init__(id="email_preprocessor")
        self.special_email_addresses = special_email_addresses

    @handler
    async def preprocess(self, email: Email, ctx: WorkflowContext[str]) -> None:
        """Preprocess the incoming email."""
        email_payload = (
            f"Incoming email:\nFrom: {email.sender}\nSubject: {email.subject}\nBody: {email.body}"
        )
        message = email_payload
        if email.sender in self.special_email_addresses:
            note = (
                "Priority sender context: this message is business-critical. "
                "If additional context is needed, use available tools to retrieve only the "
                "minimum relevant "
                "prior team communication related to this request."
            )
            message = f"{note}\n\n{email_payload}"

        await ctx.send_message(message)


@executor(id="conclude_workflow_executor")
async def conclude_workflow(
    email_response: AgentExecutorResponse,
    ctx: WorkflowContext[Never, str],
) -> None:
    """Conclude the workflow by yielding the final email response."""
    await ctx.yield_output(email_response.agent_response.text)


async def main() -> None:
    email_writer_agent = Agent(
        client=ScriptedChatClient(EMAIL_WRITER_SCRIPT, name="email-model"),
        name="EmailWriter",
        instructions=("You are an excellent email assistant. You respond to incoming emails."),
        tools=[
            read_historical_email_data,
            send_email,
            get_current_date,
            get_team_members_email_addresses,
            get_my_information,
        ],
    )

    email_processor = EmailPreprocessor(special_email_addresses={"mike@contoso.com"})

    workflow = (
        WorkflowBuilder(start_executor=email_processor, output_from=[conclude_workflow])
        .add_edge(email_processor, email_writer_agent)
        .add_edge(email_writer_agent, conclude_workflow)
        .build()
    )

    incoming_email = Email(
        sender="mike@contoso.com",
        subject="Important: Project Update",
        body="Please provide your team's status update on the project since last week.",
    )

    events = await workflow.run(incoming_email)
    request_info_events = events.get_request_info_events()

    while request_info_events:
        responses: dict[str, Content] = {}
        for request_info_event in request_info_events:
            data = request_info_event.data
            if not isinstance(data, Content) or data.type != "function_approval_request":
                raise ValueError(f"Unexpected request info content type: {type(data)}")

            if data.function_call is None:
                raise ValueError("Function call information is missing in the approval request.")

            arguments = json.dumps(data.function_call.parse_arguments(), indent=2)
            print(
                f"Received approval request for function: {data.function_call.name} with "
                f"args:\n{arguments}"
            )

            print("Performing automatic approval for demo purposes...")
            responses[request_info_event.request_id] = data.to_function_approval_response(
                approved=True
            )

        events = await workflow.run(responses=responses)
        request_info_events = events.get_request_info_events()

    print("Final email response conversation:")
    print(events.get_outputs()[0])


if __name__ == "__main__":
    asyncio.run(main())
