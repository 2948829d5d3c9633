"""dashboard/checkpoints/blob_uses.py: a blob stays while a checkpoint refers to it, whatever runs
at once.

The race that matters: a save that reuses a blob its process remembers storing (so it sends
no blob) while a delete elsewhere decides that nothing uses that blob any more.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator

import pytest
from django.core.exceptions import ImproperlyConfigured
from django.db import connections, transaction

from dashboard.checkpoints.blob_uses import release_unused_uses
from dashboard.checkpoints.storage import DjangoCheckpointStorage
from dashboard.checkpoints.writes import save_split
from dashboard.models import CheckpointBlob, CheckpointBlobUse
from workflows.storage import split_checkpoint
from workflows.testing import make_checkpoint

pytestmark = [pytest.mark.postgres, pytest.mark.django_db(databases=["pg"], transaction=True)]

BIG = {"payload": "r" * 8000}


@pytest.fixture
def storage() -> Iterator[DjangoCheckpointStorage]:
    storage = DjangoCheckpointStorage(using="pg")
    yield storage
    connections.close_all()


def test_a_delete_waits_for_a_save_in_flight_and_keeps_the_blob_it_uses(
    storage: DjangoCheckpointStorage,
) -> None:
    first = make_checkpoint(seconds=1, run_id="lineage", state={"big": BIG})
    second = make_checkpoint(seconds=2, run_id="lineage", state={"big": BIG})
    with transaction.atomic(using="pg"):
        save_split(split_checkpoint(first), using="pg", trust_known_blobs=False)

    saving, release = threading.Event(), threading.Event()
    deleted: list[bool] = []

    def save_and_hold() -> None:
        try:
            with transaction.atomic(using="pg"):
                save_split(split_checkpoint(second), using="pg")  # locks the lineage's use
                saving.set()
                release.wait(30)
        finally:
            connections.close_all()

    def delete_first() -> None:
        try:
            deleted.append(storage.delete_sync(first.checkpoint_id))
        finally:
            connections.close_all()

    saver = threading.Thread(target=save_and_hold)
    saver.start()
    assert saving.wait(30)
    deleter = threading.Thread(target=delete_first)
    deleter.start()
    time.sleep(0.5)
    assert deleter.is_alive(), "the delete must wait for the save holding the use"
    release.set()
    saver.join(30)
    deleter.join(30)

    assert deleted == [True]
    assert storage.load_sync(second.checkpoint_id).state == {"big": BIG}
    assert CheckpointBlob.objects.using("pg").count() == 1
    assert CheckpointBlobUse.objects.using("pg").count() == 1


def test_releasing_uses_refuses_to_decide_above_read_committed(
    storage: DjangoCheckpointStorage,
) -> None:
    with transaction.atomic(using="pg"):
        with connections["pg"].cursor() as cursor:
            cursor.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ")
        with pytest.raises(ImproperlyConfigured, match="READ COMMITTED"):
            release_unused_uses(["lineage"], using="pg")
