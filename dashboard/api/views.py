"""The JSON API's operations: start, inspect, resume, fork, cancel and retry runs; list, claim
and decide approvals; hold runs; prune checkpoints.

Each operation declares its parameters, body and every response it can give (schemas in
``schemas.py``), so the OpenAPI document served at ``/api/openapi.json`` is generated from this
code. Views parse and serialize; ``services`` and ``selectors`` do the rest. Authentication and
the checks every request gets are in ``auth.py``, the error format in ``errors.py``.
"""

from __future__ import annotations

import inspect
import uuid
from collections.abc import Callable
from typing import Any, Literal

from django.http import HttpRequest
from ninja import Router
from ninja.responses import Status
from ninja.signature.utils import get_path_param_names

from dashboard import catalog, selectors, services
from dashboard.access import masking
from dashboard.api.errors import MethodNotAllowed
from dashboard.api.schemas import (
    ApprovalOut,
    ApprovalsOut,
    BulkMigrateIn,
    BulkMigrateOut,
    CheckpointDetailOut,
    CheckpointsOut,
    ClaimIn,
    DecideIn,
    ErrorOut,
    EventsOut,
    ForkIn,
    HoldIn,
    MigrateIn,
    PruneIn,
    PruneReportOut,
    PruneReportsOut,
    ReasonIn,
    ResumeIn,
    RevealedOut,
    RevealIn,
    RunOut,
    RunsOut,
    RunStartIn,
    WorkflowOut,
    WorkflowsOut,
    approval_out,
    checkpoint_out,
    event_out,
    run_out,
)
from dashboard.checkpoints.storage import DjangoCheckpointStorage
from dashboard.models import ApprovalStatus, RunStatus, WorkflowRun
from dashboard.services import amounts

__all__ = ["MAX_LIMIT", "refuse_other_methods", "router"]

MAX_LIMIT = 200
router = Router()


def refusals(*statuses: int) -> dict[int, type[ErrorOut]]:
    """The error responses an operation documents: every one may answer 400 (a NUL character
    in the query), 401 and 403, plus ``statuses`` (413 for those that read a body)."""
    return {status: ErrorOut for status in (400, 401, 403, *statuses)}


def _limit(limit: int) -> int:
    return max(1, min(MAX_LIMIT, limit))


def _run_or_404(request: HttpRequest, run_id: uuid.UUID) -> WorkflowRun:
    run = selectors.run_get(run_id, user=request.user)
    if run is None:
        raise services.NotFound(f"no run with id {run_id}")
    return run


# ------------------------------------------------------------------------------- workflows


@router.get("/workflows/", response={200: WorkflowsOut, **refusals()}, url_name="workflows")
def workflows(request: HttpRequest) -> WorkflowsOut:
    """The registered workflows, with the JSON Schema of each one's input."""
    visible = services.visible_workflows(request.user)
    names = [name for name in catalog.names() if visible is None or name in visible]
    return WorkflowsOut(workflows=[_workflow_out(name) for name in names])


def _workflow_out(name: str) -> WorkflowOut:
    workflow = catalog.describe(name)
    return WorkflowOut(
        name=name,
        description=workflow.description,
        input_schema=catalog.input_schema(name),
        graph=catalog.graph_document(name),
    )


# ------------------------------------------------------------------------------------ runs


@router.get("/runs/", response={200: RunsOut, **refusals()}, url_name="runs")
def run_list(
    request: HttpRequest,
    status: RunStatus | Literal[""] = "",
    workflow: str = "",
    limit: int = 50,
    cost_min: str = "",
    cost_max: str = "",
    tokens_min: str = "",
) -> RunsOut:
    """Runs, newest first, optionally of one status and workflow, costing at least
    ``cost_min`` and at most ``cost_max``, reading at least ``tokens_min`` tokens (in and out);
    ``limit`` is capped at 200. An amount that does not read is a 400 naming it."""
    errors: dict[str, str] = {}
    filters = selectors.RunFilters(
        status=status,
        workflow=workflow,
        workflows=services.visible_workflows(request.user),
        cost_min=amounts.read_cost(cost_min, "cost_min", errors) if cost_min else None,
        cost_max=amounts.read_cost(cost_max, "cost_max", errors) if cost_max else None,
        tokens_min=amounts.read_tokens(tokens_min, "tokens_min", errors) if tokens_min else None,
    )
    if errors:
        raise services.InvalidInput("an amount does not read", errors=errors)
    rows = selectors.run_list_full(filters, limit=_limit(limit))
    return RunsOut(runs=[run_out(run) for run in rows])


