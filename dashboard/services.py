"""Every business rule of the dashboard: run lifecycle, leases, checkpoints, approvals.

Views, the JSON API, consumers, Celery tasks, admin actions and commands call these functions
and nothing else changes runs. Each transition locks the rows it changes
(``select_for_update``), checks the current status, writes, records events, and only after the
commit enqueues work or broadcasts (``transaction.on_commit``).

Run status machine::

    queued ──lease──▶ running ──▶ completed | failed | cancelled
       ▲                 │
       │                 └──▶ waiting ──approval decided──▶ queued
       └── retry (failed) / resume (not active) / lease expired (sweeper)
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import os
import socket
import uuid
from collections.abc import Iterable
from typing import Any

from django.conf import settings
from django.core.exceptions import ValidationError
from django.db import transaction
from django.db.models import Q
from django.utils import timezone

from workflows import (
    CheckpointDecodeError,
    CheckpointEncodeError,
    SplitCheckpoint,
    WorkflowCheckpoint,
    encode,
    split_checkpoint,
)

from . import live, registry
from .embedded import enqueue_on_commit
from .models import (
    TERMINAL_RUN_STATUSES,
    ApprovalRequest,
    ApprovalStatus,
    Checkpoint,
    RunEvent,
    RunStatus,
    WorkflowRun,
)
from .storage import save_split

__all__ = [
    "Conflict",
    "InvalidInput",
    "Lease",
    "LeaseLost",
    "NotFound",
    "ServiceError",
    "approval_decide",
    "checkpoint_commit",
    "execution_plan",
    "lease_acquire",
    "lease_renew",
    "record_events",
    "run_cancel",
    "run_finish",
    "run_fork",
    "run_resume",
    "run_retry",
    "run_start",
    "runs_sweep",
]

ACTIVE_STATUSES = (RunStatus.QUEUED, RunStatus.RUNNING)


# ----------------------------------------------------------------------------------- errors


class ServiceError(Exception):
    """A refused operation; ``status`` is the HTTP status the API answers with."""

    status = 400

    def __init__(self, message: str, *, errors: dict[str, str] | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.errors = errors or {}


class InvalidInput(ServiceError):
    status = 400


class NotFound(ServiceError):
    status = 404


class Conflict(ServiceError):
    """The operation does not fit the object's current state (decided, finished, running)."""

    status = 409


class LeaseLost(Exception):
    """This worker no longer owns the run (it expired, was taken over, or the run was
    cancelled); it must stop without writing anything."""


@dataclasses.dataclass(frozen=True)
class Lease:
    run_id: uuid.UUID
    owner: str
    epoch: int


def _now() -> dt.datetime:
    return timezone.now()


def _lease_seconds() -> int:
    return int(settings.SUPERSTEP_LEASE_SECONDS)


def worker_identity() -> str:
    return f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:8]}"


# ----------------------------------------------------------------------------------- events


def record_events(run: WorkflowRun, events: Iterable[dict[str, Any]]) -> list[RunEvent]:
    """Append events to a run with gapless sequence numbers; the caller holds the run's row
    lock (``select_for_update``) inside a transaction. Broadcast happens after commit."""
    rows = []
    seq = run.last_event_seq
    now = _now()
    for event in events:
        seq += 1
        data = {k: v for k, v in event.items() if k != "type"}
        rows.append(RunEvent(run=run, seq=seq, type=str(event["type"])[:100], data=data, created_at=now))
    if not rows:
        return []
    RunEvent.objects.bulk_create(rows)
    run.last_event_seq = seq
    WorkflowRun.objects.filter(pk=run.pk).update(last_event_seq=seq)
    payload = [live.event_payload(row) for row in rows]
    transaction.on_commit(lambda: live.broadcast_run_events(run.pk, payload), robust=True)
    return rows


def _status_event(run: WorkflowRun, status: str, **extra: Any) -> dict[str, Any]:
    return {"type": "run_status", "status": status, **extra}


def _locked_run(run_id: Any) -> WorkflowRun:
    try:
        return WorkflowRun.objects.select_for_update().get(pk=run_id)
    except (WorkflowRun.DoesNotExist, ValidationError):
        raise NotFound(f"no run with id {run_id}") from None


def _set_status(run: WorkflowRun, status: str, **fields: Any) -> None:
    run.status = status
    if status in TERMINAL_RUN_STATUSES:
        run.finished_at = _now()
    else:
        run.finished_at = None
    for key, value in fields.items():
        setattr(run, key, value)


