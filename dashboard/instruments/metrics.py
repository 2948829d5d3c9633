"""The instruments Superstep records into, and one small function per thing that happened.

Callers say what happened (``checkpoint_committed``, ``approval_decided``...) and never touch
a metric object, so names, labels and buckets are decided here once. Call them after the
transaction that made the fact true has committed (``transaction.on_commit``): a rolled-back
superstep must not count.

Values live in this process (``INSTRUMENTS``, read by the ``/metrics`` page) unless
``PROMETHEUS_MULTIPROC_DIR`` was set before the process started: prometheus_client then keeps
each value in a file of that directory per process, and the scrape sums them (see
``processes``). This module imports no Django, so any process (a Celery child, a test's
subprocess) can record.

Counts of runs by status are not here: they are read from the database at scrape time
(``dashboard.observability.collector``), since per-process counters could not know about runs
another process or a restart changed.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import time

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram

from dashboard.instruments import processes

__all__ = [
    "INSTRUMENTS",
    "BroadcastTimer",
    "Lap",
    "approval_decided",
    "attempt_ended",
    "attempt_started",
    "broadcast_sent",
    "checkpoint_committed",
    "lease_taken_over",
    "model_called",
    "pruned",
]

# A misnamed directory stops the process when it starts, not at its first value recorded.
if processes.multiprocess_dir() is not None:
    processes.forget_at_exit()

# Read by the scrape in single-process mode only: in multi-process mode the values are read
# from the files instead, and registering them again would export them twice.
INSTRUMENTS = CollectorRegistry(auto_describe=True)

_SUPERSTEP_SECONDS = Histogram(
    "superstep_superstep_duration_seconds",
    "Wall time of a superstep, from the previous checkpoint to its own checkpoint committed.",
    ["workflow"],
    buckets=(0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 900, 3600),
    registry=INSTRUMENTS,
)
_CHECKPOINT_BYTES = Histogram(
    "superstep_checkpoint_size_bytes",
    "Size of each committed checkpoint, as if written in one piece.",
    ["workflow"],
    # Powers of four from 256 B to 64 MiB.
    buckets=tuple(float(256 * 4**i) for i in range(10)),
    registry=INSTRUMENTS,
)
_APPROVAL_WAIT = Histogram(
    "superstep_approval_wait_seconds",
    "Time from an approval request being raised to its decision.",
    ["workflow", "decision"],
    buckets=(10, 30, 60, 300, 900, 1800, 3600, 7200, 14400, 28800, 86400, 172800, 604800),
    registry=INSTRUMENTS,
)
_BROADCAST_DELAY = Histogram(
    "superstep_broadcast_delay_seconds",
    "Time from the commit of a change to its websocket broadcast handed to the channel layer.",
    buckets=(0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5),
    registry=INSTRUMENTS,
)
_TAKEOVERS = Counter(
    "superstep_lease_takeovers",
    "Runs whose worker's lease expired and that were taken back, by a new worker or the sweeper.",
    ["workflow", "by"],
    registry=INSTRUMENTS,
)
_PRUNED_CHECKPOINTS = Counter(
    "superstep_pruned_checkpoints",
    "Checkpoints deleted by retention.",
    ["policy"],
    registry=INSTRUMENTS,
)
_PRUNED_RUNS = Counter(
    "superstep_pruned_runs", "Runs deleted whole by retention.", ["policy"], registry=INSTRUMENTS
)
_PRUNED_BYTES = Counter(
    "superstep_pruned_bytes",
    "Bytes of the checkpoints retention deleted.",
    ["policy"],
    registry=INSTRUMENTS,
)
_MODEL_TOKENS = Counter(
    "superstep_model_tokens",
    "Tokens the runs' agents sent to (input) and got from (output) their models.",
    ["workflow", "model", "direction"],
    registry=INSTRUMENTS,
)
_MODEL_COST = Counter(
    "superstep_model_cost",
    "What the runs' model calls cost, in the price table's currency (priced models only).",
    ["workflow", "model"],
    registry=INSTRUMENTS,
)
# livesum: a process that died stops counting once its file is removed (processes.py), so
# the sum is what live workers execute; compare with superstep_runs_leased from the database.
_EXECUTING = Gauge(
    "superstep_runs_executing",
    "Run attempts the exporting processes are executing now.",
    ["workflow"],
    multiprocess_mode="livesum",
    registry=INSTRUMENTS,
)


def checkpoint_committed(
    workflow: str, size_bytes: int, seconds: float, *, kind: str = "superstep"
) -> None:
    """A checkpoint was committed; ``seconds`` is its superstep's duration, counted only for
    a checkpoint written after a superstep (not the entry, responses, fork... ones)."""
    _CHECKPOINT_BYTES.labels(workflow).observe(size_bytes)
    if kind == "superstep":
        _SUPERSTEP_SECONDS.labels(workflow).observe(seconds)


class Lap:
    """Seconds since it was made or last called: a worker's storage keeps one, so each
    checkpoint committed measures the superstep since the previous one."""

    __slots__ = ("_last",)

    def __init__(self) -> None:
        self._last = time.perf_counter()

    def __call__(self) -> float:
        moment = time.perf_counter()
        elapsed, self._last = moment - self._last, moment
        return elapsed


def model_called(
    workflow: str, model: str, *, input_tokens: int, output_tokens: int, cost: float | None
) -> None:
    """An agent's reply was committed with its superstep."""
    _MODEL_TOKENS.labels(workflow, model, "input").inc(input_tokens)
    _MODEL_TOKENS.labels(workflow, model, "output").inc(output_tokens)
    if cost is not None:
        _MODEL_COST.labels(workflow, model).inc(cost)


def lease_taken_over(workflow: str, *, by: str) -> None:
    """An expired lease was taken back: ``by`` is "worker" (a redelivered task) or "sweeper"."""
    _TAKEOVERS.labels(workflow, by).inc()


def approval_decided(workflow: str, wait_seconds: float, *, decision: str) -> None:
    """An approval request was decided (``decision`` "approved" or "rejected")."""
    _APPROVAL_WAIT.labels(workflow, decision).observe(max(0.0, wait_seconds))


def pruned(policy: str, *, checkpoints: int, runs: int = 0, size_bytes: int = 0) -> None:
    """Retention committed the deletion of ``checkpoints`` (and ``runs`` whole)."""
    _PRUNED_CHECKPOINTS.labels(policy).inc(checkpoints)
    _PRUNED_RUNS.labels(policy).inc(runs)
    _PRUNED_BYTES.labels(policy).inc(size_bytes)


def broadcast_sent(delay_seconds: float) -> None:
    _BROADCAST_DELAY.observe(max(0.0, delay_seconds))


class BroadcastTimer:
    """Started when a broadcast begins (in an ``on_commit`` callback, so at the commit);
    observes the delay when called: directly after a synchronous send, or as the done
    callback of the future or task an asynchronous send returns (a failed or cancelled
    send is not counted)."""

    __slots__ = ("_began",)

    def __init__(self) -> None:
        self._began = time.perf_counter()

    def __call__(self, done: object = None) -> None:
        if isinstance(done, (asyncio.Future, concurrent.futures.Future)) and (
            done.cancelled() or done.exception() is not None
        ):
            return
        broadcast_sent(time.perf_counter() - self._began)


def attempt_started(workflow: str) -> None:
    """This process began executing an attempt of a ``workflow`` run."""
    _EXECUTING.labels(workflow).inc()


def attempt_ended(workflow: str) -> None:
    _EXECUTING.labels(workflow).dec()
