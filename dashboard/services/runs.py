"""Operator actions on runs: start, cancel, retry, resume, fork, hold."""

from __future__ import annotations

import dataclasses
import functools
import json
import typing
import uuid
from typing import Any

from django.db import transaction
from pydantic import TypeAdapter, ValidationError

from dashboard import broadcast, catalog
from dashboard.access import audit, authz, masking
from dashboard.checkpoints import documents
from dashboard.checkpoints.writes import save_split
from dashboard.core import run_events
from dashboard.core.errors import Conflict, InvalidInput, NotFound
from dashboard.core.types import Actor, RunId, is_user, username
from dashboard.models import (
    TERMINAL_RUN_STATUSES,
    ApprovalRequest,
    ApprovalStatus,
    Checkpoint,
    RunEvent,
    RunStatus,
    Schedule,
    WorkflowRun,
)
from dashboard.services import approvals, validation
from dashboard.services.common import (
    ACTIVE_STATUSES,
    enqueue,
    locked_run,
    now,
    record_events,
    set_status,
)
from dashboard.services.execution import _approval_specs
from workflows import (
    CheckpointDecodeError,
    CheckpointEncodeError,
    Workflow,
    WorkflowCheckpoint,
    WorkflowMessage,
)
from workflows.storage import decode, encode, split_checkpoint

__all__ = [
    "fork_check",
    "output_at",
    "run_cancel",
    "run_fork",
    "run_hold",
    "run_resume",
    "run_retry",
    "run_start",
    "start_input",
]

# How deep the type check of an edited value looks for dataclasses (the codec refuses deeper).
_MAX_DEPTH = 200


def run_start(
    *, workflow_name: str, input: object, user: Actor = None, schedule: Schedule | None = None
) -> WorkflowRun:
    """Queue a new run of a registered workflow (``schedule``: the schedule starting it).

    Raises:
        InvalidInput: unknown workflow (``errors["workflow"]``) or input that does not fit the
            start executor's type (one message per field).
    """
    authz.require(user, "start", workflow=workflow_name, target=f"workflow {workflow_name}")
    stored = start_input(workflow_name, input, stored=schedule is not None)
    with transaction.atomic():
        run = WorkflowRun.objects.create(
            workflow_name=workflow_name,
            input=stored,
            created_by=user if is_user(user) else None,
            engine_run_id=uuid.uuid4().hex,
            graph_version=catalog.current_version(workflow_name),
            schedule=schedule,
        )
        run = WorkflowRun.objects.select_for_update().get(pk=run.pk)
        record_events(run, [run_events.run_status(RunStatus.QUEUED, by=username(user))])
        shown = masking.for_run(run).input(stored)
        details = {"input": shown, **({"schedule": schedule.name} if schedule else {})}
        audit.record(user, "start", run=run, target=f"run {run.pk}", details=details)
        enqueue(run)
    return run


def start_input(workflow_name: str, input: object, *, stored: bool = False) -> object:
    """``input`` checked against the workflow's start type, as the JSON a run stores.

    Fields the type does not have are refused (pydantic would drop them silently), unless
    the input is ``stored``: a schedule's, checked when it was saved, whose workflow may
    have dropped a field since; it still starts, as it did before fields were checked.

    Raises:
        InvalidInput: unknown workflow (``errors["workflow"]``) or input that does not fit the
            start executor's type (one message per field, unknown fields named).
    """
    if workflow_name not in catalog.names():
        raise InvalidInput(
            f"unknown workflow {workflow_name!r}", errors={"workflow": "unknown workflow"}
        )
    start_type = catalog.input_type(workflow_name)
    try:
        typed = catalog.validate_value(start_type, input, known_fields_only=not stored)
        encode(typed, where="run input")  # the engine must be able to checkpoint it
        stored_input = catalog.to_json(start_type, typed)
    except catalog.InputError as exc:
        raise InvalidInput(
            exc.summary("the input", "the input does not fit the workflow"), errors=exc.errors
        ) from None
    except CheckpointEncodeError as exc:
        raise InvalidInput(str(exc), errors={"input": str(exc)}) from None
    # After coercion: "NaN" is a valid float to the type, and no database stores it.
    validation.require_storable(stored_input)
    return stored_input


