"""dashboard/broadcast.py: what a commit hands to the channel layer, and in what order."""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import secrets
import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest
from asgiref.sync import async_to_sync
from channels.layers import channel_layers, get_channel_layer
from django.test import override_settings

from dashboard import broadcast


def events(run: str, *seqs: int) -> tuple[str, dict[str, Any]]:
    message = {
        "type": "run.events",
        "run_id": run,
        "events": [{"seq": s, "type": "t", "data": {}, "created_at": "x"} for s in seqs],
    }
    return f"run.{run}", message


def changed(run: str) -> tuple[str, dict[str, Any]]:
    return "runs", {"type": "runs.changed", "run_id": run}


@contextlib.contextmanager
def network_layer(redis_url: str) -> Iterator[Any]:
    """A Redis channel layer of this test's own (its prefix), as production has."""
    layers = {
        "default": {
            "BACKEND": "channels_redis.core.RedisChannelLayer",
            "CONFIG": {"hosts": [redis_url], "prefix": f"test-{secrets.token_hex(4)}"},
        }
    }
    with override_settings(CHANNEL_LAYERS=layers, SUPERSTEP_EMBEDDED=False):
        channel_layers.backends.clear()
        try:
            layer = get_channel_layer()
            assert layer is not None
            yield layer
        finally:
            channel_layers.backends.clear()


def test_coalesce_joins_a_groups_consecutive_events_and_keeps_every_groups_order() -> None:
    batch = [
        events("a", 1),
        changed("a"),
        events("a", 2, 3),
        events("b", 1),
        changed("a"),
        events("a", 4),
    ]

    assert broadcast.coalesce(batch) == [events("a", 1, 2, 3, 4), changed("a"), events("b", 1)]


def test_coalesce_does_not_join_events_across_another_message_of_the_group() -> None:
    run_changed = ("run.a", {"type": "run.changed", "run_id": "a"})
    batch = [events("a", 1), run_changed, events("a", 2)]

    assert broadcast.coalesce(batch) == batch


def test_coalesce_keeps_a_replys_latest_frame_and_its_end_apart() -> None:
    def reply(text: str, *, done: bool = False) -> tuple[str, dict[str, Any]]:
        return (
            "run.a",
            {"type": "run.reply", "run_id": "a", "executor_id": "w", "reply_id": "w:1",
             "text": text, "done": done},
        )  # fmt: skip

    batch = [reply("The"), reply("The report"), reply("The report is"), reply("The end", done=True)]

    # A page that never saw the reply being written would drop its end (consumers.py).
    assert broadcast.coalesce(batch) == [reply("The report is"), reply("The end", done=True)]


@pytest.mark.redis
def test_a_network_layer_gets_every_message_in_order_without_the_commit_waiting(
    redis_url: str,
) -> None:
    with network_layer(redis_url) as layer:
        channel = async_to_sync(layer.new_channel)()
        async_to_sync(layer.group_add)("run.r1", channel)
        caller = threading.current_thread()
        sent_from: list[threading.Thread] = []
        real_send = layer.group_send

        async def spy(group: str, message: dict[str, Any]) -> None:
            sent_from.append(threading.current_thread())
            await real_send(group, message)

        layer.group_send = spy  # type: ignore[method-assign]
        for seq in range(1, 51):
            broadcast.broadcast_run_events("r1", [{"seq": seq, "type": "t", "data": {}}])
        assert broadcast._sender.flush(10)

        async def receive_all() -> list[int]:
            seqs: list[int] = []
            while len(seqs) < 50:
                message = await asyncio.wait_for(layer.receive(channel), 5)
                seqs += [event["seq"] for event in message["events"]]
            return seqs

        assert async_to_sync(receive_all)() == list(range(1, 51))
        assert sent_from and caller not in sent_from  # the sender's own thread sent them
        assert len({id(thread) for thread in sent_from}) == 1  # one long-lived thread


