"""Operator actions on runs: start, cancel, retry, resume, fork, hold."""

from __future__ import annotations

import uuid
from typing import Any

from django.db import transaction

from dashboard import run_events
from dashboard.checkpoints.writes import save_split
from dashboard.execution import registry
from dashboard.live import broadcast
from dashboard.models import (
    TERMINAL_RUN_STATUSES,
    ApprovalRequest,
    ApprovalStatus,
    Checkpoint,
    RunEvent,
    RunStatus,
    WorkflowRun,
)
from dashboard.services import approvals, audit, authz, validation
from dashboard.services.common import (
    ACTIVE_STATUSES,
    enqueue,
    is_user,
    locked_run,
    now,
    record_events,
    set_status,
    username,
)
from dashboard.services.errors import Conflict, InvalidInput, NotFound
from dashboard.services.execution import _approval_specs
from dashboard.services.types import Actor, RunId
from workflows import CheckpointDecodeError, CheckpointEncodeError, WorkflowCheckpoint
from workflows.storage import encode, split_checkpoint

__all__ = ["output_at", "run_cancel", "run_fork", "run_hold", "run_resume", "run_retry", "run_start"]


def run_start(*, workflow_name: str, input: object, user: Actor = None) -> WorkflowRun:
    """Queue a new run of a registered workflow.

    Raises:
        InvalidInput: unknown workflow (``errors["workflow"]``) or input that does not fit the
            start executor's type (one message per field).
    """
    authz.require(user, "start", target=f"workflow {workflow_name}")
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
    # After coercion: "NaN" is a valid float to the type, and no database stores it.
    validation.require_storable(stored)
    with transaction.atomic():
        run = WorkflowRun.objects.create(
            workflow_name=workflow_name,
            input=stored,
            created_by=user if is_user(user) else None,
            engine_run_id=uuid.uuid4().hex,
            graph_version=registry.current_version(workflow_name),
        )
        run = WorkflowRun.objects.select_for_update().get(pk=run.pk)
        record_events(run, [run_events.run_status(RunStatus.QUEUED, by=username(user))])
        audit.record(user, "start", run=run, target=f"run {run.pk}", details={"input": stored})
        enqueue(run)
    return run


def run_cancel(run_id: RunId, *, user: Actor = None) -> WorkflowRun:
    """Stop a queued, running or waiting run; its pending approvals are cancelled too."""
    authz.require(user, "cancel", target=f"run {run_id}")
    with transaction.atomic():
        run = locked_run(run_id)
        if run.status in TERMINAL_RUN_STATUSES:
            raise Conflict(f"run {run.pk} is already {run.status}")
        run.lease_owner, run.lease_expires_at = "", None
        set_status(run, RunStatus.CANCELLED)
        run.save()
        _cancel_pending_approvals(run)
        record_events(run, [run_events.run_status(RunStatus.CANCELLED, by=username(user))])
        audit.record(user, "cancel", run=run, target=f"run {run.pk}",
                     checkpoint_before=run.latest_checkpoint_id, checkpoint_after=run.latest_checkpoint_id)
        transaction.on_commit(lambda: broadcast.broadcast_run_changed(run.pk), robust=True)
    return run


def _cancel_pending_approvals(run: WorkflowRun) -> None:
    changed = ApprovalRequest.objects.filter(run=run, status=ApprovalStatus.PENDING).update(
        status=ApprovalStatus.CANCELLED, decided_at=now()
    )
    if changed:
        transaction.on_commit(broadcast.broadcast_approvals_changed, robust=True)


def run_retry(run_id: RunId, *, user: Actor = None) -> WorkflowRun:
    """Run a failed run again from its latest checkpoint (or from its input if it has none)."""
    authz.require(user, "retry", target=f"run {run_id}")
    with transaction.atomic():
        run = locked_run(run_id)
        if run.status != RunStatus.FAILED:
            raise Conflict(f"only a failed run can be retried; run {run.pk} is {run.status}")
        _ensure_registered(run.workflow_name)
        set_status(run, RunStatus.QUEUED, attempts=0, lost_workers=0,
                   error_type="", error_message="", traceback="")
        run.save()
        record_events(run, [run_events.run_status(RunStatus.QUEUED, by=username(user), action="retry")])
        audit.record(user, "retry", run=run, target=f"run {run.pk}",
                     checkpoint_before=run.latest_checkpoint_id, checkpoint_after=run.latest_checkpoint_id)
        enqueue(run)
    return run


