"""Seed 000 ("Checkpoints" overview): every Python example of the document, run as a test.

The examples are verbatim; only their import lines changed (``agent_framework`` ->
``workflows``, plus the imports they use without showing: ``Any``, ``timezone``, ``random``).
The scaffolding they assume (executors ``start``/``worker``, ``create_workflow``, ``db``,
``initial_input``, old checkpoints to delete) is written around them.

Executors that declare messages no edge takes (``StatefulWorker``'s ``WorkflowContext[dict, str]``,
``StartExecutor``'s ``WorkflowContext[Task]``) also run placed last in a graph, as MAF builds
them. Expected values were checked against MAF 1.23 itself; where ours differs on purpose the
test says so.
"""

# The document's code is kept as written, so the lint rules it predates are off for this file.
# ruff: noqa: UP017, UP035, UP036, SIM102, BLE001

from __future__ import annotations

import asyncio
import dataclasses
import json
import random
import re
import sys
import uuid
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pytest

from workflows import (
    Executor,
    FileCheckpointStorage,
    GraphMismatchError,
    InMemoryCheckpointStorage,
    WorkflowBuilder,
    WorkflowCheckpoint,
    WorkflowContext,
    WorkflowRunState,
    handler,
)

if sys.version_info >= (3, 12):
    from typing import override
else:
    from typing_extensions import override

SQUARES = {n: n * n for n in range(1, 11)}


@pytest.fixture(autouse=True)
def in_tmp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The examples write to ./checkpoints: keep that inside the test's own folder."""
    monkeypatch.chdir(tmp_path)
    return tmp_path


# ======================================================================= "Complete Example"
# (verbatim; its executors are also the scaffolding of the shorter examples)


@dataclass
class Task:
    remaining: list[int]


class StartExecutor(Executor):
    @handler
    async def start(self, limit: int, ctx: WorkflowContext[Task]) -> None:
        await ctx.send_message(Task(remaining=list(range(1, limit + 1))))


class WorkerExecutor(Executor):
    def __init__(self, id: str):
        super().__init__(id=id)
        self._results = {}

    @handler
    async def compute(self, task: Task, ctx: WorkflowContext[Task, dict]) -> None:
        num = task.remaining.pop(0)
        self._results[num] = num * num  # Simple computation

        if not task.remaining:
            await ctx.yield_output(self._results)
        else:
            await ctx.send_message(task)

    async def on_checkpoint_save(self) -> dict[str, Any]:
        return {"results": self._results}

    async def on_checkpoint_restore(self, state: dict[str, Any]) -> None:
        self._results = state.get("results", {})


async def main():
    storage = FileCheckpointStorage("./checkpoints")
    start = StartExecutor(id="start")
    worker = WorkerExecutor(id="worker")

    workflow = (
        WorkflowBuilder(start_executor=start, checkpoint_storage=storage)
        .add_edge(start, worker)
        .add_edge(worker, worker)  # Self-loop
        .build()
    )

    # Check for existing checkpoint
    latest = await storage.get_latest(workflow_name=workflow.name)

    if latest:
        print(f"Resuming from iteration {latest.iteration_count}")
        events = await workflow.run(checkpoint_id=latest.checkpoint_id)
    else:
        print("Starting new workflow")
        events = await workflow.run(message=10)

    outputs = events.get_outputs()
    print(f"Results: {outputs}")


if __name__ == "__main__":
    asyncio.run(main())


def squares_workflow(storage: Any = None, name: str | None = None) -> Any:
    """The complete example's graph, built the way the example builds it."""
    start = StartExecutor(id="start")
    worker = WorkerExecutor(id="worker")
    return (
        WorkflowBuilder(start_executor=start, checkpoint_storage=storage, name=name)
        .add_edge(start, worker)
        .add_edge(worker, worker)
        .build()
    )


