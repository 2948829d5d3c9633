"""What a workflow without agents observes, held to Microsoft Agent Framework 1.23 itself: the
input a run takes, the errors it raises, routing into sub-workflows and delivery order."""

# No `from __future__ import annotations`: the handlers below are annotated with the engine
# under test, which must be evaluated where each class is defined.

import asyncio
import json
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any

import agent_framework as maf
import pytest

import workflows as ours
from workflows import (
    CheckpointDecodeError,
    FileCheckpointStorage,
    InputTypeError,
    RunArgumentsError,
    UnregisteredTypeError,
    WorkflowCheckpoint,
)
from workflows.testing import make_checkpoint

ENGINES = pytest.mark.parametrize("engine", [maf, ours], ids=["maf", "ours"])


def upper_workflow(engine: ModuleType) -> Any:
    @engine.executor(id="upper")
    async def upper(text: str, ctx: engine.WorkflowContext[None, str]) -> None:
        await ctx.yield_output(text.upper())

    return engine.WorkflowBuilder(start_executor=upper).build()


@ENGINES
async def test_a_workflow_message_given_to_run_is_unwrapped_to_its_data(engine: ModuleType) -> None:
    workflow = upper_workflow(engine)
    result = await workflow.run(engine.WorkflowMessage(data="hi", source_id="caller"))
    assert result.get_outputs() == ["HI"]


@ENGINES
async def test_input_the_start_executor_cannot_take_is_a_runtime_error(engine: ModuleType) -> None:
    with pytest.raises(RuntimeError, match="upper"):
        await upper_workflow(engine).run(42)


async def test_our_input_error_is_also_a_run_arguments_error() -> None:
    with pytest.raises(InputTypeError) as raised:
        await upper_workflow(ours).run(42)
    assert isinstance(raised.value, RunArgumentsError)
    assert isinstance(raised.value, RuntimeError)


def test_a_new_checkpoint_is_version_1_0_as_in_maf() -> None:
    assert (
        make_checkpoint().version
        == maf.WorkflowCheckpoint(workflow_name="w", graph_signature_hash="h").version
        == "1.0"
    )


@pytest.mark.parametrize("version", ["1.0", "1"])
def test_a_checkpoint_of_version_1_0_or_1_loads(version: str) -> None:
    document = make_checkpoint(state={"k": 1}).to_dict()
    document["version"] = version
    assert WorkflowCheckpoint.from_dict(document).state == {"k": 1}


def test_an_unknown_checkpoint_version_is_refused() -> None:
    document = make_checkpoint().to_dict()
    document["version"] = "2.0"
    with pytest.raises(CheckpointDecodeError, match="version"):
        WorkflowCheckpoint.from_dict(document)


async def test_get_latest_raises_rather_than_fall_back_to_an_older_checkpoint(
    tmp_path: Path,
) -> None:
    # The newest checkpoint is intact but names a type this process does not know: passing
    # over it would resume an older one and run again what it had done.
    storage = FileCheckpointStorage(tmp_path)
    older = make_checkpoint(seconds=1, state={"n": 1})
    newer = make_checkpoint(seconds=2, state={"n": 2})
    await storage.save(older)
    await storage.save(newer)
    path = next(p for p in (tmp_path / "checkpoints").glob(f"{newer.checkpoint_id}.json"))
    document = json.loads(path.read_text())
    document["record"]["state"]["n"] = {"$t": "model", "name": "gone.Type", "v": {}}
    path.write_text(json.dumps(document))
    for reader in (storage, FileCheckpointStorage(tmp_path)):
        with pytest.raises(UnregisteredTypeError, match="gone.Type"):
            await reader.get_latest(workflow_name=older.workflow_name)


class Boom(Exception):
    pass


@ENGINES
async def test_a_failing_handler_s_exception_keeps_its_cause(engine: ModuleType) -> None:
    @engine.executor(id="fails")
    async def fails(text: str, ctx: engine.WorkflowContext[None]) -> None:
        try:
            raise KeyError(text)
        except KeyError as exc:
            raise Boom("wrapped") from exc

    with pytest.raises(Boom) as raised:
        await engine.WorkflowBuilder(start_executor=fails).build().run("x")
    assert isinstance(raised.value.__cause__, KeyError)


