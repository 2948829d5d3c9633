"""Durable steps: a step's result is saved in a typed checkpoint when the step returns, and a
resume in a freshly built workflow (any process) returns it without calling the step again,
while plain code runs again. The checkpoints say, per step and in call order, what an operator
page shows: name, input, result, duration, and whether the result was replayed or computed.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import json
from dataclasses import dataclass
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
from agent_framework import Message
from pydantic import BaseModel

from workflows import (
    CheckpointEncodeError,
    CheckpointKind,
    FileCheckpointStorage,
    InMemoryCheckpointStorage,
    RunContext,
    StepReplayError,
    WorkflowRunState,
    step,
    workflow,
)
from workflows.functional import read_steps

CALLS: list[str] = []


@dataclass
class Quote:
    supplier: str
    price: Decimal
    valid_until: dt.date


class Verdict(BaseModel):
    approved: bool
    reason: str


@step
async def get_quote(supplier: str) -> Quote:
    CALLS.append(f"quote:{supplier}")
    return Quote(supplier, Decimal("19.99"), dt.date(2030, 1, 31))


@step
async def judge(quote: Quote) -> Verdict:
    CALLS.append("judge")
    return Verdict(approved=quote.price < 20, reason=f"{quote.supplier} is cheap enough")


@step
async def summarize(verdict: Verdict) -> Message:
    CALLS.append("summarize")
    return Message("assistant", [f"approved={verdict.approved}: {verdict.reason}"])


@workflow(name="procurement")
async def procurement(supplier: str, ctx: RunContext) -> str:
    CALLS.append("plain:start")
    quote = await get_quote(supplier)
    verdict = await judge(quote)
    ctx.set_state("verdict", verdict.approved)
    note = await summarize(verdict)
    answer = await ctx.request_info({"note": note.text}, response_type=str, request_id="sign")
    return f"{note.text} / signed by {answer}"


@pytest.fixture(autouse=True)
def fresh_calls() -> None:
    CALLS.clear()


async def test_step_results_come_back_from_a_file_checkpoint_in_a_freshly_built_workflow(
    tmp_path: Path,
) -> None:
    storage = FileCheckpointStorage(tmp_path)
    paused = await procurement.build(checkpoint_storage=storage).run("acme")
    assert paused.get_final_state() is WorkflowRunState.IDLE_WITH_PENDING_REQUESTS
    assert CALLS == ["plain:start", "quote:acme", "judge", "summarize"]
    latest = await storage.get_latest(workflow_name="procurement")
    assert latest is not None

    CALLS.clear()
    fresh = procurement.build(checkpoint_storage=FileCheckpointStorage(tmp_path))
    done = await fresh.run(checkpoint_id=latest.checkpoint_id, responses={"sign": "Ada"})

    assert done.get_outputs() == ["approved=True: acme is cheap enough / signed by Ada"]
    assert CALLS == ["plain:start"]  # every step replayed; only plain code ran again
    assert [e.executor_id for e in done if e.type == "executor_bypassed"] == [
        "get_quote",
        "judge",
        "summarize",
    ]


async def test_replayed_results_are_the_typed_values_the_steps_returned(tmp_path: Path) -> None:
    storage = FileCheckpointStorage(tmp_path)
    await procurement.build(checkpoint_storage=storage).run("acme")
    latest = await storage.get_latest(workflow_name="procurement")
    assert latest is not None

    results = {r.step: r.result for r in read_steps(latest)}

    assert results["get_quote"] == Quote("acme", Decimal("19.99"), dt.date(2030, 1, 31))
    assert results["judge"] == Verdict(approved=True, reason="acme is cheap enough")
    assert isinstance(results["summarize"], Message)
    assert results["summarize"].text == "approved=True: acme is cheap enough"
    assert latest.state["verdict"] is True


async def test_checkpoints_are_typed_json_never_pickle(tmp_path: Path) -> None:
    await procurement.build(checkpoint_storage=FileCheckpointStorage(tmp_path)).run("acme")

    texts = [p.read_text() for p in tmp_path.rglob("*") if p.is_file()]
    assert texts
    for text in texts:  # documents, and the storage's JSON-lines index
        for line in text.splitlines() if "\n" in text.strip() else [text]:
            json.loads(line)
    assert not any("pickle" in t.lower() for t in texts)


async def test_a_checkpoint_is_written_after_each_computed_step_and_when_the_call_ends() -> None:
    storage = InMemoryCheckpointStorage()
    await procurement.build(checkpoint_storage=storage).run("acme")

    checkpoints = await storage.list_checkpoints(workflow_name="procurement")
    kinds = [c.metadata["kind"] for c in checkpoints]
    assert kinds == [CheckpointKind.STEP] * 3 + [CheckpointKind.IDLE]
    assert [c.iteration_count for c in checkpoints] == [1, 2, 3, 3]
    assert len({c.run_id for c in checkpoints}) == 1
    chain = [c.previous_checkpoint_id for c in checkpoints]
    assert chain == [None] + [c.checkpoint_id for c in checkpoints[:-1]]
    assert checkpoints[-1].graph_signature["kind"] == "functional"
    assert list(checkpoints[-1].pending_request_info_events) == ["sign"]


async def test_the_step_journal_lists_each_call_with_input_result_duration_and_replay() -> None:
    storage = InMemoryCheckpointStorage()
    pipeline = procurement.build(checkpoint_storage=storage)
    await pipeline.run("acme")
    await pipeline.run(responses={"sign": "Ada"})

    latest = await storage.get_latest(workflow_name="procurement")
    assert latest is not None
    journal = read_steps(latest)

    assert [(r.step, r.status, r.replayed) for r in journal] == [
        ("get_quote", "replayed", True),
        ("judge", "replayed", True),
        ("summarize", "replayed", True),
    ]
    assert journal[0].input == {"args": ["acme"], "kwargs": {}}
    assert all(r.has_result and r.duration_ms is not None for r in journal)
    first_call = read_steps((await storage.list_checkpoints(workflow_name="procurement"))[0])
    assert [(r.step, r.status) for r in first_call] == [("get_quote", "computed")]
    assert first_call[0].result.supplier == "acme"
    assert first_call[0].started_at


async def test_a_resume_in_a_fresh_workflow_of_a_step_with_a_closure_is_refused() -> None:
    seen: list[int] = []

    @step
    async def remember(x: int) -> int:
        seen.append(x)
        return x

    @workflow
    async def flow(x: int) -> int:
        return await remember(x)

    with pytest.raises(StepReplayError, match="Cannot checkpoint @step 'remember'") as caught:
        await flow.build(checkpoint_storage=InMemoryCheckpointStorage()).run(1)
    assert caught.value.step_name == "remember"


class Opaque:
    """Neither a dataclass nor a model: the codec cannot rebuild it."""

    def __init__(self, value: int) -> None:
        self.value = value


@step
async def make_opaque(value: int) -> Any:
    return Opaque(value)


@workflow
async def opaque_flow(value: int) -> int:
    return (await make_opaque(value)).value


async def test_a_result_the_codec_cannot_store_is_refused_naming_the_step() -> None:
    storage = InMemoryCheckpointStorage()

    with pytest.raises(CheckpointEncodeError, match="@step 'make_opaque'"):
        await opaque_flow.build(checkpoint_storage=storage).run(7)

    assert await opaque_flow.build().run(7) is not None  # without a storage nothing is stored


@step
async def slow_square(x: int) -> int:
    CALLS.append(f"square:{x}")
    await asyncio.sleep(0)
    return x * x


@workflow(name="squares")
async def squares(n: int, ctx: RunContext) -> list[int]:
    values = list(await asyncio.gather(*(slow_square(i) for i in range(n))))
    await ctx.request_info({"values": values}, response_type=str, request_id="ok")
    return values


async def test_parallel_steps_resume_each_from_its_own_saved_result(tmp_path: Path) -> None:
    storage = FileCheckpointStorage(tmp_path)
    await squares.build(checkpoint_storage=storage).run(4)
    latest = await storage.get_latest(workflow_name="squares")
    assert latest is not None

    CALLS.clear()
    done = await squares.build(checkpoint_storage=storage).run(
        checkpoint_id=latest.checkpoint_id, responses={"ok": "yes"}
    )

    assert done.get_outputs() == [[0, 1, 4, 9]]
    assert CALLS == []
    bypassed = [e.data for e in done if e.type == "executor_bypassed"]
    assert bypassed == [0, 1, 4, 9]


@step
async def count(x: int) -> int:
    return x + 1


@workflow(name="counting")
async def counting(n: int) -> int:
    x = 0
    for _ in range(n):
        x = await count(x)
    return x


async def test_full_pages_of_saved_results_do_not_change_as_the_run_goes_on() -> None:
    # So a storage keeps each full page once: a long run's checkpoints grow by a page, not by
    # everything saved so far.
    storage = InMemoryCheckpointStorage()
    await counting.build(checkpoint_storage=storage).run(70)

    checkpoints = await storage.list_checkpoints(workflow_name="counting")
    assert len(checkpoints) == 71
    at_40, last = checkpoints[39], checkpoints[-1]
    assert at_40.state["_functional"]["pages"] == {"cache": 2, "steps": 2}
    assert last.state["_functional"]["pages"] == {"cache": 3, "steps": 3}
    assert at_40.state["_functional.cache.0"] == last.state["_functional.cache.0"]
    assert at_40.state["_functional.steps.0"] == last.state["_functional.steps.0"]
    assert [r.result for r in read_steps(last)] == list(range(1, 71))
