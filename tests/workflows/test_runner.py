"""Running a workflow: supersteps, state, failures, resume and lineage, cancellation, streams,
edge groups, events and build-time validation (``workflow.py``, ``runtime.py``, ``builder.py``).

No ``from __future__ import annotations`` here: the executors below are often defined inside a
test, and their handler annotations must be real objects, not names to resolve later.
"""

import asyncio
import gc
import itertools
import logging
from dataclasses import dataclass
from typing import Any, Never

import pytest

from workflows import (
    Case,
    CheckpointEncodeError,
    ConcurrentRunError,
    Default,
    Executor,
    GraphMismatchError,
    InMemoryCheckpointStorage,
    RunArgumentsError,
    WorkflowBuilder,
    WorkflowCheckpoint,
    WorkflowContext,
    WorkflowConvergenceError,
    WorkflowEvent,
    WorkflowRunState,
    WorkflowValidationError,
    executor,
    handler,
)

# ------------------------------------------------------------------------------------ helpers


class Relay(Executor):
    """Forwards an int plus ``add``."""

    def __init__(self, id: str, add: int = 0) -> None:
        super().__init__(id=id)
        self.add = add

    @handler
    async def relay(self, n: int, ctx: WorkflowContext[int]) -> None:
        await ctx.send_message(n + self.add)


class Sink(Executor):
    """Yields whatever it receives."""

    @handler
    async def collect(self, message: object, ctx: WorkflowContext[Never, Any]) -> None:
        await ctx.yield_output(message)


class Looper(Executor):
    """Counts up in a self-loop to ``limit`` (None: forever), keeping a history in its state."""

    def __init__(self, id: str = "loop", limit: int | None = 5) -> None:
        super().__init__(id=id)
        self.limit = limit
        self.seen: list[int] = []

    @handler
    async def step(self, n: int, ctx: WorkflowContext[int, list[int]]) -> None:
        self.seen.append(n)
        if self.limit is not None and n >= self.limit:
            await ctx.yield_output(list(self.seen))
        else:
            await ctx.send_message(n + 1)

    async def on_checkpoint_save(self) -> dict[str, Any]:
        return {"seen": list(self.seen)}

    async def on_checkpoint_restore(self, state: dict[str, Any]) -> None:
        self.seen = list(state.get("seen", []))


def loop_workflow(storage: Any = None, *, limit: int | None = 5, max_iterations: int = 100) -> Any:
    looper = Looper(limit=limit)
    return (
        WorkflowBuilder(
            start_executor=looper,
            checkpoint_storage=storage,
            name="loop",
            max_iterations=max_iterations,
        )
        .add_edge(looper, looper)
        .build()
    )


def invoked(events: list[WorkflowEvent]) -> list[tuple[str | None, int | None]]:
    return [(e.executor_id, e.iteration) for e in events if e.type == "executor_invoked"]


def warnings_of(events: list[WorkflowEvent]) -> list[str]:
    return [str(e.data) for e in events if e.type == "warning"]


async def run_until(workflow: Any, message: Any, iteration: int) -> None:
    """Stream a run and walk away after ``iteration`` supersteps (a process that died)."""
    stream = workflow.run(message, stream=True)
    async for event in stream:
        if event.type == "superstep_completed" and event.iteration == iteration:
            break
    await stream.aclose()


# ---------------------------------------------------------------------------------- supersteps


async def test_messages_sent_in_one_superstep_arrive_in_the_next() -> None:
    a, b, c = Relay("a", 1), Relay("b", 1), Sink(id="c")
    result = await WorkflowBuilder(start_executor=a).add_chain([a, b, c]).build().run(0)
    assert invoked(result) == [("a", 1), ("b", 2), ("c", 3)]
    assert result.get_outputs() == [2]


async def test_executors_with_input_in_one_superstep_run_concurrently() -> None:
    ready = {"left": asyncio.Event(), "right": asyncio.Event()}

    class Handshake(Executor):
        def __init__(self, id: str, other: str) -> None:
            super().__init__(id=id)
            self.other = other

        @handler
        async def meet(self, n: int, ctx: WorkflowContext[Never, str]) -> None:
            ready[self.id].set()
            # Only possible if the other executor runs while this one waits.
            await asyncio.wait_for(ready[self.other].wait(), timeout=5)
            await ctx.yield_output(self.id)

    start = Relay("start")
    left, right = Handshake("left", "right"), Handshake("right", "left")
    workflow = WorkflowBuilder(start_executor=start).add_fan_out_edges(start, [left, right]).build()
    result = await workflow.run(1)
    assert sorted(result.get_outputs()) == ["left", "right"]
    assert invoked(result) == [("start", 1), ("left", 2), ("right", 2)]


async def test_an_executor_handles_one_message_at_a_time() -> None:
    class Careful(Executor):
        def __init__(self) -> None:
            super().__init__(id="careful")
            self.active = 0
            self.peak = 0

        @handler
        async def take(self, n: int, ctx: WorkflowContext[Never, int]) -> None:
            self.active += 1
            self.peak = max(self.peak, self.active)
            for _ in range(5):
                await asyncio.sleep(0)
            self.active -= 1
            await ctx.yield_output(n)

    start, p, q, careful = Relay("start"), Relay("p", 10), Relay("q", 20), Careful()
    workflow = (
        WorkflowBuilder(start_executor=start)
        .add_fan_out_edges(start, [p, q])
        .add_edge(p, careful)
        .add_edge(q, careful)
        .build()
    )
    result = await workflow.run(1)
    assert result.get_outputs() == [11, 21]
    assert careful.peak == 1


