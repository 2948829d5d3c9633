"""The worker's side of a run: leases with fencing, execution plans, per-superstep commits,
finishing an attempt, and the sweeper that recovers runs whose worker died."""

from __future__ import annotations

import dataclasses
import datetime as dt
import functools
import json
import os
import socket
import uuid
from decimal import Decimal
from typing import Any, NotRequired, TypedDict

from django.conf import settings
from django.db import connection, transaction
from django.db.models import Q

from dashboard import broadcast, catalog
from dashboard.access import masking
from dashboard.checkpoints.writes import RunProgress, commit_split, save_split
from dashboard.core import run_events
from dashboard.core.errors import LeaseLost
from dashboard.core.types import RunId
from dashboard.instruments import metrics
from dashboard.models import ApprovalRequest, ApprovalStatus, Checkpoint, RunStatus, WorkflowRun
from dashboard.services import approvals
from dashboard.services.common import (
    ACTIVE_STATUSES,
    enqueue,
    lease_seconds,
    now,
    record_events,
    set_status,
)
from workflows import WorkflowCheckpoint, fast_json
from workflows.storage import SplitCheckpoint
from workflows.tracing import TRACE_KEY, trace_id_of

__all__ = [
    "ApprovalSpec",
    "ExecutionPlan",
    "Lease",
    "RunError",
    "checkpoint_commit",
    "execution_plan",
    "lease_acquire",
    "lease_release",
    "lease_renew",
    "run_finish",
    "runs_sweep",
    "worker_identity",
]


@dataclasses.dataclass(frozen=True)
class Lease:
    run_id: uuid.UUID
    owner: str
    epoch: int
    # Read with the lease, so each superstep's events are masked without another query.
    workflow_name: str = ""


def worker_identity() -> str:
    return f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:8]}"


def lease_acquire(run_id: RunId, owner: str) -> Lease | None:
    """Take the run for this worker, or return None when there is nothing to do (finished,
    waiting, or leased by a worker that is still alive). Idempotent: a duplicate task is a
    no-op."""
    moment = now()
    with transaction.atomic():
        try:
            run = WorkflowRun.objects.select_for_update().get(pk=run_id)
        except WorkflowRun.DoesNotExist:
            return None
        if run.status not in ACTIVE_STATUSES:
            return None
        if run.lease_owner and run.lease_expires_at and run.lease_expires_at > moment:
            return None
        takeover = run.status == RunStatus.RUNNING
        if takeover:
            run.lost_workers += 1  # its worker died; a redelivered task got here before the sweeper
            transaction.on_commit(
                functools.partial(metrics.lease_taken_over, run.workflow_name, by="worker"),
                robust=True,
            )
        run.fencing_epoch += 1
        run.attempts += 1
        run.lease_owner = owner
        run.lease_expires_at = moment + dt.timedelta(seconds=lease_seconds())
        run.started_at = run.started_at or moment
        set_status(run, RunStatus.RUNNING)
        run.save()
        events: list[run_events.RunStatusChanged | run_events.RunRecovered] = [
            run_events.run_status(RunStatus.RUNNING, attempt=run.attempts, worker=owner)
        ]
        if takeover:
            events.insert(0, run_events.run_recovered(run.attempts, owner))
        record_events(run, events)
        transaction.on_commit(lambda: broadcast.broadcast_run_changed(run.pk), robust=True)
        return Lease(run.pk, owner, run.fencing_epoch, run.workflow_name)


def fenced(lease: Lease) -> WorkflowRun:
    run = WorkflowRun.objects.select_for_update().get(pk=lease.run_id)
    if run.fencing_epoch != lease.epoch or run.lease_owner != lease.owner:
        raise LeaseLost(f"run {lease.run_id}: lease epoch {lease.epoch} is no longer current")
    if run.status != RunStatus.RUNNING:
        raise LeaseLost(f"run {lease.run_id} is {run.status}; the worker stops")
    return run


def lease_renew(lease: Lease) -> None:
    """Extend the lease. Raises LeaseLost when it was taken over or the run was cancelled."""
    with transaction.atomic():
        run = fenced(lease)
        run.lease_expires_at = now() + dt.timedelta(seconds=lease_seconds())
        WorkflowRun.objects.filter(pk=run.pk).update(
            lease_expires_at=run.lease_expires_at, updated_at=now()
        )


def lease_release(lease: Lease, reason: str) -> bool:
    """Hand the run back to the queue when this worker cannot go on for a reason that is not
    the run's nor the worker's (the database went away under it). Unlike a lease that lapses,
    this does not count as a lost worker: a run must not fail "worker lost" because PostgreSQL
    restarted three times while it ran. False when the lease was no longer ours."""
    with transaction.atomic():
        try:
            run = fenced(lease)
        except LeaseLost:
            return False
        run.lease_owner, run.lease_expires_at = "", None
        set_status(run, RunStatus.QUEUED)
        record_events(run, [run_events.run_requeued(reason)])
        run.save()
        enqueue(run)
        return True


