"""The worker's heartbeat file: touched while the worker's event loop turns, removed when it stops.

An orchestrator's probe of a Celery worker: ``SUPERSTEP_WORKER_HEARTBEAT_FILE`` names a file
the worker's main process touches every ``EVERY`` seconds from its own event loop (a
bootstep on Celery's timer, the liveness probe Celery's documentation describes), so a worker
whose loop is stuck stops touching it, and which it removes on shutdown. The name may hold
Celery's node name fields, as ``--logfile`` does (``%n`` the worker's name, ``%h`` its full
node name), so several workers of one host keep a file each. A probe checks its age, e.g.
``test $(( $(date +%s) - $(stat -c %Y "$FILE") )) -lt 30``. With ``--pool solo`` the loop
waits while a run executes, so the file ages then: probe prefork workers (the default).
``celery -A dashboard inspect ping -d celery@$HOSTNAME`` asks the worker itself, through the
broker.
"""

from __future__ import annotations

import contextlib
import logging
from pathlib import Path
from typing import Any

from celery import bootsteps
from celery.utils.nodenames import node_format

__all__ = ["EVERY", "Heartbeat"]

logger = logging.getLogger(__name__)

EVERY = 5.0  # seconds


class Heartbeat(bootsteps.StartStopStep):
    """Touch the heartbeat file on the worker's timer (added to ``app.steps["worker"]``)."""

    requires = ("celery.worker.components:Timer",)

    def __init__(self, worker: Any, **options: Any) -> None:
        from django.conf import settings

        super().__init__(worker, **options)
        name = settings.SUPERSTEP_WORKER_HEARTBEAT_FILE
        self.path = Path(node_format(name, worker.hostname)) if name else None
        self.timer_entry: Any = None

    def start(self, worker: Any) -> None:
        if self.path is None:
            return
        self.beat()
        self.timer_entry = worker.timer.call_repeatedly(EVERY, self.beat)
        logger.info("touching the heartbeat file every %.0f s", EVERY)

    def beat(self) -> None:
        assert self.path is not None
        try:
            self.path.touch()
        except OSError as exc:  # a full or read-only disk: the probe will say so
            logger.warning("could not touch the heartbeat file: %s", exc)

    def stop(self, worker: Any) -> None:
        if self.timer_entry is not None:
            self.timer_entry.cancel()
            self.timer_entry = None
        if self.path is not None:
            with contextlib.suppress(FileNotFoundError):
                self.path.unlink()
