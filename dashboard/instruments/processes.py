"""Metrics shared by several processes: Daphne or uvicorn workers, Celery workers and their
children, each recording into files of the directory ``PROMETHEUS_MULTIPROC_DIR`` names
(prometheus_client's multiprocess mode), summed by whichever process serves ``/metrics``.

The variable must be set in the environment before a process starts, the same directory for
every process of one host, emptied before they start (counters in files of processes gone
by still count until then, so totals never go down while the processes run). Any web process
of the host serves the sum; a host with workers only serves it with ``manage.py
serve_metrics``. Unset, each process keeps its own values: the embedded single-process default.

A process that ends takes its "live" gauges (``superstep_runs_executing``) with it through
``mark_process_dead``: at a normal exit (``atexit``), when a Celery child exits (the
``worker_process_shutdown`` signal, wired in ``dashboard.config.celery``, since billiard's
children leave with ``os._exit`` and skip ``atexit``), and at each scrape for processes that
were killed (``reap_dead_processes``), which assumes every writer shares the scraping
process's PID namespace (``SUPERSTEP_METRICS_REAP_DEAD_PROCESSES`` turns it off otherwise).
"""

from __future__ import annotations

import atexit
import glob
import os
from pathlib import Path
from typing import Any

from prometheus_client import multiprocess

__all__ = [
    "forget_at_exit",
    "forget_celery_child",
    "forget_process",
    "multiprocess_dir",
    "reap_dead_processes",
]

VARIABLE = "PROMETHEUS_MULTIPROC_DIR"


def multiprocess_dir() -> str | None:
    """The shared directory, or None in single-process mode.

    Raises:
        RuntimeError: the variable names something that is not a directory; prometheus_client
            would otherwise fail at the first value recorded, inside a worker's commit.
    """
    path = os.environ.get(VARIABLE, "")
    if not path:
        return None
    if not Path(path).is_dir():
        raise RuntimeError(
            f"{VARIABLE}={path!r} is not a directory: create it (empty) before starting the "
            "processes, or unset it for single-process metrics"
        )
    return path


def forget_process(pid: int | None = None) -> None:
    """Drop the live gauges of ``pid`` (this process by default) from the shared directory."""
    path = multiprocess_dir()
    if path is not None:
        _mark_dead(os.getpid() if pid is None else pid, path)


def forget_celery_child(pid: int | None = None, **signal: Any) -> None:
    """Receiver of Celery's ``worker_process_shutdown``, sent in the child that exits."""
    forget_process(pid)


def forget_at_exit() -> None:
    # The pid is read at exit, not now: a forked child inherits this hook.
    atexit.register(forget_process)


def reap_dead_processes(path: str) -> list[int]:
    """Drop the live gauges of processes that no longer exist (killed, so no hook ran);
    returns their pids."""
    gone = []
    for pid in sorted(_pids_with_live_gauges(path)):
        if pid != os.getpid() and not _alive(pid):
            _mark_dead(pid, path)
            gone.append(pid)
    return gone


def _mark_dead(pid: int, path: str) -> None:
    # prometheus_client leaves its multiprocess module unannotated.
    multiprocess.mark_process_dead(pid, path)  # type: ignore[no-untyped-call]


def _pids_with_live_gauges(path: str) -> set[int]:
    pids = set()
    for name in glob.glob(os.path.join(path, "gauge_live*_*.db")):
        tail = Path(name).stem.rpartition("_")[2]
        if tail.isdigit():
            pids.add(int(tail))
    return pids


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # exists, run by another user
        return True
    return True
