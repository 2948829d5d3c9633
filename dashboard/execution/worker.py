"""One attempt at a run, as a worker executes it: lease → engine → commits → finish.

The engine does the supersteps; ``_RunStorage`` turns each checkpoint it saves into one
transaction (checkpoint, events since the last one, approvals, run progress) through
``services.checkpoint_commit``, which refuses to write once the lease is lost: one statement
on PostgreSQL, sent on the storage's one write path.

A database that goes away under the worker (a restart, a failover, a cut connection) is not the
workflow's failure: when a commit or the finish loses its connection, the attempt ends as a
crashed worker's would, without a word to the run, which resumes from its latest committed
checkpoint once its lease is free (the sweeper, or the task's retry). Marking it failed on a
connection that came back a moment later would fail a healthy run.

A worker that is shutting down (``dashboard.execution.shutdown``) stops each run right after
its next commit and releases the lease, so another worker resumes the run from that checkpoint
at once instead of after the lease lapses.
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import time
import traceback
from collections.abc import Awaitable, Callable
from typing import Any

from asgiref.sync import async_to_sync, sync_to_async
from django.db import InterfaceError, OperationalError

from dashboard import catalog, selectors, services
from dashboard.checkpoints.storage import DjangoCheckpointStorage
from dashboard.core import logs
from dashboard.execution import shutdown
from dashboard.execution.agent_replies import ModelCalls, Pending, ReplyJoin, drain
from dashboard.instruments import metrics
from dashboard.models import RunStatus
from workflows import WorkflowCheckpoint, WorkflowEvent, WorkflowRunState, observing
from workflows.storage import SplitCheckpoint, encode
from workflows.tracing import TRACE_KEY, trace_id_of

__all__ = ["execute"]

logger = logging.getLogger(__name__)

# What psycopg raises, through Django, when the connection is gone or cannot be made.
_CONNECTION_LOST = (OperationalError, InterfaceError)


class _DatabaseLost(Exception):
    """One of this worker's own writes lost the database: the attempt ends unfinished."""


class _ShuttingDown(BaseException):
    """Raised by the storage right after a commit once the worker is shutting down.

    A BaseException, as ``asyncio.CancelledError`` is: neither engine reports it as the
    workflow's failure, and a handler's or a functional workflow's ``except Exception`` does
    not swallow it, so the attempt ends at that commit, its checkpoint the one to resume."""


def _ours[**P, R](call: Callable[P, R]) -> Callable[P, Awaitable[R]]:
    """``call`` in the worker's thread, with a lost connection told apart from the workflow's
    errors (the engine passes a storage error through to the driver unchanged)."""
    threaded = sync_to_async(call)

    async def guarded(*args: P.args, **kwargs: P.kwargs) -> R:
        try:
            return await threaded(*args, **kwargs)
        except _CONNECTION_LOST as exc:
            raise _DatabaseLost(f"{call.__name__}: {exc}") from exc

    return guarded


def execute(run_id: str) -> None:
    """Run the engine for ``run_id`` if this worker can take its lease; else do nothing."""
    # Every line logged meanwhile names the run (and, once known, its workflow, superstep and
    # trace): the JSON log format's fields.
    fields = logs.bind(run_id=str(run_id))
    try:
        lease = services.lease_acquire(run_id, services.worker_identity())
        if lease is None:
            return
        # Not asyncio.run: async_to_sync runs the engine's thread-sensitive database calls back
        # on this thread, whose connections Celery (and the embedded pool) check and close
        # around each task. Under asyncio.run they went to asgiref's shared executor thread,
        # whose connection nobody checks: once the database dropped it, every later run failed.
        try:
            async_to_sync(_drive)(lease)
        except (_DatabaseLost, *_CONNECTION_LOST):
            _hand_back(lease)
    finally:
        logs.unbind(fields)


def _hand_back(lease: services.Lease) -> None:
    """Give the run back to the queue once the database answers again, so that an outage is
    not counted as this worker's death. Tried until the lease would have lapsed anyway; past
    that, the sweeper takes the run back as it would a crashed worker's."""
    from django.conf import settings
    from django.db import close_old_connections

    deadline = time.monotonic() + settings.SUPERSTEP_LEASE_SECONDS
    pause = 0.1
    while True:
        close_old_connections()  # the connection the outage broke is not used again
        try:
            if services.lease_release(lease, "database lost"):
                logger.info("run %s: handed back to the queue", lease.run_id)
            return
        except _CONNECTION_LOST:
            if time.monotonic() + pause > deadline:
                logger.warning("run %s: the database is still away; the sweeper will", lease.run_id)
                return
            time.sleep(pause)
            pause = min(pause * 2, 2.0)


