"""Seed 001 (Chapter 18, "State and Checkpoints"): the return-refund pipeline, verbatim.

``ReturnRequestExecutor`` is the document's code with only the import line changed. The rest —
``FinalizeReturnExecutor``, ``build_workflow``, ``resume_from_checkpoint``, ``demo`` and ``main``
— is the scaffolding the chapter describes (python/main.py), and the chapter's eight tests are
ported below. The proof: resuming from the first checkpoint into an executor seeded with a
deliberately wrong 999.0 still gives 15.0, because the checkpoint is the source of truth.

The document's executor also runs on its own, placed last (it declares it sends a float that no
edge takes: MAF builds that graph and drops the message), through the chapter's worked
scenarios: refund resume, storage given at run time, the resume-with-message gotcha and the
compatibility check. The capstone's cross-process approval runs in two fresh interpreters
(``seed_return_approval.py``). Expected values were checked against MAF 1.23 itself.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Never, TextIO

import pytest

from workflows import (
    CheckpointEncodeError,
    Executor,
    FileCheckpointStorage,
    GraphMismatchError,
    InMemoryCheckpointStorage,
    RunArgumentsError,
    WorkflowBuilder,
    WorkflowContext,
    WorkflowRunState,
    handler,
)

HERE = Path(__file__).resolve().parent

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


# The same finalizer declared the other ways MAF users write an output-only executor; MAF builds
# and runs all three.
class FinalizeReturnDeclaredNone(Executor):
    def __init__(self) -> None:
        super().__init__(id="finalize-return")

    @handler
    async def finalize(self, refund_amount: float, ctx: WorkflowContext[None, float]) -> None:
        await ctx.yield_output(refund_amount)


class FinalizeReturnDeclaredAny(Executor):
    def __init__(self) -> None:
        super().__init__(id="finalize-return")

    @handler
    async def finalize(self, refund_amount: float, ctx: WorkflowContext[Any, float]) -> None:
        await ctx.yield_output(refund_amount)


def build_workflow(
    initial_refund: float, storage: Any = None, finalizer: type[Executor] = FinalizeReturnExecutor
) -> Any:
    request = ReturnRequestExecutor(initial_refund)
    finalize = finalizer()
    return (
        WorkflowBuilder(start_executor=request, checkpoint_storage=storage, name=WORKFLOW_NAME)
        .add_edge(request, finalize)
        .build()
    )


async def run_workflow(
    storage: Any,
    initial_refund: float,
    item_refund: float,
    finalizer: type[Executor] = FinalizeReturnExecutor,
) -> float:
    result = await build_workflow(initial_refund, storage, finalizer).run(item_refund)
    (output,) = result.get_outputs()
    return float(output)


async def resume_from_checkpoint(
    storage: Any,
    checkpoint_id: str,
    *,
    resume_initial_refund: float,
    finalizer: type[Executor] = FinalizeReturnExecutor,
) -> float:
    # A fresh workflow object, as a new process would build it; storage given to run() only.
    workflow = build_workflow(resume_initial_refund, finalizer=finalizer)
    outputs = []
    async for event in workflow.run(
        stream=True, checkpoint_id=checkpoint_id, checkpoint_storage=storage
    ):
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


@pytest.mark.parametrize(
    "finalizer",
    [FinalizeReturnExecutor, FinalizeReturnDeclaredNone, FinalizeReturnDeclaredAny],
    ids=["Never", "None", "Any"],
)
async def test_the_demo_gives_15_however_the_finalizer_declares_it_sends_nothing(
    tmp_path: Path, finalizer: type[Executor]
) -> None:
    storage = FileCheckpointStorage(tmp_path)
    assert await run_workflow(storage, 10.0, 5.0, finalizer) == 15.0
    first = (await storage.list_checkpoints(workflow_name=WORKFLOW_NAME))[0]
    replayed = await resume_from_checkpoint(
        storage, first.checkpoint_id, resume_initial_refund=999.0, finalizer=finalizer
    )
    assert replayed == 15.0


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
        replayed = await resume_from_checkpoint(
            storage, cp.checkpoint_id, resume_initial_refund=999.0
        )
        assert replayed == 15.0, cp.iteration_count


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
        cp
        for cp in await storage.list_checkpoints(workflow_name=WORKFLOW_NAME)
        if cp.iteration_count == 1
    )
    assert after_request.executor_states["return-request"] == {"refund_amount": 15.0}
    # A separate storage object on the same folder: nothing is shared in memory.
    fresh_storage = FileCheckpointStorage(tmp_path)
    assert (
        await resume_from_checkpoint(
            fresh_storage, after_request.checkpoint_id, resume_initial_refund=999.0
        )
        == 15.0
    )


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


# ------------------------------------------------ the document's executor alone, placed last


def request_alone(initial_refund: float, storage: Any = None) -> Any:
    """Only the code the chapter shows: one executor sending a float nobody takes."""
    return WorkflowBuilder(
        start_executor=ReturnRequestExecutor(initial_refund),
        checkpoint_storage=storage,
        name=WORKFLOW_NAME,
    ).build()


async def alone_checkpoints(storage: Any) -> list[Any]:
    result = await request_alone(10.0, storage).run(5.0)
    assert result.get_outputs() == []
    assert result.get_final_state() == WorkflowRunState.IDLE
    return await storage.list_checkpoints(workflow_name=WORKFLOW_NAME)


async def test_the_documents_executor_alone_builds_runs_and_checkpoints_its_refund(
    tmp_path: Path,
) -> None:
    checkpoints = await alone_checkpoints(FileCheckpointStorage(tmp_path))
    # Entry, after the handler, after the dropped float: as in MAF.
    assert [cp.iteration_count for cp in checkpoints] == [0, 1, 2]
    assert [cp.executor_states["return-request"]["refund_amount"] for cp in checkpoints] == [
        10.0,
        15.0,
        15.0,
    ]


async def test_refund_resume_of_the_executor_alone_trusts_every_checkpoint_over_999(
    tmp_path: Path,
) -> None:
    storage = FileCheckpointStorage(tmp_path)
    for cp in await alone_checkpoints(storage):
        fresh = request_alone(999.0)
        await fresh.run(checkpoint_id=cp.checkpoint_id, checkpoint_storage=storage)
        assert fresh.executors["return-request"].refund_amount == 15.0, cp.iteration_count


async def test_storage_at_run_time_resumes_a_workflow_built_without_storage(
    tmp_path: Path,
) -> None:
    storage = FileCheckpointStorage(tmp_path)
    id = (await alone_checkpoints(storage))[0].checkpoint_id
    workflow = request_alone(999.0)
    assert workflow.checkpoint_storage is None

    # ---- the document's code (the "Resume" row of the side-by-side table), verbatim ----
    run = workflow.run(stream=True, checkpoint_id=id, checkpoint_storage=storage)
    # ---- end ----
    events = [event async for event in run]

    assert [e.type for e in events if e.type.startswith("executor_")] == [
        "executor_invoked",
        "executor_completed",
    ]
    assert workflow.executors["return-request"].refund_amount == 15.0
    # The resumed run saves its own checkpoints into the storage it was given.
    assert len(await storage.list_checkpoints(workflow_name=WORKFLOW_NAME)) > 3


@pytest.mark.parametrize("stream", [False, True])
async def test_resume_with_message_gotcha_is_refused_before_anything_runs(
    tmp_path: Path, stream: bool
) -> None:
    storage = FileCheckpointStorage(tmp_path)
    first = (await alone_checkpoints(storage))[0]
    before = await storage.list_checkpoint_ids(workflow_name=WORKFLOW_NAME)
    workflow = request_alone(999.0, storage)
    # MAF raises ValueError at the call, streaming or not; ours is a ValueError too.
    with pytest.raises(RunArgumentsError, match="not both") as refused:
        outcome = workflow.run(5.0, checkpoint_id=first.checkpoint_id, stream=stream)
        if not stream:
            await outcome
    assert isinstance(refused.value, ValueError)
    assert workflow.executors["return-request"].refund_amount == 999.0
    assert await storage.list_checkpoint_ids(workflow_name=WORKFLOW_NAME) == before


async def test_resume_cannot_take_a_new_message_in_the_two_executor_pipeline(
    tmp_path: Path,
) -> None:
    storage = FileCheckpointStorage(tmp_path)
    await run_workflow(storage, 10.0, 5.0)
    first = (await storage.list_checkpoints(workflow_name=WORKFLOW_NAME))[0]
    with pytest.raises(ValueError, match="checkpoint"):
        await build_workflow(10.0, storage).run(5.0, checkpoint_id=first.checkpoint_id)


async def test_compatibility_check_refuses_a_checkpoint_of_a_changed_graph(
    tmp_path: Path,
) -> None:
    storage = FileCheckpointStorage(tmp_path / "alone")
    alone_first = (await alone_checkpoints(storage))[0]
    # The pipeline grew a finalizer since the checkpoint was written: MAF refuses too
    # (WorkflowCheckpointException, "graph has changed"); ours also names the change.
    grown = build_workflow(999.0)
    with pytest.raises(GraphMismatchError, match="finalize-return"):
        await grown.run(checkpoint_id=alone_first.checkpoint_id, checkpoint_storage=storage)
    assert grown.executors["return-request"].refund_amount == 999.0

    # And the other way: a checkpoint of the two-executor pipeline, resumed without its finalizer.
    pipeline_storage = FileCheckpointStorage(tmp_path / "pipeline")
    await run_workflow(pipeline_storage, 10.0, 5.0)
    pipeline_first = (await pipeline_storage.list_checkpoints(workflow_name=WORKFLOW_NAME))[0]
    assert pipeline_first.graph_signature_hash != alone_first.graph_signature_hash
    with pytest.raises(GraphMismatchError, match="finalize-return"):
        await request_alone(999.0).run(
            checkpoint_id=pipeline_first.checkpoint_id, checkpoint_storage=pipeline_storage
        )
    # The unchanged graph, rebuilt from scratch, is accepted.
    rebuilt = request_alone(999.0)
    await rebuilt.run(checkpoint_id=alone_first.checkpoint_id, checkpoint_storage=storage)
    assert rebuilt.executors["return-request"].refund_amount == 15.0


# ------------------------------------------------------------------------------ the gotchas


def test_an_unnamed_pipeline_gets_the_same_name_in_every_build() -> None:
    # Ours derives the name from the graph; MAF makes up a new one per build, which is why
    # the chapter insists on a stable name.
    def unnamed() -> Any:
        request, finalize = ReturnRequestExecutor(1.0), FinalizeReturnExecutor()
        return WorkflowBuilder(start_executor=request).add_edge(request, finalize).build()

    assert unnamed().name == unnamed().name


async def test_checkpoints_are_found_again_only_under_the_workflows_name(tmp_path: Path) -> None:
    storage = FileCheckpointStorage(tmp_path)
    await run_workflow(storage, 10.0, 5.0)
    assert len(await storage.list_checkpoints(workflow_name=WORKFLOW_NAME)) == 3
    assert await storage.list_checkpoints(workflow_name="return-refund-v2") == []


class RefundWithAnOpenLog(ReturnRequestExecutor):
    """Breaks the chapter's rule: its saved state holds an open file handle."""

    def __init__(self, initial_refund: float, log: TextIO) -> None:
        super().__init__(initial_refund)
        self.log = log

    async def on_checkpoint_save(self) -> dict[str, Any]:
        return {"refund_amount": self.refund_amount, "log": self.log}


