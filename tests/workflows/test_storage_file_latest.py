"""FileCheckpointStorage's latest records (``storage/latest.py``): get_latest of a run or a
workflow without the index, and the right answer whatever a crash or a hand did to a record."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from workflows import FileCheckpointStorage, WorkflowCheckpoint
from workflows.storage import file as file_storage
from workflows.storage.latest import LatestRecords
from workflows.testing import CheckpointStorageContract, make_checkpoint

WORKFLOW = "contract-workflow"


class TestOffloadedFileStorageContract(CheckpointStorageContract):
    """The save path that writes on a worker thread keeps the whole contract too."""

    @pytest.fixture
    def storage(self, tmp_path: Path) -> FileCheckpointStorage:
        return FileCheckpointStorage(tmp_path / "store", offload_io=True)


def big(tag: str = "s") -> dict[str, str]:
    return {"document": tag * 20_000}


async def save_run(
    storage: FileCheckpointStorage, run_id: str, steps: int, start: int = 0, **fields: Any
) -> list[WorkflowCheckpoint]:
    saved = []
    previous = None
    for step in range(start, start + steps):
        checkpoint = make_checkpoint(
            run_id=run_id, seconds=step, previous_checkpoint_id=previous, **fields
        )
        previous = await storage.save(checkpoint)
        saved.append(checkpoint)
    return saved


def _refuse_index(self: FileCheckpointStorage) -> None:
    raise AssertionError("the index was read")


def no_index(monkeypatch: pytest.MonkeyPatch) -> None:
    """Fail the test if the storage reads its index."""
    monkeypatch.setattr(FileCheckpointStorage, "_ensure_index", _refuse_index)


def fail_checkpoint_rename(monkeypatch: pytest.MonkeyPatch, error: BaseException) -> None:
    """The rename that puts a checkpoint file in place raises ``error`` (after the records
    moved); other renames go through."""
    real_replace = os.replace

    def replace(src: Any, dst: Any) -> None:
        if Path(dst).parent.name == "checkpoints":
            raise error
        real_replace(src, dst)

    monkeypatch.setattr(os, "replace", replace)


def record_path(root: Path, kind: str, name: str) -> Path:
    return LatestRecords(root / "latest").path(kind, name)


async def newest_id(root: Path, **filters: str) -> str | None:
    found = await FileCheckpointStorage(root).get_latest(**filters)
    return None if found is None else found.checkpoint_id


# ------------------------------------------------------------------------------- fast path


async def test_get_latest_of_a_run_or_workflow_reads_no_index(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    storage = FileCheckpointStorage(tmp_path)
    runs = {run: await save_run(storage, run, 5, start=10 * i) for i, run in enumerate("abc")}
    no_index(monkeypatch)
    fresh = FileCheckpointStorage(tmp_path)
    for run, saved in runs.items():
        latest = await fresh.get_latest(run_id=run)
        assert latest is not None and latest.checkpoint_id == saved[-1].checkpoint_id
        both = await fresh.get_latest(workflow_name=WORKFLOW, run_id=run)
        assert both is not None and both.checkpoint_id == saved[-1].checkpoint_id
    latest = await fresh.get_latest(workflow_name=WORKFLOW)
    assert latest is not None and latest.checkpoint_id == runs["c"][-1].checkpoint_id


async def test_shared_large_values_load_from_the_record_s_hints_even_after_their_home_went(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    storage = FileCheckpointStorage(tmp_path)
    saved = await save_run(storage, "r", 3, state=big())
    # The first file carries the value the others share; deleting it moves the value to blobs/.
    assert await storage.delete(saved[0].checkpoint_id)
    no_index(monkeypatch)
    latest = await FileCheckpointStorage(tmp_path).get_latest(run_id="r")
    assert latest is not None and latest.state == big()
    assert latest.checkpoint_id == saved[-1].checkpoint_id


async def test_a_run_s_newest_of_another_workflow_is_not_given_for_this_one(
    tmp_path: Path,
) -> None:
    storage = FileCheckpointStorage(tmp_path)
    await storage.save(make_checkpoint(workflow_name="alpha", run_id="shared", seconds=1))
    await storage.save(make_checkpoint(workflow_name="beta", run_id="shared", seconds=2))
    fresh = FileCheckpointStorage(tmp_path)
    alpha = await fresh.get_latest(workflow_name="alpha", run_id="shared")
    assert alpha is not None and alpha.workflow_name == "alpha"
    assert await fresh.get_latest(workflow_name="gamma", run_id="shared") is None


async def test_an_older_save_does_not_lower_the_record(tmp_path: Path) -> None:
    storage = FileCheckpointStorage(tmp_path)
    newer = make_checkpoint(seconds=10)
    await storage.save(newer)
    await storage.save(make_checkpoint(seconds=5))
    assert await newest_id(tmp_path, run_id="run-1") == newer.checkpoint_id
    assert await newest_id(tmp_path, workflow_name=WORKFLOW) == newer.checkpoint_id


async def test_equal_timestamps_give_the_later_save_like_the_index(tmp_path: Path) -> None:
    storage = FileCheckpointStorage(tmp_path)
    first, second = make_checkpoint(seconds=1), make_checkpoint(seconds=1)
    await storage.save(first)
    await storage.save(second)
    assert await newest_id(tmp_path, run_id="run-1") == second.checkpoint_id
    assert (
        await FileCheckpointStorage(tmp_path).get_latest()
    ).checkpoint_id == second.checkpoint_id  # type: ignore[union-attr]


async def test_two_storages_on_one_folder_keep_the_records_right(tmp_path: Path) -> None:
    one, two = FileCheckpointStorage(tmp_path), FileCheckpointStorage(tmp_path)
    saved = []
    for step in range(6):
        checkpoint = make_checkpoint(run_id=f"r{step % 2}", seconds=step)
        await (one if step % 3 else two).save(checkpoint)
        saved.append(checkpoint)
    assert await newest_id(tmp_path, workflow_name=WORKFLOW) == saved[-1].checkpoint_id
    assert await newest_id(tmp_path, run_id="r0") == saved[4].checkpoint_id


# -------------------------------------------------------------------- records not to trust


@pytest.mark.parametrize("damage", ["missing", "empty", "torn", "not json", "wrong types"])
async def test_a_missing_or_torn_record_gives_the_right_answer_and_is_rebuilt(
    tmp_path: Path, damage: str
) -> None:
    storage = FileCheckpointStorage(tmp_path)
    saved = await save_run(storage, "r", 4)
    path = record_path(tmp_path, "r", "r")
    good = path.read_bytes()
    if damage == "missing":
        path.unlink()
    else:
        path.write_bytes(
            {
                "empty": b"",
                "torn": good[: len(good.rstrip()) // 2],
                "not json": b"\x00\xff",
                "wrong types": b'{"id": 5, "ts": []}',
            }[damage]
        )
    assert await newest_id(tmp_path, run_id="r") == saved[-1].checkpoint_id
    assert path.read_bytes() == good


async def test_a_record_is_rewritten_in_place_and_durably(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """No new file per save (an inode costs as much as the checkpoint's own write) and the
    record flushed before the checkpoint it names is renamed into place."""
    storage = FileCheckpointStorage(tmp_path)
    await save_run(storage, "r", 1)
    path = record_path(tmp_path, "r", "r")
    inode = path.stat().st_ino
    order: list[str] = []
    real_fdatasync, real_replace = os.fdatasync, os.replace
    monkeypatch.setattr(os, "fdatasync", lambda fd: (order.append("record"), real_fdatasync(fd)))
    monkeypatch.setattr(
        os, "replace", lambda src, dst: (order.append("checkpoint"), real_replace(src, dst))
    )
    saved = await save_run(storage, "r", 3, start=5)
    assert path.stat().st_ino == inode
    assert order == ["record", "record", "checkpoint"] * 3  # the run's and the workflow's
    monkeypatch.undo()
    assert await newest_id(tmp_path, run_id="r") == saved[-1].checkpoint_id


async def test_a_record_half_overwritten_or_from_an_older_version_is_not_trusted(
    tmp_path: Path,
) -> None:
    storage = FileCheckpointStorage(tmp_path)
    saved = await save_run(storage, "r", 3)
    path = record_path(tmp_path, "r", "r")
    good = path.read_bytes()
    newer = b'{"id":"no-such-checkpoint-of-a-longer-name","ts":"2031-01-01T00:00:00+00:00"'
    for damaged in (
        newer + good[len(newer) :],  # a crash in the middle of the write: new head, old tail
        good.replace(b"0", b"1", 1),  # a byte changed: the digest no longer matches
        good.rstrip().rpartition(b',"digest"')[0] + b"}",  # as an older version wrote it
    ):
        path.write_bytes(damaged)
        assert await newest_id(tmp_path, run_id="r") == saved[-1].checkpoint_id
        assert path.read_bytes() == good


async def test_a_crash_between_the_record_and_the_rename_leaves_the_previous_checkpoint_newest(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    storage = FileCheckpointStorage(tmp_path)
    saved = await save_run(storage, "r", 3)
    # The process dies (KeyboardInterrupt: no cleanup runs) after the records moved.
    fail_checkpoint_rename(monkeypatch, KeyboardInterrupt())
    with pytest.raises(KeyboardInterrupt):
        await storage.save(make_checkpoint(run_id="r", seconds=99))
    monkeypatch.undo()
    # The record names a checkpoint that never came to be: both filters still find the truth.
    assert await newest_id(tmp_path, run_id="r") == saved[-1].checkpoint_id
    assert await newest_id(tmp_path, workflow_name=WORKFLOW) == saved[-1].checkpoint_id
    # ... and the rebuilt records answer without the index next time.
    no_index(monkeypatch)
    assert await newest_id(tmp_path, run_id="r") == saved[-1].checkpoint_id


async def test_a_crash_after_the_rename_before_the_index_line_is_found_by_the_record(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    storage = FileCheckpointStorage(tmp_path)
    await save_run(storage, "r", 2)

    def die(self: FileCheckpointStorage, entry: dict[str, Any]) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(FileCheckpointStorage, "_append_index", die)
    last = make_checkpoint(run_id="r", seconds=50)
    with pytest.raises(KeyboardInterrupt):
        await storage.save(last)
    monkeypatch.undo()
    assert await newest_id(tmp_path, run_id="r") == last.checkpoint_id
    assert last.checkpoint_id in await FileCheckpointStorage(tmp_path).list_checkpoint_ids()


async def test_a_record_naming_a_checkpoint_that_is_gone_or_different_is_not_trusted(
    tmp_path: Path,
) -> None:
    storage = FileCheckpointStorage(tmp_path)
    saved = await save_run(storage, "r", 3)
    path = record_path(tmp_path, "r", "r")
    good = path.read_bytes()
    for stale in (
        b'{"id": "no-such-checkpoint", "ts": "2031-01-01T00:00:00+00:00", "homes": {}}',
        b'{"id": "../../escape", "ts": "2031-01-01T00:00:00+00:00", "homes": {}}',
        # the right id with another timestamp: the file was saved again since
        good.replace(saved[-1].timestamp.encode(), b"2031-01-01T00:00:00+00:00"),
    ):
        path.write_bytes(stale)
        assert await newest_id(tmp_path, run_id="r") == saved[-1].checkpoint_id
        assert path.read_bytes() == good


# ---------------------------------------------------------------------------------- delete


async def test_deleting_the_newest_lowers_the_records(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    storage = FileCheckpointStorage(tmp_path)
    a = await save_run(storage, "a", 2, start=0)
    b = await save_run(storage, "b", 2, start=10)
    assert await storage.delete(b[-1].checkpoint_id)
    with monkeypatch.context() as patch:
        no_index(patch)
        assert await newest_id(tmp_path, run_id="b") == b[0].checkpoint_id
        assert await newest_id(tmp_path, workflow_name=WORKFLOW) == b[0].checkpoint_id
    assert await storage.delete(b[0].checkpoint_id)
    assert not record_path(tmp_path, "r", "b").exists()
    assert await newest_id(tmp_path, run_id="b") is None
    assert await newest_id(tmp_path, workflow_name=WORKFLOW) == a[-1].checkpoint_id


async def test_deleting_an_older_checkpoint_leaves_the_records_alone(tmp_path: Path) -> None:
    storage = FileCheckpointStorage(tmp_path)
    saved = await save_run(storage, "r", 3)
    before = record_path(tmp_path, "r", "r").read_bytes()
    assert await storage.delete(saved[0].checkpoint_id)
    assert record_path(tmp_path, "r", "r").read_bytes() == before


async def test_a_failed_save_leaves_no_record_file_behind(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    storage = FileCheckpointStorage(tmp_path)

    def full(path: Path, data: bytes) -> Path:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(file_storage, "durable_temp", full)
    with pytest.raises(OSError):
        await storage.save(make_checkpoint())
    assert list((tmp_path / "latest").iterdir()) == []


async def test_a_crash_while_writing_a_record_never_hides_a_checkpoint_that_exists(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    storage = FileCheckpointStorage(tmp_path)
    await save_run(storage, "r", 3)

    def die(self: LatestRecords, kind: str, name: str, latest: Any) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(LatestRecords, "write", die)
    with pytest.raises(KeyboardInterrupt):
        await storage.save(make_checkpoint(run_id="r", seconds=99))
    monkeypatch.undo()
    # Whatever survived on disk, the record and the files agree on which is the newest.
    listed = await FileCheckpointStorage(tmp_path).list_checkpoint_ids(run_id="r")
    assert await newest_id(tmp_path, run_id="r") == listed[-1]
    assert await newest_id(tmp_path, workflow_name=WORKFLOW) == listed[-1]


async def test_a_save_that_fails_puts_the_records_back(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    storage = FileCheckpointStorage(tmp_path)
    saved = await save_run(storage, "r", 2)
    fail_checkpoint_rename(monkeypatch, OSError("disk went away"))
    with pytest.raises(OSError, match="disk went away"):
        await storage.save(make_checkpoint(run_id="r", seconds=99))
    monkeypatch.undo()
    records = LatestRecords(tmp_path / "latest")
    for kind, name in (("r", "r"), ("w", WORKFLOW)):
        record = records.read(kind, name)
        assert record is not None and record.id == saved[-1].checkpoint_id