class _RunStorage(DjangoCheckpointStorage):
    """The storage the engine sees while this worker holds the run's lease: each save commits
    the run's progress with the checkpoint (``commit``), through the storage's one write path."""

    def __init__(self, lease: services.Lease, pending: Pending, workflow_name: str) -> None:
        super().__init__()
        self._lease = lease
        # The registered name, which the metrics use as the run gauges do (the engine's own
        # name may differ: every sequential orchestration is called "Sequential").
        self._workflow_name = workflow_name
        self._pending = pending
        self._events: list[dict[str, Any]] = []
        self._lap = metrics.Lap()  # a superstep lasts from the previous checkpoint to its own

    async def save(self, checkpoint: WorkflowCheckpoint) -> str:
        # Taken on the loop that appends them, before the write's thread runs.
        self._events = drain(self._pending, _event_dict)
        for event in self._events:
            # A reply is heard from the observer, which knows no superstep; the checkpoint it
            # is committed with says which one it belongs to (what a resume would run again).
            if event.get("type") == "model_call" and event.get("iteration") is None:
                event["iteration"] = checkpoint.iteration_count
        try:
            checkpoint_id = await super().save(checkpoint)
        except _CONNECTION_LOST as exc:
            raise _DatabaseLost(f"checkpoint_commit: {exc}") from exc
        if trace_id := trace_id_of(checkpoint.metadata.get(TRACE_KEY)):
            logs.bind(trace_id=trace_id)
        if shutdown.requested():
            raise _ShuttingDown(checkpoint_id)
        return checkpoint_id

    def commit(self, checkpoint: WorkflowCheckpoint, piece: SplitCheckpoint) -> None:
        services.checkpoint_commit(self._lease, checkpoint, piece, self._events)
        _count_model_calls(self._workflow_name, self._events)
        metrics.checkpoint_committed(
            self._workflow_name,
            piece.size_bytes,
            self._lap(),
            kind=str(checkpoint.metadata.get("kind", "superstep")),
        )


def _count_model_calls(workflow: str, events: list[dict[str, Any]]) -> None:
    """Tell the metrics about the model calls just committed."""
    for event in events:
        if event.get("type") == "model_call":
            cost = event["cost"]
            metrics.model_called(
                workflow,
                event["model"],
                input_tokens=event["input_tokens"],
                output_tokens=event["output_tokens"],
                cost=None if cost is None else float(cost),
            )


# The engine gives these events the messages themselves (MAF's payloads). The run's checkpoints
# already hold every message, so the event log keeps them lean instead of encoding each twice.
_LEAN_EVENTS = frozenset({"executor_invoked", "executor_completed"})
# Stamped with when they happened, for the run page's executor timeline
# (dashboard/web/run_page/gantt.py).
_TIMED_EVENTS = frozenset(
    {
        "superstep_started",
        "executor_invoked",
        "executor_completed",
        "executor_failed",
        "request_info",
    }
)


def _event_dict(event: WorkflowEvent) -> dict[str, Any]:
    if event.type in _LEAN_EVENTS and event.data is not None:
        event = dataclasses.replace(event, data=None)
    try:
        stored = event.to_dict()
    except Exception as exc:  # noqa: BLE001 - an output the codec cannot store: keep the event, say why
        stored = {"type": event.type, "executor_id": event.executor_id, "unstorable": str(exc)}
    if event.type in _TIMED_EVENTS:
        # When it happened: the stream is live, so now is within a scheduling slice of it. The
        # event's row is written at the superstep's commit, which is all its created_at says.
        stored["at"] = round(time.time(), 4)
    return stored


async def _keep_lease(lease: services.Lease, driver: asyncio.Task[Any], every: float) -> None:
    """Renew the lease while handlers run; a lost lease (takeover, cancel) stops the driver."""
    renew = sync_to_async(services.lease_renew)
    pause = every
    while True:
        await asyncio.sleep(pause)
        try:
            await renew(lease)
            pause = every
        except services.LeaseLost:
            driver.cancel()
            return
        except _CONNECTION_LOST:
            # Again soon rather than a whole period later: the database is often back within a
            # second, and a lease that lapses meanwhile is the sweeper's to take.
            logger.warning("run %s: could not renew the lease (database unreachable)", lease.run_id)
            pause = min(every, 0.25)