@router.post("/runs/", response={201: RunOut, **refusals(413)}, url_name="run-start")
def run_start(request: HttpRequest, payload: RunStartIn) -> Status[RunOut]:
    """Start a run; it is queued (400 names the input field that does not fit)."""
    run = services.run_start(workflow_name=payload.workflow, input=payload.input, user=request.user)
    return Status(201, run_out(run))


@router.get("/runs/{uuid:run_id}/", response={200: RunOut, **refusals(404)}, url_name="run")
def run_detail(request: HttpRequest, run_id: uuid.UUID) -> RunOut:
    return run_out(_run_or_404(request, run_id))


@router.get(
    "/runs/{uuid:run_id}/checkpoints/",
    response={200: CheckpointsOut, **refusals(404)},
    url_name="run-checkpoints",
)
def run_checkpoints(request: HttpRequest, run_id: uuid.UUID) -> CheckpointsOut:
    """The run's checkpoints in the order they were written, without their documents."""
    run = _run_or_404(request, run_id)
    return CheckpointsOut(checkpoints=[checkpoint_out(c) for c in selectors.run_checkpoints(run)])


@router.get(
    "/runs/{uuid:run_id}/checkpoints/{checkpoint_id}/",
    response={200: CheckpointDetailOut, **refusals(404, 409)},
    url_name="checkpoint",
)
def checkpoint_detail(
    request: HttpRequest, run_id: uuid.UUID, checkpoint_id: str
) -> CheckpointDetailOut:
    """One checkpoint, its document decoded with the workflow's types."""
    run = _run_or_404(request, run_id)
    checkpoint = selectors.checkpoint_get(run.pk, checkpoint_id)
    if checkpoint is None:
        raise services.NotFound(f"run {run.pk} has no checkpoint {checkpoint_id!r}")
    if run.workflow_name not in catalog.names():
        # Its types went with it, so the document cannot be decoded (the pages show it raw).
        raise services.Conflict(
            f"workflow {run.workflow_name!r} is not registered any more; its checkpoints "
            "cannot be decoded"
        )
    catalog.describe(run.workflow_name)  # registers the workflow's types with the codec
    document = DjangoCheckpointStorage().decode(checkpoint.document).to_dict()
    document = masking.for_run(run).document(document)
    return CheckpointDetailOut(**checkpoint_out(checkpoint).model_dump(), document=document)


@router.get(
    "/runs/{uuid:run_id}/events/", response={200: EventsOut, **refusals(404)}, url_name="run-events"
)
def run_events(
    request: HttpRequest, run_id: uuid.UUID, after: int = 0, limit: int = 500
) -> EventsOut:
    """Events with ``seq > after`` in order (at most ``limit``, capped at 200), and the last seq."""
    run = _run_or_404(request, run_id)
    rows = selectors.run_events_after(run.pk, max(0, after), limit=_limit(limit))
    return EventsOut(events=[event_out(e) for e in rows], last_seq=run.last_event_seq)


@router.post(
    "/runs/{uuid:run_id}/resume/",
    response={202: RunOut, **refusals(404, 409, 413)},
    url_name="run-resume",
)
def run_resume(request: HttpRequest, run_id: uuid.UUID, payload: ResumeIn) -> Status[RunOut]:
    """Run again from one of the run's checkpoints (409 while it is queued or running)."""
    run = services.run_resume(
        run_id, checkpoint_id=payload.checkpoint_id, user=request.user, reason=payload.reason
    )
    return Status(202, run_out(run))


