"""Port of MAF's ``samples/03-workflows/agents/workflow_as_agent_human_in_the_loop.py``.

A Worker <-> Reviewer workflow run as an agent, where the reviewer always escalates to a
human: its ``request_info`` reaches the agent's caller as a ``request_info`` function call, whose
arguments (``WorkflowAgent.RequestInfoFunctionArgs``) carry the request event; the caller
answers with a function result holding a ``ReviewResponse``, and the approved answer comes back
as the agent's response.

The original imports ``ReviewRequest``, ``ReviewResponse`` and ``Worker`` from its sibling
``workflow_as_agent_reflection_pattern.py``; a port is loaded on its own (once per engine), so
those three definitions are repeated here unchanged. The Foundry client is a
``ScriptedChatClient``.
"""

import asyncio
from dataclasses import dataclass
from uuid import uuid4

from agent_framework import AgentResponse, Content, Message, SupportsChatGetResponse

from workflows import (
    Executor,
    WorkflowAgent,
    WorkflowBuilder,
    WorkflowContext,
    handler,
    response_handler,
)
from workflows.agents.local_chat import ScriptedChatClient

# region From workflow_as_agent_reflection_pattern.py


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


# endregion


@dataclass
class HumanReviewRequest:
    """A request message type for escalation to a human reviewer."""

    agent_request: ReviewRequest | None = None


class ReviewerWithHumanInTheLoop(Executor):
    """Executor that always escalates reviews to a human manager."""

    def __init__(self, worker_id: str, reviewer_id: str | None = None) -> None:
        unique_id = reviewer_id or f"{worker_id}-reviewer"
        super().__init__(id=unique_id)
        self._worker_id = worker_id

    @handler
    async def review(self, request: ReviewRequest, ctx: WorkflowContext) -> None:
        print(f"Reviewer: Evaluating response for request {request.request_id[:8]}...")
        print("Reviewer: Escalating to human manager...")

        await ctx.request_info(
            request_data=HumanReviewRequest(agent_request=request), response_type=ReviewResponse
        )

    @response_handler
    async def accept_human_review(
        self,
        original_request: HumanReviewRequest,
        response: ReviewResponse,
        ctx: WorkflowContext[ReviewResponse],
    ) -> None:
        print(f"Reviewer: Accepting human review for request {response.request_id[:8]}...")
        print(f"Reviewer: Human feedback: {response.feedback}")
        print(f"Reviewer: Human approved: {response.approved}")
        print("Reviewer: Forwarding human review back to worker...")
        await ctx.send_message(response, target_id=self._worker_id)


async def main() -> None:
    print("Starting Workflow Agent with Human-in-the-Loop Demo")
    print("=" * 50)

    print("Building workflow with Worker-Reviewer cycle...")
    worker = Worker(
        id="worker",
        client=ScriptedChatClient(
            [
                (
                    "Split the file list across a process pool, sort each chunk, then merge the "
                    "sorted chunks with heapq.merge into the output file."
                )
            ],
            name="worker-model",
        ),
    )
    reviewer = ReviewerWithHumanInTheLoop(worker_id="worker")

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
        "Write code for parallel reading 1 million Files on disk and write to a sorted output file."
    )

    human_review_function_call: Content | None = None
    for message in response.messages:
        for content in message.contents:
            if content.name == WorkflowAgent.REQUEST_INFO_FUNCTION_NAME:
                human_review_function_call = content

    if human_review_function_call:
        human_request_args = WorkflowAgent.RequestInfoFunctionArgs.from_dict(
            human_review_function_call.arguments
        )
        request_payload = human_request_args.request_event.data
        if not isinstance(request_payload, HumanReviewRequest):
            raise ValueError("Human review request payload must be a HumanReviewRequest.")
        if not request_payload.agent_request:
            raise ValueError("Human review request must contain an agent_request.")
        human_response = ReviewResponse(
            request_id=request_payload.agent_request.request_id, feedback="", approved=True
        )
        human_review_function_result = Content(
            "function_result",
            call_id=human_review_function_call.call_id,
            result=human_response,
        )
        response = await agent.run(Message("tool", [human_review_function_result]))
        print(f"📤 Agent Response: {response.messages[-1].text}")

    print("=" * 50)
    print("Workflow completed!")


if __name__ == "__main__":
    print("Initializing Workflow as Agent Sample...")
    asyncio.run(main())