def run_cancel(run_id: RunId, *, user: Actor = None, reason: str = "") -> WorkflowRun:
    """Stop a queued, running or waiting run; its pending approvals are cancelled too.
    ``reason``: why, kept in the run's history and the audit log."""
    authz.require_for_run(user, "cancel", run_id, target=f"run {run_id}")
    with transaction.atomic():
        run = locked_run(run_id)
        if run.status in TERMINAL_RUN_STATUSES:
            raise Conflict(f"run {run.pk} is already {run.status}")
        reason = validation.reason_for("cancel a run", reason, user=user)
        run.lease_owner, run.lease_expires_at = "", None
        set_status(run, RunStatus.CANCELLED)
        run.save()
        _cancel_pending_approvals(run)
        record_events(
            run,
            [run_events.run_status(RunStatus.CANCELLED, by=username(user), reason=reason or None)],
        )
        audit.record(
            user,
            "cancel",
            run=run,
            target=f"run {run.pk}",
            checkpoint_before=run.latest_checkpoint_id,
            checkpoint_after=run.latest_checkpoint_id,
            details={"reason": reason} if reason else None,
        )
        transaction.on_commit(lambda: broadcast.broadcast_run_changed(run.pk), robust=True)
    return run


def _cancel_pending_approvals(run: WorkflowRun) -> None:
    changed = ApprovalRequest.objects.filter(run=run, status=ApprovalStatus.PENDING).update(
        status=ApprovalStatus.CANCELLED, decided_at=now()
    )
    if changed:
        transaction.on_commit(broadcast.broadcast_approvals_changed, robust=True)


def run_retry(run_id: RunId, *, user: Actor = None, reason: str = "") -> WorkflowRun:
    """Run a failed run again from its latest checkpoint (or from its input if it has none)."""
    authz.require_for_run(user, "retry", run_id, target=f"run {run_id}")
    with transaction.atomic():
        run = locked_run(run_id)
        if run.status != RunStatus.FAILED:
            raise Conflict(f"only a failed run can be retried; run {run.pk} is {run.status}")
        _ensure_registered(run.workflow_name)
        reason = validation.reason_for("retry a run", reason, user=user)
        set_status(
            run,
            RunStatus.QUEUED,
            attempts=0,
            lost_workers=0,
            error_type="",
            error_message="",
            traceback="",
        )
        run.save()
        record_events(
            run,
            [
                run_events.run_status(
                    RunStatus.QUEUED, by=username(user), action="retry", reason=reason or None
                )
            ],
        )
        audit.record(
            user,
            "retry",
            run=run,
            target=f"run {run.pk}",
            checkpoint_before=run.latest_checkpoint_id,
            checkpoint_after=run.latest_checkpoint_id,
            details={"reason": reason} if reason else None,
        )
        enqueue(run)
    return run


def _checkpoint_of(run: WorkflowRun, checkpoint_id: str) -> Checkpoint:
    checkpoint = Checkpoint.objects.filter(checkpoint_id=checkpoint_id, run=run).first()
    if checkpoint is None:
        raise NotFound(f"run {run.pk} has no checkpoint {checkpoint_id!r}")
    return checkpoint