def _checkpoint_of(run: WorkflowRun, checkpoint_id: str) -> Checkpoint:
    checkpoint = Checkpoint.objects.filter(checkpoint_id=checkpoint_id, run=run).first()
    if checkpoint is None:
        raise NotFound(f"run {run.pk} has no checkpoint {checkpoint_id!r}")
    return checkpoint


def run_resume(run_id: RunId, *, checkpoint_id: str, user: Actor = None) -> WorkflowRun:
    """Continue the run from one of its checkpoints, as a new branch of its history.

    Supersteps after that checkpoint run again; the branch gets its own lineage id, so requests
    re-raised on it are new approval requests. Refused while the run is queued or running.
    The run keeps the output it had at that checkpoint (see ``output_at``) until the branch
    yields one of its own.
    """
    authz.require(user, "resume", target=f"run {run_id} from {checkpoint_id}")
    with transaction.atomic():
        run = locked_run(run_id)
        before = run.latest_checkpoint_id
        if run.status in ACTIVE_STATUSES:
            raise Conflict(f"run {run.pk} is {run.status}; cancel it first or wait for it")
        checkpoint = _checkpoint_of(run, checkpoint_id)
        version = _ensure_same_graph(run.workflow_name, checkpoint)
        _cancel_pending_approvals(run)
        set_status(
            run,
            RunStatus.QUEUED,
            attempts=0,
            lost_workers=0,
            latest_checkpoint=checkpoint,
            current_superstep=checkpoint.superstep,
            engine_run_id=uuid.uuid4().hex,
            origin_checkpoint_id=checkpoint.checkpoint_id,
            output=output_at(run, checkpoint),
            graph_version=version,
            migration_reason="",
            error_type="",
            error_message="",
            traceback="",
        )
        run.save()
        record_events(
            run,
            [run_events.run_status(RunStatus.QUEUED, by=username(user), action="resume",
                           checkpoint_id=checkpoint.checkpoint_id, superstep=checkpoint.superstep)],
        )
        audit.record(user, "resume", run=run, target=f"run {run.pk}",
                     checkpoint_before=before, checkpoint_after=checkpoint.checkpoint_id)
        enqueue(run)
    return run


def output_at(run: WorkflowRun, checkpoint: Checkpoint) -> Any:
    """The output ``run`` had at ``checkpoint``, which a resume or fork of it starts with.

    The rule: a run's output is the last one its lineage yielded, and an attempt that yields
    none keeps it (``run_finish``). So a resume or fork of the checkpoint a run completed at,
    from which nothing runs, keeps the output: the run's own, or (when the run has moved on to
    another branch since) the output committed with that checkpoint in its event log. An
    earlier checkpoint starts with none: the supersteps after it run again and yield the
    output again (or another one).
    """
    if run.latest_checkpoint_id == checkpoint.pk:
        return run.output
    return _output_committed_with(run, checkpoint.checkpoint_id)


# A superstep's events are committed with its checkpoint, marker last (checkpoint_commit).
_BATCH_ENDS = frozenset({"superstep_completed", "checkpoint", "run_status"})
_BATCH_SCAN = 2000


def _output_committed_with(run: WorkflowRun, checkpoint_id: str) -> Any:
    marker = (
        RunEvent.objects.filter(run=run, type__in=("superstep_completed", "checkpoint"),
                                data__checkpoint_id=checkpoint_id)
        .values_list("seq", flat=True)
        .first()
    )
    if marker is None:
        return None
    batch = RunEvent.objects.filter(run=run, seq__lt=marker).order_by("-seq")
    for kind, data in batch.values_list("type", "data")[:_BATCH_SCAN]:
        if kind in _BATCH_ENDS:
            break
        if kind == "output" and isinstance(data, dict):
            return data.get("data")
    return None


def _ensure_registered(workflow_name: str) -> None:
    # A deploy may remove a workflow that still has runs: they stay readable, but nothing can
    # execute them, so a worker would only fail on them.
    if workflow_name not in registry.names():
        raise Conflict(
            f"workflow {workflow_name!r} is not registered any more; register it again to "
            "continue its runs"
        )


def _ensure_same_graph(workflow_name: str, checkpoint: Checkpoint) -> str:
    """The registered version that wrote ``checkpoint`` (the current one or one kept side by
    side), which a resume or fork of it executes on."""
    _ensure_registered(workflow_name)
    version = checkpoint.graph_signature_hash
    if version not in registry.versions(workflow_name):
        raise Conflict(
            f"checkpoint {checkpoint.checkpoint_id} was written by version {version[:12]} of "
            f"{workflow_name!r}, which is no longer registered; migrate the run to the "
            "deployed version from this checkpoint instead"
        )
    return version