async def test_complete_example_starts_fresh_and_outputs_the_squares(
    capsys: pytest.CaptureFixture[str],
) -> None:
    await main()
    out = capsys.readouterr().out.splitlines()
    assert out == ["Starting new workflow", f"Results: {[SQUARES]}"]


async def test_complete_example_output_has_int_keys() -> None:
    result = await squares_workflow(InMemoryCheckpointStorage()).run(10)
    (output,) = result.get_outputs()
    assert output == SQUARES and all(type(key) is int for key in output)


async def test_complete_example_resumes_an_interrupted_run_to_the_same_squares(
    capsys: pytest.CaptureFixture[str],
) -> None:
    # A first process is interrupted after four supersteps ...
    workflow = squares_workflow(FileCheckpointStorage("./checkpoints"))
    async for event in workflow.run(10, stream=True):
        if event.type == "superstep_completed" and event.iteration == 4:
            break
    # ... and the example, run again, picks the run up where it stopped.
    await main()
    out = capsys.readouterr().out.splitlines()
    assert out == ["Resuming from iteration 4", f"Results: {[SQUARES]}"]


async def test_complete_example_run_again_after_finishing_has_nothing_left_to_do(
    capsys: pytest.CaptureFixture[str],
) -> None:
    await main()
    await main()
    out = capsys.readouterr().out.splitlines()
    assert out[2:] == ["Resuming from iteration 11", "Results: []"]


@pytest.mark.parametrize("storage_kind", ["file", "memory"])
async def test_resuming_from_every_mid_run_checkpoint_gives_the_full_squares(
    storage_kind: str,
) -> None:
    storage: Any = InMemoryCheckpointStorage()
    if storage_kind == "file":
        storage = FileCheckpointStorage("./checkpoints")
    workflow = squares_workflow(storage)
    fresh = await workflow.run(10)
    assert fresh.get_outputs() == [SQUARES]
    checkpoints = await storage.list_checkpoints(workflow_name=workflow.name)
    assert [cp.iteration_count for cp in checkpoints] == list(range(12))
    for checkpoint in checkpoints[:-1]:  # the last one follows the output
        resumed = await squares_workflow(storage).run(checkpoint_id=checkpoint.checkpoint_id)
        (output,) = resumed.get_outputs()
        assert output == SQUARES, f"resumed from iteration {checkpoint.iteration_count}"
        assert all(type(key) is int for key in output)


# ================================================================== "Enabling Checkpointing"


def test_enabling_checkpointing_example_builds() -> None:
    start = StartExecutor(id="start")
    worker = WorkerExecutor(id="worker")

    # ---- verbatim ----
    # For testing: in-memory storage
    checkpoint_storage = InMemoryCheckpointStorage()

    workflow = (
        WorkflowBuilder(start_executor=start, checkpoint_storage=checkpoint_storage)
        .add_edge(start, worker)
        .add_edge(worker, worker)  # Self-loop
        .build()
    )
    # ---- end ----
    assert workflow.checkpoint_storage is checkpoint_storage


async def test_storage_backend_examples_construct_both_storages(in_tmp: Path) -> None:
    # ---- verbatim ----
    storage = InMemoryCheckpointStorage()
    # ---- end ----
    assert await storage.list_checkpoints(workflow_name="x") == []

    # ---- verbatim ----
    storage = FileCheckpointStorage(storage_path=Path("./checkpoints"))
    # ---- end ----
    await squares_workflow(storage).run(3)
    assert list((in_tmp / "checkpoints").rglob("*.json"))


# ========================================================================== "Custom Storage"


class FakeDatabase:
    """Keeps rows as JSON text, so whatever the storage hands it must survive json.dumps."""

    def __init__(self) -> None:
        self.rows: dict[str, str] = {}

    async def insert(self, row: dict[str, Any]) -> None:
        self.rows[row["checkpoint_id"]] = json.dumps(row)

    async def get(self, checkpoint_id: str) -> dict[str, Any] | None:
        text = self.rows.get(checkpoint_id)
        return None if text is None else json.loads(text)

    async def query(self, *, workflow_name: str) -> list[dict[str, Any]]:
        rows = [json.loads(text) for text in self.rows.values()]
        return [row for row in rows if row["workflow_name"] == workflow_name]

    async def delete(self, checkpoint_id: str) -> bool:
        return self.rows.pop(checkpoint_id, None) is not None