def run_resume(
    run_id: RunId, *, checkpoint_id: str, user: Actor = None, reason: str = ""
) -> WorkflowRun:
    """Continue the run from one of its checkpoints, as a new branch of its history.

    Supersteps after that checkpoint run again; the branch gets its own lineage id, so requests
    re-raised on it are new approval requests. Refused while the run is queued or running.
    The run keeps the output it had at that checkpoint (see ``output_at``) until the branch
    yields one of its own.
    """
    authz.require_for_run(user, "resume", run_id, target=f"run {run_id} from {checkpoint_id}")
    with transaction.atomic():
        run = locked_run(run_id)
        before = run.latest_checkpoint_id
        if run.status in ACTIVE_STATUSES:
            raise Conflict(f"run {run.pk} is {run.status}; cancel it first or wait for it")
        checkpoint = _checkpoint_of(run, checkpoint_id)
        version = _ensure_same_graph(run.workflow_name, checkpoint)
        reason = validation.reason_for("resume a run", reason, user=user)
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
            [
                run_events.run_status(
                    RunStatus.QUEUED,
                    by=username(user),
                    action="resume",
                    checkpoint_id=checkpoint.checkpoint_id,
                    superstep=checkpoint.superstep,
                    reason=reason or None,
                )
            ],
        )
        audit.record(
            user,
            "resume",
            run=run,
            target=f"run {run.pk}",
            checkpoint_before=before,
            checkpoint_after=checkpoint.checkpoint_id,
            details={"reason": reason} if reason else None,
        )
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
        RunEvent.objects.filter(
            run=run,
            type__in=("superstep_completed", "checkpoint"),
            data__checkpoint_id=checkpoint_id,
        )
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
    if workflow_name not in catalog.names():
        raise Conflict(
            f"workflow {workflow_name!r} is not registered any more; register it again to "
            "continue its runs"
        )


def _ensure_same_graph(workflow_name: str, checkpoint: Checkpoint) -> str:
    """The registered version that wrote ``checkpoint`` (the current one or one kept side by
    side), which a resume or fork of it executes on."""
    _ensure_registered(workflow_name)
    version = checkpoint.graph_signature_hash
    if version not in catalog.versions(workflow_name):
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
    messages: list[dict[str, Any]] | None = None,
    reason: str = "",
) -> WorkflowRun:
    """A new run that starts from a checkpoint of this one, optionally with edited shared
    state, executor states and messages in flight (each given as the checkpoint document's
    JSON form and replacing that part; ``messages`` is its flat list of ``source``, ``target``,
    ``kind``, ``data``). Edits are checked before anything is saved: each changed value must
    decode, its dataclasses must fit their field types, and each changed message must still be
    taken by a handler. See ``fork_check``.

    Raises:
        InvalidInput: an edit that does not pass those checks, one message per path
            (``state.<key>``, ``executor_states.<executor>.<key>``, ``messages.<n>.data``,
            deeper for a dataclass field).
        NotFound, Conflict: no such run or checkpoint; the checkpoint's graph is not registered.
    """
    authz.require_for_run(user, "fork", run_id, target=f"run {run_id} from {checkpoint_id}")
    _require_storable_edits(state, executor_states, messages)
    with transaction.atomic():
        origin = locked_run(run_id)
        checkpoint = _checkpoint_of(origin, checkpoint_id)
        version = _ensure_same_graph(origin.workflow_name, checkpoint)
        state, executor_states, messages = _unmasked_edits(
            origin, checkpoint, user, state, executor_states, messages
        )
        edited = _edited_checkpoint(
            origin.workflow_name, checkpoint, state, executor_states, messages
        )
        reason = validation.reason_for("fork a run", reason, user=user)
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
        for spec in _approval_specs(fork.pk, edited, fork.workflow_name):
            approvals.approval_opened(
                ApprovalRequest.objects.create(**spec, run=fork, checkpoint=row), fork
            )
            transaction.on_commit(broadcast.broadcast_approvals_changed, robust=True)
        edits = {"state": state, "executor_states": executor_states, "messages": messages}
        record_events(
            fork,
            [
                run_events.run_status(
                    RunStatus.QUEUED,
                    by=username(user),
                    action="fork",
                    parent_run=str(origin.pk),
                    checkpoint_id=checkpoint.checkpoint_id,
                    edited=any(v is not None for v in edits.values()),
                    reason=reason or None,
                )
            ],
        )
        record_events(
            origin, [run_events.run_forked(str(fork.pk), checkpoint.checkpoint_id, username(user))]
        )
        audit.record(
            user,
            "fork",
            run=fork,
            target=f"fork of run {origin.pk}",
            checkpoint_before=checkpoint.checkpoint_id,
            checkpoint_after=row.checkpoint_id,
            details={
                "origin_run": str(origin.pk),
                "edited": sorted(k for k, v in edits.items() if v is not None),
                **({"reason": reason} if reason else {}),
            },
        )
        enqueue(fork)
    return fork


