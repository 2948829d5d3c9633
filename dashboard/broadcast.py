"""Broadcasting committed changes to websocket groups (callers use ``transaction.on_commit``).

Groups: ``run.<uuid>`` (one run's events), ``runs`` (the run list) and ``approvals`` (the
inbox). Messages carry ids and sequence numbers; the consumers (``dashboard.web.live``) re-read
and render, so a dropped message costs nothing a reconnect cannot repair from ``RunEvent``.

In embedded mode the channel layer is in-memory and lives on the server's event loop, while
runs execute on worker threads with loops of their own; messages are handed to the server's
loop rather than touched from another thread.

With a network layer (Redis) a process sends from one thread of its own (``_Sender``), on one
long-lived event loop and its connections: a commit only queues its messages, so it never
waits on the broker, and the thread sends them in the order they were queued. A message that
comes after a quiet moment goes out at once; while messages keep coming, they go out at most
every ``_BATCH_SECONDS``, those queued meanwhile in one batch: a run's consecutive events as
one message, a repeated notice once. A ``group_send`` through channels-redis costs 0.1 to
0.3 ms of CPU and more with each member of the group, so a worker committing a superstep a
millisecond would otherwise spend a third of its time telling the broker. Before, each message
went through ``async_to_sync``: a new event loop, and new broker connections, per message, on
the committing thread.

A streaming reply's text so far is also kept in the cache for pages that open mid-reply
(``replies_so_far``). With the sending thread, that thread writes it, just before it sends the
batch: the run's event loop, which hears the model's chunks, never waits on Redis, and a batch
that coalesced several frames of a reply writes it once. The process keeps what it streams
(``_Streaming``) and writes that, so a frame costs one write and no read.
"""

from __future__ import annotations

import asyncio
import atexit
import logging
import os
import queue
import threading
import time
from collections.abc import Callable
from typing import Any

from asgiref.sync import async_to_sync
from channels.layers import InMemoryChannelLayer, get_channel_layer
from django.conf import settings
from django.core.cache import cache

from dashboard.instruments import metrics
from dashboard.models import RunEvent

__all__ = [
    "APPROVALS_GROUP",
    "RUNS_GROUP",
    "REPLY_KEEP_SECONDS",
    "broadcast_approvals_changed",
    "broadcast_reply",
    "broadcast_run_alerts_changed",
    "broadcast_run_changed",
    "broadcast_run_events",
    "broadcast_runs_progress",
    "event_payload",
    "remember_server_loop",
    "replies_so_far",
    "run_group",
]

logger = logging.getLogger(__name__)

RUNS_GROUP = "runs"
APPROVALS_GROUP = "approvals"
_server_loop: asyncio.AbstractEventLoop | None = None
_loop_lock = threading.Lock()


def run_group(run_id: Any) -> str:
    return f"run.{run_id}"


def remember_server_loop(loop: asyncio.AbstractEventLoop) -> None:
    """Called by consumers: the loop that owns the in-memory channel layer's queues."""
    global _server_loop
    with _loop_lock:
        _server_loop = loop


def event_payload(row: RunEvent) -> dict[str, Any]:
    return {
        "seq": row.seq,
        "type": row.type,
        "data": row.data,
        "created_at": row.created_at.isoformat(),
    }


def _send(group: str, message: dict[str, Any]) -> None:
    layer = get_channel_layer()
    threaded = not (
        layer is None or settings.SUPERSTEP_EMBEDDED or isinstance(layer, InMemoryChannelLayer)
    )
    if message["type"] == "run.reply" and not threaded:
        _streaming.keep([message])  # else the sending thread does, before it sends
    if layer is None:
        return
    sent = metrics.BroadcastTimer()  # _send runs in on_commit callbacks: the commit is now
    if settings.SUPERSTEP_EMBEDDED:
        with _loop_lock:
            loop = _server_loop
        if loop is None or loop.is_closed():
            return  # no websocket ever connected to this process: nobody to tell
        try:
            running = asyncio.get_running_loop()
        except RuntimeError:
            running = None
        if running is loop:
            loop.create_task(layer.group_send(group, message)).add_done_callback(sent)
        else:
            asyncio.run_coroutine_threadsafe(
                layer.group_send(group, message), loop
            ).add_done_callback(sent)
        return
    if threaded:
        _sender.put(group, message, sent)
        return
    # An in-memory layer's queues belong to the loop of whoever reads them (a test's): sent
    # there, as async_to_sync does from a thread serving that loop.
    try:
        async_to_sync(layer.group_send)(group, message)
    except Exception:  # a broker hiccup must not fail the commit that already happened
        logger.exception("broadcast to %s failed; clients catch up on reconnect", group)
    else:
        sent()