# -------------------------------------------------------------------------------- run start


def run_start(*, workflow_name: str, input: Any, user: Any = None) -> WorkflowRun:
    """Queue a new run of a registered workflow.

    Raises:
        InvalidInput: unknown workflow (``errors["workflow"]``) or input that does not fit the
            start executor's type (one message per field).
    """
    if workflow_name not in registry.names():
        raise InvalidInput(
            f"unknown workflow {workflow_name!r}", errors={"workflow": "unknown workflow"}
        )
    start_type = registry.input_type(workflow_name)
    try:
        typed = registry.validate_value(start_type, input)
        encode(typed, where="run input")  # the engine must be able to checkpoint it
        stored = registry.to_json(start_type, typed)
    except registry.InputError as exc:
        raise InvalidInput("the input does not fit the workflow", errors=exc.errors) from None
    except CheckpointEncodeError as exc:
        raise InvalidInput(str(exc), errors={"input": str(exc)}) from None
    with transaction.atomic():
        run = WorkflowRun.objects.create(
            workflow_name=workflow_name,
            input=stored,
            created_by=user if getattr(user, "is_authenticated", False) else None,
            engine_run_id=uuid.uuid4().hex,
        )
        run = WorkflowRun.objects.select_for_update().get(pk=run.pk)
        record_events(run, [_status_event(run, RunStatus.QUEUED, by=_username(user))])
        _enqueue(run)
    return run


def _username(user: Any) -> str | None:
    return user.get_username() if getattr(user, "is_authenticated", False) else None


def _enqueue(run: WorkflowRun) -> None:
    from .tasks import execute_run

    enqueue_on_commit(execute_run, str(run.pk))
    transaction.on_commit(lambda: live.broadcast_run_changed(run.pk), robust=True)


# ------------------------------------------------------------------------------- worker side


def lease_acquire(run_id: Any, owner: str) -> Lease | None:
    """Take the run for this worker, or return None when there is nothing to do (finished,
    waiting, or leased by a worker that is still alive). Idempotent: a duplicate task is a
    no-op."""
    now = _now()
    with transaction.atomic():
        try:
            run = WorkflowRun.objects.select_for_update().get(pk=run_id)
        except WorkflowRun.DoesNotExist:
            return None
        if run.status not in ACTIVE_STATUSES:
            return None
        if run.lease_owner and run.lease_expires_at and run.lease_expires_at > now:
            return None
        takeover = run.status == RunStatus.RUNNING
        run.fencing_epoch += 1
        run.attempts += 1
        run.lease_owner = owner
        run.lease_expires_at = now + dt.timedelta(seconds=_lease_seconds())
        run.started_at = run.started_at or now
        _set_status(run, RunStatus.RUNNING)
        run.save()
        events = [_status_event(run, RunStatus.RUNNING, attempt=run.attempts, worker=owner)]
        if takeover:
            events.insert(0, {"type": "run_recovered", "attempt": run.attempts, "worker": owner})
        record_events(run, events)
        transaction.on_commit(lambda: live.broadcast_run_changed(run.pk), robust=True)
        return Lease(run.pk, owner, run.fencing_epoch)


def _fenced(lease: Lease) -> WorkflowRun:
    run = WorkflowRun.objects.select_for_update().get(pk=lease.run_id)
    if run.fencing_epoch != lease.epoch or run.lease_owner != lease.owner:
        raise LeaseLost(f"run {lease.run_id}: lease epoch {lease.epoch} is no longer current")
    if run.status != RunStatus.RUNNING:
        raise LeaseLost(f"run {lease.run_id} is {run.status}; the worker stops")
    return run


def lease_renew(lease: Lease) -> None:
    """Extend the lease. Raises LeaseLost when it was taken over or the run was cancelled."""
    with transaction.atomic():
        run = _fenced(lease)
        run.lease_expires_at = _now() + dt.timedelta(seconds=_lease_seconds())
        WorkflowRun.objects.filter(pk=run.pk).update(
            lease_expires_at=run.lease_expires_at, updated_at=_now()
        )


@dataclasses.dataclass
class ExecutionPlan:
    """How the worker starts the engine for this attempt."""

    workflow_name: str
    engine_run_id: str
    message: Any = None
    checkpoint_id: str | None = None
    responses: dict[str, Any] = dataclasses.field(default_factory=dict)