def fork_check(
    run_id: RunId,
    *,
    checkpoint_id: str,
    user: Actor = None,
    state: dict[str, Any] | None = None,
    executor_states: dict[str, dict[str, Any]] | None = None,
    messages: list[dict[str, Any]] | None = None,
) -> None:
    """Whether ``run_fork`` with the same arguments would accept the edits, without forking
    (nothing is written): the fork editor asks before its confirmation opens.

    Raises:
        InvalidInput, NotFound, Conflict, Forbidden: as ``run_fork`` would.
    """
    authz.require_for_run(user, "fork", run_id, target=f"run {run_id} from {checkpoint_id}")
    _require_storable_edits(state, executor_states, messages)
    origin = WorkflowRun.objects.filter(pk=run_id).first()
    if origin is None:
        raise NotFound(f"no run with id {run_id}")
    checkpoint = _checkpoint_of(origin, checkpoint_id)
    _ensure_same_graph(origin.workflow_name, checkpoint)
    state, executor_states, messages = _unmasked_edits(
        origin, checkpoint, user, state, executor_states, messages
    )
    _edited_checkpoint(origin.workflow_name, checkpoint, state, executor_states, messages)


type _Edits = tuple[
    dict[str, Any] | None, dict[str, dict[str, Any]] | None, list[dict[str, Any]] | None
]


def _unmasked_edits(
    origin: WorkflowRun,
    checkpoint: Checkpoint,
    user: Actor,
    state: dict[str, Any] | None,
    executor_states: dict[str, dict[str, Any]] | None,
    messages: list[dict[str, Any]] | None,
) -> _Edits:
    """The edits with each mask the editor showed (``access.masking``) put back to its value.

    Someone who may not see a workflow's sensitive fields may not change them either: an
    edit that changes or drops one is refused, naming it. Those who may see them may edit
    them like any other field.

    Raises:
        InvalidInput: a masked field changed by someone who may not see it.
    """
    masker = masking.for_run(origin)
    if not masker.active or (state is None and executor_states is None and messages is None):
        return state, executor_states, messages
    raw = documents.checkpoint_document(checkpoint)
    masker.document(raw)
    restored = (
        masker.restore(state, "$.state") if state is not None else None,
        masker.restore(executor_states, "$.executors") if executor_states is not None else None,
        masker.restore(messages, "$.messages") if messages is not None else None,
    )
    if authz.can(user, "reveal", origin.workflow_name):
        return restored
    after = masking.for_run(origin)
    after.document(
        {
            **raw,
            **{
                part: value
                for part, value in zip(("state", "executor_states", "messages"), restored)
                if value is not None
            },
        }
    )
    changed = masking.changed_masks(masker.found, after.found)
    if changed:
        raise InvalidInput(
            "a sensitive field was changed",
            errors={
                _fork_path(path): "is sensitive and you may not see it, so it cannot be "
                "changed here: leave its mask as it is"
                for path in changed
            },
        )
    return restored


def _fork_path(path: str) -> str:
    """A masking path (``$.executors.billing.card``) as the fork's error paths name it
    (``executor_states.billing.card``)."""
    path = path.removeprefix("$.")
    return (
        "executor_states" + path.removeprefix("executors") if path.startswith("executors") else path
    )


def _require_storable_edits(state: Any, executor_states: Any, messages: Any) -> None:
    validation.require_storable(state, field="state")
    validation.require_storable(executor_states, field="executor_states")
    validation.require_storable(messages, field="messages")


