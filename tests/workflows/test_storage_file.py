"""FileCheckpointStorage: the storage contract, plus files, atomicity, the index and corruption."""

from __future__ import annotations

import asyncio
import json
import os
import threading
from pathlib import Path

import pytest

from workflows import CheckpointDecodeError, CheckpointNotFoundError, FileCheckpointStorage
from workflows.storage import file as file_storage
from workflows.testing import CheckpointStorageContract, make_checkpoint


class TestFileStorageContract(CheckpointStorageContract):
    @pytest.fixture
    def storage(self, tmp_path: Path) -> FileCheckpointStorage:
        return FileCheckpointStorage(tmp_path / "store")


def checkpoint_files(root: Path) -> list[Path]:
    return sorted((root / "checkpoints").glob("*.json"))


def big_state(tag: str = "s") -> dict[str, str]:
    return {"document": tag * 20_000}


# ------------------------------------------------------------------------------------- files


async def test_file_storage_writes_one_readable_json_file_per_checkpoint(tmp_path: Path) -> None:
    storage = FileCheckpointStorage(tmp_path)
    saved = [make_checkpoint(seconds=i, state={"i": i, **big_state()}) for i in range(3)]
    for checkpoint in saved:
        await storage.save(checkpoint)
    files = checkpoint_files(tmp_path)
    assert sorted(p.stem for p in files) == sorted(c.checkpoint_id for c in saved)
    for path in files:
        with path.open(encoding="utf-8") as fh:
            document = json.load(fh)
        assert document["record"]["checkpoint_id"] == path.stem


async def test_file_storage_accepts_a_string_path_and_creates_the_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    storage = FileCheckpointStorage("./checkpoints/nested")
    await storage.save(make_checkpoint())
    assert checkpoint_files(tmp_path / "checkpoints" / "nested")


async def test_file_storage_confines_ids_to_its_folder(tmp_path: Path) -> None:
    storage = FileCheckpointStorage(tmp_path / "store")
    outside = make_checkpoint()
    await FileCheckpointStorage(tmp_path / "other").save(outside)
    # A real checkpoint file sits one level up from the storage's own checkpoint folder.
    target = checkpoint_files(tmp_path / "other")[0]
    escape = tmp_path / "store" / "escape.json"
    escape.write_bytes(target.read_bytes())
    for bad_id in ["../escape", "../../other/checkpoints/" + outside.checkpoint_id, str(escape)]:
        with pytest.raises(CheckpointNotFoundError):
            await storage.load(bad_id)
        assert await storage.delete(bad_id) is False
    assert escape.exists()


async def test_atomic_write_leaves_no_temporary_files(tmp_path: Path) -> None:
    storage = FileCheckpointStorage(tmp_path)
    for i in range(5):
        await storage.save(make_checkpoint(seconds=i, state={"i": i, **big_state(str(i))}))
    await storage.delete((await storage.list_checkpoint_ids())[0])
    leftovers = [
        p for p in tmp_path.rglob("*") if p.is_file() and p.suffix not in (".json", ".jsonl")
    ]
    assert leftovers == []


async def test_a_save_that_fails_to_rename_leaves_no_file_and_no_listing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    storage = FileCheckpointStorage(tmp_path)

    def refuse(src: object, dst: object) -> None:
        raise OSError("disk went away")

    monkeypatch.setattr(os, "replace", refuse)
    with pytest.raises(OSError, match="disk went away"):
        await storage.save(make_checkpoint())
    monkeypatch.undo()
    assert [p for p in tmp_path.rglob("*") if p.is_file() and p.name != "index.jsonl"] == []
    assert await storage.list_checkpoint_ids() == []


async def test_a_save_that_fails_while_writing_leaves_no_temporary_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # ENOSPC surfaces from write() or fsync(); the half-written temporary file must not stay.
    storage = FileCheckpointStorage(tmp_path)

    def disk_full(fd: int) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "fsync", disk_full)
    with pytest.raises(OSError, match="No space"):
        await storage.save(make_checkpoint())
    monkeypatch.undo()
    assert [p.name for p in tmp_path.rglob("*.tmp")] == []


# ------------------------------------------------------------------------------------- index


async def test_listing_is_rebuilt_from_the_files_after_the_index_is_deleted(
    tmp_path: Path,
) -> None:
    storage = FileCheckpointStorage(tmp_path)
    saved = [make_checkpoint(seconds=i, run_id=f"r{i % 2}", state=big_state()) for i in range(4)]
    for checkpoint in saved:
        await storage.save(checkpoint)
    before = await storage.list_checkpoint_ids()
    (tmp_path / "index.jsonl").unlink()
    reopened = FileCheckpointStorage(tmp_path)
    assert await reopened.list_checkpoint_ids() == before
    assert await reopened.list_checkpoint_ids(run_id="r1") == [
        c.checkpoint_id for c in saved if c.run_id == "r1"
    ]
    for checkpoint in saved:
        assert (await reopened.load(checkpoint.checkpoint_id)).state == checkpoint.state