def execution_plan(lease: Lease) -> ExecutionPlan:
    """Fresh start from the input, or resume from the latest checkpoint with every decided
    approval the checkpoint still waits for."""
    run = WorkflowRun.objects.select_related("latest_checkpoint").get(pk=lease.run_id)
    plan = ExecutionPlan(run.workflow_name, run.engine_run_id)
    checkpoint = run.latest_checkpoint
    if checkpoint is None:
        start_type = registry.input_type(run.workflow_name)
        plan.message = registry.validate_value(start_type, run.input)
        return plan
    plan.checkpoint_id = checkpoint.checkpoint_id
    waiting_for = set(checkpoint.document.get("pending_request_ids", []))
    decided = ApprovalRequest.objects.filter(
        run=run,
        status__in=[ApprovalStatus.APPROVED, ApprovalStatus.REJECTED],
        engine_run_id=checkpoint.engine_run_id,
        engine_request_id__in=waiting_for,
    )
    for approval in decided:
        rtype = registry.response_type(run.workflow_name, approval.response_type)
        plan.responses[approval.engine_request_id] = registry.validate_value(rtype, approval.response)
    return plan


def checkpoint_commit(
    lease: Lease,
    checkpoint: WorkflowCheckpoint,
    piece: SplitCheckpoint,
    events: list[dict[str, Any]],
) -> None:
    """One superstep's checkpoint, its events, new approval requests and the run's progress,
    in one transaction, written only while this worker still holds the lease."""
    approvals = _approval_specs(lease, checkpoint)
    with transaction.atomic():
        run = _fenced(lease)

        def link(row: Checkpoint) -> None:
            run.latest_checkpoint = row
            run.current_superstep = checkpoint.iteration_count
            run.lease_expires_at = _now() + dt.timedelta(seconds=_lease_seconds())
            if checkpoint.run_id != run.engine_run_id:
                run.engine_run_id = checkpoint.run_id
            run.save()
            for spec in approvals:
                ApprovalRequest.objects.get_or_create(
                    request_id=spec["request_id"], defaults={**spec, "run": run, "checkpoint": row}
                )

        save_split(piece, run_id=run.pk, after=link)
        kind = str(checkpoint.metadata.get("kind", "superstep"))
        marker = {
            "type": "superstep_completed" if kind == "superstep" else "checkpoint",
            "kind": kind,
            "iteration": checkpoint.iteration_count,
            "checkpoint_id": checkpoint.checkpoint_id,
            "size_bytes": piece.size_bytes,
            "pending_requests": len(checkpoint.pending_request_info_events),
        }
        record_events(run, [*events, marker])
        if approvals:
            transaction.on_commit(live.broadcast_approvals_changed, robust=True)


def _approval_specs(lease: Lease, checkpoint: WorkflowCheckpoint) -> list[dict[str, Any]]:
    existing = set(
        ApprovalRequest.objects.filter(
            run_id=lease.run_id, engine_run_id=checkpoint.run_id
        ).values_list("engine_request_id", flat=True)
    )
    specs = []
    for rid, event in checkpoint.pending_request_info_events.items():
        if rid in existing:
            continue
        as_dict = event.to_dict()
        specs.append(
            {
                "request_id": f"{checkpoint.run_id}:{rid}",
                "engine_request_id": rid,
                "engine_run_id": checkpoint.run_id,
                "executor_id": event.source_executor_id,
                "request_data": as_dict.get("data"),
                "response_type": as_dict.get("response_type") or "",
                "response_schema": registry.value_schema(event.response_type),
            }
        )
    return specs


def run_finish(
    lease: Lease,
    *,
    outcome: str,
    events: list[dict[str, Any]],
    output: Any = None,
    error: dict[str, str] | None = None,
) -> None:
    """Close this worker's attempt: completed, waiting (pending approvals) or failed."""
    with transaction.atomic():
        run = _fenced(lease)
        run.lease_owner, run.lease_expires_at = "", None
        if outcome == RunStatus.WAITING and _has_undelivered_decisions(run):
            # Someone decided while the run was still busy: go straight round again.
            _set_status(run, RunStatus.QUEUED, attempts=0)
            _enqueue(run)
        elif outcome == RunStatus.FAILED:
            error = error or {"type": "Error", "message": "the run failed", "traceback": ""}
            _set_status(
                run,
                RunStatus.FAILED,
                error_type=error["type"][:200],
                error_message=error["message"] or error["type"],
                traceback=error.get("traceback", ""),
            )
        else:
            _set_status(run, outcome, attempts=0)
            if outcome == RunStatus.COMPLETED:
                run.output = output
        run.save()
        record_events(run, [*events, _status_event(run, run.status)])
        transaction.on_commit(lambda: live.broadcast_run_changed(run.pk), robust=True)