db = FakeDatabase()


# ---- verbatim ----
class DatabaseCheckpointStorage:
    async def save(self, checkpoint: WorkflowCheckpoint) -> str:
        # Save to database
        await db.insert(checkpoint.to_dict())
        return checkpoint.checkpoint_id

    async def load(self, checkpoint_id: str) -> WorkflowCheckpoint:
        # Load from database
        data = await db.get(checkpoint_id)
        return WorkflowCheckpoint.from_dict(data)

    async def list_checkpoints(self, *, workflow_name: str) -> list[WorkflowCheckpoint]:
        # List all checkpoints for a workflow
        results = await db.query(workflow_name=workflow_name)
        return [WorkflowCheckpoint.from_dict(r) for r in results]

    async def delete(self, checkpoint_id: str) -> bool:
        return await db.delete(checkpoint_id)

    async def get_latest(self, *, workflow_name: str) -> WorkflowCheckpoint | None:
        checkpoints = await self.list_checkpoints(workflow_name=workflow_name)
        return max(checkpoints, key=lambda cp: cp.timestamp) if checkpoints else None


# ---- end ----


@pytest.fixture
def fake_db(monkeypatch: pytest.MonkeyPatch) -> FakeDatabase:
    fresh = FakeDatabase()
    monkeypatch.setattr(sys.modules[__name__], "db", fresh)
    return fresh


async def test_custom_database_storage_runs_a_workflow_and_resumes_it(
    fake_db: FakeDatabase,
) -> None:
    storage = DatabaseCheckpointStorage()
    workflow = squares_workflow(storage)
    async for event in workflow.run(10, stream=True):
        if event.type == "superstep_completed" and event.iteration == 5:
            break
    assert len(fake_db.rows) == 6  # entry + five supersteps, each through json.dumps
    latest = await storage.get_latest(workflow_name=workflow.name)
    assert latest is not None and latest.iteration_count == 5
    assert latest.executor_states["worker"]["results"] == {n: n * n for n in range(1, 5)}

    resumed = await squares_workflow(storage).run(checkpoint_id=latest.checkpoint_id)
    assert resumed.get_outputs() == [SQUARES]
    assert await storage.delete(latest.checkpoint_id) is True
    assert await storage.delete(latest.checkpoint_id) is False


async def test_custom_storage_round_trips_a_checkpoint_exactly(fake_db: FakeDatabase) -> None:
    storage = DatabaseCheckpointStorage()
    await squares_workflow(storage).run(4)
    for row_id in list(fake_db.rows):
        checkpoint = await storage.load(row_id)
        round_tripped = json.loads(json.dumps(checkpoint.to_dict()))
        assert WorkflowCheckpoint.from_dict(round_tripped) == checkpoint


# ==================================================================== "Capturing Checkpoints"


async def test_capturing_checkpoints_example_prints_one_id_per_superstep(
    capsys: pytest.CaptureFixture[str],
) -> None:
    storage = InMemoryCheckpointStorage()
    workflow = squares_workflow(storage)
    initial_input = 3

    # ---- verbatim ----
    async for event in workflow.run(initial_input, stream=True):
        if event.type == "superstep_completed":
            # Checkpoint available after super step
            print(f"Checkpoint created: {event.checkpoint_id}")
    # ---- end ----

    printed = re.findall(r"Checkpoint created: ([\w-]+)", capsys.readouterr().out)
    assert len(printed) == 4  # start, then the worker three times
    for checkpoint_id in printed:
        await storage.load(checkpoint_id)


# ================================================================ "Restoring from Checkpoints"