async def _step_down(lease: services.Lease) -> None:
    """The worker is shutting down and the run's latest superstep is committed: back to the
    queue, for another worker to resume now (a lost database is ``execute``'s to handle)."""
    if await _ours(services.lease_release)(lease, "worker shutting down"):
        logger.info("run %s: handed back to the queue (worker shutting down)", lease.run_id)
    else:
        logger.info("run %s was taken over or cancelled meanwhile", lease.run_id)


def _run_error(exc: BaseException) -> services.RunError:
    return {
        "type": type(exc).__name__,
        "message": str(exc) or type(exc).__name__,
        "traceback": "".join(traceback.format_exception(exc)),
    }


async def _drive(lease: services.Lease) -> None:
    from django.conf import settings

    pending: Pending = []
    finish = _ours(services.run_finish)
    try:
        if await sync_to_async(services.attempt_version)(lease) is None:
            return  # parked: its version is gone and the deployed one cannot carry it
        plan = await sync_to_async(services.execution_plan)(lease)
        logs.bind(workflow=plan.workflow_name)
        prices = await sync_to_async(selectors.price_table)()
        workflow = catalog.build(
            plan.workflow_name,
            checkpoint_storage=_RunStorage(lease, pending, plan.workflow_name),
            version=plan.version,
        )
    except catalog.UnknownWorkflowError as exc:
        # Removed by a deploy while the run was queued: fail it saying so, rather than leave
        # it running until the sweeper gives up on "lost workers".
        try:
            await finish(lease, outcome=RunStatus.FAILED, events=[], error=_run_error(exc))
        except services.LeaseLost:
            logger.info("run %s was taken over or cancelled meanwhile", lease.run_id)
        return
    driver = asyncio.current_task()
    assert driver is not None
    keeper = asyncio.create_task(
        _keep_lease(lease, driver, max(1.0, settings.SUPERSTEP_LEASE_SECONDS / 3))
    )
    stream = workflow.run(
        plan.message,
        checkpoint_id=plan.checkpoint_id,
        responses=plan.responses or None,
        run_id=plan.engine_run_id,
        stream=True,
    )
    join = ReplyJoin(pending, _event_dict)
    try:
        metrics.attempt_started(plan.workflow_name)
        with observing(ModelCalls(lease.run_id, pending, prices)):
            async for event in stream:
                if event.type == "superstep_started":
                    logs.bind(superstep=event.iteration)  # before its handlers start
                elif event.type == "superstep_completed":
                    continue  # the storage records it in the checkpoint's own transaction
                join.add(event)
        # The stream's own final state: graph and functional workflows both report it there.
        final_state = (await stream.get_final_response()).get_final_state()
        outcome = (
            RunStatus.WAITING
            if final_state == WorkflowRunState.IDLE_WITH_PENDING_REQUESTS
            else RunStatus.COMPLETED
        )
        output = None if join.last_output is None else encode(join.output(), where="run output")
        events = drain(pending, _event_dict)
        await finish(lease, outcome=outcome, events=events, output=output)
        _count_model_calls(plan.workflow_name, events)
    except (services.LeaseLost, asyncio.CancelledError):
        logger.info("run %s: lease lost or run cancelled; this worker stops", lease.run_id)
    except _ShuttingDown:
        await _step_down(lease)
    except _DatabaseLost as exc:
        logger.warning(
            "run %s: the database was lost (%s); the run resumes from its latest checkpoint",
            lease.run_id,
            exc,
        )
        raise
    except Exception as exc:  # noqa: BLE001 - whatever the workflow raised fails the run, recorded
        try:
            events = drain(pending, _event_dict)
            await finish(lease, outcome=RunStatus.FAILED, events=events, error=_run_error(exc))
            _count_model_calls(plan.workflow_name, events)
        except (services.LeaseLost, _DatabaseLost):
            logger.info("run %s failed, but its lease or the database was lost", lease.run_id)
    finally:
        metrics.attempt_ended(plan.workflow_name)
        keeper.cancel()
        await stream.aclose()