def _has_undelivered_decisions(run: WorkflowRun) -> bool:
    checkpoint = run.latest_checkpoint
    if checkpoint is None:
        return False
    waiting_for = set(checkpoint.document.get("pending_request_ids", []))
    return ApprovalRequest.objects.filter(
        run=run,
        status__in=[ApprovalStatus.APPROVED, ApprovalStatus.REJECTED],
        engine_run_id=checkpoint.engine_run_id,
        engine_request_id__in=waiting_for,
    ).exists()


def runs_sweep() -> list[str]:
    """Recover runs whose worker died (lease expired) and queued runs whose task was lost;
    fail runs that lost their worker too often. Returns the ids of runs enqueued again."""
    now = _now()
    requeued: list[str] = []
    stale_queue = now - dt.timedelta(seconds=2 * _lease_seconds())
    candidates = WorkflowRun.objects.filter(
        Q(status=RunStatus.RUNNING, lease_expires_at__lt=now)
        | Q(status=RunStatus.QUEUED, updated_at__lt=stale_queue)
    ).values_list("pk", flat=True)
    for run_id in list(candidates[:500]):
        with transaction.atomic():
            run = WorkflowRun.objects.select_for_update().get(pk=run_id)
            expired = run.status == RunStatus.RUNNING and run.lease_expires_at and run.lease_expires_at < now
            lost = run.status == RunStatus.QUEUED and run.updated_at < stale_queue
            if not (expired or lost):
                continue
            if expired and run.attempts >= settings.SUPERSTEP_MAX_ATTEMPTS:
                run.lease_owner, run.lease_expires_at = "", None
                _set_status(
                    run,
                    RunStatus.FAILED,
                    error_type="WorkerLost",
                    error_message=(
                        f"the worker stopped responding {run.attempts} times (lease expired); "
                        "retry the run to continue from its latest checkpoint"
                    ),
                )
                run.save()
                record_events(run, [_status_event(run, RunStatus.FAILED, reason="worker lost")])
                transaction.on_commit(lambda rid=run.pk: live.broadcast_run_changed(rid), robust=True)
                continue
            if expired:
                run.lease_owner, run.lease_expires_at = "", None
                _set_status(run, RunStatus.QUEUED)
                record_events(run, [{"type": "run_requeued", "reason": "lease expired"}])
            run.save()  # also touches updated_at, so a lost task is not enqueued every sweep
            _enqueue(run)
            requeued.append(str(run.pk))
    return requeued


# ------------------------------------------------------------------------------ operator actions


def run_cancel(run_id: Any, *, user: Any = None) -> WorkflowRun:
    """Stop a queued, running or waiting run; its pending approvals are cancelled too."""
    with transaction.atomic():
        run = _locked_run(run_id)
        if run.status in TERMINAL_RUN_STATUSES:
            raise Conflict(f"run {run.pk} is already {run.status}")
        run.lease_owner, run.lease_expires_at = "", None
        _set_status(run, RunStatus.CANCELLED)
        run.save()
        _cancel_pending_approvals(run)
        record_events(run, [_status_event(run, RunStatus.CANCELLED, by=_username(user))])
        transaction.on_commit(lambda: live.broadcast_run_changed(run.pk), robust=True)
    return run


def _cancel_pending_approvals(run: WorkflowRun) -> None:
    changed = ApprovalRequest.objects.filter(run=run, status=ApprovalStatus.PENDING).update(
        status=ApprovalStatus.CANCELLED, decided_at=_now()
    )
    if changed:
        transaction.on_commit(live.broadcast_approvals_changed, robust=True)


def run_retry(run_id: Any, *, user: Any = None) -> WorkflowRun:
    """Run a failed run again from its latest checkpoint (or from its input if it has none)."""
    with transaction.atomic():
        run = _locked_run(run_id)
        if run.status != RunStatus.FAILED:
            raise Conflict(f"only a failed run can be retried; run {run.pk} is {run.status}")
        _set_status(run, RunStatus.QUEUED, attempts=0, error_type="", error_message="", traceback="")
        run.save()
        record_events(run, [_status_event(run, RunStatus.QUEUED, by=_username(user), action="retry")])
        _enqueue(run)
    return run


