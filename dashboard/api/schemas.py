"""The JSON API's request and response shapes, declared once: django-ninja validates bodies
against the ``*In`` schemas and publishes all of them in the OpenAPI document.

Request bodies are strict (``"true"`` is not a boolean, ``5`` is not a checkpoint id) and ignore
unknown keys, as the hand-written parsing did. Values whose shape depends on the workflow (a
run's input and output, a request's data, a checkpoint document) are any JSON value.
The ``*_out`` functions build the response objects from models.
"""

from __future__ import annotations

import datetime as dt
from typing import Annotated, Literal

from ninja import Schema
from pydantic import ConfigDict, Field, JsonValue

from dashboard import selectors, services
from dashboard.access import masking
from dashboard.models import (
    ApprovalRequest,
    ApprovalStatus,
    Checkpoint,
    RunEvent,
    RunStatus,
    WorkflowRun,
)

__all__ = [
    "ApprovalOut",
    "ApprovalsOut",
    "CheckpointDetailOut",
    "CheckpointOut",
    "CheckpointsOut",
    "RevealIn",
    "RevealedOut",
    "ClaimIn",
    "DecideIn",
    "ErrorOut",
    "EventOut",
    "EventsOut",
    "ForkIn",
    "HoldIn",
    "NoBodyIn",
    "PruneIn",
    "PruneReportOut",
    "PruneReportsOut",
    "ReasonIn",
    "ResumeIn",
    "RunErrorOut",
    "RunOut",
    "RunStartIn",
    "RunsOut",
    "WorkflowOut",
    "WorkflowsOut",
    "approval_out",
    "checkpoint_out",
    "event_out",
    "run_out",
]

JsonObject = dict[str, JsonValue]


class ErrorOut(Schema):
    """Every refusal: ``error`` says why; ``errors`` maps each offending field to its problem
    (present only when fields are to blame)."""

    error: str
    errors: dict[str, str] = Field(default_factory=dict)


class _Body(Schema):
    model_config = ConfigDict(strict=True, extra="ignore")


# ----------------------------------------------------------------------------- requests


class NoBodyIn(_Body):
    """No fields; any JSON object (or no body) is accepted."""


_REASON = Field("", description="why: required for a person (400 without)")


class ReasonIn(_Body):
    reason: str = _REASON


class RevealIn(_Body):
    path: str = Field(
        max_length=1000, description="the masked field's path, such as $.input.customer.email"
    )
    checkpoint_id: str = Field(
        default="",
        max_length=128,
        description="the checkpoint to read it from; empty for the run's input and output",
    )


class RunStartIn(_Body):
    workflow: str
    input: JsonValue = Field(default_factory=dict, description="the workflow's input_schema")


class ResumeIn(_Body):
    checkpoint_id: str
    reason: str = _REASON


class ForkIn(_Body):
    checkpoint_id: str
    reason: str = _REASON
    state: JsonObject | None = Field(
        None, description="replaces the checkpoint's state (codec JSON)"
    )
    executor_states: dict[str, JsonObject] | None = Field(
        None, description="replaces executors' states (codec JSON), by executor id"
    )
    messages: list[JsonObject] | None = Field(
        None,
        description="replaces the messages in flight: the checkpoint document's list, each with "
        "source, target, kind and data (codec JSON)",
    )


class MigrateIn(_Body):
    checkpoint_id: str | None = Field(
        None,
        description="the checkpoint to continue from on the deployed version (default: the latest)",
    )
    discard_unmatched: bool = Field(
        False, description="drop what the deployed version cannot carry instead of refusing (409)"
    )


class BulkMigrateIn(_Body):
    run_ids: list[Annotated[str, Field(max_length=64)]] = Field(min_length=1, max_length=1000)
    discard_unmatched: bool = False


class BulkMigrateOut(Schema):
    migrated: list[str]
    skipped: dict[str, str] = Field(description="run id -> why it was not migrated")


class HoldIn(_Body):
    hold: bool = True
    reason: str = ""


class DecideIn(_Body):
    decision: Literal["approve", "reject"]
    response: JsonValue = Field(None, description="fits the request's response_schema")
    reason: str = ""
    override: bool = Field(
        False,
        description=(
            "decide although an approval rule (no self-approval, an assignment) refuses you: "
            "administrators only (403 otherwise), with a reason (400 without), recorded in the "
            "audit log and the run's events; 409 when no rule refuses you"
        ),
    )


class ClaimIn(_Body):
    release: bool = False


class PruneIn(_Body):
    policy: str | None = Field(None, description="one policy by name; default: every enabled one")
    dry_run: bool = False


# ---------------------------------------------------------------------------- responses


class WorkflowOut(Schema):
    name: str
    description: str | None
    input_schema: JsonObject
    graph: JsonObject = Field(
        description="the graph's executors and edges; for a functional workflow "
        '{"kind": "functional", "name", "steps"}, the names of its steps'
    )


class WorkflowsOut(Schema):
    workflows: list[WorkflowOut]


class RunErrorOut(Schema):
    type: str
    message: str
    traceback: str