@pytest.mark.redis
def test_a_message_after_a_quiet_moment_goes_at_once_and_a_stream_in_few_batches(
    redis_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    with network_layer(redis_url) as layer:
        sends: list[float] = []
        real_send = layer.group_send

        async def spy(group: str, message: dict[str, Any]) -> None:
            sends.append(time.monotonic())
            await real_send(group, message)

        layer.group_send = spy  # type: ignore[method-assign]
        time.sleep(broadcast._BATCH_SECONDS * 2)  # quiet
        queued = time.monotonic()
        broadcast.broadcast_runs_progress("r1")
        assert broadcast._sender.flush(10)
        assert sends and sends[0] - queued < broadcast._BATCH_SECONDS  # not held back

        # A run committing a superstep every millisecond for half a second: its progress
        # notices go out in batches at least _BATCH_SECONDS apart, the last one included.
        # Timed where each batch begins: its sends follow one another, as slowly as a busy
        # machine makes them.
        sends.clear()
        batches: list[float] = []
        real_deliver = broadcast._deliver

        async def deliver(batch: list[tuple[str, dict[str, Any]]]) -> None:
            batches.append(time.monotonic())
            await real_deliver(batch)

        monkeypatch.setattr(broadcast, "_deliver", deliver)
        began = time.monotonic()
        while time.monotonic() - began < 0.5:
            broadcast.broadcast_run_events("r2", [{"seq": 1, "type": "t", "data": {}}])
            broadcast.broadcast_runs_progress("r2")
            time.sleep(0.001)
        assert broadcast._sender.flush(10)
        assert 2 <= len(sends) <= 2 * (0.5 / broadcast._BATCH_SECONDS + 2)
        gaps = [later - earlier for earlier, later in itertools.pairwise(batches)]
        assert all(gap >= broadcast._BATCH_SECONDS * 0.95 for gap in gaps), gaps


@pytest.mark.redis
def test_a_new_worker_process_connects_before_its_first_run_and_replies_are_not_held(
    redis_url: str,
) -> None:
    with network_layer(redis_url) as layer:
        sends: list[tuple[float, str]] = []
        real_send = layer.group_send

        async def spy(group: str, message: dict[str, Any]) -> None:
            sends.append((time.monotonic(), group))
            await real_send(group, message)

        layer.group_send = spy  # type: ignore[method-assign]
        broadcast.warm_up()  # Celery's worker_process_init
        assert broadcast._sender.flush(10)
        assert [group for _, group in sends] == ["superstep.warm"]

        # A reply's words right after a batch of events: not held for the events' batch.
        sends.clear()
        broadcast.broadcast_run_events("r3", [{"seq": 1, "type": "t", "data": {}}])
        queued = time.monotonic()
        broadcast.broadcast_reply("r3", executor_id="w", reply_id="w:1", text="so far")
        assert broadcast._sender.flush(10)
        [reply_at] = [at for at, group in sends if group == "run.r3"][1:]
        assert reply_at - queued < broadcast._BATCH_SECONDS


@pytest.mark.redis
def test_a_streamed_replys_text_so_far_is_kept_by_the_sending_thread(
    redis_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    with network_layer(redis_url):
        writers: list[threading.Thread] = []
        real_write = broadcast._Streaming._write

        def spy(run_id: str, held: dict[str, Any]) -> None:
            writers.append(threading.current_thread())
            real_write(run_id, held)

        monkeypatch.setattr(broadcast._Streaming, "_write", staticmethod(spy))
        broadcast.broadcast_reply("r4", executor_id="w", reply_id="w:1", text="The")
        broadcast.broadcast_reply("r4", executor_id="v", reply_id="v:1", text="Another")
        broadcast.broadcast_reply("r4", executor_id="w", reply_id="w:1", text="The report")
        assert broadcast._sender.flush(10)
        so_far = broadcast.replies_so_far("r4")
        broadcast.broadcast_reply("r4", executor_id="w", reply_id="w:1", text="The end", done=True)
        assert broadcast._sender.flush(10)
        after_one = broadcast.replies_so_far("r4")
        broadcast.broadcast_reply("r4", executor_id="v", reply_id="v:1", text="Done", done=True)
        assert broadcast._sender.flush(10)

        # In the order they began; the run's own thread, which hears the model, never waits.
        assert [(reply["reply_id"], reply["text"]) for reply in so_far] == [
            ("w:1", "The report"),
            ("v:1", "Another"),
        ]
        assert [reply["reply_id"] for reply in after_one] == ["v:1"]
        assert broadcast.replies_so_far("r4") == []
        assert writers and threading.current_thread() not in writers