def _checkpoint_of(run: WorkflowRun, checkpoint_id: str) -> Checkpoint:
    checkpoint = Checkpoint.objects.filter(checkpoint_id=checkpoint_id, run=run).first()
    if checkpoint is None:
        raise NotFound(f"run {run.pk} has no checkpoint {checkpoint_id!r}")
    return checkpoint


def run_resume(run_id: Any, *, checkpoint_id: str, user: Any = None) -> WorkflowRun:
    """Continue the run from one of its checkpoints, as a new branch of its history.

    Supersteps after that checkpoint run again; the branch gets its own lineage id, so requests
    re-raised on it are new approval requests. Refused while the run is queued or running.
    """
    with transaction.atomic():
        run = _locked_run(run_id)
        if run.status in ACTIVE_STATUSES:
            raise Conflict(f"run {run.pk} is {run.status}; cancel it first or wait for it")
        checkpoint = _checkpoint_of(run, checkpoint_id)
        _ensure_same_graph(run.workflow_name, checkpoint)
        _cancel_pending_approvals(run)
        _set_status(
            run,
            RunStatus.QUEUED,
            attempts=0,
            latest_checkpoint=checkpoint,
            current_superstep=checkpoint.superstep,
            engine_run_id=uuid.uuid4().hex,
            origin_checkpoint_id=checkpoint.checkpoint_id,
            output=None,
            error_type="",
            error_message="",
            traceback="",
        )
        run.save()
        record_events(
            run,
            [_status_event(run, RunStatus.QUEUED, by=_username(user), action="resume",
                           checkpoint_id=checkpoint.checkpoint_id, superstep=checkpoint.superstep)],
        )
        _enqueue(run)
    return run


def _ensure_same_graph(workflow_name: str, checkpoint: Checkpoint) -> None:
    deployed = registry.describe(workflow_name).graph_signature_hash
    if checkpoint.graph_signature_hash != deployed:
        raise Conflict(
            f"checkpoint {checkpoint.checkpoint_id} was written by a different version of "
            f"{workflow_name!r}; its graph no longer matches the deployed workflow"
        )


def run_fork(
    run_id: Any,
    *,
    checkpoint_id: str,
    user: Any = None,
    state: dict[str, Any] | None = None,
    executor_states: dict[str, dict[str, Any]] | None = None,
) -> WorkflowRun:
    """A new run that starts from a checkpoint of this one, optionally with edited shared
    state and executor states (given as the checkpoint's JSON form; validated by decoding them
    before anything is saved)."""
    with transaction.atomic():
        origin = _locked_run(run_id)
        checkpoint = _checkpoint_of(origin, checkpoint_id)
        _ensure_same_graph(origin.workflow_name, checkpoint)
        registry.describe(origin.workflow_name)  # registers the graph's types for decoding
        edited = _edited_checkpoint(checkpoint, state, executor_states)
        fork = WorkflowRun.objects.create(
            workflow_name=origin.workflow_name,
            input=origin.input,
            parent_run=origin,
            origin_checkpoint_id=checkpoint.checkpoint_id,
            created_by=user if getattr(user, "is_authenticated", False) else None,
            engine_run_id=edited.run_id,
            current_superstep=edited.iteration_count,
        )
        fork = WorkflowRun.objects.select_for_update().get(pk=fork.pk)
        row = save_split(split_checkpoint(edited), run_id=fork.pk)
        fork.latest_checkpoint = row
        fork.save()
        record_events(
            fork,
            [_status_event(fork, RunStatus.QUEUED, by=_username(user), action="fork",
                           parent_run=str(origin.pk), checkpoint_id=checkpoint.checkpoint_id,
                           edited=bool(state is not None or executor_states is not None))],
        )
        record_events(origin, [{"type": "run_forked", "fork": str(fork.pk),
                                "checkpoint_id": checkpoint.checkpoint_id, "by": _username(user)}])
        _enqueue(fork)
    return fork


