"""The worker is shutting down: a flag its main process raises and every run it executes reads.

On SIGTERM (a warm shutdown) Celery stops taking tasks and waits for the running ones. A run
can last for hours, longer than any orchestrator waits before SIGKILL, and a killed worker's
run waits out its lease (``SUPERSTEP_LEASE_SECONDS``) before another worker may take it. So a
run that sees the flag stops right after its next superstep commit and hands its lease back
(``dashboard.execution.worker``); another worker resumes it from that checkpoint at once.

With the prefork pool the signal reaches the main process only (billiard's children keep
the default SIGTERM, which kills them: Celery's own ``terminate`` relies on it), while the run
executes in a child. The flag is therefore one byte of memory shared with every child: an
anonymous ``MAP_SHARED`` mapping made when this module is imported, by
``dashboard.config.celery`` in the main process before it forks. ``request`` is connected to
Celery's ``worker_shutting_down``, sent from the main process's signal handler (setting a byte
is safe there). With the solo pool the main process executes the run itself and reads its own
flag.
"""

from __future__ import annotations

import mmap
from typing import Any

__all__ = ["request", "requested", "reset"]

_flag = mmap.mmap(-1, 1)  # anonymous and shared (MAP_SHARED is mmap's default on POSIX)


def request(**signal: Any) -> None:
    """Raise the flag (a receiver of Celery's ``worker_shutting_down``)."""
    _flag[0] = 1


def requested() -> bool:
    """Whether this worker (main process or any of its children) is shutting down."""
    return _flag[0] == 1


def reset() -> None:
    """Lower the flag (tests)."""
    _flag[0] = 0