async def test_restoring_example_resumes_the_latest_checkpoint_with_a_new_storage_object(
    capsys: pytest.CaptureFixture[str],
) -> None:
    # A previous process ran the workflow partway and went away.
    interrupted = squares_workflow(FileCheckpointStorage("./checkpoints"))
    async for event in interrupted.run(10, stream=True):
        if event.type == "superstep_completed" and event.iteration == 3:
            break
    workflow = squares_workflow(FileCheckpointStorage("./checkpoints"))

    # ---- verbatim ----
    storage = FileCheckpointStorage(storage_path="./checkpoints")

    # Get the latest checkpoint
    latest = await storage.get_latest(workflow_name=workflow.name)

    if latest:
        # Resume from checkpoint
        events = await workflow.run(checkpoint_id=latest.checkpoint_id, stream=True)

        async for event in events:
            if event.type == "output":
                print(f"Output: {event.data}")
    # ---- end ----

    assert capsys.readouterr().out.splitlines() == [f"Output: {SQUARES}"]


# =================================================================== "Executor State Persistence"


# ---- verbatim ----
class StatefulWorker(Executor):
    def __init__(self, id: str):
        super().__init__(id=id)
        self._processed_items = []
        self._total_count = 0

    @handler
    async def process(self, item: dict, ctx: WorkflowContext[dict, str]) -> None:
        self._processed_items.append(item["id"])
        self._total_count += 1

        if self._total_count >= 10:
            await ctx.yield_output(f"Processed {self._total_count} items")
        else:
            await ctx.send_message(item)

    @override
    async def on_checkpoint_save(self) -> dict[str, Any]:
        """Save executor state for checkpointing."""
        return {"processed_items": self._processed_items, "total_count": self._total_count}

    @override
    async def on_checkpoint_restore(self, state: dict[str, Any]) -> None:
        """Restore executor state from checkpoint."""
        self._processed_items = state.get("processed_items", [])
        self._total_count = state.get("total_count", 0)


# ---- end ----


def stateful_workflow(storage: Any) -> Any:
    worker = StatefulWorker(id="stateful")
    return (
        WorkflowBuilder(start_executor=worker, checkpoint_storage=storage, name="stateful")
        .add_edge(worker, worker)
        .build()
    )


async def test_stateful_worker_processes_ten_items_in_a_graph() -> None:
    storage = InMemoryCheckpointStorage()
    result = await stateful_workflow(storage).run({"id": 7})
    assert result.get_outputs() == ["Processed 10 items"]
    latest = await storage.get_latest(workflow_name="stateful")
    assert latest is not None
    assert latest.executor_states["stateful"] == {"processed_items": [7] * 10, "total_count": 10}


async def test_stateful_worker_state_survives_a_restart_mid_run(in_tmp: Path) -> None:
    workflow = stateful_workflow(FileCheckpointStorage("./checkpoints"))
    async for event in workflow.run({"id": 1}, stream=True):
        if event.type == "superstep_completed" and event.iteration == 4:
            break
    storage = FileCheckpointStorage("./checkpoints")
    latest = await storage.get_latest(workflow_name="stateful")
    assert latest is not None and latest.executor_states["stateful"]["total_count"] == 4

    fresh = stateful_workflow(storage)
    result = await fresh.run(checkpoint_id=latest.checkpoint_id)
    assert result.get_outputs() == ["Processed 10 items"]
    worker = fresh.executors["stateful"]
    assert isinstance(worker, StatefulWorker) and worker._processed_items == [1] * 10


class ItemFeeder(Executor):
    """Hands the worker one item per superstep, ids 1..10, by looping on itself."""

    @handler
    async def feed(self, n: int, ctx: WorkflowContext[int | dict]) -> None:
        await ctx.send_message({"id": n})
        if n < 10:
            await ctx.send_message(n + 1)


