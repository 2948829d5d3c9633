"""OpenTelemetry traces of runs: a span per run, superstep and executor invocation, one trace
for a whole lineage even when another process resumes it, and nothing at all when tracing is
off or OpenTelemetry is not installed."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from typing import Any, Never

import pytest
from opentelemetry import trace
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import StatusCode

from workflows import (
    Executor,
    InMemoryCheckpointStorage,
    WorkflowBuilder,
    WorkflowContext,
    handler,
    response_handler,
)
from workflows import tracing as engine_tracing


class Split(Executor):
    @handler
    async def split(self, n: int, ctx: WorkflowContext[int]) -> None:
        await ctx.send_message(n)


class Double(Executor):
    @handler
    async def double(self, n: int, ctx: WorkflowContext[Never, int]) -> None:
        # A span the author opens nests under the invocation's span.
        with trace.get_tracer("author").start_as_current_span("author.work"):
            await ctx.yield_output(n * 2)


class Ask(Executor):
    @handler
    async def ask(self, n: int, ctx: WorkflowContext[int]) -> None:
        await ctx.request_info(f"ok {n}?", bool, request_id="q1")

    @response_handler
    async def answered(self, question: str, ok: bool, ctx: WorkflowContext[Never, str]) -> None:
        await ctx.yield_output(f"{question} {ok}")


class Boom(Executor):
    @handler
    async def boom(self, n: int, ctx: WorkflowContext[Never]) -> None:
        raise ValueError(f"no {n}")


def fan_out(storage: Any = None) -> Any:
    split, left, right = Split(id="split"), Double(id="left"), Double(id="right")
    return (
        WorkflowBuilder(start_executor=split, checkpoint_storage=storage, name="fan")
        .add_fan_out_edges(split, [left, right])
        .build()
    )


def asking(storage: Any) -> Any:
    split, ask = Split(id="split"), Ask(id="ask")
    return (
        WorkflowBuilder(start_executor=split, checkpoint_storage=storage, name="asking")
        .add_edge(split, ask)
        .build()
    )


@pytest.fixture
def spans(monkeypatch: pytest.MonkeyPatch) -> Iterator[InMemorySpanExporter]:
    """A real SDK provider recording into memory, as the process-wide provider."""
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    monkeypatch.setattr(trace, "get_tracer_provider", lambda: provider)
    monkeypatch.setattr(trace, "get_tracer", lambda name, *a, **k: provider.get_tracer(name))
    yield exporter
    provider.shutdown()


def named(exporter: InMemorySpanExporter, name: str) -> list[ReadableSpan]:
    return [s for s in exporter.get_finished_spans() if s.name == name]


def parent_id(span: ReadableSpan) -> int | None:
    return span.parent.span_id if span.parent is not None else None


async def test_a_run_has_a_span_per_run_superstep_and_executor_invocation(
    spans: InMemorySpanExporter,
) -> None:
    storage = InMemoryCheckpointStorage()
    result = await fan_out(storage).run(21)
    assert sorted(result.get_outputs()) == [42, 42]

    (run,) = named(spans, "workflow.run")
    steps = named(spans, "workflow.superstep")
    invocations = named(spans, "executor.process")
    assert run.attributes is not None and run.attributes["workflow.name"] == "fan"
    lineages = {c.run_id for c in await storage.list_checkpoints(workflow_name="fan")}
    assert {run.attributes["superstep.run_id"]} == lineages
    assert run.attributes["workflow.state"] == "IDLE"
    assert [s.attributes["superstep.iteration"] for s in steps] == [1, 2]  # type: ignore[index]
    assert all(parent_id(s) == run.context.span_id for s in steps)
    by_step = {s.context.span_id: s for s in steps}
    executors = sorted(
        (by_step[parent_id(i)].attributes["superstep.iteration"], i.attributes["executor.id"])  # type: ignore[index]
        for i in invocations
    )
    assert executors == [(1, "split"), (2, "left"), (2, "right")]
    assert {i.attributes["executor.type"] for i in invocations} == {"Split", "Double"}  # type: ignore[index]
    # Every span of the run is one trace.
    assert {s.context.trace_id for s in spans.get_finished_spans()} == {run.context.trace_id}


async def test_superstep_spans_name_the_checkpoint_they_wrote(spans: InMemorySpanExporter) -> None:
    storage = InMemoryCheckpointStorage()
    await fan_out(storage).run(1)
    saved = {c.checkpoint_id for c in await storage.list_checkpoints(workflow_name="fan")}
    named_ids = {
        s.attributes["superstep.checkpoint_id"] for s in named(spans, "workflow.superstep")
    }  # type: ignore[index]
    assert named_ids <= saved and len(named_ids) == 2


async def test_an_authors_span_nests_under_the_invocation(spans: InMemorySpanExporter) -> None:
    await fan_out().run(1)
    invocations = {s.context.span_id: s for s in named(spans, "executor.process")}
    for mine in named(spans, "author.work"):
        assert invocations[parent_id(mine)].attributes["executor.type"] == "Double"  # type: ignore[index]


async def test_a_resume_in_a_fresh_workflow_continues_the_same_trace(
    spans: InMemorySpanExporter,
) -> None:
    storage = InMemoryCheckpointStorage()
    await asking(storage).run(7)
    paused = await storage.get_latest(workflow_name="asking")
    assert paused is not None
    (first,) = named(spans, "workflow.run")
    assert paused.metadata[engine_tracing.TRACE_KEY]["traceparent"].split("-")[1] == (
        f"{first.context.trace_id:032x}"
    )

    # Another process, days later: new objects, the checkpoint id and the answer.
    result = await asking(storage).run(checkpoint_id=paused.checkpoint_id, responses={"q1": True})
    assert result.get_outputs() == ["ok 7? True"]
    first_run, second_run = sorted(named(spans, "workflow.run"), key=lambda s: s.start_time or 0)
    assert second_run.context.trace_id == first_run.context.trace_id
    assert parent_id(second_run) == first_run.context.span_id
    assert second_run.attributes["superstep.resumed_from"] == paused.checkpoint_id  # type: ignore[index]
    latest = await storage.get_latest(workflow_name="asking")
    assert latest is not None
    assert latest.metadata[engine_tracing.TRACE_KEY] == paused.metadata[engine_tracing.TRACE_KEY]


async def test_a_failing_handler_marks_its_span_its_superstep_and_the_run(
    spans: InMemorySpanExporter,
) -> None:
    start, boom = Split(id="split"), Boom(id="boom")
    workflow = WorkflowBuilder(start_executor=start, name="boom").add_edge(start, boom).build()
    with pytest.raises(ValueError, match="no 3"):
        await workflow.run(3)
    (failed,) = [
        s for s in named(spans, "executor.process") if s.attributes["executor.id"] == "boom"
    ]  # type: ignore[index]
    assert failed.status.status_code == StatusCode.ERROR
    assert any(e.name == "exception" for e in failed.events)
    assert named(spans, "workflow.superstep")[-1].status.status_code == StatusCode.ERROR
    (run,) = named(spans, "workflow.run")
    assert run.status.status_code == StatusCode.ERROR
    assert run.attributes["workflow.state"] == "FAILED"  # type: ignore[index]


async def test_a_caller_span_parents_a_fresh_run(spans: InMemorySpanExporter) -> None:
    with trace.get_tracer("caller").start_as_current_span("task") as task:
        await fan_out().run(1)
    (run,) = named(spans, "workflow.run")
    assert parent_id(run) == task.get_span_context().span_id


async def test_no_provider_means_no_span_and_no_trace_in_checkpoints(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    for provider in (trace.NoOpTracerProvider(), trace.ProxyTracerProvider()):
        monkeypatch.setattr(trace, "get_tracer_provider", lambda p=provider: p)
        storage = InMemoryCheckpointStorage()
        await fan_out(storage).run(1)
        for checkpoint in await storage.list_checkpoints(workflow_name="fan"):
            assert engine_tracing.TRACE_KEY not in checkpoint.metadata


def test_the_engine_runs_without_opentelemetry_installed() -> None:
    code = """