@pytest.fixture
def open_log(tmp_path: Path) -> Iterator[TextIO]:
    with open(tmp_path / "refunds.log", "w", encoding="utf-8") as log:
        yield log


async def test_state_that_cannot_round_trip_is_refused_naming_the_executor_and_key(
    tmp_path: Path, open_log: TextIO
) -> None:
    # MAF logs "Failed to create checkpoint" and runs on without checkpoints; ours refuses at
    # the first save so a run never believes it is durable when it is not.
    storage = FileCheckpointStorage(tmp_path / "checkpoints")
    request = RefundWithAnOpenLog(10.0, open_log)
    workflow = (
        WorkflowBuilder(start_executor=request, checkpoint_storage=storage, name=WORKFLOW_NAME)
        .add_edge(request, FinalizeReturnExecutor())
        .build()
    )
    with pytest.raises(CheckpointEncodeError, match=r"'return-request'.*'log'"):
        await workflow.run(5.0)
    assert await storage.list_checkpoints(workflow_name=WORKFLOW_NAME) == []


async def test_checkpoints_pile_up_nothing_is_deleted_automatically(tmp_path: Path) -> None:
    storage = FileCheckpointStorage(tmp_path)
    for _ in range(2):
        await run_workflow(storage, 10.0, 5.0)
    assert len(await storage.list_checkpoints(workflow_name=WORKFLOW_NAME)) == 6
    assert len(list(tmp_path.rglob("*.json"))) >= 6


