"""Port of MAF's ``samples/03-workflows/agents/workflow_as_agent_reflection_pattern.py``.

A workflow with a Worker <-> Reviewer cycle, run as an agent (``workflow.as_agent()``). The
worker asks its chat client for an answer and sends it for review; the reviewer asks its own
client for a structured verdict (a pydantic ``response_format``); a rejected answer is
regenerated with the feedback, an approved one is yielded as the agent's response.

The Foundry clients are ``ScriptedChatClient``s: the reviewer rejects the first answer and
approves the second, so the retry path runs.
"""

import asyncio
from dataclasses import dataclass
from uuid import uuid4

from agent_framework import AgentResponse, Message, SupportsChatGetResponse
from pydantic import BaseModel

from workflows import Executor, WorkflowBuilder, WorkflowContext, handler
from workflows.agents.local_chat import ScriptedChatClient


@dataclass
class ReviewRequest:
    """Structured request passed from Worker to Reviewer for evaluation."""

    request_id: str
    user_messages: list[Message]
    agent_messages: list[Message]


@dataclass
class ReviewResponse:
    """Structured response from Reviewer back to Worker."""

    request_id: str
    feedback: str
    approved: bool


class Reviewer(Executor):
    """Executor that reviews agent responses and provides structured feedback."""

    def __init__(self, id: str, client: SupportsChatGetResponse) -> None:
        super().__init__(id=id)
        self._chat_client = client

    @handler
    async def review(self, request: ReviewRequest, ctx: WorkflowContext[ReviewResponse]) -> None:
        print(f"Reviewer: Evaluating response for request {request.request_id[:8]}...")

        class _Response(BaseModel):
            feedback: str
            approved: bool

        messages = [
            Message(
                role="system",
                contents=[
                    (
                        "You are a reviewer for an AI agent. Provide feedback on the "
                        "exchange between a user and the agent. Indicate approval only if:\n"
                        "- Relevance: response addresses the query\n"
                        "- Accuracy: information is correct\n"
                        "- Clarity: response is easy to understand\n"
                        "- Completeness: response covers all aspects\n"
                        "Do not approve until all criteria are satisfied."
                    )
                ],
            )
        ]
        messages.extend(request.user_messages)
        messages.extend(request.agent_messages)
        messages.append(Message("user", ["Please review the agent's responses."]))

        print("Reviewer: Sending review request to LLM...")
        response = await self._chat_client.get_response(
            messages=messages, options={"response_format": _Response}
        )

        parsed = _Response.model_validate_json(response.messages[-1].text)

        print(f"Reviewer: Review complete - Approved: {parsed.approved}")
        print(f"Reviewer: Feedback: {parsed.feedback}")

        await ctx.send_message(
            ReviewResponse(
                request_id=request.request_id, feedback=parsed.feedback, approved=parsed.approved
            )
        )


class Worker(Executor):
    """Executor that generates responses and incorporates feedback when necessary."""

    def __init__(self, id: str, client: SupportsChatGetResponse) -> None:
        super().__init__(id=id)
        self._chat_client = client
        self._pending_requests: dict[str, tuple[ReviewRequest, list[Message]]] = {}

    @handler
    async def handle_user_messages(
        self, user_messages: list[Message], ctx: WorkflowContext[ReviewRequest]
    ) -> None:
        print("Worker: Received user messages, generating response...")

        messages = [Message("system", ["You are a helpful assistant."])]
        messages.extend(user_messages)

        print("Worker: Calling LLM to generate response...")
        response = await self._chat_client.get_response(messages=messages)
        print(f"Worker: Response generated: {response.messages[-1].text}")

        messages.extend(response.messages)

        request = ReviewRequest(
            request_id=str(uuid4()), user_messages=user_messages, agent_messages=response.messages
        )
        print(f"Worker: Sending response for review (ID: {request.request_id[:8]})")
        await ctx.send_message(request)

        self._pending_requests[request.request_id] = (request, messages)

    @handler
    async def handle_review_response(
        self, review: ReviewResponse, ctx: WorkflowContext[ReviewRequest, AgentResponse]
    ) -> None:
        print(
            f"Worker: Received review for request {review.request_id[:8]} - "
            f"Approved: {review.approved}"
        )

        if review.request_id not in self._pending_requests:
            raise ValueError(f"Unknown request ID in review: {review.request_id}")

        request, messages = self._pending_requests.pop(review.request_id)

        if review.approved:
            print("Worker: Response approved. Emitting to external consumer...")
            await ctx.yield_output(AgentResponse(messages=request.agent_messages))
            return

        print(f"Worker: Response not approved. Feedback: {review.feedback}")
        print("Worker: Regenerating response with feedback...")

        messages.append(Message("system", [review.feedback]))
        messages.append(
            Message("system", ["Please incorporate the feedback and regenerate the response."])
        )
        messages.extend(request.user_messages)

        response = await self._chat_client.get_response(messages=messages)
        print(f"Worker: New response generated: {response.messages[-1].text}")

        messages.extend(response.messages)

        new_request = ReviewRequest(
            request_id=review.request_id,
            user_messages=request.user_messages,
            agent_messages=response.messages,
        )
        await ctx.send_message(new_request)

        self._pending_requests[new_request.request_id] = (new_request, messages)


async def main() -> None:
    print("Starting Workflow Agent Demo")
    print("=" * 50)

    print("Building workflow with Worker ↔ Reviewer cycle...")
    worker = Worker(
        id="worker",
        client=ScriptedChatClient(
            [
                "Use a thread pool to read the files and sort the lines.",
                (
                    "Read the files with a pool of 32 worker processes, sort each file's lines, "
                    "then merge the sorted runs with heapq.merge into the output file."
                ),
            ],
            name="worker-model",
        ),
    )
    reviewer = Reviewer(
        id="reviewer",
        client=ScriptedChatClient(
            [
                {
                    "feedback": "A million files will not fit in memory: merge sorted runs.",
                    "approved": False,
                },
                {"feedback": "Relevant, correct and complete.", "approved": True},
            ],
            name="reviewer-model",
        ),
    )

    agent = (
        WorkflowBuilder(start_executor=worker)
        .add_edge(worker, reviewer)
        .add_edge(reviewer, worker)
        .build()
        .as_agent()
    )

    print("Running workflow agent with user query...")
    print(
        "Query: 'Write code for parallel reading 1 million files on disk and write to a sorted "
        "output file.'"
    )
    print("-" * 50)

    response = await agent.run(
        "Write code for parallel reading 1 million files on disk and write to a sorted output file."
    )

    print("-" * 50)
    print("Final Approved Response:")
    print(f"{response.agent_id}: {response.text}")


if __name__ == "__main__":
    print("Initializing Workflow as Agent Sample...")
    asyncio.run(main())