@router.post(
    "/runs/{uuid:run_id}/fork/",
    response={201: RunOut, **refusals(404, 409, 413)},
    url_name="run-fork",
)
def run_fork(request: HttpRequest, run_id: uuid.UUID, payload: ForkIn) -> Status[RunOut]:
    """A new run from one of this run's checkpoints, optionally with edited state and messages."""
    fork = services.run_fork(
        run_id,
        checkpoint_id=payload.checkpoint_id,
        state=payload.state,
        executor_states=payload.executor_states,
        messages=payload.messages,
        user=request.user,
        reason=payload.reason,
    )
    return Status(201, run_out(fork))


@router.post(
    "/runs/{uuid:run_id}/reveal/",
    response={200: RevealedOut, **refusals(404, 413)},
    url_name="run-reveal",
)
def run_reveal(request: HttpRequest, run_id: uuid.UUID, payload: RevealIn) -> RevealedOut:
    """The value of one field that the run's data shows masked (``view_sensitive`` for the
    workflow, and a token's ``reveal`` scope); each reveal is recorded in the audit log."""
    found = services.reveal(
        run_id, path=payload.path, checkpoint_id=payload.checkpoint_id, user=request.user
    )
    return RevealedOut(path=found.path, checkpoint_id=found.checkpoint_id, value=found.value)


@router.post(
    "/runs/{uuid:run_id}/cancel/",
    response={200: RunOut, **refusals(404, 409, 413)},
    url_name="run-cancel",
)
def run_cancel(request: HttpRequest, run_id: uuid.UUID, payload: ReasonIn | None = None) -> RunOut:
    """Cancel a run that has not finished (409 once it has), saying why."""
    reason = payload.reason if payload else ""
    return run_out(services.run_cancel(run_id, user=request.user, reason=reason))


@router.post(
    "/runs/{uuid:run_id}/retry/",
    response={202: RunOut, **refusals(404, 409, 413)},
    url_name="run-retry",
)
def run_retry(
    request: HttpRequest, run_id: uuid.UUID, payload: ReasonIn | None = None
) -> Status[RunOut]:
    """Queue a failed run again (409 unless it failed), saying why."""
    reason = payload.reason if payload else ""
    return Status(202, run_out(services.run_retry(run_id, user=request.user, reason=reason)))


@router.post(
    "/runs/{uuid:run_id}/migrate/",
    response={202: RunOut, **refusals(404, 409, 413)},
    url_name="run-migrate",
)
def run_migrate(
    request: HttpRequest, run_id: uuid.UUID, payload: MigrateIn | None = None
) -> Status[RunOut]:
    """Move a run onto the deployed version of its workflow from one of its checkpoints and
    queue it; 409 names what the deployed version cannot carry (unless ``discard_unmatched``)."""
    run = services.run_migrate(
        run_id,
        checkpoint_id=payload.checkpoint_id if payload else None,
        discard_unmatched=payload.discard_unmatched if payload else False,
        user=request.user,
    )
    return Status(202, run_out(run))


@router.post(
    "/runs/migrate/",
    response={200: BulkMigrateOut, **refusals(413)},
    url_name="runs-migrate",
)
def runs_migrate(request: HttpRequest, payload: BulkMigrateIn) -> BulkMigrateOut:
    """Migrate several runs, each from its latest checkpoint; each one that cannot move is
    listed in ``skipped`` with the reason."""
    result = services.runs_migrate(
        payload.run_ids,
        discard_unmatched=payload.discard_unmatched,
        user=request.user,
    )
    return BulkMigrateOut(migrated=result.migrated, skipped=result.skipped)