def _edited_checkpoint(
    name: str,
    checkpoint: Checkpoint,
    state: dict[str, Any] | None,
    executor_states: dict[str, dict[str, Any]] | None,
    messages: list[dict[str, Any]] | None = None,
) -> WorkflowCheckpoint:
    """The fork's first checkpoint: ``checkpoint`` with the edits, a new lineage and id.
    Only what changed is checked (decoded, typed, routed): the rest was restorable already."""
    from dashboard.checkpoints.storage import DjangoCheckpointStorage

    source = DjangoCheckpointStorage().decode(checkpoint.document)
    doc = source.to_dict()
    # The graph that wrote the checkpoint (a version kept side by side, maybe): its executors
    # and handlers are what the fork runs on, and building it registers its types. ``name``
    # is the run's registered name: the engine's own may differ (every sequential
    # orchestration calls itself "Sequential").
    version = checkpoint.graph_signature_hash
    current = version == catalog.current_version(name)
    workflow = catalog.describe(name) if current else catalog.build(name, version=version)
    errors: dict[str, str] = {}
    if catalog.is_functional(name):
        # Its steps' results live in its state: there are no executors nor messages to edit.
        for field, value in (("executor_states", executor_states), ("messages", messages)):
            if value is not None:
                errors[field] = f"a functional workflow has no {field.replace('_', ' ')}"
        if errors:
            raise InvalidInput("the edited checkpoint is not valid", errors=errors)
    if state is not None:
        if not isinstance(state, dict):
            errors["state"] = "shared state must be a JSON object"
        else:
            errors.update(_value_problems("state", state, doc["state"]))
            doc["state"] = state
    if executor_states is not None:
        unknown = (
            set(executor_states) - set(workflow.executors)
            if isinstance(executor_states, dict)
            else set()
        )
        if not isinstance(executor_states, dict) or not all(
            isinstance(v, dict) for v in executor_states.values()
        ):
            errors["executor_states"] = "executor states must be an object of objects"
        elif unknown:
            errors["executor_states"] = f"unknown executors: {sorted(unknown)}"
        else:
            for eid, saved in executor_states.items():
                before = doc["executor_states"].get(eid, {})
                errors.update(_value_problems(f"executor_states.{eid}", saved, before))
            doc["executor_states"] = executor_states
    if messages is not None:
        errors.update(_message_problems(messages, doc["messages"], workflow))
        doc["messages"] = messages
    if errors:
        raise InvalidInput("the edited checkpoint is not valid", errors=errors)
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
        edits = (("state", state), ("executor_states", executor_states), ("messages", messages))
        field = next((name for name, value in edits if value is not None), "state")
        raise InvalidInput(
            f"the edited state cannot be restored: {exc}", errors={field: str(exc)}
        ) from None
    return edited


def _same(a: Any, b: Any) -> bool:
    # Not ==: True == 1 == 1.0 in Python, and a bool edited into an int field must be checked.
    return json.dumps(a, sort_keys=True) == json.dumps(b, sort_keys=True)


def _value_problems(prefix: str, edited: dict[str, Any], before: dict[str, Any]) -> dict[str, str]:
    """Why the values of ``edited`` that differ from ``before`` cannot be restored, by path."""
    found: dict[str, str] = {}
    for key, value in edited.items():
        if key in before and _same(before[key], value):
            continue
        path = f"{prefix}.{key}"
        try:
            found.update(_type_problems(decode(value), path))
        except CheckpointDecodeError as exc:
            found[path] = str(exc)
    return found


def _message_problems(messages: Any, before: list[Any], workflow: Workflow) -> dict[str, str]:
    """Each changed message must decode and still be taken where it goes, as the type the
    handler declares (``route`` would drop it with a warning otherwise: lost work)."""
    if not isinstance(messages, list) or not all(isinstance(m, dict) for m in messages):
        return {"messages": "messages must be a list of objects"}
    found: dict[str, str] = {}
    for index, raw in enumerate(messages):
        if index < len(before) and _same(before[index], raw):
            continue
        path = f"messages.{index}"
        try:
            decode(raw.get("data"))
            message = WorkflowMessage.from_dict(raw)
        except CheckpointDecodeError as exc:
            found[f"{path}.data" if "data" in raw else path] = str(exc)
            continue
        declared, problem = _delivery(message, workflow)
        if problem:
            found[f"{path}.data"] = problem
            continue
        if declared is not None:
            found.update(_fit(declared, message.data, f"{path}.data"))
        found.update(_type_problems(message.data, f"{path}.data"))
    return found