@dataclasses.dataclass
class ExecutionPlan:
    """How the worker starts the engine for this attempt."""

    workflow_name: str
    engine_run_id: str
    version: str | None = None  # the graph version to build (services.versions)
    message: Any = None
    checkpoint_id: str | None = None
    responses: dict[str, Any] = dataclasses.field(default_factory=dict)


def execution_plan(lease: Lease) -> ExecutionPlan:
    """Fresh start from the input, or resume from the latest checkpoint with every decided
    approval the checkpoint still waits for."""
    run = WorkflowRun.objects.select_related("latest_checkpoint").get(pk=lease.run_id)
    plan = ExecutionPlan(run.workflow_name, run.engine_run_id, run.graph_version or None)
    checkpoint = run.latest_checkpoint
    if checkpoint is None:
        start_type = catalog.input_type(run.workflow_name, plan.version)
        plan.message = catalog.validate_value(start_type, run.input)
        return plan
    plan.checkpoint_id = checkpoint.checkpoint_id
    waiting_for = set(checkpoint.document.get("pending_request_ids", []))
    decided = ApprovalRequest.objects.filter(
        run=run,
        status__in=[ApprovalStatus.APPROVED, ApprovalStatus.REJECTED],
        engine_run_id=run.engine_run_id,  # a resumed branch asks again
        engine_request_id__in=waiting_for,
    )
    for approval in decided:
        rtype = catalog.response_type(run.workflow_name, approval.response_type)
        plan.responses[approval.engine_request_id] = catalog.validate_value(
            rtype, approval.response
        )
    return plan


def checkpoint_commit(
    lease: Lease,
    checkpoint: WorkflowCheckpoint,
    piece: SplitCheckpoint,
    events: list[dict[str, Any]],
) -> None:
    """One superstep's checkpoint, its events, new approval requests and the run's progress,
    in one transaction, written only while this worker still holds the lease.

    On PostgreSQL a checkpoint that raises no request (nearly all of them) is one statement:
    one round trip and one commit (``writes.commit_split``). One that does, and SQLite, take
    the ORM's transaction, which also opens the approval requests.

    Raises:
        LeaseLost: the lease was taken over, or the run is no longer running.
        django.db.IntegrityError: as ``save_split`` (the storage forgets the blob and retries).
    """
    kind = str(checkpoint.metadata.get("kind", "superstep"))
    marker = run_events.checkpoint_marker(
        kind,
        checkpoint.iteration_count,
        checkpoint.checkpoint_id,
        piece.size_bytes,
        len(checkpoint.pending_request_info_events),
    )
    events = [*events, dict(marker)]
    if checkpoint.pending_request_info_events or connection.vendor != "postgresql":
        _checkpoint_commit_orm(lease, checkpoint, piece, events)
        return
    stamp = now()
    output = _last_output(events)
    usage = model_usage(events)
    progress = RunProgress(
        run_id=lease.run_id,
        epoch=lease.epoch,
        owner=lease.owner,
        lease_expires_at=stamp + dt.timedelta(seconds=lease_seconds()),
        events_json=_json_text(shown := _masked(lease, events)),
        event_count=len(events),
        output=None if output is None else json.dumps(output, separators=(",", ":")),
        trace_id=trace_id_of(checkpoint.metadata.get(TRACE_KEY)) or "",
        stamp=stamp,
        input_tokens=usage.input_tokens,
        output_tokens=usage.output_tokens,
        cost=usage.cost,
    )
    last_seq = commit_split(piece, progress)
    if last_seq is None:
        raise LeaseLost(f"run {lease.run_id}: lease epoch {lease.epoch} is no longer current")
    first = last_seq - len(events)
    payload = [
        {
            "seq": first + number,
            "type": str(event["type"])[:100],
            "data": {k: v for k, v in event.items() if k != "type"},
            "created_at": stamp.isoformat(),
        }
        for number, event in enumerate(shown, start=1)
    ]
    transaction.on_commit(
        functools.partial(broadcast.broadcast_run_events, lease.run_id, payload), robust=True
    )
    transaction.on_commit(
        functools.partial(broadcast.broadcast_runs_progress, lease.run_id), robust=True
    )