async def test_delivery_order_follows_the_graph_not_who_finishes_first() -> None:
    class Delayed(Executor):
        def __init__(self, id: str, delay: float) -> None:
            super().__init__(id=id)
            self.delay = delay

        @handler
        async def go(self, n: int, ctx: WorkflowContext[str]) -> None:
            await asyncio.sleep(self.delay)
            await ctx.send_message(self.id)
            await ctx.send_message(self.id + "-again")

    class Log(Executor):
        def __init__(self) -> None:
            super().__init__(id="log")
            self.order: list[str] = []

        @handler
        async def write(self, text: str, ctx: WorkflowContext) -> None:
            self.order.append(text)

    orders = []
    for _ in range(3):
        start, slow, fast, log = Relay("start"), Delayed("slow", 0.02), Delayed("fast", 0), Log()
        workflow = (
            WorkflowBuilder(start_executor=start)
            .add_fan_out_edges(start, [slow, fast])
            .add_edge(slow, log)
            .add_edge(fast, log)
            .build()
        )
        await workflow.run(0)
        orders.append(log.order)
    assert orders == [["slow", "slow-again", "fast", "fast-again"]] * 3


# ---------------------------------------------------------------------------------- state


class StateWriter(Executor):
    def __init__(self, id: str, key: str, value: Any) -> None:
        super().__init__(id=id)
        self.key, self.value = key, value
        self.read_back: Any = None

    @handler
    async def write(self, n: int, ctx: WorkflowContext[int]) -> None:
        ctx.set_state(self.key, self.value)
        self.read_back = ctx.get_state(self.key)
        await ctx.send_message(n)


class StateReader(Executor):
    def __init__(self, id: str, key: str) -> None:
        super().__init__(id=id)
        self.key = key
        self.reads: list[Any] = []

    @handler
    async def read(self, n: int, ctx: WorkflowContext[int]) -> None:
        self.reads.append(ctx.get_state(self.key, "unset"))
        await ctx.send_message(n)


async def test_shared_state_is_seen_by_its_writer_at_once_and_by_others_next_superstep() -> None:
    storage = InMemoryCheckpointStorage()
    start = Relay("start")
    writer, reader = StateWriter("writer", "k", {"v": 1}), StateReader("reader", "k")
    later, end = StateReader("later", "k"), Sink(id="end")
    workflow = (
        WorkflowBuilder(start_executor=start, checkpoint_storage=storage)
        .add_fan_out_edges(start, [writer, reader])
        .add_edge(writer, later)
        .add_edge(reader, end)
        .add_edge(later, end)
        .build()
    )
    result = await workflow.run(1)
    assert writer.read_back == {"v": 1}
    assert reader.reads == ["unset"]  # same superstep as the write
    assert later.reads == [{"v": 1}]  # the next one
    after_write = await storage.load(result.get_checkpoint_ids()[1])
    assert after_write.state == {"k": {"v": 1}}


async def test_deleting_shared_state_is_staged_and_committed() -> None:
    class Deleter(Executor):
        @handler
        async def drop(self, n: int, ctx: WorkflowContext[int]) -> None:
            ctx.delete_state("k")
            assert ctx.get_state("k", "gone") == "gone"
            with pytest.raises(KeyError):
                ctx.delete_state("never-set")
            await ctx.send_message(n)

    storage = InMemoryCheckpointStorage()
    writer, deleter, end = StateWriter("writer", "k", 1), Deleter(id="deleter"), Sink(id="end")
    workflow = (
        WorkflowBuilder(start_executor=writer, checkpoint_storage=storage)
        .add_chain([writer, deleter, end])
        .build()
    )
    result = await workflow.run(1)
    states = [(await storage.load(cid)).state for cid in result.get_checkpoint_ids()]
    assert states == [{"k": 1}, {}, {}]


async def test_state_written_in_a_failed_superstep_is_discarded() -> None:
    class Failing(Executor):
        @handler
        async def fail(self, n: int, ctx: WorkflowContext[int]) -> None:
            ctx.set_state("k", "from-the-failing-one")
            raise RuntimeError("no")

    storage = InMemoryCheckpointStorage()
    first = StateWriter("first", "k", "committed")
    second, failing = StateWriter("second", "k", "staged"), Failing(id="failing")
    end = Sink(id="end")
    workflow = (
        WorkflowBuilder(start_executor=first, checkpoint_storage=storage, name="discard")
        .add_fan_out_edges(first, [second, failing])
        .add_edge(second, end)
        .add_edge(failing, end)
        .build()
    )
    with pytest.raises(RuntimeError):
        await workflow.run(1)
    latest = await storage.get_latest(workflow_name="discard")
    assert latest.iteration_count == 1 and latest.state == {"k": "committed"}


async def test_conflicting_writes_in_one_superstep_are_warned_and_the_later_executor_wins() -> None:
    storage = InMemoryCheckpointStorage()
    start = Relay("start")
    a, b = StateWriter("a", "shared", "from-a"), StateWriter("b", "shared", "from-b")
    end = Sink(id="end")
    workflow = (
        WorkflowBuilder(start_executor=start, checkpoint_storage=storage)
        .add_fan_out_edges(start, [a, b])
        .add_edge(a, end)
        .add_edge(b, end)
        .build()
    )
    result = await workflow.run(1)
    (warning,) = warnings_of(result)
    assert "'shared'" in warning and "'a'" in warning and "'b'" in warning
    assert (await storage.load(result.get_checkpoint_ids()[1])).state == {"shared": "from-b"}


async def test_state_keys_must_be_strings() -> None:
    class BadKey(Executor):
        @handler
        async def write(self, n: int, ctx: WorkflowContext) -> None:
            ctx.set_state(1, "x")  # type: ignore[arg-type]

    with pytest.raises(TypeError, match="string"):
        await WorkflowBuilder(start_executor=BadKey(id="bad")).build().run(1)


