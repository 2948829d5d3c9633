"""``prune``: deleting old checkpoints without ever breaking a resume or an answer."""

from __future__ import annotations

import datetime as dt
from pathlib import Path
from typing import Any

import pytest

from workflows import (
    CheckpointStorage,
    FileCheckpointStorage,
    InMemoryCheckpointStorage,
    WorkflowCheckpoint,
    prune,
)
from workflows.testing import counting_workflow, make_checkpoint
from workflows.testing_retention import EngineRetention, RetentionContract, pending_request

NOW = dt.datetime.now(dt.UTC)


class ListingOnlyStorage:
    """A storage with only the protocol's methods (no list_summaries), like a user-written one."""

    def __init__(self) -> None:
        self._inner = InMemoryCheckpointStorage()

    async def save(self, checkpoint: WorkflowCheckpoint) -> str:
        return await self._inner.save(checkpoint)

    async def load(self, checkpoint_id: str) -> WorkflowCheckpoint:
        return await self._inner.load(checkpoint_id)

    async def list_checkpoints(
        self, *, workflow_name: str | None = None, run_id: str | None = None
    ) -> list[WorkflowCheckpoint]:
        return await self._inner.list_checkpoints(workflow_name=workflow_name, run_id=run_id)

    async def list_checkpoint_ids(
        self, *, workflow_name: str | None = None, run_id: str | None = None
    ) -> list[str]:
        return await self._inner.list_checkpoint_ids(workflow_name=workflow_name, run_id=run_id)

    async def delete(self, checkpoint_id: str) -> bool:
        return await self._inner.delete(checkpoint_id)

    async def get_latest(
        self, *, workflow_name: str | None = None, run_id: str | None = None
    ) -> WorkflowCheckpoint | None:
        return await self._inner.get_latest(workflow_name=workflow_name, run_id=run_id)


@pytest.fixture(params=["memory", "file", "listing-only"])
def storage(request: pytest.FixtureRequest, tmp_path: Path) -> Any:
    if request.param == "memory":
        return InMemoryCheckpointStorage()
    if request.param == "file":
        return FileCheckpointStorage(tmp_path)
    made = ListingOnlyStorage()
    assert isinstance(made, CheckpointStorage) and not hasattr(made, "list_summaries")
    return made


class TestEngineStoragesKeepTheRetentionContract(RetentionContract):
    """The scenarios the dashboard's database retention is held to, on the engine's storages."""

    @pytest.fixture(params=["memory", "file"])
    def retention(self, request: pytest.FixtureRequest, tmp_path: Path) -> EngineRetention:
        if request.param == "memory":
            return EngineRetention(InMemoryCheckpointStorage)
        return EngineRetention(lambda: FileCheckpointStorage(tmp_path))


def aged(days: float, **fields: Any) -> WorkflowCheckpoint:
    fields.setdefault("timestamp", (NOW - dt.timedelta(days=days)).isoformat())
    return make_checkpoint(**fields)


async def save_run(storage: Any, run_id: str, days: list[float], **extra: Any) -> list[str]:
    """Checkpoints of one run, oldest first, aged by ``days``."""
    ids = []
    for index, age in enumerate(days):
        checkpoint = aged(age, run_id=run_id, iteration_count=index, **extra)
        await storage.save(checkpoint)
        ids.append(checkpoint.checkpoint_id)
    return ids


async def test_keep_last_keeps_the_newest_of_each_run(storage: Any) -> None:
    run_a = await save_run(storage, "a", [5, 4, 3, 2, 1])
    run_b = await save_run(storage, "b", [5, 4])
    report = await prune(storage, keep_last=2)
    assert sorted(report.deleted) == sorted(run_a[:3])
    assert await storage.list_checkpoint_ids(run_id="a") == run_a[3:]
    assert await storage.list_checkpoint_ids(run_id="b") == run_b
    assert report.dry_run is False


async def test_older_than_deletes_only_old_checkpoints(storage: Any) -> None:
    ids = await save_run(storage, "a", [30, 10, 8, 6, 1])
    report = await prune(storage, older_than=dt.timedelta(days=7))
    assert sorted(report.deleted) == sorted(ids[:3])
    assert await storage.list_checkpoint_ids() == ids[3:]


async def test_older_than_accepts_an_aware_cutoff_and_refuses_a_naive_one(storage: Any) -> None:
    ids = await save_run(storage, "a", [3, 2, 1])
    report = await prune(storage, older_than=NOW - dt.timedelta(days=2, hours=12))
    assert report.deleted == ids[:1]
    with pytest.raises(ValueError, match="timezone"):
        await prune(storage, older_than=dt.datetime(2020, 1, 1))


