"""A functional run has a ``workflow.run`` span per call, and a resume from a checkpoint, in a
freshly built workflow, continues the lineage's trace, as graph runs do."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from opentelemetry import trace
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from workflows import InMemoryCheckpointStorage, RunContext, step, workflow


@pytest.fixture
def spans(monkeypatch: pytest.MonkeyPatch) -> Iterator[InMemorySpanExporter]:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    monkeypatch.setattr(trace, "get_tracer_provider", lambda: provider)
    monkeypatch.setattr(trace, "get_tracer", lambda name, *a, **k: provider.get_tracer(name))
    yield exporter
    provider.shutdown()


@step
async def shout(text: str) -> str:
    return text.upper()


@workflow(name="shouter")
async def shouter(text: str, ctx: RunContext) -> str:
    loud = await shout(text)
    await ctx.request_info(loud, response_type=str, request_id="ok")
    return loud


async def test_a_resumed_functional_run_continues_its_lineage_s_trace(
    spans: InMemorySpanExporter,
) -> None:
    storage = InMemoryCheckpointStorage()
    await shouter.build(checkpoint_storage=storage).run("hi")
    latest = await storage.get_latest(workflow_name="shouter")
    assert latest is not None
    await shouter.build(checkpoint_storage=storage).run(
        checkpoint_id=latest.checkpoint_id, responses={"ok": "yes"}
    )

    runs = [s for s in spans.get_finished_spans() if s.name == "workflow.run"]
    assert len(runs) == 2
    assert runs[0].context is not None and runs[1].context is not None
    assert runs[0].context.trace_id == runs[1].context.trace_id
    assert [s.attributes["workflow.state"] for s in runs if s.attributes] == [
        "IDLE_WITH_PENDING_REQUESTS",
        "IDLE",
    ]