@router.post(
    "/runs/{uuid:run_id}/hold/",
    response={200: RunOut, **refusals(404, 409, 413)},
    url_name="run-hold",
)
def run_hold(request: HttpRequest, run_id: uuid.UUID, payload: HoldIn | None = None) -> RunOut:
    """Put a run on hold (or release it with ``hold: false``); 409 if it already is (or is not)."""
    body = payload or HoldIn()
    run = services.run_hold(run_id, user=request.user, hold=body.hold, reason=body.reason)
    return run_out(run)


# ------------------------------------------------------------------------------- approvals


@router.get("/approvals/", response={200: ApprovalsOut, **refusals()}, url_name="approvals")
def approvals(
    request: HttpRequest, status: ApprovalStatus = ApprovalStatus.PENDING, limit: int = 50
) -> ApprovalsOut:
    """Requests in one status: pending ones oldest first, the others latest decided first."""
    rows = selectors.approvals_by_status(status, limit=_limit(limit), user=request.user)
    return ApprovalsOut(approvals=[approval_out(a) for a in rows])


@router.post(
    "/approvals/{request_id}/decide/",
    response={200: ApprovalOut, **refusals(404, 409, 413)},
    url_name="approval-decide",
)
def approval_decide(request: HttpRequest, request_id: str, payload: DecideIn) -> ApprovalOut:
    """Approve (with a ``response`` fitting the request's ``response_schema``) or reject;
    409 names who decided first. An administrator refused by an approval rule decides with
    ``override: true`` and a ``reason``."""
    approval = services.approval_decide(
        request_id,
        user=request.user,
        approved=payload.decision == "approve",
        response=payload.response,
        reason=payload.reason,
        override=payload.override,
    )
    return approval_out(approval)


@router.post(
    "/approvals/{request_id}/claim/",
    response={200: ApprovalOut, **refusals(404, 409, 413)},
    url_name="approval-claim",
)
def approval_claim(
    request: HttpRequest, request_id: str, payload: ClaimIn | None = None
) -> ApprovalOut:
    """Claim a pending request (or give it back with ``release: true``)."""
    release = payload.release if payload else False
    return approval_out(services.approval_claim(request_id, user=request.user, release=release))


# ------------------------------------------------------------------------------- retention


@router.post(
    "/retention/prune/",
    response={200: PruneReportsOut, **refusals(404, 413)},
    url_name="retention-prune",
)
def retention_prune(request: HttpRequest, payload: PruneIn | None = None) -> PruneReportsOut:
    """Apply one retention policy by name, or every enabled one (``dry_run`` deletes nothing)."""
    body = payload or PruneIn(policy=None)
    reports = services.checkpoint_prune(policy=body.policy, dry_run=body.dry_run, user=request.user)
    return PruneReportsOut(reports=[PruneReportOut(**r.as_dict()) for r in reports])


# --------------------------------------------------------------------------- other methods

_METHODS = ("GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS", "TRACE")


def _method_not_allowed(path: str, allowed: list[str]) -> Callable[..., Any]:
    def method_not_allowed(request: HttpRequest, **path_params: Any) -> None:
        raise MethodNotAllowed(request.method or "", allowed)

    # ninja reads the path parameters from the signature and warns about any it lacks.
    names = sorted(get_path_param_names(path))
    method_not_allowed.__signature__ = inspect.Signature(  # type: ignore[attr-defined]
        [inspect.Parameter("request", inspect.Parameter.POSITIONAL_OR_KEYWORD)]
        + [inspect.Parameter(n, inspect.Parameter.KEYWORD_ONLY, annotation=Any) for n in names]
    )
    return method_not_allowed


def refuse_other_methods(router: Router) -> None:
    """A method a path does not serve is refused with 405 in the API's format, after
    authentication and ``admit`` like any request (ninja's own 405 is text, and comes first)."""
    for path, path_view in list(router.path_operations.items()):
        served = {method for operation in path_view.operations for method in operation.methods}
        allowed = [m for m in _METHODS if m in served]
        others = [m for m in _METHODS if m not in served]
        router.add_api_operation(
            path, others, _method_not_allowed(path, allowed), include_in_schema=False
        )


refuse_other_methods(router)