def coalesce(batch: list[tuple[str, dict[str, Any]]]) -> list[tuple[str, dict[str, Any]]]:
    """``batch`` with each group's consecutive ``run.events`` joined into one message, a
    reply's consecutive frames into its latest, and a message repeating the group's previous
    one dropped; each group's order is kept."""
    out: list[tuple[str, dict[str, Any]]] = []
    last: dict[str, int] = {}  # group -> index in out of its latest message
    for group, message in batch:
        index = last.get(group)
        if index is not None:
            previous = out[index][1]
            if previous == message:
                continue
            if (
                message.get("type") == previous.get("type") == "run.reply"
                and message.get("reply_id") == previous.get("reply_id")
                and message["done"] == previous["done"]
            ):
                # A reply's text so far: the latest says it all. Its end stays apart from its
                # last words, though: a page shows a finished reply only if it saw it written.
                out[index] = (group, message)
                continue
            if message.get("type") == previous.get("type") == "run.events" and message.get(
                "run_id"
            ) == previous.get("run_id"):
                out[index] = (
                    group,
                    {**previous, "events": [*previous["events"], *message["events"]]},
                )
                continue
        last[group] = len(out)
        out.append((group, message))
    return out


# The sender's batches are at least this far apart: a live page follows a busy run 20 times a
# second, and a message after a quiet moment is not held back at all.
_BATCH_SECONDS = 0.05


type _Timer = Callable[[], None]


class _Sender:
    """This process's sending thread for a network channel layer (started at its first
    message, again in a forked child)."""

    def __init__(self) -> None:
        self._queue: queue.Queue[tuple[str, dict[str, Any], _Timer]] = queue.Queue()
        self._lock = threading.Lock()
        self._thread: threading.Thread | None = None
        self._pid = 0

    def put(self, group: str, message: dict[str, Any], sent: _Timer) -> None:
        with self._lock:
            if self._thread is None or self._pid != os.getpid() or not self._thread.is_alive():
                self._queue = queue.Queue()  # a forked child's copy may hold the parent's
                self._pid = os.getpid()
                self._thread = threading.Thread(
                    target=self._run, args=(self._queue,), name="broadcast", daemon=True
                )
                self._thread.start()
            self._queue.put((group, message, sent))

    @staticmethod
    def _run(pending: queue.Queue[tuple[str, dict[str, Any], _Timer]]) -> None:
        loop = asyncio.new_event_loop()
        last_sent = -_BATCH_SECONDS
        try:
            cache.get(_WARM_GROUP)  # this thread's own cache connection, opened now
        except Exception:  # Redis down at start: the first real use says so
            logger.warning("could not reach the cache from the broadcast thread", exc_info=True)
        while True:
            batch = [pending.get()]
            # A running workflow commits every millisecond or so: what it queues until the
            # batch is due goes out together, its supersteps' events as one message. A reply's
            # text is framed by its worker already (agent_replies.STREAM_SECONDS): it goes at
            # once, with whatever else is queued.
            due = last_sent + _BATCH_SECONDS
            while batch[-1][1].get("type") != "run.reply" and (wait := due - time.monotonic()) > 0:
                try:
                    batch.append(pending.get(timeout=wait))
                except queue.Empty:
                    break
            while True:
                try:
                    batch.append(pending.get_nowait())
                except queue.Empty:
                    break
            last_sent = time.monotonic()
            try:
                coalesced = coalesce([(g, m) for g, m, _ in batch])
                _streaming.keep([m for _, m in coalesced if m.get("type") == "run.reply"])
                loop.run_until_complete(_deliver(coalesced))
                for *_, sent in batch:
                    sent()
            finally:
                for _ in batch:
                    pending.task_done()

    def warm(self) -> None:
        """Start the thread and open its connection now, rather than at the first message:
        a worker's first streamed words would otherwise wait for the import and the connect."""
        self.put(_WARM_GROUP, {"type": "superstep.warm"}, _uncounted)

    def flush(self, timeout: float = 2.0) -> bool:
        """Wait until what was queued is sent (at exit; tests). True when it was."""
        with self._lock:
            pending = self._queue
        with pending.all_tasks_done:
            return pending.all_tasks_done.wait_for(lambda: not pending.unfinished_tasks, timeout)


async def _deliver(batch: list[tuple[str, dict[str, Any]]]) -> None:
    layer = get_channel_layer()
    assert layer is not None
    for group, message in batch:
        try:
            await layer.group_send(group, message)
        except Exception:  # a broker hiccup: clients catch up from RunEvent on reconnect
            logger.exception("broadcast to %s failed; clients catch up on reconnect", group)


def _uncounted(done: object = None) -> None:
    """The warm-up's timer: it is no broadcast, and the broadcast metrics leave it out."""


