"""MAF compatibility: human-in-the-loop as MAF's samples write it.

``ctx.request_info(data, ResponseType, request_id=...)`` from a handler, answers through
``run(responses=...)`` or ``run(checkpoint_id=..., responses=...)`` in a fresh workflow, the
``request_info`` event carried to a UI with ``to_dict``/``from_dict``, and MAF's lenience where a
request has no response handler.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Never

from workflows import (
    Executor,
    InMemoryCheckpointStorage,
    WorkflowBuilder,
    WorkflowContext,
    WorkflowEvent,
    WorkflowRunState,
    handler,
    response_handler,
)


@dataclass
class Draft:
    text: str


@dataclass
class Review:
    approved: bool
    note: str = ""


class Writer(Executor):
    @handler
    async def write(self, topic: str, ctx: WorkflowContext) -> None:
        await ctx.request_info(
            request_data=Draft(f"about {topic}"), response_type=Review, request_id=f"review-{topic}"
        )

    @response_handler
    async def reviewed(
        self, draft: Draft, review: Review, ctx: WorkflowContext[Never, str]
    ) -> None:
        verdict = "published" if review.approved else f"rejected ({review.note})"
        await ctx.yield_output(f"{draft.text}: {verdict} [{ctx.request_id}]")


def writer_workflow(storage: Any) -> Any:
    return WorkflowBuilder(
        start_executor=Writer(id="writer"), checkpoint_storage=storage, name="writer"
    ).build()


async def test_a_request_with_keyword_arguments_pauses_and_an_answer_completes_the_run() -> None:
    workflow = writer_workflow(None)
    paused = await workflow.run("cats")
    (request,) = paused.get_request_info_events()
    assert request.request_id == "review-cats" and request.source_executor_id == "writer"
    assert request.request_type is Draft and request.response_type is Review
    assert paused.get_final_state() == WorkflowRunState.IDLE_WITH_PENDING_REQUESTS
    done = await workflow.run(responses={"review-cats": Review(approved=True)})
    assert done.get_outputs() == ["about cats: published [review-cats]"]
    assert done.get_final_state() == WorkflowRunState.IDLE


async def test_a_fresh_workflow_answers_from_the_pause_checkpoint_in_one_call() -> None:
    storage = InMemoryCheckpointStorage()
    await writer_workflow(storage).run("dogs")
    pause = await storage.get_latest(workflow_name="writer")
    assert list(pause.pending_request_info_events) == ["review-dogs"]

    fresh = writer_workflow(storage)
    # A JSON answer from a UI is coerced into the declared response type.
    result = await fresh.run(
        checkpoint_id=pause.checkpoint_id,
        responses={"review-dogs": {"approved": False, "note": "too short"}},
    )
    assert result.get_outputs() == ["about dogs: rejected (too short) [review-dogs]"]
    assert result.get_request_info_events() == []  # the answered request is not re-emitted


async def test_resuming_the_pause_checkpoint_alone_re_emits_its_requests() -> None:
    storage = InMemoryCheckpointStorage()
    await writer_workflow(storage).run("owls")
    pause = await storage.get_latest(workflow_name="writer")
    again = await writer_workflow(storage).run(checkpoint_id=pause.checkpoint_id)
    assert [r.request_id for r in again.get_request_info_events()] == ["review-owls"]
    assert again.get_final_state() == WorkflowRunState.IDLE_WITH_PENDING_REQUESTS


async def test_a_request_event_travels_to_a_ui_and_back_as_a_dict() -> None:
    paused = await writer_workflow(None).run("bees")
    (request,) = paused.get_request_info_events()
    carried = request.to_dict()
    back = WorkflowEvent.from_dict(carried, allowed_types=[Draft])
    assert back.type == "request_info" and back.request_id == "review-bees"
    assert back.data == Draft("about bees") and back.response_type is Review


async def test_a_request_no_response_handler_takes_pauses_the_run_with_warnings() -> None:
    # MAF raises such a request and later drops its answer; both moments are visible here.
    class Careless(Executor):
        @handler
        async def ask(self, text: str, ctx: WorkflowContext) -> None:
            await ctx.request_info(Draft(text), int)

        @response_handler
        async def reviewed(self, draft: Draft, review: Review, ctx: WorkflowContext) -> None:
            pass

    workflow = WorkflowBuilder(start_executor=Careless(id="careless")).build()
    result = await workflow.run("x")
    assert result.get_final_state() == WorkflowRunState.IDLE_WITH_PENDING_REQUESTS
    assert any("no @response_handler" in str(e.data) for e in result if e.type == "warning")
    (request,) = result.get_request_info_events()
    answered = await workflow.run(responses={request.request_id: 3})
    assert answered.get_final_state() == WorkflowRunState.IDLE
    assert any("was dropped" in str(e.data) for e in answered if e.type == "warning")