# ---------------------------------------------------------------------------------- failures


class Exploding(Executor):
    """Fails on ``fail_at`` while ``armed``."""

    armed = True

    def __init__(self, fail_at: int = 3) -> None:
        super().__init__(id="exploding")
        self.fail_at = fail_at

    @handler
    async def step(self, n: int, ctx: WorkflowContext[int, int]) -> None:
        if n == self.fail_at and type(self).armed:
            raise ValueError(f"boom at {n}")
        if n >= 5:
            await ctx.yield_output(n)
        else:
            await ctx.send_message(n + 1)


def exploding_workflow(storage: Any) -> Any:
    exploding = Exploding()
    return (
        WorkflowBuilder(start_executor=exploding, checkpoint_storage=storage, name="exploding")
        .add_edge(exploding, exploding)
        .build()
    )


async def test_a_failing_handler_fails_the_run_with_events_and_raises() -> None:
    workflow = exploding_workflow(None)
    events: list[WorkflowEvent] = []
    with pytest.raises(ValueError, match="boom at 3"):
        async for event in workflow.run(1, stream=True):
            events.append(event)
    types_ = [e.type for e in events]
    assert types_[-3:] == ["executor_failed", "failed", "status"]
    executor_failed, failed, status = events[-3:]
    assert executor_failed.executor_id == "exploding" and executor_failed.iteration == 3
    assert failed.details is not None
    assert failed.details.error_type == "ValueError"
    assert failed.details.message == "boom at 3"
    assert failed.details.executor_id == "exploding"
    assert "Traceback" in failed.details.traceback and "in step" in failed.details.traceback
    assert status.state == WorkflowRunState.FAILED
    assert workflow.status == WorkflowRunState.FAILED


async def test_a_failing_handler_raises_from_a_non_streaming_run_too() -> None:
    workflow = exploding_workflow(None)
    with pytest.raises(ValueError, match="boom at 3"):
        await workflow.run(1)
    assert workflow.status == WorkflowRunState.FAILED