def _masked(lease: Lease, events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The events as the log stores them: sensitive fields masked, as ``record_events``
    masks them (the run's output and usage were read from them unmasked)."""
    masker = masking.for_run(_RunKey(lease.run_id, lease.workflow_name))
    if not masker.active:
        return events
    return [masking.masked_event(masker, event) for event in events]


@dataclasses.dataclass(frozen=True)
class _RunKey:
    """What a masker needs of a run, where only its id and workflow are at hand."""

    pk: uuid.UUID
    workflow_name: str


def _json_text(value: Any) -> str:
    """JSON for a jsonb parameter: the server parses it, so orjson's text serves wherever it
    writes the value at all (a few times faster than ``json`` on a superstep's events)."""
    fast = fast_json.dumps(value, encoding=False)
    if fast is not None:
        return fast.decode("utf-8")
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


def _checkpoint_commit_orm(
    lease: Lease,
    checkpoint: WorkflowCheckpoint,
    piece: SplitCheckpoint,
    events: list[dict[str, Any]],
) -> None:
    new_requests = _approval_specs(lease.run_id, checkpoint, lease.workflow_name)
    with transaction.atomic():
        run = fenced(lease)

        def link(row: Checkpoint) -> None:
            run.latest_checkpoint = row
            run.current_superstep = checkpoint.iteration_count
            run.lost_workers = 0  # progress: earlier lost workers no longer count against it
            output = _last_output(events)
            if output is not None:
                # With the superstep that yielded it: an attempt cut off before run_finish
                # leaves the run its output, which the next one, resuming after it, never yields.
                run.output = output
            run.lease_expires_at = now() + dt.timedelta(seconds=lease_seconds())
            if checkpoint.run_id != run.engine_run_id:
                run.engine_run_id = checkpoint.run_id
            if not run.trace_id:
                run.trace_id = trace_id_of(checkpoint.metadata.get(TRACE_KEY)) or ""
            model_usage(events).add_to(run)
            run.save()
            for spec in new_requests:
                request, created = ApprovalRequest.objects.get_or_create(
                    request_id=spec["request_id"], defaults={**spec, "run": run, "checkpoint": row}
                )
                if created:
                    approvals.approval_opened(request, run)

        save_split(piece, run_id=run.pk, after=link)
        record_events(run, events)
        transaction.on_commit(
            functools.partial(broadcast.broadcast_runs_progress, run.pk), robust=True
        )
        if new_requests:
            transaction.on_commit(broadcast.broadcast_approvals_changed, robust=True)


@dataclasses.dataclass(frozen=True)
class ModelUsage:
    """The tokens and cost of a batch of events' model calls."""

    input_tokens: int = 0
    output_tokens: int = 0
    cost: Decimal = Decimal(0)

    def add_to(self, run: WorkflowRun) -> None:
        run.input_tokens += self.input_tokens
        run.output_tokens += self.output_tokens
        run.cost += self.cost


def model_usage(events: list[dict[str, Any]]) -> ModelUsage:
    """What the ``model_call`` events among ``events`` add to their run's totals."""
    calls = [event for event in events if event.get("type") == "model_call"]
    if not calls:
        return ModelUsage()
    return ModelUsage(
        input_tokens=sum(int(call["input_tokens"]) for call in calls),
        output_tokens=sum(int(call["output_tokens"]) for call in calls),
        cost=sum((Decimal(call["cost"]) for call in calls if call["cost"] is not None), Decimal(0)),
    )


def _last_output(events: list[dict[str, Any]]) -> Any:
    """The data of the last ``output`` event (in ``encode``'s form, as ``run_finish`` stores
    it), or None."""
    for event in reversed(events):
        if event.get("type") == "output" and "data" in event:
            return event["data"]
    return None


class ApprovalSpec(TypedDict):
    """The fields of a new ``ApprovalRequest`` for a request the engine raised."""

    request_id: str
    engine_request_id: str
    engine_run_id: str
    executor_id: str
    request_data: Any  # the request's JSON form
    response_type: str
    response_schema: dict[str, Any]


def _approval_specs(
    run_id: uuid.UUID, checkpoint: WorkflowCheckpoint, workflow: str
) -> list[ApprovalSpec]:
    if not checkpoint.pending_request_info_events:
        return []
    existing = set(
        ApprovalRequest.objects.filter(run_id=run_id, engine_run_id=checkpoint.run_id).values_list(
            "engine_request_id", flat=True
        )
    )
    specs: list[ApprovalSpec] = []
    masker = masking.for_run(_RunKey(run_id, workflow))
    for rid, event in checkpoint.pending_request_info_events.items():
        if rid in existing:
            continue
        as_dict = event.to_dict()
        specs.append(
            ApprovalSpec(
                request_id=f"{checkpoint.run_id}:{rid}",
                engine_request_id=rid,
                engine_run_id=checkpoint.run_id,
                executor_id=event.source_executor_id,
                # Shown in the inbox, the API and webhooks as stored: masked. The checkpoint's
                # pending request keeps the values the workflow gets back.
                request_data=masker.value(as_dict.get("data"), where="request"),
                response_type=as_dict.get("response_type") or "",
                response_schema=catalog.value_schema(event.response_type),
            )
        )
    return specs


class RunError(TypedDict):
    """Why an attempt failed, as the worker reports it to ``run_finish``."""

    type: str  # the exception's class name
    message: str
    traceback: NotRequired[str]


def run_finish(
    lease: Lease,
    *,
    outcome: str,
    events: list[dict[str, Any]],
    output: Any = None,
    error: RunError | None = None,
) -> None:
    """Close this worker's attempt: completed, waiting (pending approvals) or failed.

    ``output`` is the last output the attempt yielded, None when it yielded none: then the run
    keeps the output it had, such as the one a resume of its final checkpoint starts with
    (``services.runs.output_at``), from which nothing runs.
    """
    with transaction.atomic():
        run = fenced(lease)
        run.lease_owner, run.lease_expires_at = "", None
        if outcome == RunStatus.WAITING and _has_undelivered_decisions(run):
            # Someone decided while the run was still busy: go straight round again.
            set_status(run, RunStatus.QUEUED, attempts=0, lost_workers=0)
            enqueue(run)
        elif outcome == RunStatus.FAILED:
            error = error or RunError(type="Error", message="the run failed", traceback="")
            set_status(
                run,
                RunStatus.FAILED,
                error_type=error["type"][:200],
                error_message=error["message"] or error["type"],
                traceback=error.get("traceback", ""),
            )
        else:
            set_status(run, outcome, attempts=0, lost_workers=0)
        if output is not None and outcome != RunStatus.FAILED:
            # Also when the run now waits: what it yielded before a request is its output so far,
            # and the steps after the answer may yield nothing more.
            run.output = output
        model_usage(events).add_to(run)
        run.save()
        record_events(run, [*events, run_events.run_status(run.status)])
        transaction.on_commit(lambda: broadcast.broadcast_run_changed(run.pk), robust=True)


def _has_undelivered_decisions(run: WorkflowRun) -> bool:
    checkpoint = run.latest_checkpoint
    if checkpoint is None:
        return False
    waiting_for = set(checkpoint.document.get("pending_request_ids", []))
    return ApprovalRequest.objects.filter(
        run=run,
        status__in=[ApprovalStatus.APPROVED, ApprovalStatus.REJECTED],
        engine_run_id=run.engine_run_id,
        engine_request_id__in=waiting_for,
    ).exists()


def runs_sweep() -> list[str]:
    """Recover runs whose worker died (lease expired) and queued runs whose task was lost;
    fail runs that lost ``SUPERSTEP_MAX_ATTEMPTS`` workers in a row without committing a
    superstep. Returns the ids of runs enqueued again."""
    moment = now()
    requeued: list[str] = []
    stale_queue = moment - dt.timedelta(seconds=2 * lease_seconds())
    candidates = WorkflowRun.objects.filter(
        Q(status=RunStatus.RUNNING, lease_expires_at__lt=moment)
        | Q(status=RunStatus.QUEUED, updated_at__lt=stale_queue)
    ).values_list("pk", flat=True)
    for run_id in list(candidates[:500]):
        with transaction.atomic():
            run = WorkflowRun.objects.select_for_update().get(pk=run_id)
            expired = (
                run.status == RunStatus.RUNNING
                and run.lease_expires_at
                and run.lease_expires_at < moment
            )
            lost = run.status == RunStatus.QUEUED and run.updated_at < stale_queue
            if not (expired or lost):
                continue
            if expired:
                run.lost_workers += 1
                transaction.on_commit(
                    functools.partial(metrics.lease_taken_over, run.workflow_name, by="sweeper"),
                    robust=True,
                )
            if expired and run.lost_workers >= settings.SUPERSTEP_MAX_ATTEMPTS:
                run.lease_owner, run.lease_expires_at = "", None
                set_status(
                    run,
                    RunStatus.FAILED,
                    error_type="WorkerLost",
                    error_message=(
                        f"the worker stopped responding {run.lost_workers} times (lease expired) "
                        "without committing a superstep in between; retry the run to continue "
                        "from its latest checkpoint"
                    ),
                )
                run.save()
                record_events(run, [run_events.run_status(RunStatus.FAILED, reason="worker lost")])
                transaction.on_commit(
                    functools.partial(broadcast.broadcast_run_changed, run.pk), robust=True
                )
                continue
            if expired:
                run.lease_owner, run.lease_expires_at = "", None
                set_status(run, RunStatus.QUEUED)
                record_events(run, [run_events.run_requeued("lease expired")])
            run.save()  # also touches updated_at, so a lost task is not enqueued every sweep
            enqueue(run)
            requeued.append(str(run.pk))
    return requeued
