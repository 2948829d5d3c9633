"""Broadcasting committed changes to websocket groups (callers use ``transaction.on_commit``).

Groups: ``run.<uuid>`` (one run's events), ``runs`` (the run list) and ``approvals`` (the
inbox). Messages carry ids and sequence numbers; the consumers re-read and render, so a
dropped message costs nothing a reconnect cannot repair from ``RunEvent``.

In embedded mode the channel layer is in-memory and lives on the server's event loop, while
runs execute on worker threads with loops of their own; messages are handed to the server's
loop rather than touched from another thread.
"""

from __future__ import annotations

import asyncio
import logging
import threading
from typing import Any

from asgiref.sync import async_to_sync
from channels.layers import get_channel_layer
from django.conf import settings

from dashboard.models import RunEvent

__all__ = [
    "APPROVALS_GROUP",
    "RUNS_GROUP",
    "broadcast_approvals_changed",
    "broadcast_run_changed",
    "broadcast_run_events",
    "broadcast_runs_progress",
    "event_payload",
    "remember_server_loop",
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
    if layer is None:
        return
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
            loop.create_task(layer.group_send(group, message))
        else:
            asyncio.run_coroutine_threadsafe(layer.group_send(group, message), loop)
        return
    try:
        async_to_sync(layer.group_send)(group, message)
    except Exception:  # a broker hiccup must not fail the commit that already happened
        logger.exception("broadcast to %s failed; clients catch up on reconnect", group)


def broadcast_run_events(run_id: Any, events: list[dict[str, Any]]) -> None:
    _send(run_group(run_id), {"type": "run.events", "run_id": str(run_id), "events": events})


def broadcast_run_changed(run_id: Any) -> None:
    _send(RUNS_GROUP, {"type": "runs.changed", "run_id": str(run_id)})
    _send(run_group(run_id), {"type": "run.changed", "run_id": str(run_id)})


def broadcast_runs_progress(run_id: Any) -> None:
    """The run moved on without changing status (a superstep committed): the runs list's rows
    (superstep, duration) change; its consumer reloads a page at most once a second."""
    _send(RUNS_GROUP, {"type": "runs.changed", "run_id": str(run_id)})


def broadcast_approvals_changed() -> None:
    _send(APPROVALS_GROUP, {"type": "approvals.changed"})