def _edited_checkpoint(
    checkpoint: Checkpoint,
    state: dict[str, Any] | None,
    executor_states: dict[str, dict[str, Any]] | None,
) -> WorkflowCheckpoint:
    from .storage import DjangoCheckpointStorage

    source = DjangoCheckpointStorage().decode(checkpoint.document)
    doc = source.to_dict()
    errors: dict[str, str] = {}
    if state is not None:
        if not isinstance(state, dict):
            errors["state"] = "shared state must be a JSON object"
        else:
            doc["state"] = state
    if executor_states is not None:
        unknown = set(executor_states) - set(registry.describe(checkpoint.workflow_name).executors)
        if not isinstance(executor_states, dict) or not all(isinstance(v, dict) for v in executor_states.values()):
            errors["executor_states"] = "executor states must be an object of objects"
        elif unknown:
            errors["executor_states"] = f"unknown executors: {sorted(unknown)}"
        else:
            doc["executor_states"] = executor_states
    if errors:
        raise InvalidInput("the edited state is not valid", errors=errors)
    doc.update(
        checkpoint_id=uuid.uuid4().hex,
        run_id=uuid.uuid4().hex,
        previous_checkpoint_id=checkpoint.checkpoint_id,
        timestamp=_now().isoformat(),
        metadata={"kind": "fork", "forked_from": checkpoint.checkpoint_id},
    )
    try:
        edited = WorkflowCheckpoint.from_dict(doc)
        split_checkpoint(edited)  # and it must be storable again
    except (CheckpointDecodeError, CheckpointEncodeError) as exc:
        field = "executor_states" if executor_states is not None else "state"
        raise InvalidInput(f"the edited state cannot be restored: {exc}", errors={field: str(exc)}) from None
    return edited


# -------------------------------------------------------------------------------- approvals


def approval_decide(
    request_id: str,
    *,
    user: Any,
    approved: bool,
    response: Any = None,
    reason: str = "",
) -> ApprovalRequest:
    """Record the one decision a request gets and send the run on its way.

    Raises:
        NotFound: no such request.
        Conflict: it was already decided (the message says by whom and when), cancelled, or
            belongs to a branch the run has left.
        InvalidInput: the response does not fit the request's response type.
    """
    with transaction.atomic():
        try:
            approval = ApprovalRequest.objects.select_for_update().select_related("run").get(
                request_id=request_id
            )
        except ApprovalRequest.DoesNotExist:
            raise NotFound(f"no approval request with id {request_id!r}") from None
        if approval.status != ApprovalStatus.PENDING:
            raise Conflict(_already_decided(approval))
        run = _locked_run(approval.run_id)
        if run.status in TERMINAL_RUN_STATUSES or approval.engine_run_id != run.engine_run_id:
            raise Conflict(
                f"request {request_id!r} is stale: run {run.pk} is {run.status} on another branch"
            )
        value = _response_value(run.workflow_name, approval, approved, response)
        approval.status = ApprovalStatus.APPROVED if approved else ApprovalStatus.REJECTED
        approval.response = value
        approval.reason = (reason or "")[:5000]
        approval.decided_by = user
        approval.decided_at = _now()
        approval.save()
        record_events(
            run,
            [{"type": "approval_decided", "request_id": approval.request_id,
              "decision": approval.status, "by": _username(user), "reason": approval.reason}],
        )
        if run.status == RunStatus.WAITING:
            _set_status(run, RunStatus.QUEUED, attempts=0)
            run.save()
            record_events(run, [_status_event(run, RunStatus.QUEUED, action="approval")])
            _enqueue(run)
        transaction.on_commit(live.broadcast_approvals_changed, robust=True)
    return approval


def _already_decided(approval: ApprovalRequest) -> str:
    if approval.status == ApprovalStatus.CANCELLED:
        return f"request {approval.request_id!r} was cancelled (its run was cancelled or resumed)"
    who = approval.decided_by.get_username() if approval.decided_by else "someone"
    when = approval.decided_at.isoformat(timespec="seconds") if approval.decided_at else "earlier"
    return f"request {approval.request_id!r} was already {approval.status} by {who} at {when}"


def _response_value(workflow_name: str, approval: ApprovalRequest, approved: bool, response: Any) -> Any:
    rtype = registry.response_type(workflow_name, approval.response_type)
    if rtype is bool:
        value: Any = approved
    else:
        value = dict(response) if isinstance(response, dict) else response
        if isinstance(value, dict) and "approved" in (approval.response_schema.get("properties") or {}):
            value["approved"] = approved
    try:
        typed = registry.validate_value(rtype, value)
    except registry.InputError as exc:
        raise InvalidInput("the response does not fit the request", errors=exc.errors) from None
    return registry.to_json(rtype, typed)