async def test_a_failed_run_leaves_its_last_checkpoint_intact_and_resumable(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    storage = InMemoryCheckpointStorage()
    with pytest.raises(ValueError):
        await exploding_workflow(storage).run(1)
    latest = await storage.get_latest(workflow_name="exploding")
    assert latest.iteration_count == 2 and [m.data for m in latest.message_list()] == [3]
    monkeypatch.setattr(Exploding, "armed", False)  # the bug was fixed and redeployed
    resumed = await exploding_workflow(storage).run(checkpoint_id=latest.checkpoint_id)
    assert resumed.get_outputs() == [5]
    assert resumed.get_final_state() == WorkflowRunState.IDLE


async def test_one_failing_handler_cancels_its_siblings_in_the_superstep() -> None:
    cancelled = asyncio.Event()

    class Forever(Executor):
        @handler
        async def wait(self, n: int, ctx: WorkflowContext) -> None:
            try:
                await asyncio.Event().wait()
            except asyncio.CancelledError:
                cancelled.set()
                raise

    class Fails(Executor):
        @handler
        async def fail(self, n: int, ctx: WorkflowContext) -> None:
            raise KeyError("missing")

    start = Relay("start")
    workflow = (
        WorkflowBuilder(start_executor=start)
        .add_fan_out_edges(start, [Forever(id="forever"), Fails(id="fails")])
        .build()
    )
    with pytest.raises(KeyError):
        await asyncio.wait_for(workflow.run(1), timeout=5)
    assert cancelled.is_set()


async def test_unstorable_state_fails_the_run_naming_the_key_and_keeps_the_last_checkpoint() -> (
    None
):
    class Hoarder(Executor):
        @handler
        async def keep(self, n: int, ctx: WorkflowContext[int]) -> None:
            ctx.set_state("socket", object() if n == 2 else n)
            await ctx.send_message(n + 1)

    storage = InMemoryCheckpointStorage()
    hoarder, end = Hoarder(id="hoarder"), Sink(id="end")
    workflow = (
        WorkflowBuilder(start_executor=hoarder, checkpoint_storage=storage, name="hoard")
        .add_edge(hoarder, hoarder, condition=lambda n: n < 3)
        .add_edge(hoarder, end, condition=lambda n: n >= 3)
        .build()
    )
    with pytest.raises(CheckpointEncodeError, match="'socket'"):
        await workflow.run(1)
    assert workflow.status == WorkflowRunState.FAILED
    latest = await storage.get_latest(workflow_name="hoard")
    assert latest.iteration_count == 1 and latest.state == {"socket": 1}


async def test_on_checkpoint_save_must_return_a_dict_with_string_keys() -> None:
    class Sloppy(Relay):
        async def on_checkpoint_save(self) -> Any:
            return [1, 2]

    sloppy, end = Sloppy("sloppy"), Sink(id="end")
    workflow = (
        WorkflowBuilder(start_executor=sloppy, checkpoint_storage=InMemoryCheckpointStorage())
        .add_edge(sloppy, end)
        .build()
    )
    with pytest.raises(CheckpointEncodeError, match="'sloppy'"):
        await workflow.run(1)


async def test_a_failed_workflow_instance_can_run_again() -> None:
    workflow = exploding_workflow(None)
    with pytest.raises(ValueError):
        await workflow.run(1)
    assert (await workflow.run(4)).get_outputs() == [5]


# ---------------------------------------------------------------------------------- routing


async def test_a_message_no_handler_accepts_becomes_a_warning() -> None:
    class Loose(Executor):
        @handler
        async def send(self, n: int, ctx: WorkflowContext) -> None:  # declares nothing
            await ctx.send_message("a string")

    class IntsOnly(Executor):
        @handler
        async def take(self, n: int, ctx: WorkflowContext) -> None:
            pass

    loose, ints = Loose(id="loose"), IntsOnly(id="ints")
    result = await WorkflowBuilder(start_executor=loose).add_edge(loose, ints).build().run(1)
    (warning,) = warnings_of(result)
    assert "'loose'" in warning and "ints" in warning and "str" in warning
    assert result.get_final_state() == WorkflowRunState.IDLE


async def test_a_message_from_an_executor_without_edges_becomes_a_warning() -> None:
    class Talker(Executor):
        @handler
        async def talk(self, n: int, ctx: WorkflowContext) -> None:
            await ctx.send_message(n)

    result = await WorkflowBuilder(start_executor=Talker(id="talker")).build().run(1)
    (warning,) = warnings_of(result)
    assert "'talker'" in warning and "no outgoing edges" in warning


async def test_a_message_every_condition_refuses_becomes_a_warning() -> None:
    start, sink = Relay("start"), Sink(id="sink")
    workflow = (
        WorkflowBuilder(start_executor=start)
        .add_edge(start, sink, condition=lambda n: n > 100)
        .build()
    )
    result = await workflow.run(1)
    assert result.get_outputs() == []
    (warning,) = warnings_of(result)
    assert "condition" in warning


async def test_the_most_specific_handler_wins_whatever_the_method_names() -> None:
    @dataclass
    class Animal:
        name: str

    @dataclass
    class Dog(Animal):
        pass

    class Picky(Executor):
        @handler
        async def aaa_anything(self, m: object, ctx: WorkflowContext[Never, str]) -> None:
            await ctx.yield_output(f"object:{m!r}")

        @handler
        async def bbb_number(self, m: int, ctx: WorkflowContext[Never, str]) -> None:
            await ctx.yield_output(f"int:{m!r}")

        @handler
        async def ccc_flag(self, m: bool, ctx: WorkflowContext[Never, str]) -> None:
            await ctx.yield_output(f"bool:{m!r}")

        @handler
        async def ddd_animal(self, m: Animal, ctx: WorkflowContext[Never, str]) -> None:
            await ctx.yield_output(f"animal:{m.name}")

        @handler
        async def eee_dog(self, m: Dog, ctx: WorkflowContext[Never, str]) -> None:
            await ctx.yield_output(f"dog:{m.name}")

    workflow = WorkflowBuilder(start_executor=Picky(id="picky")).build()
    for message, expected in [
        (True, "bool:True"),
        (7, "int:7"),
        ("x", "object:'x'"),
        (Animal("cat"), "animal:cat"),
        (Dog("rex"), "dog:rex"),
        (1.5, "object:1.5"),
    ]:
        assert (await workflow.run(message)).get_outputs() == [expected]


async def test_the_start_executor_refuses_an_input_it_cannot_handle() -> None:
    with pytest.raises(RunArgumentsError, match="start"):
        await loop_workflow().run("not an int")


# ------------------------------------------------------------------------------- convergence


async def test_max_iterations_stops_a_run_that_does_not_converge() -> None:
    workflow = loop_workflow(limit=None, max_iterations=5)
    events: list[WorkflowEvent] = []
    with pytest.raises(WorkflowConvergenceError, match="max_iterations=5"):
        async for event in workflow.run(0, stream=True):
            events.append(event)
    assert [e.iteration for e in events if e.type == "superstep_completed"] == [1, 2, 3, 4, 5]
    assert (
        events[-2].type == "failed" and events[-2].details.error_type == "WorkflowConvergenceError"
    )
    assert workflow.status == WorkflowRunState.FAILED


async def test_max_iterations_counts_supersteps_across_a_resume() -> None:
    storage = InMemoryCheckpointStorage()
    await run_until(loop_workflow(storage, limit=None, max_iterations=5), 0, 3)
    latest = await storage.get_latest(workflow_name="loop")
    events: list[WorkflowEvent] = []
    with pytest.raises(WorkflowConvergenceError):
        async for event in loop_workflow(storage, limit=None, max_iterations=5).run(
            checkpoint_id=latest.checkpoint_id, stream=True
        ):
            events.append(event)
    assert [e.iteration for e in events if e.type == "superstep_started"] == [4, 5]


# ---------------------------------------------------------------------- checkpoints and resume


async def test_a_run_writes_an_entry_checkpoint_and_one_per_superstep() -> None:
    storage = InMemoryCheckpointStorage()
    result = await loop_workflow(storage, limit=3).run(1)
    checkpoints = await storage.list_checkpoints(workflow_name="loop")
    assert [c.iteration_count for c in checkpoints] == [0, 1, 2, 3]
    assert [c.metadata["kind"] for c in checkpoints] == [
        "entry",
        "superstep",
        "superstep",
        "superstep",
    ]
    entry = checkpoints[0]
    (message,) = entry.messages["internal:loop"]
    assert (message.data, message.source_id, message.target_id) == (1, "internal:loop", "loop")
    assert result.get_checkpoint_ids() == [c.checkpoint_id for c in checkpoints[1:]]
    assert entry.executor_states == {"loop": {"seen": []}}
    assert checkpoints[2].executor_states == {"loop": {"seen": [1, 2]}}


async def test_resume_restores_executor_state_before_any_handler_runs() -> None:
    storage = InMemoryCheckpointStorage()
    await run_until(loop_workflow(storage), 1, 3)
    latest = await storage.get_latest(workflow_name="loop")
    workflow = loop_workflow(storage)
    result = await workflow.run(checkpoint_id=latest.checkpoint_id)
    assert result.get_outputs() == [[1, 2, 3, 4, 5]]


async def test_resuming_a_final_checkpoint_runs_no_superstep_and_writes_no_checkpoint() -> None:
    storage = InMemoryCheckpointStorage()
    await loop_workflow(storage).run(1)
    before = await storage.list_checkpoint_ids()
    result = await loop_workflow(storage).run(checkpoint_id=before[-1], include_status_events=True)
    assert [e.type for e in result] == ["status", "status"]
    assert result.get_final_state() == WorkflowRunState.IDLE
    assert await storage.list_checkpoint_ids() == before


async def test_checkpoints_chain_through_previous_checkpoint_id_across_a_resume() -> None:
    storage = InMemoryCheckpointStorage()
    await run_until(loop_workflow(storage), 1, 2)
    paused = await storage.get_latest(workflow_name="loop")
    await loop_workflow(storage).run(checkpoint_id=paused.checkpoint_id)
    chain = await storage.list_checkpoints(workflow_name="loop")
    assert len(chain) == 6
    assert chain[0].previous_checkpoint_id is None
    for parent, child in itertools.pairwise(chain):
        assert child.previous_checkpoint_id == parent.checkpoint_id
    assert {c.run_id for c in chain} == {paused.run_id}
    assert [c.iteration_count for c in chain] == [0, 1, 2, 3, 4, 5]


async def test_each_fresh_run_gets_a_new_run_id_unless_the_caller_gives_one() -> None:
    storage = InMemoryCheckpointStorage()
    workflow = loop_workflow(storage, limit=1)
    await workflow.run(1)
    first = workflow.run_id
    await workflow.run(1)
    second = workflow.run_id
    await workflow.run(1, run_id="order-42")
    assert len({first, second, "order-42"}) == 3 and workflow.run_id == "order-42"
    assert len(await storage.list_checkpoints(run_id="order-42")) == 2
    assert {c.run_id for c in await storage.list_checkpoints()} == {first, second, "order-42"}


async def test_a_resume_with_a_new_run_id_forks_the_lineage() -> None:
    storage = InMemoryCheckpointStorage()
    await run_until(loop_workflow(storage), 1, 2)
    source = await storage.get_latest(workflow_name="loop")
    original = await storage.list_checkpoint_ids(run_id=source.run_id)
    result = await loop_workflow(storage).run(checkpoint_id=source.checkpoint_id, run_id="fork")
    assert result.get_outputs() == [[1, 2, 3, 4, 5]]
    assert await storage.list_checkpoint_ids(run_id=source.run_id) == original
    forked = await storage.list_checkpoints(run_id="fork")
    assert forked[0].metadata["kind"] == "fork"
    assert forked[0].previous_checkpoint_id == source.checkpoint_id
    assert forked[0].iteration_count == source.iteration_count


async def test_the_storage_given_to_run_overrides_the_builders() -> None:
    builder_storage, run_storage = InMemoryCheckpointStorage(), InMemoryCheckpointStorage()
    await loop_workflow(builder_storage, limit=1).run(1, checkpoint_storage=run_storage)
    assert await builder_storage.list_checkpoint_ids() == []
    assert len(await run_storage.list_checkpoint_ids()) == 2


async def test_resume_needs_a_storage() -> None:
    with pytest.raises(RunArgumentsError, match="storage"):
        await loop_workflow(None).run(checkpoint_id="whatever")


async def test_a_message_together_with_a_checkpoint_id_is_a_value_error() -> None:
    with pytest.raises(ValueError, match="not both"):
        loop_workflow(InMemoryCheckpointStorage()).run(1, checkpoint_id="x")
    with pytest.raises(RunArgumentsError):
        loop_workflow(None).run()


def graph_with(extra: str | None = None, looped: bool = True, worker_class: type = Relay) -> Any:
    start, worker, sink = Relay("start"), worker_class("worker"), Sink(id="sink")
    builder = WorkflowBuilder(start_executor=start, name="shape").add_chain([start, worker, sink])
    if looped:
        builder.add_edge(sink, sink, condition=lambda m: False)
    if extra:
        builder.add_edge(worker, Sink(id=extra))
    return builder.build()


async def paused_shape() -> tuple[InMemoryCheckpointStorage, str]:
    storage = InMemoryCheckpointStorage()
    await run_until_with(graph_with(), storage)
    return storage, (await storage.get_latest(workflow_name="shape")).checkpoint_id


async def run_until_with(workflow: Any, storage: Any) -> None:
    stream = workflow.run(1, stream=True, checkpoint_storage=storage)
    async for event in stream:
        if event.type == "superstep_completed":
            break
    await stream.aclose()


async def test_resume_refuses_a_graph_with_an_added_executor() -> None:
    storage, checkpoint_id = await paused_shape()
    before = await storage.list_checkpoint_ids()
    with pytest.raises(GraphMismatchError, match="executors added: \\['audit'\\]"):
        await graph_with(extra="audit").run(checkpoint_id=checkpoint_id, checkpoint_storage=storage)
    assert await storage.list_checkpoint_ids() == before


async def test_resume_refuses_a_graph_with_a_removed_edge() -> None:
    storage, checkpoint_id = await paused_shape()
    with pytest.raises(GraphMismatchError, match="edges removed: single sink -> sink"):
        await graph_with(looped=False).run(checkpoint_id=checkpoint_id, checkpoint_storage=storage)


async def test_resume_refuses_a_graph_whose_executor_changed_class() -> None:
    class OtherRelay(Relay):
        pass

    storage, checkpoint_id = await paused_shape()
    with pytest.raises(GraphMismatchError, match="executor 'worker' changed class"):
        await graph_with(worker_class=OtherRelay).run(
            checkpoint_id=checkpoint_id, checkpoint_storage=storage
        )


# ---------------------------------------------------------------------------------- cancel


async def test_breaking_out_of_a_stream_ends_the_run_as_cancelled() -> None:
    storage = InMemoryCheckpointStorage()
    workflow = loop_workflow(storage)
    async for event in workflow.run(1, stream=True):
        if event.type == "superstep_completed" and event.iteration == 2:
            break
    for _ in range(3):
        gc.collect()
        await asyncio.sleep(0)
    assert workflow.status == WorkflowRunState.CANCELLED
    latest = await storage.get_latest(workflow_name="loop")
    resumed = await loop_workflow(storage).run(checkpoint_id=latest.checkpoint_id)
    assert resumed.get_outputs() == [[1, 2, 3, 4, 5]]


async def test_breaking_out_of_a_stream_stops_the_handlers_it_left_running() -> None:
    finished: list[int] = []

    class Chatty(Executor):
        @handler
        async def talk(self, n: int, ctx: WorkflowContext) -> None:
            await ctx.add_event("progress", n)
            for _ in range(10):
                await asyncio.sleep(0)
            finished.append(n)

    workflow = WorkflowBuilder(start_executor=Chatty(id="chatty")).build()
    async for event in workflow.run(1, stream=True):
        if event.type == "progress":
            break
    for _ in range(20):
        await asyncio.sleep(0)
    assert finished == []


async def test_closing_a_stream_cancels_the_run_and_its_checkpoint_stays_usable() -> None:
    storage = InMemoryCheckpointStorage()
    workflow = loop_workflow(storage)
    stream = workflow.run(1, stream=True)
    async for event in stream:
        if event.type == "superstep_completed" and event.iteration == 2:
            break
    await stream.aclose()
    assert workflow.status == WorkflowRunState.CANCELLED
    latest = await storage.get_latest(workflow_name="loop")
    assert latest.iteration_count == 2
    assert (await loop_workflow(storage).run(checkpoint_id=latest.checkpoint_id)).get_outputs() == [
        [1, 2, 3, 4, 5]
    ]


class Blocking(Executor):
    """Sends to itself; blocks forever on the third message."""

    def __init__(self) -> None:
        super().__init__(id="blocking")
        self.started = asyncio.Event()

    @handler
    async def step(self, n: int, ctx: WorkflowContext[int]) -> None:
        if n == 3:
            self.started.set()
            await asyncio.Event().wait()
        await ctx.send_message(n + 1)


def blocking_workflow(storage: Any) -> tuple[Any, Blocking]:
    blocking = Blocking()
    workflow = (
        WorkflowBuilder(start_executor=blocking, checkpoint_storage=storage, name="blocking")
        .add_edge(blocking, blocking)
        .build()
    )
    return workflow, blocking


@pytest.mark.parametrize("streaming", [False, True])
async def test_cancelling_the_task_of_a_run_ends_it_cancelled_with_a_usable_checkpoint(
    streaming: bool,
) -> None:
    storage = InMemoryCheckpointStorage()
    workflow, blocking = blocking_workflow(storage)

    async def consume() -> None:
        if streaming:
            async for _ in workflow.run(1, stream=True):
                pass
        else:
            await workflow.run(1)

    task = asyncio.create_task(consume())
    await asyncio.wait_for(blocking.started.wait(), timeout=5)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert workflow.status == WorkflowRunState.CANCELLED
    latest = await storage.get_latest(workflow_name="blocking")
    assert latest.iteration_count == 2 and [m.data for m in latest.message_list()] == [3]
    assert (await storage.load(latest.checkpoint_id)).checkpoint_id == latest.checkpoint_id


async def test_a_second_run_while_one_is_running_is_refused() -> None:
    workflow, blocking = blocking_workflow(None)
    task = asyncio.create_task(workflow.run(1))
    await asyncio.wait_for(blocking.started.wait(), timeout=5)
    with pytest.raises(ConcurrentRunError):
        workflow.run(1)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task


async def test_a_workflow_runs_again_after_its_caller_walked_away_from_a_stream() -> None:
    workflow = loop_workflow(None)
    async for event in workflow.run(1, stream=True):
        if event.type == "superstep_completed":
            break
    result = await workflow.run(4)
    assert result.get_final_state() == WorkflowRunState.IDLE
    assert result.get_outputs()[0][-2:] == [4, 5]


# ---------------------------------------------------------------------------------- streams


async def test_a_stream_can_be_iterated_directly_or_awaited_first() -> None:
    direct = [e.type async for e in loop_workflow(limit=2).run(1, stream=True)]
    stream = await loop_workflow(limit=2).run(1, stream=True)
    awaited = [e.type async for e in stream]
    assert direct == awaited
    assert direct == [
        "started",
        "status",
        "superstep_started",
        "executor_invoked",
        "executor_completed",
        "superstep_completed",
        "superstep_started",
        "executor_invoked",
        "output",
        "executor_completed",
        "superstep_completed",
        "status",
    ]


async def test_a_stream_delivers_events_while_handlers_are_still_running() -> None:
    seen = asyncio.Event()

    class Waiter(Executor):
        @handler
        async def wait(self, n: int, ctx: WorkflowContext[Never, str]) -> None:
            await ctx.add_event("waiting")
            await asyncio.wait_for(seen.wait(), timeout=5)  # set by the consumer below
            await ctx.yield_output("released")

    outputs = []
    async for event in (
        WorkflowBuilder(start_executor=Waiter(id="waiter")).build().run(1, stream=True)
    ):
        if event.type == "waiting":
            seen.set()
        if event.type == "output":
            outputs.append(event.data)
    assert outputs == ["released"]


async def test_status_events_trace_the_run_states() -> None:
    result = await loop_workflow(limit=1).run(1)
    assert [e.state for e in result.status_timeline()] == [
        WorkflowRunState.IN_PROGRESS,
        WorkflowRunState.IDLE,
    ]
    assert all(e.type == "status" for e in result.status_timeline())


# ------------------------------------------------------------------------------------ edges


class Collector(Executor):
    """Receives a fan-in list and yields it."""

    @handler
    async def gather(self, items: list[int], ctx: WorkflowContext[Never, list[int]]) -> None:
        await ctx.yield_output(items)


def fan_in_workflow(storage: Any) -> Any:
    start = Relay("start")
    quick, slow1, slow2 = Relay("quick", 100), Relay("slow1", 1), Relay("slow2", 1000)
    join = Collector(id="join")
    return (
        WorkflowBuilder(start_executor=start, checkpoint_storage=storage, name="fan-in")
        .add_fan_out_edges(start, [quick, slow1])
        .add_edge(slow1, slow2)
        .add_fan_in_edges([quick, slow2], join)
        .build()
    )


async def test_fan_in_waits_across_supersteps_until_every_source_has_sent() -> None:
    result = await fan_in_workflow(None).run(1)
    assert result.get_outputs() == [[101, 1002]]
    assert ("join", 4) in invoked(result)


async def test_fan_in_buffers_are_checkpointed_and_restored() -> None:
    storage = InMemoryCheckpointStorage()
    await run_until(fan_in_workflow(storage), 1, 3)
    latest = await storage.get_latest(workflow_name="fan-in")
    assert list(latest.edge_states.values()) == [{"quick": [101]}]
    resumed = await fan_in_workflow(storage).run(checkpoint_id=latest.checkpoint_id)
    assert resumed.get_outputs() == [[101, 1002]]


async def test_a_switch_case_group_takes_the_first_true_case_else_the_default() -> None:
    async def is_big(n: int) -> bool:
        return n > 100

    start, big, even, other = Relay("start"), Sink(id="big"), Sink(id="even"), Sink(id="other")
    workflow = (
        WorkflowBuilder(start_executor=start)
        .add_switch_case_edge_group(
            start, [Case(is_big, big), Case(lambda n: n % 2 == 0, even), Default(other)]
        )
        .build()
    )
    for message, target in [(1000, "big"), (4, "even"), (3, "other")]:
        result = await workflow.run(message)
        assert result.get_outputs() == [message]
        assert invoked(result)[-1] == (target, 2)


async def test_a_switch_case_group_needs_a_default_last() -> None:
    start, sink = Relay("start"), Sink(id="sink")
    with pytest.raises(WorkflowValidationError, match="Default"):
        WorkflowBuilder(start_executor=start).add_switch_case_edge_group(start, [Case(bool, sink)])


async def test_a_multi_selection_group_sends_to_the_targets_the_function_picks() -> None:
    def pick(n: int, targets: list[str]) -> list[str]:
        return [t for t in targets if (t == "odd") == (n % 2 == 1)] + (["all"] if n > 10 else [])

    start = Relay("start")
    odd, even, every = Sink(id="odd"), Sink(id="even"), Sink(id="all")
    workflow = (
        WorkflowBuilder(start_executor=start)
        .add_multi_selection_edge_group(start, [odd, even, every], selection_func=pick)
        .build()
    )
    assert [e for e, _ in invoked(await workflow.run(3))] == ["start", "odd"]
    assert [e for e, _ in invoked(await workflow.run(12))] == ["start", "even", "all"]


async def test_a_selection_naming_an_unknown_target_fails_the_run() -> None:
    start, a, b = Relay("start"), Sink(id="a"), Sink(id="b")
    workflow = (
        WorkflowBuilder(start_executor=start)
        .add_multi_selection_edge_group(start, [a, b], selection_func=lambda n, t: ["zzz"])
        .build()
    )
    with pytest.raises(Exception, match="zzz"):
        await workflow.run(1)
    assert workflow.status == WorkflowRunState.FAILED


async def test_add_chain_links_each_executor_to_the_next() -> None:
    chain = [Relay("one", 1), Relay("two", 10), Relay("three", 100), Sink(id="end")]
    result = await WorkflowBuilder(start_executor=chain[0]).add_chain(chain).build().run(0)
    assert result.get_outputs() == [111]


@pytest.mark.parametrize("asynchronous", [False, True])
async def test_edge_conditions_may_be_sync_or_async(asynchronous: bool) -> None:
    def small_sync(n: int) -> bool:
        return n < 10

    async def small_async(n: int) -> bool:
        await asyncio.sleep(0)
        return n < 10

    condition = small_async if asynchronous else small_sync
    start, small, big = Relay("start"), Sink(id="small"), Sink(id="big")
    workflow = (
        WorkflowBuilder(start_executor=start)
        .add_edge(start, small, condition=condition)
        .add_edge(start, big, condition=lambda n: n >= 10)
        .build()
    )
    assert invoked(await workflow.run(3))[-1][0] == "small"
    assert invoked(await workflow.run(30))[-1][0] == "big"


async def test_send_message_with_a_target_reaches_only_that_executor() -> None:
    class Director(Executor):
        @handler
        async def direct(self, n: int, ctx: WorkflowContext[int]) -> None:
            await ctx.send_message(n, target_id="b")
            await ctx.send_message(n + 1, target_id="nowhere")

    director, a, b = Director(id="director"), Sink(id="a"), Sink(id="b")
    workflow = WorkflowBuilder(start_executor=director).add_fan_out_edges(director, [a, b]).build()
    result = await workflow.run(1)
    assert invoked(result) == [("director", 1), ("b", 2)]
    assert result.get_outputs() == [1]
    (warning,) = warnings_of(result)
    assert "'nowhere'" in warning


async def test_send_message_of_an_undeclared_type_is_sent_with_a_warning() -> None:
    # MAF checks WorkflowContext[OutT] only when the graph is built; the message still goes.
    class Liar(Executor):
        @handler
        async def lie(self, n: int, ctx: WorkflowContext[int]) -> None:
            await ctx.send_message("text")  # type: ignore[arg-type]

    class Reader(Executor):
        @handler
        async def read(self, text: str | int, ctx: WorkflowContext[Never, str]) -> None:
            await ctx.yield_output(text)

    liar, reader = Liar(id="liar"), Reader(id="reader")
    result = await WorkflowBuilder(start_executor=liar).add_edge(liar, reader).build().run(1)
    assert result.get_outputs() == ["text"]
    assert any("'liar' sent a str" in w for w in warnings_of(result))


# ------------------------------------------------------------------------------------ events


async def test_custom_events_are_emitted_and_reserved_types_become_warnings() -> None:
    @dataclass
    class Progress(WorkflowEvent):
        percent: int = 0

    class Reporter(Executor):
        @handler
        async def report(self, n: int, ctx: WorkflowContext) -> None:
            await ctx.add_event("note", {"n": n})
            await ctx.add_event(Progress("progress", percent=50, executor_id="reporter"))
            await ctx.add_event("output", "forged")
            await ctx.add_event(WorkflowEvent("failed"))

    result = await WorkflowBuilder(start_executor=Reporter(id="reporter")).build().run(1)
    note = next(e for e in result if e.type == "note")
    assert note.data == {"n": 1} and note.executor_id == "reporter"
    progress = next(e for e in result if e.type == "progress")
    assert isinstance(progress, Progress) and progress.percent == 50
    assert result.get_outputs() == []
    assert result.get_final_state() == WorkflowRunState.IDLE
    forged = warnings_of(result)
    assert len(forged) == 2 and "'output'" in forged[0] and "'failed'" in forged[1]


# ------------------------------------------------------------------------------------ build


def test_an_unnamed_workflow_gets_the_same_stable_name_in_every_build() -> None:
    def unnamed() -> Any:
        looper = Looper()
        return WorkflowBuilder(start_executor=looper).add_edge(looper, looper).build()

    assert unnamed().name == unnamed().name
    assert unnamed().name.startswith("loop")
    other = WorkflowBuilder(start_executor=Sink(id="loop")).build()
    assert other.name != unnamed().name


def test_build_refuses_two_executors_with_the_same_id() -> None:
    with pytest.raises(WorkflowValidationError, match="'twin'"):
        WorkflowBuilder(start_executor=Relay("twin")).add_edge("twin", Relay("twin"))


def test_build_refuses_a_duplicate_edge_naming_both_ends() -> None:
    a, b = Relay("a"), Relay("b")
    with pytest.raises(WorkflowValidationError, match="'a' -> 'b'"):
        WorkflowBuilder(start_executor=a).add_edge(a, b).add_edge(a, b).add_edge(b, a).build()


def test_build_refuses_an_unreachable_executor_naming_it() -> None:
    a, b, island = Relay("a"), Sink(id="b"), Relay("island")
    builder = WorkflowBuilder(start_executor=a).add_edge(a, b).add_edge(island, b)
    with pytest.raises(WorkflowValidationError, match="island"):
        builder.build()


def test_build_refuses_an_output_type_no_target_handles() -> None:
    class Words(Executor):
        @handler
        async def take(self, text: str, ctx: WorkflowContext) -> None:
            pass

    numbers, words = Relay("numbers"), Words(id="words")
    with pytest.raises(WorkflowValidationError, match="'numbers'.*int.*words"):
        WorkflowBuilder(start_executor=numbers).add_edge(numbers, words).build()


def test_build_warns_about_a_declared_output_without_outgoing_edges(
    caplog: pytest.LogCaptureFixture,
) -> None:
    # MAF builds such a graph (a last executor declared WorkflowContext[T]); so do we, and say so.
    with caplog.at_level(logging.WARNING, logger="workflows.validation"):
        workflow = WorkflowBuilder(start_executor=Relay("lonely")).build()
    assert workflow.start_executor_id == "lonely"
    assert any(
        "'lonely'" in r.getMessage() and "no outgoing" in r.getMessage() for r in caplog.records
    )


def test_build_refuses_an_unknown_executor_id() -> None:
    with pytest.raises(WorkflowValidationError, match="ghost"):
        WorkflowBuilder(start_executor=Relay("a")).add_edge("a", "ghost")


def test_an_executor_without_handlers_is_refused() -> None:
    class Empty(Executor):
        pass

    with pytest.raises(WorkflowValidationError, match="no @handler"):
        Empty(id="empty")


async def test_function_executors_run_like_class_executors() -> None:
    @executor(id="double")
    async def double(n: int, ctx: WorkflowContext[int]) -> None:
        await ctx.send_message(n * 2)

    @executor
    async def shout(n: int, ctx: WorkflowContext[Never, str]) -> None:
        await ctx.yield_output(f"{n}!")

    workflow = WorkflowBuilder(start_executor=double).add_edge(double, shout).build()
    assert (await workflow.run(21)).get_outputs() == ["42!"]
    assert shout.id == "shout"


async def test_a_checkpoint_of_a_run_round_trips_through_to_dict() -> None:
    storage = InMemoryCheckpointStorage()
    await fan_in_workflow(storage).run(1)
    for checkpoint in await storage.list_checkpoints(workflow_name="fan-in"):
        assert WorkflowCheckpoint.from_dict(checkpoint.to_dict()) == checkpoint