def worker_placed_last(storage: Any) -> Any:
    """The worker at the end of the graph: the items it sends on have nowhere to go (MAF builds
    this and drops them)."""
    feeder, worker = ItemFeeder(id="feeder"), StatefulWorker(id="stateful")
    return (
        WorkflowBuilder(start_executor=feeder, checkpoint_storage=storage, name="fed")
        .add_edge(feeder, feeder)
        .add_edge(feeder, worker)
        .build()
    )


async def test_stateful_worker_placed_last_processes_ten_items() -> None:
    storage = InMemoryCheckpointStorage()
    workflow = worker_placed_last(storage)
    result = await workflow.run(1)
    assert result.get_outputs() == ["Processed 10 items"]
    assert result.get_final_state() == WorkflowRunState.IDLE
    checkpoints = await storage.list_checkpoints(workflow_name="fed")
    assert [cp.iteration_count for cp in checkpoints] == list(range(12))  # as in MAF
    worker = workflow.executors["stateful"]
    assert isinstance(worker, StatefulWorker) and worker._processed_items == list(range(1, 11))


async def test_stateful_worker_placed_last_resumes_its_count_in_a_fresh_workflow(
    in_tmp: Path,
) -> None:
    interrupted = worker_placed_last(FileCheckpointStorage("./checkpoints"))
    async for event in interrupted.run(1, stream=True):
        if event.type == "superstep_completed" and event.iteration == 4:
            break
    storage = FileCheckpointStorage("./checkpoints")
    latest = await storage.get_latest(workflow_name="fed")
    assert latest is not None and latest.iteration_count == 4
    # Four feeder steps, three items processed: MAF's checkpoint holds the same.
    assert latest.executor_states["stateful"] == {"processed_items": [1, 2, 3], "total_count": 3}

    fresh = worker_placed_last(storage)
    result = await fresh.run(checkpoint_id=latest.checkpoint_id)
    assert result.get_outputs() == ["Processed 10 items"]
    assert fresh.executors["stateful"]._processed_items == list(range(1, 11))


async def test_the_complete_examples_start_executor_placed_last_builds_and_runs() -> None:
    # Declared WorkflowContext[Task] with no edge to take the Task: MAF builds it, runs it, and
    # the Task is dropped; the run ends idle with no output.
    start = StartExecutor(id="start")
    storage = InMemoryCheckpointStorage()
    workflow = WorkflowBuilder(
        start_executor=start, checkpoint_storage=storage, name="alone"
    ).build()
    result = await workflow.run(3)
    assert result.get_outputs() == []
    assert result.get_final_state() == WorkflowRunState.IDLE
    assert await storage.list_checkpoints(workflow_name="alone")


# ===================================================================== "Managing Checkpoints"


async def pipeline_storage_with_old_checkpoints(days_old: list[int]) -> Any:
    """A "data-pipeline" run, plus copies of its first checkpoint aged by ``days_old`` days."""
    storage = FileCheckpointStorage("./checkpoints")
    await squares_workflow(storage, name="data-pipeline").run(3)
    first = (await storage.list_checkpoints(workflow_name="data-pipeline"))[0]
    for days in days_old:
        aged = dataclasses.replace(
            first,
            checkpoint_id=uuid.uuid4().hex,
            timestamp=(datetime.now(UTC) - timedelta(days=days)).isoformat(),
        )
        await storage.save(aged)
    return storage


async def test_list_checkpoints_example_prints_each_checkpoint(
    capsys: pytest.CaptureFixture[str],
) -> None:
    storage = await pipeline_storage_with_old_checkpoints([])
    capsys.readouterr()

    # ---- verbatim ----
    # List all checkpoints for a workflow
    checkpoints = await storage.list_checkpoints(workflow_name="data-pipeline")

    for cp in checkpoints:
        print(f"ID: {cp.checkpoint_id}")
        print(f"Timestamp: {cp.timestamp}")
        print(f"Iteration: {cp.iteration_count}")
        print(f"State keys: {list(cp.state.keys())}")
    # ---- end ----

    out = capsys.readouterr().out.splitlines()
    assert len(out) == 5 * 4  # entry + start + three worker supersteps, four lines each
    assert [line for line in out if line.startswith("Iteration")] == [
        f"Iteration: {i}" for i in range(5)
    ]
    for line in out[1::4]:
        assert datetime.fromisoformat(line.removeprefix("Timestamp: ")).tzinfo is not None