async def test_closing_a_stream_returns_once_the_handler_has_stopped() -> None:
    stopped = asyncio.Event()
    started = asyncio.Event()

    @ours.executor(id="slow")
    async def slow(text: str, ctx: ours.WorkflowContext[None, str]) -> None:
        started.set()
        try:
            await asyncio.sleep(3600)
        finally:
            stopped.set()

    stream = ours.WorkflowBuilder(start_executor=slow).build().run("x", stream=True)
    events = stream.__aiter__()
    while not started.is_set():
        await anext(events)
    await stream.aclose()
    assert stopped.is_set()


# ----------------------------------------------------------------- sub-workflows and delivery


@dataclass
class Email:
    recipient: str


def routing_workflow(engine: ModuleType, seen: list[str]) -> Any:
    class Validate(engine.Executor):
        @engine.handler
        async def check(self, address: str, ctx: engine.WorkflowContext[None, str]) -> None:
            await ctx.yield_output(f"valid {address}")

    class Orchestrate(engine.Executor):
        @engine.handler
        async def route(self, email: Email, ctx: engine.WorkflowContext[Email | str]) -> None:
            await ctx.send_message(email.recipient)
            await ctx.send_message(email)

        @engine.handler
        async def done(self, result: str, ctx: engine.WorkflowContext[None, str]) -> None:
            await ctx.yield_output(result)

    class Deliver(engine.Executor):
        @engine.handler
        async def send(self, email: Email, ctx: engine.WorkflowContext[None, str]) -> None:
            seen.append(email.recipient)
            await ctx.yield_output(f"sent {email.recipient}")

    child = engine.WorkflowBuilder(start_executor=Validate(id="validate")).build()
    sub = engine.WorkflowExecutor(child, id="validation")
    orchestrate, deliver = Orchestrate(id="orchestrate"), Deliver(id="deliver")
    return (
        engine.WorkflowBuilder(start_executor=orchestrate)
        .add_edge(orchestrate, sub)
        .add_edge(sub, orchestrate)
        .add_edge(orchestrate, deliver)
        .build()
    )


@ENGINES
async def test_a_message_goes_only_to_the_edge_whose_target_takes_its_type(
    engine: ModuleType,
) -> None:
    seen: list[str] = []
    result = await routing_workflow(engine, seen).run(Email("ada@example.org"))
    assert sorted(result.get_outputs()) == ["sent ada@example.org", "valid ada@example.org"]
    assert seen == ["ada@example.org"]


def fan_out_workflow(engine: ModuleType, order: list[str]) -> Any:
    class Source(engine.Executor):
        @engine.handler
        async def start(self, n: int, ctx: engine.WorkflowContext[int]) -> None:
            for i in range(n):
                await ctx.send_message(i)

    def target(name: str) -> Any:
        class Target(engine.Executor):
            @engine.handler
            async def take(self, i: int, ctx: engine.WorkflowContext[None]) -> None:
                order.append(f"{name}{i}")

        return Target(id=name)

    source, a, b = Source(id="source"), target("a"), target("b")
    return engine.WorkflowBuilder(start_executor=source).add_fan_out_edges(source, [a, b]).build()


async def test_a_fan_out_of_several_messages_is_delivered_message_by_message_as_in_maf() -> None:
    orders = {}
    for engine in (maf, ours):
        order: list[str] = []
        await fan_out_workflow(engine, order).run(3)
        orders[engine.__name__] = order
    assert orders["workflows"] == orders["agent_framework"] == ["a0", "b0", "a1", "b1", "a2", "b2"]


@ENGINES
async def test_a_sub_workflow_may_be_designated_an_output(engine: ModuleType) -> None:
    child = upper_workflow(engine)
    sub = engine.WorkflowExecutor(child, id="sub")
    workflow = engine.WorkflowBuilder(start_executor=sub, output_from="all").build()
    assert isinstance(workflow, engine.Workflow)