import asyncio, sys
sys.modules["opentelemetry"] = None  # as if the package were not installed
import workflows
from workflows import InMemoryCheckpointStorage, WorkflowBuilder, executor, WorkflowContext

@executor(id="echo")
async def echo(text: str, ctx: WorkflowContext[None, str]) -> None:
    await ctx.yield_output(text)

async def main():
    storage = InMemoryCheckpointStorage()
    workflow = WorkflowBuilder(start_executor=echo, checkpoint_storage=storage).build()
    result = await workflow.run("hi")
    assert result.get_outputs() == ["hi"]
    assert all("trace" not in c.metadata for c in await storage.list_checkpoints())
    from workflows import tracing
    assert tracing._api is False

asyncio.run(main())
"""
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=False
    )
    assert done.returncode == 0, done.stderr


@pytest.mark.parametrize(
    "carrier, expected",
    [
        (
            {"traceparent": "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"},
            "4bf92f3577b34da6a3ce929d0e0e4736",
        ),
        ({"traceparent": "00-00000000000000000000000000000000-00f067aa0ba902b7-01"}, None),
        ({"traceparent": "00-zzf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"}, None),
        ({"traceparent": 5}, None),
        ({}, None),
        (None, None),
        ("traceparent", None),
    ],
)
def test_trace_id_of_reads_only_a_well_formed_traceparent(
    carrier: Any, expected: str | None
) -> None:
    assert engine_tracing.trace_id_of(carrier) == expected
