"""InMemoryCheckpointStorage: the storage contract, plus what only the in-memory backend does."""

from __future__ import annotations

import pytest

from workflows import CheckpointEncodeError, InMemoryCheckpointStorage
from workflows.testing import CheckpointStorageContract, make_checkpoint


class TestInMemoryStorageContract(CheckpointStorageContract):
    @pytest.fixture
    def storage(self) -> InMemoryCheckpointStorage:
        return InMemoryCheckpointStorage()


async def test_memory_storage_refuses_what_a_durable_storage_could_not_restore() -> None:
    # The in-memory backend serializes, so an unstorable value fails in a unit test already.
    storage = InMemoryCheckpointStorage()
    with pytest.raises(CheckpointEncodeError, match="handle"):
        await storage.save(make_checkpoint(state={"handle": open}))


async def test_memory_storage_drops_shared_blobs_only_with_their_last_checkpoint() -> None:
    storage = InMemoryCheckpointStorage()
    shared = {"text": "q" * 10_000}
    first = make_checkpoint(seconds=1, state={"shared": shared})
    second = make_checkpoint(seconds=2, state={"shared": shared})
    await storage.save(first)
    await storage.save(second)
    assert storage.blob_count == 1
    await storage.delete(first.checkpoint_id)
    assert storage.blob_count == 1
    await storage.delete(second.checkpoint_id)
    assert storage.blob_count == 0


async def test_two_memory_storages_share_nothing() -> None:
    one, two = InMemoryCheckpointStorage(), InMemoryCheckpointStorage()
    await one.save(make_checkpoint())
    assert await two.list_checkpoint_ids() == []
