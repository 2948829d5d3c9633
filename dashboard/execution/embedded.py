"""Background work inside the server process: one code path for both modes.

``enqueue(task, *args)`` is how services hand work to Celery. In production it publishes the
task to Redis like ``apply_async``; in embedded mode (``REDIS_URL`` unset, so there are no
workers) it runs *the same Celery task* through ``task.apply()`` on a few daemon threads of
this process. The arguments make the same JSON round trip they would make through the broker,
so something that could not be published fails here too.

``register_periodic(name, every=..., func=...)`` declares a job (the lease sweeper, retention)
that ``start_background_services()`` runs on its own daemon thread every ``every`` seconds.
dashboard/config/asgi.py calls it when a server process starts (by default in embedded mode
only: production runs the same jobs from Celery beat); Django's ``AppConfig.ready`` does not,
so ``migrate``, shells and tests never start threads. Each run goes through
``periodic.run_once_per_period``, as beat's tasks do, so every period of a job runs once across
all server processes and beat.

Daemon threads because every run is durable: a process that exits mid-task loses nothing
that the lease sweeper will not pick up again, and Ctrl-C should not wait for a workflow.
"""

from __future__ import annotations

import logging
import queue
import threading
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from typing import Any

from celery import Task
from django.conf import settings
from django.db import close_old_connections, connections, transaction
from django.utils.module_loading import autodiscover_modules
from kombu.utils import json as kombu_json

from dashboard.execution import periodic

__all__ = [
    "PeriodicJob",
    "enqueue",
    "enqueue_on_commit",
    "periodic_jobs",
    "register_periodic",
    "start_background_services",
    "stop_background_services",
    "unregister_periodic",
    "wait_for_background_tasks",
]

logger = logging.getLogger(__name__)


# ------------------------------------------------------------------------------ enqueue


def enqueue(task: Task[Any, Any], *args: Any) -> None:
    """Run ``task(*args)`` in the background: on a Celery worker, or here in embedded mode.

    Call it only after the data the task reads has committed; prefer ``enqueue_on_commit``.
    """
    if not settings.SUPERSTEP_EMBEDDED:
        task.apply_async(args=args)
        return
    _task_pool().submit(partial(_run_task, task, _through_the_broker(args)))


def enqueue_on_commit(task: Task[Any, Any], *args: Any, using: str | None = None) -> None:
    """Enqueue ``task(*args)`` once the current transaction commits (at once outside one).

    A worker must never see a run before the transaction that queued it is visible. The
    callback is robust: if the broker is down the error is logged, the request that queued
    the run still succeeds, and the lease sweeper enqueues the run again later.

    Arguments a broker could not carry raise ``TypeError`` here, inside the transaction, so
    it rolls back instead of committing a run nobody will ever be told about.
    """
    _through_the_broker(args)
    transaction.on_commit(partial(enqueue, task, *args), using=using, robust=True)


def wait_for_background_tasks(timeout: float) -> bool:
    """Block until every task enqueued in embedded mode has finished (tests use this).

    Returns False if some were still running after ``timeout`` seconds.
    """
    with _pool_lock:
        pool = _pool
    return True if pool is None else pool.join(timeout)


def _through_the_broker(args: tuple[Any, ...]) -> list[Any]:
    """The arguments as a worker would receive them: Celery's JSON, there and back."""
    encoded: str = kombu_json.dumps(list(args))
    decoded: list[Any] = kombu_json.loads(encoded)
    return decoded


def _run_task(task: Task[Any, Any], args: list[Any]) -> None:
    # Like Celery's Django fixup in a worker: never reuse a stale connection, and give the
    # connection back when done so this idle thread holds no SQLite lock or Postgres slot.
    close_old_connections()
    try:
        # apply() runs the real task machinery (request context, retries, failure logging).
        result = task.apply(args=tuple(args), throw=False)
        if result.failed():
            logger.error("background task %s%r failed:\n%s", task.name, args, result.traceback)
    except Exception:
        logger.exception("background task %s%r crashed", task.name, args)
    finally:
        connections.close_all()