async def test_delete_old_checkpoints_example_deletes_only_those_older_than_seven_days(
    capsys: pytest.CaptureFixture[str],
) -> None:
    storage = await pipeline_storage_with_old_checkpoints([8, 30, 6])
    recent = await storage.list_checkpoint_ids(workflow_name="data-pipeline")
    capsys.readouterr()

    # ---- verbatim ----
    # Delete checkpoints older than 7 days
    checkpoints = await storage.list_checkpoints(workflow_name="data-pipeline")
    cutoff = datetime.now(timezone.utc) - timedelta(days=7)

    for cp in checkpoints:
        cp_time = datetime.fromisoformat(cp.timestamp)
        if cp_time < cutoff:
            await storage.delete(cp.checkpoint_id)
            print(f"Deleted checkpoint {cp.checkpoint_id}")
    # ---- end ----

    deleted = re.findall(r"Deleted checkpoint (\w+)", capsys.readouterr().out)
    assert len(deleted) == 2
    remaining = await storage.list_checkpoint_ids(workflow_name="data-pipeline")
    assert remaining == [cid for cid in recent if cid not in deleted]
    assert len(remaining) == 5 + 1  # the run's own checkpoints and the six-day-old copy


async def test_checkpoint_metadata_example_prints_what_a_checkpoint_holds(
    capsys: pytest.CaptureFixture[str],
) -> None:
    storage = await pipeline_storage_with_old_checkpoints([])
    checkpoint_id = (await storage.list_checkpoint_ids(workflow_name="data-pipeline"))[1]
    capsys.readouterr()

    # ---- verbatim ----
    # Inspect checkpoint contents
    checkpoint = await storage.load(checkpoint_id)

    print(f"Workflow: {checkpoint.workflow_name}")
    print(f"Iteration: {checkpoint.iteration_count}")
    print(f"Graph hash: {checkpoint.graph_signature_hash}")
    print(f"Messages: {len(checkpoint.messages)}")
    print(f"State: {checkpoint.state}")
    print(f"Pending requests: {len(checkpoint.pending_request_info_events)}")
    # ---- end ----

    out = capsys.readouterr().out.splitlines()
    assert out[0] == "Workflow: data-pipeline"
    assert out[1] == "Iteration: 1"
    assert re.fullmatch(r"Graph hash: [0-9a-f]{64}", out[2])
    # MAF's ``state`` also carries its own bookkeeping (``_executor_state``, run kwargs); ours
    # holds only what executors set, their saved state being ``checkpoint.executor_states``.
    assert out[3:] == ["Messages: 1", "State: {}", "Pending requests: 0"]


# ================================================================= "Automatic Recovery Pattern"


class FlakyWorkerExecutor(WorkerExecutor):
    """The complete example's worker, failing now and then like a real dependency."""

    failure_rate = 0.0

    @handler
    async def compute(self, task: Task, ctx: WorkflowContext[Task, dict]) -> None:
        if random.random() < self.failure_rate:
            raise ConnectionError("the square service timed out")
        await super().compute(task, ctx)


def create_workflow(checkpoint_storage: Any) -> Any:
    start = StartExecutor(id="start")
    worker = FlakyWorkerExecutor(id="worker")
    return (
        WorkflowBuilder(start_executor=start, checkpoint_storage=checkpoint_storage)
        .add_edge(start, worker)
        .add_edge(worker, worker)
        .build()
    )


