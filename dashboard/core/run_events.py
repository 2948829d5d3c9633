"""Run events, declared once: every type a run's event log holds and what its data carries.

A run's log (``RunEvent``: a type plus JSON data) mixes two sources:

* the engine's events, as the worker received them (``WorkflowEvent.to_dict()``); their types
  and payloads are the engine's catalogue, ``workflows.EVENT_KINDS``;
* the dashboard's own: a run queued, recovered, forked, held; a request decided; checkpoints
  pruned. Services build them only through the constructors below, so a payload's keys are
  declared here and nowhere else.

``RUN_EVENT_KINDS`` describes both for the readers: the event-log renderer (``web/events.py``)
takes each type's tone and whether its data says more than its line, the live updates and the
API pass the types through unchanged.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from types import MappingProxyType
from typing import Literal, TypedDict

from workflows import EVENT_KINDS, CheckpointKind

__all__ = [
    "RUN_EVENT_KINDS",
    "ApprovalDecided",
    "ApprovalOverdue",
    "ApprovalOverride",
    "ApprovalVote",
    "CheckpointMarker",
    "CheckpointsPruned",
    "ModelCall",
    "RunEventKind",
    "RunForked",
    "RunHold",
    "RunMigrated",
    "RunRecovered",
    "RunRequeued",
    "RunStatusChanged",
    "Tone",
    "approval_decided",
    "approval_overdue",
    "approval_override",
    "approval_vote",
    "checkpoint_marker",
    "checkpoints_pruned",
    "model_call",
    "run_forked",
    "run_hold",
    "run_migrated",
    "run_recovered",
    "run_requeued",
    "run_status",
]

Tone = Literal["", "success", "danger", "warning", "info"]


@dataclasses.dataclass(frozen=True)
class RunEventKind:
    """One type of the event log.

    Attributes:
        type: the stored ``RunEvent.type``.
        summary: what it records, in a few words.
        tone: the badge colour the log gives it ("" for none; ``run_status`` picks per status).
        plain: its data is exactly what its one line says (no "Data" toggle in the log).
        engine: it comes from the engine (``workflows.EVENT_KINDS``), not from a service.
    """

    type: str
    summary: str
    tone: Tone = ""
    plain: bool = False
    engine: bool = False


# --------------------------------------------------------------------------- the payloads


class _RunStatusRequired(TypedDict):
    type: Literal["run_status"]
    status: str


class RunStatusChanged(_RunStatusRequired, total=False):
    # total=False rather than NotRequired: postponed annotations hide NotRequired from
    # TypedDict's own bookkeeping (__required_keys__).
    by: str
    action: str  # "retry", "resume", "fork", "approval"
    superstep: int
    attempt: int
    worker: str
    reason: str
    parent_run: str
    checkpoint_id: str
    edited: bool


class ModelCall(TypedDict):
    """An agent's reply finished: who asked which model, and what it cost. ``cost`` is the
    decimal text in the price table's currency, None when the model has no price."""

    type: Literal["model_call"]
    executor_id: str
    model: str
    input_tokens: int
    output_tokens: int
    cost: str | None
    at: float
    # The superstep whose checkpoint committed the call: None until that checkpoint is saved
    # (and absent from calls recorded before it was).
    iteration: int | None


class RunRecovered(TypedDict):
    type: Literal["run_recovered"]
    attempt: int
    worker: str


class RunRequeued(TypedDict):
    type: Literal["run_requeued"]
    reason: str


class RunForked(TypedDict):
    type: Literal["run_forked"]
    fork: str
    checkpoint_id: str
    by: str | None  # None: the system


class RunHold(TypedDict):
    type: Literal["run_hold", "run_released"]
    by: str | None  # None: the system
    reason: str


