"""Seed 002 ("Checkpointing" lesson): the two-step counter, run verbatim against our engine.

Only the import line differs from the document; ``s1``, ``s2`` and ``WORKFLOW_NAME`` are the
scaffolding the fragment assumes: (5 + 1) * 10 = 60.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Never

import pytest

from workflows import (
    Executor,
    FileCheckpointStorage,
    InMemoryCheckpointStorage,
    WorkflowBuilder,
    WorkflowContext,
    handler,
)

WORKFLOW_NAME = "checkpointing-lesson"


class AddOne(Executor):
    @handler
    async def add(self, n: int, ctx: WorkflowContext[int]) -> None:
        await ctx.send_message(n + 1)


class TimesTen(Executor):
    @handler
    async def times(self, n: int, ctx: WorkflowContext[Never, int]) -> None:
        await ctx.yield_output(n * 10)


# s2 declared the other ways MAF users write the last executor; MAF builds and runs each.
class TimesTenDeclaredNone(Executor):
    @handler
    async def times(self, n: int, ctx: WorkflowContext[None, int]) -> None:
        await ctx.yield_output(n * 10)


class TimesTenDeclaredAny(Executor):
    @handler
    async def times(self, n: int, ctx: WorkflowContext[Any, int]) -> None:
        await ctx.yield_output(n * 10)


class TimesTenDeclaredIntInt(Executor):
    @handler
    async def times(self, n: int, ctx: WorkflowContext[int, int]) -> None:
        await ctx.yield_output(n * 10)


async def lesson(last: type[Executor] = TimesTen) -> None:
    s1, s2 = AddOne(id="s1"), last(id="s2")
    # ---- the document's code, verbatim ----
    storage = FileCheckpointStorage("./checkpoints")
    workflow = (
        WorkflowBuilder(start_executor=s1, checkpoint_storage=storage, name=WORKFLOW_NAME)
        .add_edge(s1, s2)
        .build()
    )
    result = await workflow.run(5)
    print(f"output: {result.get_outputs()}")  # (5+1)*10 = 60

    checkpoints = await storage.list_checkpoints(workflow_name=WORKFLOW_NAME)
    for cp in checkpoints:
        print(f"  • {cp.checkpoint_id[:8]}…  iteration={cp.iteration_count}")


@pytest.fixture
def in_tmp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    return tmp_path


async def test_lesson_outputs_60_and_lists_its_checkpoints(
    in_tmp: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    await lesson()
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == "output: [60]"
    # Entry checkpoint plus one per superstep (s1, then s2), oldest first.
    assert [line.rsplit("=", 1)[1] for line in lines[1:]] == ["0", "1", "2"]
    assert all(line.startswith("  • ") and "…  iteration=" in line for line in lines[1:])


@pytest.mark.parametrize(
    "last",
    [TimesTenDeclaredNone, TimesTenDeclaredAny, TimesTenDeclaredIntInt],
    ids=["None", "Any", "int"],
)
async def test_lesson_outputs_60_however_s2_declares_what_it_sends(
    in_tmp: Path, capsys: pytest.CaptureFixture[str], last: type[Executor]
) -> None:
    await lesson(last)
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == "output: [60]"
    assert [line.rsplit("=", 1)[1] for line in lines[1:]] == ["0", "1", "2"]


async def test_lesson_leaves_json_checkpoints_under_the_checkpoints_folder(in_tmp: Path) -> None:
    await lesson()
    files = [p for p in (in_tmp / "checkpoints").rglob("*.json")]
    assert len(files) >= 1
    for path in files:
        json.loads(path.read_text(encoding="utf-8"))


async def test_lesson_checkpoints_carry_id_iteration_and_timestamp(in_tmp: Path) -> None:
    await lesson()
    storage = FileCheckpointStorage("./checkpoints")
    for cp in await storage.list_checkpoints(workflow_name=WORKFLOW_NAME):
        assert cp.checkpoint_id and cp.timestamp and cp.iteration_count >= 0


async def test_lesson_resumes_from_a_superstep_boundary_into_fresh_executors(
    in_tmp: Path,
) -> None:
    await lesson()
    storage = FileCheckpointStorage("./checkpoints")
    after_s1 = next(
        cp
        for cp in await storage.list_checkpoints(workflow_name=WORKFLOW_NAME)
        if cp.iteration_count == 1
    )
    s1, s2 = AddOne(id="s1"), TimesTen(id="s2")
    workflow = (
        WorkflowBuilder(start_executor=s1, checkpoint_storage=storage, name=WORKFLOW_NAME)
        .add_edge(s1, s2)
        .build()
    )
    resumed = await workflow.run(checkpoint_id=after_s1.checkpoint_id)
    assert resumed.get_outputs() == [60]


async def test_lesson_runs_the_same_on_in_memory_storage() -> None:
    s1, s2 = AddOne(id="s1"), TimesTen(id="s2")
    storage = InMemoryCheckpointStorage()
    workflow = (
        WorkflowBuilder(start_executor=s1, checkpoint_storage=storage, name=WORKFLOW_NAME)
        .add_edge(s1, s2)
        .build()
    )
    assert (await workflow.run(5)).get_outputs() == [60]
    assert len(await storage.list_checkpoints(workflow_name=WORKFLOW_NAME)) == 3