async def test_saves_after_the_index_is_deleted_under_an_open_storage_are_indexed_again(
    tmp_path: Path,
) -> None:
    # The storage keeps the index open for appending; it must notice the file went away.
    storage = FileCheckpointStorage(tmp_path)
    await storage.save(make_checkpoint(seconds=1))
    (tmp_path / "index.jsonl").unlink()
    later = make_checkpoint(seconds=2)
    await storage.save(later)
    assert later.checkpoint_id in (tmp_path / "index.jsonl").read_text()
    assert later.checkpoint_id in await FileCheckpointStorage(tmp_path).list_checkpoint_ids()


async def test_an_index_descriptor_closed_behind_the_storage_is_neither_written_nor_closed(
    tmp_path: Path,
) -> None:
    # As after a daemonizing fork: the storage's descriptor is closed and its number reused.
    storage = FileCheckpointStorage(tmp_path)
    await storage.save(make_checkpoint(seconds=1))
    index = (tmp_path / "index.jsonl").resolve()
    (fd,) = [int(n) for n in os.listdir("/proc/self/fd") if _points_to(int(n), index)]
    os.close(fd)
    bystander = tmp_path / "bystander.txt"
    reused = os.open(bystander, os.O_WRONLY | os.O_CREAT)
    try:
        later = make_checkpoint(seconds=2)
        await storage.save(later)
        assert bystander.read_bytes() == b""
        os.fstat(reused)  # still open: the storage did not close what is no longer its own
    finally:
        os.close(reused)
    assert later.checkpoint_id in index.read_text()


def _points_to(fd: int, path: Path) -> bool:
    try:
        return Path(os.readlink(f"/proc/self/fd/{fd}")) == path
    except OSError:
        return False


async def test_listing_survives_a_damaged_index(tmp_path: Path) -> None:
    storage = FileCheckpointStorage(tmp_path)
    saved = [make_checkpoint(seconds=i) for i in range(3)]
    for checkpoint in saved:
        await storage.save(checkpoint)
    with (tmp_path / "index.jsonl").open("ab") as fh:
        fh.write(b'{"op": "save", "summary": {"nonsense\n\x00\xff garbage\n{"op":"delete"}\n')
    reopened = FileCheckpointStorage(tmp_path)
    assert await reopened.list_checkpoint_ids() == [c.checkpoint_id for c in saved]


async def test_a_second_storage_on_the_same_folder_sees_the_first_ones_saves_and_deletes(
    tmp_path: Path,
) -> None:
    writer = FileCheckpointStorage(tmp_path)
    reader = FileCheckpointStorage(tmp_path)  # opened before anything was saved
    first = make_checkpoint(seconds=1, state=big_state())
    second = make_checkpoint(seconds=2, state=big_state())
    await writer.save(first)
    await writer.save(second)
    assert await reader.list_checkpoint_ids() == [first.checkpoint_id, second.checkpoint_id]
    latest = await reader.get_latest(workflow_name="contract-workflow")
    assert latest is not None and latest.checkpoint_id == second.checkpoint_id
    assert await writer.delete(second.checkpoint_id)
    assert await reader.list_checkpoint_ids() == [first.checkpoint_id]
    with pytest.raises(CheckpointNotFoundError):
        await reader.load(second.checkpoint_id)


async def test_a_second_storage_can_load_a_checkpoint_whose_shared_value_moved_on_delete(
    tmp_path: Path,
) -> None:
    # The first checkpoint file carries the large value both checkpoints use; deleting it in one
    # instance moves the value to blobs/. Another instance must still load the survivor.
    writer = FileCheckpointStorage(tmp_path)
    first = make_checkpoint(seconds=1, state=big_state())
    second = make_checkpoint(seconds=2, state=big_state())
    await writer.save(first)
    await writer.save(second)
    reader = FileCheckpointStorage(tmp_path)
    assert await reader.list_checkpoint_ids() == [first.checkpoint_id, second.checkpoint_id]
    assert await writer.delete(first.checkpoint_id)
    assert (await reader.load(second.checkpoint_id)).state == big_state()


