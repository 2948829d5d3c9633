"""Seed 001 (Chapter 18, "State and Checkpoints"): the return-refund pipeline, verbatim.

``ReturnRequestExecutor`` is the document's code with only the import line changed. The rest —
``FinalizeReturnExecutor``, ``build_workflow``, ``resume_from_checkpoint``, ``demo`` and ``main``
— is the scaffolding the chapter describes (python/main.py), and the chapter's eight tests are
ported below. The proof: resuming from the first checkpoint into an executor seeded with a
deliberately wrong 999.0 still gives 15.0, because the checkpoint is the source of truth.
"""

from __future__ import annotations

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

WORKFLOW_NAME = "return-refund"


# ------------------------------------------------------------------------- the document's code


class ReturnRequestExecutor(Executor):
    def __init__(self, initial_refund: float) -> None:
        super().__init__(id="return-request")
        self.refund_amount = initial_refund

    @handler
    async def handle(self, item_refund: float, ctx: WorkflowContext[float, None]) -> None:
        self.refund_amount += item_refund
        await ctx.send_message(self.refund_amount)

    async def on_checkpoint_save(self) -> dict[str, Any]:
        return {"refund_amount": self.refund_amount}

    async def on_checkpoint_restore(self, state: dict[str, Any]) -> None:
        self.refund_amount = float(state.get("refund_amount", 0.0))


# ---------------------------------------------------------------------------------- scaffolding


class FinalizeReturnExecutor(Executor):
    """Stateless: yields the refund total as the workflow's output."""

    def __init__(self) -> None:
        super().__init__(id="finalize-return")

    @handler
    async def finalize(self, refund_amount: float, ctx: WorkflowContext[Never, float]) -> None:
        await ctx.yield_output(refund_amount)


def build_workflow(initial_refund: float, storage: Any = None) -> Any:
    request = ReturnRequestExecutor(initial_refund)
    finalize = FinalizeReturnExecutor()
    return (
        WorkflowBuilder(start_executor=request, checkpoint_storage=storage, name=WORKFLOW_NAME)
        .add_edge(request, finalize)
        .build()
    )


async def run_workflow(storage: Any, initial_refund: float, item_refund: float) -> float:
    result = await build_workflow(initial_refund, storage).run(item_refund)
    (output,) = result.get_outputs()
    return float(output)


async def resume_from_checkpoint(
    storage: Any, checkpoint_id: str, *, resume_initial_refund: float
) -> float:
    # A fresh workflow object, as a new process would build it; storage given to run() only.
    workflow = build_workflow(resume_initial_refund)
    outputs = []
    async for event in workflow.run(stream=True, checkpoint_id=checkpoint_id, checkpoint_storage=storage):
        if event.type == "output":
            outputs.append(event.data)
    (output,) = outputs
    return float(output)


async def demo(storage: Any, initial_refund: float = 10.0, item_refund: float = 5.0) -> float:
    result = await run_workflow(storage, initial_refund, item_refund)
    print(f"Phase 1 result: refund_amount = {result}")
    checkpoints = await storage.list_checkpoints(workflow_name=WORKFLOW_NAME)
    first = checkpoints[0]

    # ---- the document's code, verbatim ----
    wrong_initial_refund = 999.0
    replayed = await resume_from_checkpoint(
        storage, first.checkpoint_id, resume_initial_refund=wrong_initial_refund
    )
    print(f"Phase 2 result: refund_amount = {replayed} (expected {result})")
    return replayed


async def main(argv: list[str], checkpoint_dir: Path) -> int:
    initial_refund = float(argv[0]) if len(argv) > 0 else 10.0
    item_refund = float(argv[1]) if len(argv) > 1 else 5.0
    replayed = await demo(FileCheckpointStorage(checkpoint_dir), initial_refund, item_refund)
    return 0 if replayed == initial_refund + item_refund else 2


# ----------------------------------------------------------------------------------- the demo