class RunMigrated(TypedDict):
    """The run moved onto another version of its workflow: from one of its checkpoints to a
    new checkpoint of the new graph (``checkpoint_id``)."""

    type: Literal["run_migrated"]
    from_version: str
    to_version: str
    checkpoint_id: str
    from_checkpoint_id: str
    changes: str
    discarded: list[str]
    by: str | None  # None: the worker, for a change the new graph carries


class ApprovalVote(TypedDict):
    type: Literal["approval_vote"]
    request_id: str
    by: str
    approve: bool
    approvals: int
    required: int


class ApprovalDecided(TypedDict):
    type: Literal["approval_decided"]
    request_id: str
    decision: str
    by: str
    reason: str


class ApprovalOverdue(TypedDict):
    type: Literal["approval_overdue"]
    request_id: str


class ApprovalOverride(TypedDict):
    type: Literal["approval_override"]
    request_id: str
    by: str
    decision: str  # "approve" or "reject"
    rule: str  # the refusal the override lifted
    reason: str


class CheckpointsPruned(TypedDict):
    type: Literal["checkpoints_pruned"]
    count: int
    policy: str
    at: str


class CheckpointMarker(TypedDict):
    """A checkpoint committed: ``superstep_completed`` after a superstep, ``checkpoint`` for
    the others (entry, answers, fork), with its ``kind`` (``workflows.CheckpointKind``)."""

    type: Literal["superstep_completed", "checkpoint"]
    kind: str
    iteration: int
    checkpoint_id: str
    size_bytes: int
    pending_requests: int


# ------------------------------------------------------------------------ the constructors


def run_status(
    status: str,
    *,
    by: str | None = None,
    action: str | None = None,
    superstep: int | None = None,
    attempt: int | None = None,
    worker: str | None = None,
    reason: str | None = None,
    parent_run: str | None = None,
    checkpoint_id: str | None = None,
    edited: bool | None = None,
) -> RunStatusChanged:
    event: RunStatusChanged = {"type": "run_status", "status": str(status)}
    # Only what was said is stored: the log line reads the keys that are there.
    if by is not None:
        event["by"] = by
    if action is not None:
        event["action"] = action
    if superstep is not None:
        event["superstep"] = superstep
    if attempt is not None:
        event["attempt"] = attempt
    if worker is not None:
        event["worker"] = worker
    if reason is not None:
        event["reason"] = reason
    if parent_run is not None:
        event["parent_run"] = parent_run
    if checkpoint_id is not None:
        event["checkpoint_id"] = checkpoint_id
    if edited is not None:
        event["edited"] = edited
    return event


def run_recovered(attempt: int, worker: str) -> RunRecovered:
    return {"type": "run_recovered", "attempt": attempt, "worker": worker}


def run_requeued(reason: str) -> RunRequeued:
    return {"type": "run_requeued", "reason": reason}


def run_forked(fork: str, checkpoint_id: str, by: str | None) -> RunForked:
    return {"type": "run_forked", "fork": fork, "checkpoint_id": checkpoint_id, "by": by}


def run_hold(hold: bool, by: str | None, reason: str) -> RunHold:
    return {"type": "run_hold" if hold else "run_released", "by": by, "reason": reason}


def run_migrated(
    *,
    from_version: str,
    to_version: str,
    checkpoint_id: str,
    from_checkpoint_id: str,
    changes: str,
    discarded: list[str],
    by: str | None,
) -> RunMigrated:
    return {
        "type": "run_migrated",
        "from_version": from_version,
        "to_version": to_version,
        "checkpoint_id": checkpoint_id,
        "from_checkpoint_id": from_checkpoint_id,
        "changes": changes,
        "discarded": discarded,
        "by": by,
    }


def approval_vote(
    request_id: str, by: str, approve: bool, approvals: int, required: int
) -> ApprovalVote:
    return {
        "type": "approval_vote",
        "request_id": request_id,
        "by": by,
        "approve": approve,
        "approvals": approvals,
        "required": required,
    }


