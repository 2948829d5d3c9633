"""MAF compatibility: shared state, and what one workflow object keeps between its runs.

In MAF a built workflow is one conversation: shared state and the executors' attributes carry
from one ``run()`` to the next, unanswered requests stay pending across a new message, and a
second run while the first one's stream is still held is refused.
"""

from __future__ import annotations

import gc
from typing import Any, Never

import pytest

from workflows import (
    ConcurrentRunError,
    Executor,
    InMemoryCheckpointStorage,
    WorkflowBuilder,
    WorkflowContext,
    WorkflowRunState,
    handler,
    response_handler,
)


class Counter(Executor):
    @handler
    async def count(self, _: str, ctx: WorkflowContext[Never, int]) -> None:
        seen = ctx.get_state("seen", 0) + 1
        ctx.set_state("seen", seen)
        await ctx.yield_output(seen)


def counter_workflow(storage: Any = None) -> Any:
    return WorkflowBuilder(start_executor=Counter(id="counter"), checkpoint_storage=storage).build()


async def test_shared_state_carries_into_the_next_run_of_the_same_workflow() -> None:
    workflow = counter_workflow()
    assert (await workflow.run("a")).get_outputs() == [1]
    assert (await workflow.run("b")).get_outputs() == [2]


async def test_a_rebuilt_workflow_starts_with_fresh_state() -> None:
    assert (await counter_workflow().run("a")).get_outputs() == [1]
    assert (await counter_workflow().run("a")).get_outputs() == [1]


async def test_a_restored_checkpoint_brings_its_own_state() -> None:
    storage = InMemoryCheckpointStorage()
    workflow = counter_workflow(storage)
    await workflow.run("a")
    first = (await storage.list_checkpoints(workflow_name=workflow.name))[-1]
    await workflow.run("b")
    await workflow.run("c")
    assert (await storage.get_latest(workflow_name=workflow.name)).state["seen"] == 3
    resumed = counter_workflow(storage)
    await resumed.run(checkpoint_id=first.checkpoint_id)
    assert (await resumed.run("d")).get_outputs() == [2]


async def test_ctx_state_reads_and_stages_writes_like_get_and_set_state() -> None:
    class UsesState(Executor):
        @handler
        async def take(self, n: int, ctx: WorkflowContext[Never, Any]) -> None:
            ctx.state.set("n", n)
            await ctx.yield_output((ctx.state.get("n"), ctx.state.has("n"), "n" in ctx.state))
            ctx.state.delete("n")
            await ctx.yield_output((ctx.state.has("n"), ctx.state.get("n", "gone")))
            with pytest.raises(KeyError):
                ctx.state.delete("n")

    result = await WorkflowBuilder(start_executor=UsesState(id="s")).build().run(4)
    assert result.get_outputs() == [(4, True, True), (False, "gone")]


async def test_a_new_message_keeps_requests_that_are_still_pending_and_warns() -> None:
    class Asker(Executor):
        @handler
        async def ask(self, question: str, ctx: WorkflowContext) -> None:
            await ctx.request_info(question, bool)

        @response_handler
        async def answered(
            self, question: str, answer: bool, ctx: WorkflowContext[Never, str]
        ) -> None:
            await ctx.yield_output(f"{question}: {answer}")

    workflow = WorkflowBuilder(start_executor=Asker(id="asker")).build()
    first = await workflow.run("first?")
    (pending,) = first.get_request_info_events()
    second = await workflow.run("second?")
    assert any("still pending" in str(e.data) for e in second if e.type == "warning")
    assert second.get_final_state() == WorkflowRunState.IDLE_WITH_PENDING_REQUESTS
    assert set(workflow.pending_requests) == {
        pending.request_id,
        second.get_request_info_events()[0].request_id,
    }
    answered = await workflow.run(responses={pending.request_id: True})
    assert answered.get_outputs() == ["first?: True"]
    assert answered.get_final_state() == WorkflowRunState.IDLE_WITH_PENDING_REQUESTS


# ---------------------------------------------------------------------- one run at a time


async def test_a_second_run_while_a_stream_is_held_unfinished_is_refused() -> None:
    workflow = counter_workflow()
    stream = workflow.run("a", stream=True)
    first = await stream.__anext__()
    assert first.type == "started"
    with pytest.raises(ConcurrentRunError, match="already running"):
        await workflow.run("b")
    # The first stream was not disturbed by the refused call.
    rest = [e.type async for e in stream]
    assert "output" in rest and rest[-1] == "status"
    assert (await workflow.run("b")).get_outputs() == [2]


async def test_a_held_stream_that_was_never_iterated_also_holds_the_workflow() -> None:
    workflow = counter_workflow()
    held = workflow.run("a", stream=True)
    with pytest.raises(ConcurrentRunError):
        workflow.run("b", stream=True)
    await held.aclose()
    assert (await workflow.run("b")).get_outputs() == [1]


async def test_a_dropped_stream_frees_the_workflow() -> None:
    workflow = counter_workflow()
    async for event in workflow.run("a", stream=True):
        if event.type == "superstep_started":
            break
    gc.collect()
    assert (await workflow.run("b")).get_final_state() == WorkflowRunState.IDLE