async def test_deleting_a_checkpoint_while_another_save_is_in_flight_loses_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The second save finds the large value already stored in the first checkpoint's file and
    # does not carry it; the first checkpoint is deleted while the second file is being written.
    storage = FileCheckpointStorage(tmp_path)
    first = make_checkpoint(seconds=1, state=big_state())
    second = make_checkpoint(seconds=2, state=big_state())
    await storage.save(first)
    writing, release = threading.Event(), threading.Event()
    real_write = file_storage.durable_temp

    def slow_write(path: Path, data: bytes) -> Path:
        if path.stem == second.checkpoint_id:
            writing.set()
            release.wait(5)
        return real_write(path, data)

    monkeypatch.setattr(file_storage, "durable_temp", slow_write)
    saving = asyncio.create_task(storage.save(second))
    assert await asyncio.to_thread(writing.wait, 5)
    assert await storage.delete(first.checkpoint_id)
    release.set()
    await saving
    assert (await storage.load(second.checkpoint_id)).state == big_state()
    assert (await FileCheckpointStorage(tmp_path).load(second.checkpoint_id)).state == big_state()


# -------------------------------------------------------------------------------- corruption

CORRUPTIONS = {
    "garbage": b"this is not json {",
    "truncated": b'{"format":"superstep.checkpoint-file/1","record":{"checkpoint_id":',
    "invalid_utf8": b'{"format": "\xff\xfe"}',
    "not_a_checkpoint": b'{"hello": "world"}',
    "json_array": b"[1, 2, 3]",
    "empty": b"",
    "nan_token": b'{"format":"superstep.checkpoint-file/1","record":NaN,"blobs":{}}',
}


async def _save_then_corrupt(tmp_path: Path, damage: str) -> tuple[FileCheckpointStorage, str, str]:
    storage = FileCheckpointStorage(tmp_path)
    good = make_checkpoint(seconds=1)
    bad = make_checkpoint(seconds=2)
    await storage.save(good)
    await storage.save(bad)
    (tmp_path / "checkpoints" / f"{bad.checkpoint_id}.json").write_bytes(CORRUPTIONS[damage])
    return storage, good.checkpoint_id, bad.checkpoint_id


@pytest.mark.parametrize("damage", sorted(CORRUPTIONS))
async def test_loading_a_corrupted_file_raises_checkpoint_decode_error(
    tmp_path: Path, damage: str
) -> None:
    storage, _, bad_id = await _save_then_corrupt(tmp_path, damage)
    with pytest.raises(CheckpointDecodeError):
        await storage.load(bad_id)


async def test_listing_skips_a_checkpoint_whose_file_was_corrupted_after_it_was_saved(
    tmp_path: Path,
) -> None:
    storage, good_id, _ = await _save_then_corrupt(tmp_path, "truncated")
    assert [c.checkpoint_id for c in await storage.list_checkpoints()] == [good_id]
    latest = await storage.get_latest(workflow_name="contract-workflow")
    assert latest is not None and latest.checkpoint_id == good_id


@pytest.mark.parametrize("damage", sorted(CORRUPTIONS))
async def test_a_corrupted_file_is_left_out_when_a_new_storage_opens_the_folder(
    tmp_path: Path, damage: str
) -> None:
    good = make_checkpoint(seconds=1)
    await FileCheckpointStorage(tmp_path).save(good)
    (tmp_path / "checkpoints" / "intruder.json").write_bytes(CORRUPTIONS[damage])
    (tmp_path / "index.jsonl").unlink()
    reopened = FileCheckpointStorage(tmp_path)
    assert await reopened.list_checkpoint_ids() == [good.checkpoint_id]
    with pytest.raises(CheckpointDecodeError):
        await reopened.load("intruder")


async def test_a_file_with_an_incomplete_record_does_not_stop_the_storage_from_opening(
    tmp_path: Path,
) -> None:
    good = make_checkpoint(seconds=1)
    await FileCheckpointStorage(tmp_path).save(good)
    incomplete = {"format": "superstep.checkpoint-file/1", "record": {}, "blobs": {}}
    (tmp_path / "checkpoints" / "incomplete.json").write_text(json.dumps(incomplete))
    reopened = FileCheckpointStorage(tmp_path)
    assert await reopened.list_checkpoint_ids() == [good.checkpoint_id]
    with pytest.raises(CheckpointDecodeError):
        await reopened.load("incomplete")


async def test_a_missing_blob_is_a_decode_error_not_a_crash(tmp_path: Path) -> None:
    storage = FileCheckpointStorage(tmp_path)
    first = make_checkpoint(seconds=1, state=big_state())
    second = make_checkpoint(seconds=2, state=big_state())
    await storage.save(first)
    await storage.save(second)
    # Remove the value from the file that carries it, behind the storage's back.
    path = tmp_path / "checkpoints" / f"{first.checkpoint_id}.json"
    document = json.loads(path.read_text())
    document["blobs"] = {}
    path.write_text(json.dumps(document))
    with pytest.raises(CheckpointDecodeError):
        await FileCheckpointStorage(tmp_path).load(second.checkpoint_id)