# A group nobody joins: a message to it opens the layer's connection and is dropped.
_WARM_GROUP = "superstep.warm"
_sender = _Sender()


def warm_up(**_: Any) -> None:
    """In a new worker process (Celery's ``worker_process_init``): start the sending thread,
    which connects the cache and the channel layer, before the first run needs them."""
    if settings.SUPERSTEP_EMBEDDED or isinstance(get_channel_layer(), InMemoryChannelLayer):
        return
    _sender.warm()


atexit.register(_sender.flush)


def broadcast_run_events(run_id: Any, events: list[dict[str, Any]]) -> None:
    _send(run_group(run_id), {"type": "run.events", "run_id": str(run_id), "events": events})


def broadcast_run_changed(run_id: Any) -> None:
    _send(RUNS_GROUP, {"type": "runs.changed", "run_id": str(run_id)})
    _send(run_group(run_id), {"type": "run.changed", "run_id": str(run_id)})


def broadcast_run_alerts_changed(run_id: Any) -> None:
    """An alert incident about the run opened, was delivered or resolved: its page's alerts
    card is drawn again."""
    _send(run_group(run_id), {"type": "run.alerts", "run_id": str(run_id)})


def broadcast_runs_progress(run_id: Any) -> None:
    """The run moved on without changing status (a superstep committed): the runs list's rows
    (superstep, duration) change; its consumer reloads a page at most once a second."""
    _send(RUNS_GROUP, {"type": "runs.changed", "run_id": str(run_id)})


# A reply being streamed is kept this long after its last chunk, at most: a worker that died
# mid-reply leaves no reply "being written" behind for long.
REPLY_KEEP_SECONDS = 300


def _replies_key(run_id: Any) -> str:
    return f"superstep:replies:{run_id}"


_REPLY_FIELDS = ("executor_id", "reply_id", "text", "done")


def broadcast_reply(
    run_id: Any, *, executor_id: str, reply_id: str, text: str, done: bool = False
) -> None:
    """An agent's reply so far, to the run's pages; kept in the cache while it is written, for
    pages that open or reconnect mid-reply (``replies_so_far``), and let go of once ``done``
    (the conversation shows it from then on). Sent while the superstep runs, outside any
    transaction: nothing of it is in the database until the superstep commits."""
    reply = {"executor_id": executor_id, "reply_id": reply_id, "text": text, "done": done}
    _send(run_group(run_id), {"type": "run.reply", "run_id": str(run_id), **reply})


class _Streaming:
    """The replies this process's runs are streaming, by run, and their entries in the cache.

    Only the process executing a run streams its replies, so it writes the run's entry from
    what it holds, without reading it back first. A reply whose end never came (its run
    failed mid-reply) is let go of once it has been quiet for ``REPLY_KEEP_SECONDS``, as the
    cache lets go of the entry."""

    def __init__(self) -> None:
        self._lock = threading.Lock()  # embedded mode's runs tell from threads of their own
        self._runs: dict[str, dict[str, tuple[float, dict[str, Any]]]] = {}

    def keep(self, messages: list[dict[str, Any]]) -> None:
        """Hold these ``run.reply`` messages' replies and write the entries they change."""
        now = time.monotonic()
        with self._lock:
            changed: set[str] = set()
            for message in messages:
                held = self._runs.setdefault(message["run_id"], {})
                reply = {key: message[key] for key in _REPLY_FIELDS}
                if reply["done"]:
                    held.pop(reply["reply_id"], None)
                else:
                    held[reply["reply_id"]] = (now, reply)
                changed.add(message["run_id"])
            for run_id, held in list(self._runs.items()):
                for reply_id, (told, _) in list(held.items()):
                    if now - told > REPLY_KEEP_SECONDS:
                        del held[reply_id]
                        changed.add(run_id)
                if not held:
                    del self._runs[run_id]
            for run_id in changed:
                self._write(run_id, self._runs.get(run_id, {}))

    @staticmethod
    def _write(run_id: str, held: dict[str, tuple[float, dict[str, Any]]]) -> None:
        key = _replies_key(run_id)
        try:
            if held:
                replies = {reply_id: reply for reply_id, (_, reply) in held.items()}
                cache.set(key, replies, REPLY_KEEP_SECONDS)
            else:
                cache.delete(key)
        except Exception:  # a broker hiccup: a page opening now misses only the text so far
            logger.exception("keeping the replies of run %s failed", run_id)


_streaming = _Streaming()


def replies_so_far(run_id: Any) -> list[dict[str, Any]]:
    """The run's streamed replies the cache still holds, in the order they began."""
    return list((cache.get(_replies_key(run_id)) or {}).values())


def broadcast_approvals_changed() -> None:
    _send(APPROVALS_GROUP, {"type": "approvals.changed"})
