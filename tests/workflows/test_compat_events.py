"""MAF compatibility: events and run results, as a workflow author reads them.

Written from MAF's documented behaviour (and checked against agent-framework-core 1.23): what
``await workflow.run(x)`` returns, what a stream yields, the payloads of executor events, the
event factories and an event's origin.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Never

from workflows import (
    Executor,
    WorkflowBuilder,
    WorkflowContext,
    WorkflowErrorDetails,
    WorkflowEvent,
    WorkflowEventSource,
    WorkflowRunState,
    handler,
)


# An annotation MAF code writes at import time: it must not raise.
def first_output(events: list[WorkflowEvent[Any]]) -> Any:
    return next(e.data for e in events if e.type == "output")


class Add(Executor):
    @handler
    async def add(self, n: int, ctx: WorkflowContext[int]) -> None:
        await ctx.send_message(n + 1)
        await ctx.send_message(n + 2)


class Report(Executor):
    @handler
    async def report(self, n: int, ctx: WorkflowContext[Never, str]) -> None:
        await ctx.yield_output(f"got {n}")


def two_step() -> Any:
    add, report = Add(id="add"), Report(id="report")
    return WorkflowBuilder(start_executor=add).add_edge(add, report).build()


# ------------------------------------------------------------------------------------ results


async def test_a_finished_run_leaves_out_started_and_keeps_status_events_aside() -> None:
    result = await two_step().run(1)
    types = [e.type for e in result]
    assert "started" not in types and "status" not in types
    assert [e.state for e in result.status_timeline()] == [
        WorkflowRunState.IN_PROGRESS,
        WorkflowRunState.IDLE,
    ]
    assert all(isinstance(e, WorkflowEvent) for e in result.status_timeline())
    assert result.get_final_state() == WorkflowRunState.IDLE


async def test_include_status_events_puts_them_inline() -> None:
    result = await two_step().run(1, include_status_events=True)
    assert result[0].type == "status" and result[0].state == WorkflowRunState.IN_PROGRESS
    assert result[-1].type == "status" and result[-1].state == WorkflowRunState.IDLE
    assert "started" not in [e.type for e in result]


async def test_a_stream_yields_every_event_and_its_final_response_is_the_filtered_result() -> None:
    stream = two_step().run(1, stream=True)
    seen = [e.type async for e in stream]
    assert seen[:2] == ["started", "status"] and seen[-1] == "status"
    final = await stream.get_final_response()
    assert [e.type for e in final] == [t for t in seen if t not in ("started", "status")]


# ---------------------------------------------------------------------------- executor events


async def test_executor_invoked_carries_the_input_and_completed_what_was_sent_and_yielded() -> None:
    result = await two_step().run(1)
    invoked = [(e.executor_id, e.data) for e in result if e.type == "executor_invoked"]
    completed = [(e.executor_id, e.data) for e in result if e.type == "executor_completed"]
    assert invoked == [("add", 1), ("report", 2), ("report", 3)]
    assert completed == [("add", [2, 3]), ("report", ["got 2"]), ("report", ["got 3"])]


async def test_executor_completed_carries_none_when_nothing_was_sent_or_yielded() -> None:
    class Quiet(Executor):
        @handler
        async def take(self, n: int, ctx: WorkflowContext) -> None:
            return None

    result = await WorkflowBuilder(start_executor=Quiet(id="quiet")).build().run(1)
    (completed,) = [e for e in result if e.type == "executor_completed"]
    assert completed.data is None


async def test_executor_failed_carries_error_details_as_data_and_details() -> None:
    class Broken(Executor):
        @handler
        async def take(self, n: int, ctx: WorkflowContext) -> None:
            raise RuntimeError("boom")

    stream = WorkflowBuilder(start_executor=Broken(id="broken")).build().run(1, stream=True)
    events: list[WorkflowEvent[Any]] = []
    try:
        async for event in stream:
            events.append(event)
    except RuntimeError:
        pass
    (failed,) = [e for e in events if e.type == "executor_failed"]
    assert isinstance(failed.data, WorkflowErrorDetails) and failed.details is failed.data
    assert failed.data.error_type == "RuntimeError" and failed.data.executor_id == "broken"
    assert [e.type for e in events][-2:] == ["failed", "status"]


# ------------------------------------------------------------------------ the event surface


def test_the_event_factories_build_the_events_maf_code_expects() -> None:
    assert WorkflowEvent.started().type == "started"
    status = WorkflowEvent.status(WorkflowRunState.IDLE)
    assert (status.type, status.state) == ("status", WorkflowRunState.IDLE)
    assert WorkflowEvent.warning("careful").data == "careful"
    error = WorkflowEvent.error(ValueError("x"))
    assert error.type == "error" and isinstance(error.data, ValueError)
    assert WorkflowEvent.superstep_started(3).iteration == 3
    assert WorkflowEvent.superstep_completed(3).type == "superstep_completed"
    assert WorkflowEvent.executor_invoked("a", 5).data == 5
    assert WorkflowEvent.executor_completed("a", [5]).executor_id == "a"
    details = WorkflowErrorDetails.from_exception(KeyError("k"), executor_id="a")
    assert WorkflowEvent.executor_failed("a", details).details is details
    assert WorkflowEvent.executor_bypassed("a").type == "executor_bypassed"
    request = WorkflowEvent.request_info("rid", "a", {"q": 1}, bool)
    assert (request.request_id, request.source_executor_id) == ("rid", "a")
    assert (request.request_type, request.response_type) == (dict, bool)
    failed = WorkflowEvent.failed(details)
    assert failed.details is details and failed.type == "failed"


async def test_events_say_whether_the_framework_or_an_executor_emitted_them() -> None:
    @dataclass
    class Progress(WorkflowEvent[int]):
        pass

    class Chatty(Executor):
        @handler
        async def take(self, n: int, ctx: WorkflowContext[Never, int]) -> None:
            await ctx.add_event(WorkflowEvent("custom", data=n))
            await ctx.add_event(Progress("progress", data=50))
            await ctx.yield_output(n)

    result = await WorkflowBuilder(start_executor=Chatty(id="chatty")).build().run(7)
    origins = {e.type: e.origin for e in result}
    assert origins["custom"] == WorkflowEventSource.EXECUTOR
    assert origins["progress"] == WorkflowEventSource.EXECUTOR
    assert origins["output"] == WorkflowEventSource.FRAMEWORK
    assert origins["executor_invoked"] == WorkflowEventSource.FRAMEWORK
    assert WorkflowEvent("custom").to_dict() == {"type": "custom"}
    assert next(e for e in result if e.type == "custom").to_dict()["origin"] == "EXECUTOR"


async def test_an_executor_cannot_forge_output_or_lifecycle_events() -> None:
    class Forger(Executor):
        @handler
        async def take(self, n: int, ctx: WorkflowContext) -> None:
            await ctx.add_event(WorkflowEvent("output", data="forged"))
            await ctx.add_event(WorkflowEvent("status", state=WorkflowRunState.FAILED))

    result = await WorkflowBuilder(start_executor=Forger(id="forger")).build().run(1)
    assert result.get_outputs() == []
    assert result.get_final_state() == WorkflowRunState.IDLE
    assert sum(1 for e in result if e.type == "warning") == 2


# --------------------------------------------------------------------------- output selection


async def test_designated_outputs_intermediates_and_hidden_yields() -> None:
    class Step(Executor):
        @handler
        async def take(self, n: int, ctx: WorkflowContext[int, int]) -> None:
            await ctx.yield_output(n)
            await ctx.send_message(n + 1)

    class Last(Executor):
        @handler
        async def take(self, n: int, ctx: WorkflowContext[Never, int]) -> None:
            await ctx.yield_output(n * 100)

    def build(**selection: Any) -> Any:
        a, b, c = Step(id="a"), Step(id="b"), Last(id="c")
        return WorkflowBuilder(start_executor=a, **selection).add_chain([a, b, c]).build()

    everything = await build().run(1)
    assert everything.get_outputs() == [1, 2, 300]

    chosen = await build(output_from=["c"], intermediate_output_from=["a"]).run(1)
    assert chosen.get_outputs() == [300]
    assert chosen.get_intermediate_outputs() == [1]  # b's yield is hidden
    (intermediate,) = [e for e in chosen if e.type == "intermediate"]
    assert intermediate.executor_id == "a"
    (b_done,) = [e for e in chosen if e.type == "executor_completed" and e.executor_id == "b"]
    assert b_done.data == [3, 2]  # a hidden yield is still what the executor produced


def test_the_event_catalogue_declares_every_engine_event_once() -> None:
    from typing import get_args

    from workflows import EVENT_KINDS, WorkflowEventType

    assert set(get_args(WorkflowEventType)) == set(EVENT_KINDS)
    assert EVENT_KINDS["superstep_completed"].fields == ("iteration", "checkpoint_id")
    assert not EVENT_KINDS["warning"].reserved and EVENT_KINDS["output"].reserved


async def test_a_maf_style_event_subclass_with_its_own_init_and_attributes_works() -> None:
    class ProgressEvent(WorkflowEvent):
        def __init__(self, percent: int) -> None:
            super().__init__("progress", data=percent)
            self.percent = percent

    class Worker(Executor):
        @handler
        async def take(self, n: int, ctx: WorkflowContext) -> None:
            await ctx.add_event(ProgressEvent(50))

    result = await WorkflowBuilder(start_executor=Worker(id="w")).build().run(1)
    (progress,) = [e for e in result if e.type == "progress"]
    assert isinstance(progress, ProgressEvent) and progress.percent == 50 and progress.data == 50
    assert progress.origin == WorkflowEventSource.EXECUTOR
    assert len({progress, progress}) == 1  # hashable, by identity, like MAF's events