def _delivery(message: WorkflowMessage, workflow: Workflow) -> tuple[Any, str]:
    """(the type the receiving handler declares, or None; why nothing would take it, or "")."""
    executors = workflow.executors
    kind = type(message.data).__name__
    if message.kind == "response" or message.source_id.startswith("internal:"):
        target = executors.get(message.target_id or "")
        if target is None:
            return None, f"there is no executor {message.target_id!r} to deliver it to"
        return None, "" if target.can_handle(message) else f"{target.id} does not take a {kind}"
    receivers: list[str] = []
    for group in workflow.edge_groups:
        if group.kind == "internal" or message.source_id not in group.sources:
            continue
        for target_id in group.targets:
            if message.target_id is None or target_id == message.target_id:
                if group.kind == "fan_in":
                    return None, ""  # buffered for a list of them: the fan-in's handler decides
                receivers.append(target_id)
    for target_id in receivers:
        found = executors[target_id].find_handler(message.data)
        if found is not None:
            return found[0].message_type, ""
    takes = "; ".join(
        f"{t} takes {', '.join(catalog.type_label(s) for s in executors[t].input_types)}"
        for t in receivers
    )
    return None, f"nothing it goes to takes a {kind}" + (f" ({takes})" if takes else "")


def _type_problems(value: Any, path: str, depth: int = 0) -> dict[str, str]:
    """Every dataclass inside ``value`` against its field types: the codec builds dataclasses
    without checking them (pydantic models were validated as they were decoded)."""
    found: dict[str, str] = {}
    if depth > _MAX_DEPTH:
        return found
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        types = _field_types(type(value))
        for item in dataclasses.fields(value):
            child, where = getattr(value, item.name), f"{path}.{item.name}"
            if item.name in types:
                found.update(_fit(types[item.name], child, where))
            found.update(_type_problems(child, where, depth + 1))
    elif isinstance(value, dict):
        for key, child in value.items():
            found.update(_type_problems(child, f"{path}.{key}", depth + 1))
    elif isinstance(value, list | tuple | set | frozenset):
        for index, child in enumerate(value):
            found.update(_type_problems(child, f"{path}.{index}", depth + 1))
    return found


def _field_types(cls: type) -> dict[str, Any]:
    try:
        return typing.get_type_hints(cls, include_extras=True)
    except Exception:  # noqa: BLE001 - an annotation that does not resolve here: the codec's word stands
        return {}


def _fit(annotation: Any, value: Any, path: str) -> dict[str, str]:
    """Pydantic's messages, by path, for ``value`` against ``annotation``: strict, since a
    decoded value is already of its type (a string in an int field is an error, not "3")."""
    try:
        adapter = _strict_adapter(annotation)
    except Exception:  # noqa: BLE001 - a type pydantic cannot check (an arbitrary class)
        return {}
    try:
        adapter.validate_python(value, strict=True)
    except ValidationError as exc:
        found: dict[str, str] = {}
        for error in exc.errors():
            found.setdefault(".".join([path, *map(str, error["loc"])]), error["msg"])
        return found
    return {}


@functools.lru_cache(maxsize=256)
def _cached_adapter(annotation: Any) -> TypeAdapter[Any]:
    return TypeAdapter(annotation)


def _strict_adapter(annotation: Any) -> TypeAdapter[Any]:
    try:
        return _cached_adapter(annotation)
    except TypeError:  # an unhashable annotation (some Annotated metadata): not cached
        return TypeAdapter(annotation)


def run_hold(
    run_id: RunId, *, user: Actor = None, hold: bool = True, reason: str = ""
) -> WorkflowRun:
    """Put a run (and so every checkpoint of it) on legal hold, or release it; retention never
    deletes what is held."""
    action = "hold" if hold else "release"
    authz.require_for_run(user, action, run_id, target=f"run {run_id}")
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