def approval_decided(request_id: str, decision: str, by: str, reason: str) -> ApprovalDecided:
    return {
        "type": "approval_decided",
        "request_id": request_id,
        "decision": decision,
        "by": by,
        "reason": reason,
    }


def approval_overdue(request_id: str) -> ApprovalOverdue:
    return {"type": "approval_overdue", "request_id": request_id}


def approval_override(
    request_id: str, by: str, decision: str, rule: str, reason: str
) -> ApprovalOverride:
    return {
        "type": "approval_override",
        "request_id": request_id,
        "by": by,
        "decision": decision,
        "rule": rule,
        "reason": reason,
    }


def model_call(
    executor_id: str,
    model: str,
    input_tokens: int,
    output_tokens: int,
    cost: str | None,
    at: float,
    iteration: int | None = None,
) -> ModelCall:
    return {
        "type": "model_call",
        "executor_id": executor_id,
        "model": model,
        "input_tokens": input_tokens,
        "output_tokens": output_tokens,
        "cost": cost,
        "at": at,
        "iteration": iteration,
    }


def checkpoints_pruned(count: int, policy: str, at: str) -> CheckpointsPruned:
    return {"type": "checkpoints_pruned", "count": count, "policy": policy, "at": at}


def checkpoint_marker(
    kind: str, iteration: int, checkpoint_id: str, size_bytes: int, pending_requests: int
) -> CheckpointMarker:
    return {
        "type": "superstep_completed" if kind == CheckpointKind.SUPERSTEP else "checkpoint",
        "kind": kind,
        "iteration": iteration,
        "checkpoint_id": checkpoint_id,
        "size_bytes": size_bytes,
        "pending_requests": pending_requests,
    }


# --------------------------------------------------------------------------- the catalogue

_DASHBOARD_KINDS = (
    RunEventKind("run_status", "the run changed status", plain=True),
    RunEventKind("run_recovered", "another worker took the run over", "warning"),
    RunEventKind("run_requeued", "the run was queued again", "warning"),
    RunEventKind("run_forked", "a fork of the run was started", plain=True),
    RunEventKind("run_hold", "the run was put on hold", "warning"),
    RunEventKind("run_released", "the run was released from hold", "info"),
    RunEventKind("run_migrated", "the run moved to another version of its workflow", "warning"),
    RunEventKind("approval_vote", "an approver voted"),
    RunEventKind("approval_decided", "a request was decided"),
    RunEventKind("approval_overdue", "a request passed its deadline", "warning"),
    RunEventKind(
        "approval_override", "an administrator decided against an approval rule", "warning"
    ),
    RunEventKind("checkpoints_pruned", "retention deleted checkpoints"),
    RunEventKind("model_call", "an agent's model answered", "info"),
    RunEventKind("checkpoint", "a checkpoint other than a superstep's was committed", plain=True),
)

# How the log shows the engine's events; their meaning is the engine's catalogue.
_ENGINE_LOOK: Mapping[str, tuple[Tone, bool]] = {
    "started": ("", True),
    "status": ("", True),
    "superstep_started": ("", True),
    "superstep_completed": ("", True),
    "executor_invoked": ("", True),
    "executor_completed": ("", True),
    "executor_failed": ("danger", False),
    "failed": ("danger", False),
    "output": ("success", False),
    "intermediate": ("info", False),
    "request_info": ("warning", False),
    "warning": ("warning", False),
    "error": ("danger", False),
}

RUN_EVENT_KINDS: Mapping[str, RunEventKind] = MappingProxyType(
    {
        **{
            kind.type: RunEventKind(
                kind.type,
                kind.summary,
                _ENGINE_LOOK.get(kind.type, ("", False))[0],
                plain=_ENGINE_LOOK.get(kind.type, ("", False))[1],
                engine=True,
            )
            for kind in EVENT_KINDS.values()
        },
        **{kind.type: kind for kind in _DASHBOARD_KINDS},
    }
)