async def test_keep_last_and_older_than_must_both_hold(storage: Any) -> None:
    ids = await save_run(storage, "a", [30, 20, 10, 2, 1])
    report = await prune(storage, keep_last=2, older_than=dt.timedelta(days=15))
    assert sorted(report.deleted) == sorted(ids[:2])


async def test_dry_run_reports_without_deleting(storage: Any) -> None:
    ids = await save_run(storage, "a", [3, 2, 1])
    report = await prune(storage, keep_last=1, dry_run=True)
    assert report.dry_run is True
    assert sorted(report.deleted) == sorted(ids[:2])
    assert await storage.list_checkpoint_ids() == ids


async def test_the_newest_checkpoint_of_a_run_is_never_deleted(storage: Any) -> None:
    run_a = await save_run(storage, "a", [400])
    run_b = await save_run(storage, "b", [300, 200])
    report = await prune(storage, keep_last=0, older_than=dt.timedelta(days=1))
    assert report.deleted == [run_b[0]]
    assert run_a[0] in report.protected and run_b[1] in report.protected
    assert await storage.list_checkpoint_ids() == [run_a[0], run_b[1]]


async def test_a_checkpoint_with_pending_requests_is_never_deleted(storage: Any) -> None:
    waiting = aged(
        50, run_id="a", iteration_count=1, pending_request_info_events=pending_request("q1")
    )
    older = aged(60, run_id="a", iteration_count=0)
    newest = aged(40, run_id="a", iteration_count=2)
    for checkpoint in (older, waiting, newest):
        await storage.save(checkpoint)
    report = await prune(storage, keep_last=1, older_than=dt.timedelta(days=1))
    assert report.deleted == [older.checkpoint_id]
    assert waiting.checkpoint_id in report.protected
    assert await storage.list_checkpoint_ids() == [waiting.checkpoint_id, newest.checkpoint_id]


async def test_a_checkpoint_a_fork_started_from_is_never_deleted(storage: Any) -> None:
    parent = await save_run(storage, "a", [60, 50, 40, 30])
    fork = aged(20, run_id="f", iteration_count=2, previous_checkpoint_id=parent[1])
    await storage.save(fork)
    report = await prune(storage, run_id="a", keep_last=1)
    assert sorted(report.deleted) == sorted([parent[0], parent[2]])
    assert parent[1] in report.protected
    assert await storage.list_checkpoint_ids(run_id="a") == [parent[1], parent[3]]


async def test_checkpoints_tied_for_newest_are_all_kept(storage: Any) -> None:
    ids = await save_run(storage, "a", [9, 1, 1])
    report = await prune(storage, keep_last=1)
    assert report.deleted == ids[:1]
    assert sorted(report.protected) == sorted(ids[1:])


async def test_prune_limits_itself_to_a_workflow_or_a_run(storage: Any) -> None:
    mine = await save_run(storage, "a", [3, 2, 1], workflow_name="mine")
    theirs = await save_run(storage, "b", [3, 2, 1], workflow_name="theirs")
    other_run = await save_run(storage, "c", [3, 2, 1], workflow_name="mine")
    await prune(storage, workflow_name="mine", run_id="a", keep_last=1)
    assert await storage.list_checkpoint_ids(run_id="a") == mine[2:]
    assert await storage.list_checkpoint_ids(run_id="b") == theirs
    assert await storage.list_checkpoint_ids(run_id="c") == other_run


async def test_pruned_runs_still_resume_from_what_is_left(storage: Any) -> None:
    await counting_workflow(storage).run(1)
    await prune(storage, keep_last=1)
    (latest,) = await storage.list_checkpoints(workflow_name="contract-counter")
    assert latest.iteration_count == 3
    assert (
        await counting_workflow(storage).run(checkpoint_id=latest.checkpoint_id)
    ).get_final_state().value == "IDLE"


@pytest.mark.parametrize(
    "arguments", [{}, {"keep_last": -1}, {"keep_last": 1.5}, {"older_than": 7}]
)
async def test_prune_refuses_meaningless_arguments(arguments: dict[str, Any]) -> None:
    with pytest.raises(ValueError):
        await prune(InMemoryCheckpointStorage(), **arguments)


async def test_bytes_freed_is_reported_by_storages_that_know_sizes() -> None:
    storage = InMemoryCheckpointStorage()
    await save_run(storage, "a", [3, 2, 1], state={"blob": "x" * 5_000})
    report = await prune(storage, keep_last=1)
    assert len(report.deleted) == 2 and report.bytes_freed > 0