async def recover(initial_input: int) -> None:
    # ---- verbatim (the body of a function, as its `return` shows) ----
    storage = FileCheckpointStorage("./checkpoints")
    latest_checkpoint: WorkflowCheckpoint | None = None

    while True:
        workflow = create_workflow(checkpoint_storage=storage)

        try:
            # Start from checkpoint or fresh
            if latest_checkpoint:
                print(f"Resuming from checkpoint {latest_checkpoint.checkpoint_id}")
                event_stream = workflow.run(
                    checkpoint_id=latest_checkpoint.checkpoint_id, stream=True
                )
            else:
                print("Starting new workflow")
                event_stream = workflow.run(message=initial_input, stream=True)

            # Process events
            async for event in event_stream:
                if event.type == "output":
                    print(f"Workflow completed: {event.data}")
                    return  # Success!

                if event.type == "superstep_completed":
                    # Randomly simulate interruptions
                    if random.random() < 0.3:
                        print("Simulated interruption")
                        break

            # Get latest checkpoint for retry
            latest_checkpoint = await storage.get_latest(workflow_name=workflow.name)

        except Exception as e:
            print(f"Error: {e}")
            latest_checkpoint = await storage.get_latest(workflow_name=workflow.name)
    # ---- end ----


@pytest.mark.parametrize("seed", [0, 1, 2, 3])
async def test_automatic_recovery_loop_survives_random_interruptions(
    seed: int, capsys: pytest.CaptureFixture[str]
) -> None:
    random.seed(seed)
    await asyncio.wait_for(recover(initial_input=10), timeout=30)
    out = capsys.readouterr().out.splitlines()
    assert out[0] == "Starting new workflow"
    assert out[-1] == f"Workflow completed: {SQUARES}"
    interruptions = out.count("Simulated interruption")
    assert interruptions >= 1
    assert sum(line.startswith("Resuming from checkpoint") for line in out) == interruptions


async def test_automatic_recovery_loop_survives_failing_handlers(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    random.seed(7)
    monkeypatch.setattr(FlakyWorkerExecutor, "failure_rate", 0.3)
    await asyncio.wait_for(recover(initial_input=10), timeout=30)
    out = capsys.readouterr().out.splitlines()
    assert "Error: the square service timed out" in out
    assert out[-1] == f"Workflow completed: {SQUARES}"


# ================================================================ "Checkpoint Compatibility"


def audited_squares_workflow(storage: Any) -> Any:
    """The complete example with one more executor: a different topology."""
    start, worker = StartExecutor(id="start"), WorkerExecutor(id="worker")
    audit = WorkerExecutor(id="audit")
    return (
        WorkflowBuilder(start_executor=start, checkpoint_storage=storage)
        .add_edge(start, worker)
        .add_edge(worker, worker)
        .add_edge(worker, audit)
        .build()
    )


async def test_a_checkpoint_is_refused_by_a_workflow_whose_structure_changed() -> None:
    storage = InMemoryCheckpointStorage()
    workflow = squares_workflow(storage, name="data-pipeline")
    async for event in workflow.run(10, stream=True):
        if event.type == "superstep_completed" and event.iteration == 3:
            break
    latest = await storage.get_latest(workflow_name="data-pipeline")
    assert latest is not None

    # MAF refuses too ("graph has changed"); ours names what changed.
    changed = audited_squares_workflow(storage)
    with pytest.raises(GraphMismatchError, match="audit"):
        await changed.run(checkpoint_id=latest.checkpoint_id)
    assert changed.executors["worker"]._results == {}

    # The same topology, rebuilt from scratch, resumes.
    resumed = await squares_workflow(storage).run(checkpoint_id=latest.checkpoint_id)
    assert resumed.get_outputs() == [SQUARES]


def test_the_graph_signature_hash_follows_topology_only() -> None:
    signature = squares_workflow().graph_signature_hash
    assert squares_workflow(name="other").graph_signature_hash == signature
    assert audited_squares_workflow(None).graph_signature_hash != signature