# ------------------------------------------------- the capstone: approval in another process


def in_a_fresh_interpreter(*args: str) -> dict[str, Any]:
    code = (
        f"import sys; sys.path.insert(0, {str(HERE)!r}); import seed_return_approval as m; m.cli()"
    )
    done = subprocess.run(
        [sys.executable, "-c", code, *args],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1])


@pytest.mark.parametrize("finalize", ["None", "Any"])
@pytest.mark.parametrize(
    ("approval", "outputs"),
    [
        ({"approved": True, "reviewer": "grace"}, [15.0]),
        ({"approved": False, "reviewer": "linus"}, ["refund of 15.0 rejected by linus"]),
    ],
    ids=["approved", "rejected"],
)
def test_a_paused_return_is_resumed_in_another_process_from_checkpoint_id_and_approval(
    tmp_path: Path, finalize: str, approval: dict[str, Any], outputs: list[Any]
) -> None:
    paused = in_a_fresh_interpreter("pause", str(tmp_path), finalize)
    assert paused["state"] == "IDLE_WITH_PENDING_REQUESTS"
    assert paused["outputs"] == [] and paused["request"] == 15.0

    # Only the two ids cross the gap, as in the capstone's hitl_requests row.
    resumed = in_a_fresh_interpreter(
        "approve",
        str(tmp_path),
        finalize,
        paused["checkpoint_id"],
        paused["request_id"],
        json.dumps(approval),
    )
    assert resumed == {
        "pending": {paused["request_id"]: 15.0},
        "outputs": outputs,
        "state": "IDLE",
        "refund_amount": 15.0,  # the checkpoint's, not the 999.0 the fresh process seeded
    }