def run_fork(
    run_id: RunId,
    *,
    checkpoint_id: str,
    user: Actor = None,
    state: dict[str, Any] | None = None,
    executor_states: dict[str, dict[str, Any]] | None = None,
) -> WorkflowRun:
    """A new run that starts from a checkpoint of this one, optionally with edited shared
    state and executor states (given as the checkpoint's JSON form; validated by decoding them
    before anything is saved)."""
    authz.require(user, "fork", target=f"run {run_id} from {checkpoint_id}")
    validation.require_storable(state, field="state")
    validation.require_storable(executor_states, field="executor_states")
    with transaction.atomic():
        origin = locked_run(run_id)
        checkpoint = _checkpoint_of(origin, checkpoint_id)
        version = _ensure_same_graph(origin.workflow_name, checkpoint)
        edited = _edited_checkpoint(checkpoint, state, executor_states)
        fork = WorkflowRun.objects.create(
            workflow_name=origin.workflow_name,
            input=origin.input,
            parent_run=origin,
            origin_checkpoint_id=checkpoint.checkpoint_id,
            created_by=user if is_user(user) else None,
            engine_run_id=edited.run_id,
            current_superstep=edited.iteration_count,
            output=output_at(origin, checkpoint),
            graph_version=version,
        )
        fork = WorkflowRun.objects.select_for_update().get(pk=fork.pk)
        row = save_split(split_checkpoint(edited), run_id=fork.pk, trust_known_blobs=False)
        fork.latest_checkpoint = row
        fork.save()
        # A fork of a paused checkpoint waits for decisions of its own, and its worker saves no
        # new checkpoint that would raise them: raise the pending requests on its lineage now.
        for spec in _approval_specs(fork.pk, edited):
            approvals.approval_opened(ApprovalRequest.objects.create(**spec, run=fork, checkpoint=row), fork)
            transaction.on_commit(broadcast.broadcast_approvals_changed, robust=True)
        record_events(
            fork,
            [run_events.run_status(RunStatus.QUEUED, by=username(user), action="fork",
                           parent_run=str(origin.pk), checkpoint_id=checkpoint.checkpoint_id,
                           edited=bool(state is not None or executor_states is not None))],
        )
        record_events(
            origin, [run_events.run_forked(str(fork.pk), checkpoint.checkpoint_id, username(user))]
        )
        audit.record(user, "fork", run=fork, target=f"fork of run {origin.pk}",
                     checkpoint_before=checkpoint.checkpoint_id, checkpoint_after=row.checkpoint_id,
                     details={"origin_run": str(origin.pk),
                              "edited": sorted(k for k, v in (("state", state), ("executor_states", executor_states)) if v is not None)})
        enqueue(fork)
    return fork


def _edited_checkpoint(
    checkpoint: Checkpoint,
    state: dict[str, Any] | None,
    executor_states: dict[str, dict[str, Any]] | None,
) -> WorkflowCheckpoint:
    from dashboard.checkpoints.storage import DjangoCheckpointStorage

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
        timestamp=now().isoformat(),
        metadata={"kind": "fork", "forked_from": checkpoint.checkpoint_id},
    )
    try:
        edited = WorkflowCheckpoint.from_dict(doc)
        split_checkpoint(edited)  # and it must be storable again
    except (CheckpointDecodeError, CheckpointEncodeError) as exc:
        field = "executor_states" if executor_states is not None else "state"
        raise InvalidInput(f"the edited state cannot be restored: {exc}", errors={field: str(exc)}) from None
    return edited




def run_hold(run_id: RunId, *, user: Actor = None, hold: bool = True, reason: str = "") -> WorkflowRun:
    """Put a run (and so every checkpoint of it) on legal hold, or release it; retention never
    deletes what is held."""
    action = "hold" if hold else "release"
    authz.require(user, action, target=f"run {run_id}")
    validation.require_storable(reason, field="reason")
    with transaction.atomic():
        run = locked_run(run_id)
        if run.on_hold == hold:
            raise Conflict(f"run {run.pk} is {'already' if hold else 'not'} on hold")
        run.on_hold, run.hold_reason = hold, (reason or "")[:500] if hold else ""
        run.save(update_fields=["on_hold", "hold_reason", "updated_at"])
        record_events(run, [run_events.run_hold(hold, username(user), reason)])
        audit.record(user, action, run=run, target=f"run {run.pk}", details={"reason": reason})
    return run