class RunOut(Schema):
    id: str
    workflow: str
    status: RunStatus
    input: JsonValue
    output: JsonValue
    error: RunErrorOut | None = Field(description="set when the run failed")
    current_superstep: int
    latest_checkpoint_id: str | None
    parent_run_id: str | None
    origin_checkpoint_id: str | None
    created_by: str | None
    created_at: dt.datetime
    started_at: dt.datetime | None
    finished_at: dt.datetime | None
    attempts: int
    last_event_seq: int
    on_hold: bool
    graph_version: str = Field(
        description="the graph signature hash of the version the run executes on"
    )
    migration_reason: str = Field(
        description=(
            "status needs_migration: what changed and what the deployed version cannot carry"
        )
    )
    trace_id: str | None = Field(
        description="the OpenTelemetry trace of the run's spans, when traced"
    )
    trace_url: str | None = Field(
        description="the run's trace in the tracing UI (SUPERSTEP_TRACE_URL)"
    )
    schedule_id: int | None = Field(None, description="the schedule that started the run")
    input_tokens: int = Field(0, description="tokens the run's agents sent to their models")
    output_tokens: int = Field(0, description="tokens the run's agents got from their models")
    cost: str = Field(
        "0", description="what those calls cost at the price table's prices, a decimal string"
    )


class RunsOut(Schema):
    runs: list[RunOut]


class CheckpointOut(Schema):
    id: str
    superstep: int
    previous_checkpoint_id: str | None
    lineage: str
    graph_signature_hash: str
    size_bytes: int
    pending_requests: int
    created_at: dt.datetime


class CheckpointsOut(Schema):
    checkpoints: list[CheckpointOut]


class CheckpointDetailOut(CheckpointOut):
    document: JsonObject = Field(description="the checkpoint decoded, blobs joined in")


class RevealedOut(Schema):
    path: str
    checkpoint_id: str
    value: JsonValue = Field(description="the field's value, as the checkpoint or run holds it")


class EventOut(Schema):
    seq: int
    type: str
    data: JsonValue
    created_at: dt.datetime


class EventsOut(Schema):
    events: list[EventOut]
    last_seq: int


class ApprovalOut(Schema):
    request_id: str
    run_id: str
    workflow: str
    checkpoint_id: str
    executor_id: str
    request_data: JsonValue
    response_type: str
    response_schema: JsonValue
    status: ApprovalStatus
    response: JsonValue
    reason: str
    decided_by: str | None
    decided_at: dt.datetime | None
    created_at: dt.datetime
    required_approvals: int
    claimed_by: str | None
    due_at: dt.datetime | None
    overdue: bool


class ApprovalsOut(Schema):
    approvals: list[ApprovalOut]


class PruneReportOut(Schema):
    policy: str
    dry_run: bool
    runs: int
    checkpoints: int
    bytes: int
    batches: int
    longest_transaction_seconds: float
    megabytes: float


class PruneReportsOut(Schema):
    reports: list[PruneReportOut]


# ------------------------------------------------------------------------------ builders


def run_out(run: WorkflowRun) -> RunOut:
    failed = run.status == RunStatus.FAILED
    return RunOut(
        id=str(run.pk),
        workflow=run.workflow_name,
        status=RunStatus(run.status),
        input=(masker := masking.for_run(run)).input(run.input),
        output=masker.output(run.output),
        error=RunErrorOut(type=run.error_type, message=run.error_message, traceback=run.traceback)
        if failed
        else None,
        current_superstep=run.current_superstep,
        latest_checkpoint_id=run.latest_checkpoint_id,
        parent_run_id=str(run.parent_run_id) if run.parent_run_id else None,
        origin_checkpoint_id=run.origin_checkpoint_id,
        created_by=run.created_by.get_username() if run.created_by else None,
        created_at=run.created_at,
        started_at=run.started_at,
        finished_at=run.finished_at,
        attempts=run.attempts,
        last_event_seq=run.last_event_seq,
        on_hold=run.on_hold,
        graph_version=run.graph_version,
        migration_reason=run.migration_reason,
        trace_id=run.trace_id or None,
        trace_url=selectors.trace_url(run.trace_id),
        schedule_id=run.schedule_id,
        input_tokens=run.input_tokens,
        output_tokens=run.output_tokens,
        cost=str(run.cost),
    )


def checkpoint_out(checkpoint: Checkpoint) -> CheckpointOut:
    return CheckpointOut(
        id=checkpoint.checkpoint_id,
        superstep=checkpoint.superstep,
        previous_checkpoint_id=checkpoint.previous_checkpoint_id,
        lineage=checkpoint.engine_run_id,
        graph_signature_hash=checkpoint.graph_signature_hash,
        size_bytes=checkpoint.size_bytes,
        pending_requests=checkpoint.pending_request_count,
        created_at=checkpoint.created_at,
    )


def event_out(event: RunEvent) -> EventOut:
    return EventOut(seq=event.seq, type=event.type, data=event.data, created_at=event.created_at)


def approval_out(approval: ApprovalRequest) -> ApprovalOut:
    return ApprovalOut(
        request_id=approval.request_id,
        run_id=str(approval.run_id),
        workflow=approval.run.workflow_name,
        checkpoint_id=approval.checkpoint_id,
        executor_id=approval.executor_id,
        request_data=approval.request_data,
        response_type=approval.response_type,
        response_schema=services.approval_response_schema(approval),
        status=ApprovalStatus(approval.status),
        response=masking.for_run(approval.run).response(approval.response, approval.response_type),
        reason=approval.reason,
        decided_by=approval.decided_by.get_username() if approval.decided_by else None,
        decided_at=approval.decided_at,
        created_at=approval.created_at,
        required_approvals=approval.required_approvals,
        claimed_by=approval.claimed_by.get_username() if approval.claimed_by else None,
        due_at=approval.due_at,
        overdue=approval.overdue_at is not None,
    )