class _TaskPool:
    """A FIFO drained by a few daemon threads; ``join`` waits until it is empty and idle."""

    def __init__(self, size: int) -> None:
        self._jobs: queue.SimpleQueue[Callable[[], None]] = queue.SimpleQueue()
        self._unfinished = 0
        self._idle = threading.Condition()
        for index in range(size):
            name = f"superstep-task-{index}"
            threading.Thread(target=self._work, name=name, daemon=True).start()

    def submit(self, job: Callable[[], None]) -> None:
        with self._idle:
            self._unfinished += 1
        self._jobs.put(job)

    def join(self, timeout: float) -> bool:
        with self._idle:
            return self._idle.wait_for(lambda: self._unfinished == 0, timeout)

    def _work(self) -> None:
        while True:
            job = self._jobs.get()
            try:
                job()
            finally:
                with self._idle:
                    self._unfinished -= 1
                    self._idle.notify_all()


_pool: _TaskPool | None = None
_pool_lock = threading.Lock()


def _task_pool() -> _TaskPool:
    global _pool
    with _pool_lock:
        if _pool is None:
            _pool = _TaskPool(max(1, settings.SUPERSTEP_EMBEDDED_WORKERS))
        return _pool


# ------------------------------------------------------------------------------ periodic jobs


@dataclass(frozen=True, slots=True)
class PeriodicJob:
    """``func()`` runs every ``every`` seconds, first right after the services start, and at
    most once per ``every``-second period across processes (``periodic.run_once_per_period``)."""

    name: str
    every: float
    func: Callable[[], object]


_jobs: dict[str, PeriodicJob] = {}
_threads: dict[str, threading.Thread] = {}
_stop: threading.Event | None = None
_jobs_lock = threading.Lock()


def register_periodic(name: str, *, every: float, func: Callable[[], object]) -> None:
    """Declare a periodic job; register at import time of a task module (``tasks.py``).

    Registering the same name again replaces the job (a reloaded module); registering it for
    a different function is a mistake and raises ``ValueError``.
    """
    if every <= 0:
        raise ValueError(f"periodic job {name!r}: every must be positive, got {every!r}")
    with _jobs_lock:
        previous = _jobs.get(name)
        if previous is not None and _qualname(previous.func) != _qualname(func):
            raise ValueError(
                f"periodic job {name!r} is already registered for {_qualname(previous.func)}"
            )
        _jobs[name] = PeriodicJob(name=name, every=every, func=func)
        if _stop is not None and name not in _threads:
            _start_job_thread(name, _stop)


def unregister_periodic(name: str) -> None:
    """Forget a job (tests); a running thread for it ends after its current run."""
    with _jobs_lock:
        _jobs.pop(name, None)


def periodic_jobs() -> list[PeriodicJob]:
    """The registered jobs, by name."""
    with _jobs_lock:
        return sorted(_jobs.values(), key=lambda job: job.name)


def start_background_services() -> None:
    """Start every periodic job on its own daemon thread; calling it again does nothing.

    The dashboard's task modules register their jobs when ``DashboardConfig.ready()`` imports
    them; any other installed app's ``tasks`` module is imported here first (as a Celery worker
    would), so the jobs it registers exist too.
    """
    autodiscover_modules("tasks")
    global _stop
    with _jobs_lock:
        if _stop is not None:
            return
        _stop = threading.Event()
        for name in _jobs:
            _start_job_thread(name, _stop)
    logger.info("background services started: %s", ", ".join(sorted(_jobs)) or "no jobs")


def stop_background_services(timeout: float = 5.0) -> None:
    """Stop the periodic threads (after their current run) so tests can start them again."""
    global _stop
    with _jobs_lock:
        stop, threads = _stop, list(_threads.values())
        _stop = None
        _threads.clear()
    if stop is not None:
        stop.set()
    for thread in threads:
        thread.join(timeout)


def _start_job_thread(name: str, stop: threading.Event) -> None:
    thread = threading.Thread(
        target=_job_loop, args=(name, stop), name=f"superstep-periodic-{name}", daemon=True
    )
    _threads[name] = thread
    thread.start()


def _job_loop(name: str, stop: threading.Event) -> None:
    while not stop.is_set():
        with _jobs_lock:
            # Looked up each time: a re-registration takes effect, an unregistration ends it.
            job = _jobs.get(name)
            if job is None:
                _threads.pop(name, None)
                return
        _run_job(job)
        if stop.wait(job.every):
            return


def _run_job(job: PeriodicJob) -> None:
    close_old_connections()
    try:
        periodic.run_once_per_period(job.name, job.every, job.func)
    except Exception:
        # One failed sweep must not end the loop: the next one may well succeed.
        logger.exception("periodic job %r failed", job.name)
    finally:
        connections.close_all()


def _qualname(func: Callable[..., object]) -> str:
    return f"{getattr(func, '__module__', '?')}.{getattr(func, '__qualname__', repr(func))}"