async def test_demo_resumes_into_an_executor_seeded_with_999_and_still_gets_15(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    replayed = await demo(FileCheckpointStorage(tmp_path))
    assert replayed == 15.0
    assert capsys.readouterr().out.splitlines() == [
        "Phase 1 result: refund_amount = 15.0",
        "Phase 2 result: refund_amount = 15.0 (expected 15.0)",
    ]


async def test_main_with_default_arguments_exits_zero(tmp_path: Path) -> None:
    assert await main([], tmp_path) == 0


async def test_main_accepts_initial_and_item_refund_arguments(tmp_path: Path) -> None:
    assert await main(["20.5", "4.5"], tmp_path) == 0


async def test_every_checkpoint_before_the_output_replays_to_the_original_result(
    tmp_path: Path,
) -> None:
    storage = FileCheckpointStorage(tmp_path)
    assert await run_workflow(storage, 10.0, 5.0) == 15.0
    checkpoints = await storage.list_checkpoints(workflow_name=WORKFLOW_NAME)
    assert [cp.iteration_count for cp in checkpoints] == [0, 1, 2]
    for cp in checkpoints[:2]:  # the last one is after the output: nothing is left to run
        assert await resume_from_checkpoint(storage, cp.checkpoint_id, resume_initial_refund=999.0) == 15.0


# ------------------------------------------------------------------- the chapter's eight tests


async def test_checkpoint_hooks_round_trip_the_refund_amount() -> None:
    original = ReturnRequestExecutor(initial_refund=12.5)
    restored = ReturnRequestExecutor(initial_refund=0.0)
    await restored.on_checkpoint_restore(await original.on_checkpoint_save())
    assert restored.refund_amount == 12.5


async def test_restore_overwrites_whatever_the_constructor_set() -> None:
    executor = ReturnRequestExecutor(initial_refund=999.0)
    await executor.on_checkpoint_restore({"refund_amount": 15.0})
    assert executor.refund_amount == 15.0


async def test_restore_defaults_to_zero_when_the_key_is_missing() -> None:
    executor = ReturnRequestExecutor(initial_refund=999.0)
    await executor.on_checkpoint_restore({})
    assert executor.refund_amount == 0.0


async def test_running_the_workflow_writes_checkpoint_files_to_disk(tmp_path: Path) -> None:
    await run_workflow(FileCheckpointStorage(tmp_path), 10.0, 5.0)
    assert list(tmp_path.rglob("*.json"))


async def test_list_checkpoints_is_not_empty_after_a_run(tmp_path: Path) -> None:
    storage = FileCheckpointStorage(tmp_path)
    await run_workflow(storage, 10.0, 5.0)
    assert await storage.list_checkpoints(workflow_name=WORKFLOW_NAME)


async def test_resuming_into_a_fresh_workflow_restores_the_pre_resume_state(
    tmp_path: Path,
) -> None:
    storage = FileCheckpointStorage(tmp_path)
    await run_workflow(storage, 10.0, 5.0)
    after_request = next(
        cp for cp in await storage.list_checkpoints(workflow_name=WORKFLOW_NAME)
        if cp.iteration_count == 1
    )
    assert after_request.executor_states["return-request"] == {"refund_amount": 15.0}
    # A separate storage object on the same folder: nothing is shared in memory.
    fresh_storage = FileCheckpointStorage(tmp_path)
    assert await resume_from_checkpoint(
        fresh_storage, after_request.checkpoint_id, resume_initial_refund=999.0
    ) == 15.0


async def test_in_memory_storage_gives_the_same_replay_result_as_files(tmp_path: Path) -> None:
    results = []
    for storage in (FileCheckpointStorage(tmp_path), InMemoryCheckpointStorage()):
        await run_workflow(storage, 10.0, 5.0)
        first = (await storage.list_checkpoints(workflow_name=WORKFLOW_NAME))[0]
        results.append(
            await resume_from_checkpoint(storage, first.checkpoint_id, resume_initial_refund=999.0)
        )
    assert results == [15.0, 15.0]


def test_build_workflow_builds_with_checkpoint_storage_attached(tmp_path: Path) -> None:
    storage = FileCheckpointStorage(tmp_path)
    workflow = build_workflow(10.0, storage)
    assert workflow.checkpoint_storage is storage
    assert workflow.name == WORKFLOW_NAME


# ------------------------------------------------------------------------------ the gotchas


async def test_resume_cannot_take_a_new_message(tmp_path: Path) -> None:
    storage = FileCheckpointStorage(tmp_path)
    await run_workflow(storage, 10.0, 5.0)
    first = (await storage.list_checkpoints(workflow_name=WORKFLOW_NAME))[0]
    with pytest.raises(ValueError, match="checkpoint"):
        await build_workflow(10.0, storage).run(5.0, checkpoint_id=first.checkpoint_id)


def test_an_unnamed_pipeline_gets_the_same_name_in_every_build() -> None:
    def unnamed() -> Any:
        request, finalize = ReturnRequestExecutor(1.0), FinalizeReturnExecutor()
        return WorkflowBuilder(start_executor=request).add_edge(request, finalize).build()

    assert unnamed().name == unnamed().name
