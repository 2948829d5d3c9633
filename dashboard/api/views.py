"""The JSON API: start, inspect, resume, fork, cancel and retry runs; list and decide approvals.

Session or token authentication (``Authorization: Bearer <token>``, see
``dashboard.access.tokens``). Routes are in ``urls.py`` beside this module. Bad
input answers 400 with a message naming the field, unknown ids 404, illegal transitions 409
(the message says why, e.g. who decided first). Views parse and serialize; ``services`` and
``selectors`` do the rest.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Callable
from typing import Any

from django.http import HttpRequest, HttpResponse, JsonResponse
from django.views.csrf import csrf_failure as django_csrf_failure

from dashboard import selectors, services
from dashboard.checkpoints.storage import DjangoCheckpointStorage
from dashboard.execution import registry
from dashboard.models import ApprovalRequest, ApprovalStatus, Checkpoint, RunStatus, WorkflowRun

__all__ = [
    "api_view",
    "approval_claim",
    "approval_decide",
    "approvals",
    "checkpoint_detail",
    "csrf_failure",
    "retention_prune",
    "run_cancel",
    "run_checkpoints",
    "run_detail",
    "run_events",
    "run_fork",
    "run_hold",
    "run_resume",
    "run_retry",
    "runs",
    "workflows",
]

MAX_LIMIT = 200
View = Callable[..., HttpResponse]


def _error(status: int, message: str, errors: dict[str, str] | None = None) -> JsonResponse:
    body: dict[str, Any] = {"error": message}
    if errors:
        body["errors"] = errors
    return JsonResponse(body, status=status)


def api_view(*methods: str) -> Callable[[View], View]:
    """Authentication, method check, JSON body parsing and service errors, for every view."""

    def wrap(view: View) -> View:
        @functools.wraps(view)
        def inner(request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
            if not getattr(request.user, "is_authenticated", False):
                return _error(401, "authentication required (session or Bearer token)")
            # PostgreSQL text and jsonb cannot hold NUL: refuse it here, not with a DataError.
            if "\x00" in request.path:
                return _error(404, "no such resource (the path contains a NUL character)")
            for key, value in request.GET.items():
                if "\x00" in key or "\x00" in value:
                    return _error(400, "parameters may not contain NUL characters",
                                  {key.replace("\x00", "") or "query": "contains a NUL character"})
            try:
                services.require(request.user, "view", target=request.path)
            except services.ServiceError as exc:
                return _error(exc.status, exc.message)
            if request.method not in methods:
                return _error(405, f"method {request.method} not allowed; use {', '.join(methods)}")
            body: Any = None
            if request.method == "POST":
                try:
                    body = json.loads(request.body or b"{}")
                except (ValueError, UnicodeDecodeError):
                    return _error(400, "the request body is not valid JSON", {"body": "invalid JSON"})
                except RecursionError:
                    return _error(400, "the request body is nested too deeply", {"body": "nested too deeply"})
                if not isinstance(body, dict):
                    return _error(400, "the request body must be a JSON object", {"body": "not an object"})
                field = _field_with_nul(body)
                if field is not None:
                    return _error(400, f"{field} may not contain NUL characters",
                                  {field: "contains a NUL character"})
            try:
                return view(request, body, *args, **kwargs)
            except services.ServiceError as exc:
                return _error(exc.status, exc.message, exc.errors)

        return inner

    return wrap


def _field_with_nul(body: dict[str, Any]) -> str | None:
    """The top-level field whose value holds a NUL character anywhere (keys included)."""
    for name, value in body.items():
        stack = [name, value]
        while stack:
            item = stack.pop()
            if isinstance(item, str) and "\x00" in item:
                return name.replace("\x00", "") or "body"
            if isinstance(item, dict):
                stack.extend(item.keys())
                stack.extend(item.values())
            elif isinstance(item, list):
                stack.extend(item)
    return None


def _field(body: dict[str, Any], name: str, kind: type | tuple[type, ...], *, required: bool = True) -> Any:
    if name not in body:
        if required:
            raise services.InvalidInput(f"{name} is required", errors={name: "required"})
        return None
    value = body[name]
    if not isinstance(value, kind) or (kind is int and isinstance(value, bool)):
        expected = kind.__name__ if isinstance(kind, type) else " or ".join(k.__name__ for k in kind)
        raise services.InvalidInput(f"{name} must be a {expected}", errors={name: f"must be a {expected}"})
    return value


def _run_or_404(run_id: Any) -> WorkflowRun:
    run = selectors.run_get(run_id)
    if run is None:
        raise services.NotFound(f"no run with id {run_id}")
    return run


# ------------------------------------------------------------------------------ serializers


def run_json(run: WorkflowRun) -> dict[str, Any]:
    return {
        "id": str(run.pk),
        "workflow": run.workflow_name,
        "status": run.status,
        "input": run.input,
        "output": run.output,
        "error": {"type": run.error_type, "message": run.error_message, "traceback": run.traceback}
        if run.status == RunStatus.FAILED
        else None,
        "current_superstep": run.current_superstep,
        "latest_checkpoint_id": run.latest_checkpoint_id,
        "parent_run_id": str(run.parent_run_id) if run.parent_run_id else None,
        "origin_checkpoint_id": run.origin_checkpoint_id,
        "created_by": run.created_by.get_username() if run.created_by else None,
        "created_at": run.created_at.isoformat(),
        "started_at": run.started_at.isoformat() if run.started_at else None,
        "finished_at": run.finished_at.isoformat() if run.finished_at else None,
        "attempts": run.attempts,
        "last_event_seq": run.last_event_seq,
        "on_hold": run.on_hold,
    }


def checkpoint_json(checkpoint: Checkpoint) -> dict[str, Any]:
    return {
        "id": checkpoint.checkpoint_id,
        "superstep": checkpoint.superstep,
        "previous_checkpoint_id": checkpoint.previous_checkpoint_id,
        "lineage": checkpoint.engine_run_id,
        "graph_signature_hash": checkpoint.graph_signature_hash,
        "size_bytes": checkpoint.size_bytes,
        "pending_requests": checkpoint.pending_request_count,
        "created_at": checkpoint.created_at.isoformat(),
    }


def approval_json(approval: ApprovalRequest) -> dict[str, Any]:
    return {
        "request_id": approval.request_id,
        "run_id": str(approval.run_id),
        "workflow": approval.run.workflow_name,
        "checkpoint_id": approval.checkpoint_id,
        "executor_id": approval.executor_id,
        "request_data": approval.request_data,
        "response_type": approval.response_type,
        "response_schema": approval.response_schema,
        "status": approval.status,
        "response": approval.response,
        "reason": approval.reason,
        "decided_by": approval.decided_by.get_username() if approval.decided_by else None,
        "decided_at": approval.decided_at.isoformat() if approval.decided_at else None,
        "created_at": approval.created_at.isoformat(),
        "required_approvals": approval.required_approvals,
        "claimed_by": approval.claimed_by.get_username() if approval.claimed_by else None,
        "due_at": approval.due_at.isoformat() if approval.due_at else None,
        "overdue": approval.overdue_at is not None,
    }


def _limit(request: HttpRequest, default: int = 50) -> int:
    try:
        return max(1, min(MAX_LIMIT, int(request.GET.get("limit", default))))
    except ValueError:
        raise services.InvalidInput("limit must be an integer", errors={"limit": "not an integer"}) from None


# ------------------------------------------------------------------------------------ views


@api_view("GET")
def workflows(request: HttpRequest, body: None) -> HttpResponse:
    items = []
    for name in registry.names():
        workflow = registry.describe(name)
        items.append(
            {
                "name": name,
                "description": workflow.description,
                "input_schema": registry.input_schema(name),
                "graph": workflow.to_dict(),
            }
        )
    return JsonResponse({"workflows": items})


@api_view("GET", "POST")
def runs(request: HttpRequest, body: dict[str, Any] | None) -> HttpResponse:
    if request.method == "POST":
        assert body is not None
        run = services.run_start(
            workflow_name=_field(body, "workflow", str),
            input=body.get("input", {}),
            user=request.user,
        )
        return JsonResponse(run_json(run), status=201)
    rows = WorkflowRun.objects.select_related("created_by").order_by("-created_at")
    status = request.GET.get("status")
    if status:
        if status not in RunStatus.values:
            raise services.InvalidInput(f"unknown status {status!r}", errors={"status": "unknown status"})
        rows = rows.filter(status=status)
    if request.GET.get("workflow"):
        rows = rows.filter(workflow_name=request.GET["workflow"])
    return JsonResponse({"runs": [run_json(r) for r in rows[: _limit(request)]]})


@api_view("GET")
def run_detail(request: HttpRequest, body: None, run_id: str) -> HttpResponse:
    return JsonResponse(run_json(_run_or_404(run_id)))


@api_view("GET")
def run_checkpoints(request: HttpRequest, body: None, run_id: str) -> HttpResponse:
    run = _run_or_404(run_id)
    return JsonResponse({"checkpoints": [checkpoint_json(c) for c in selectors.run_checkpoints(run)]})


@api_view("GET")
def checkpoint_detail(request: HttpRequest, body: None, run_id: str, checkpoint_id: str) -> HttpResponse:
    run = _run_or_404(run_id)
    checkpoint = Checkpoint.objects.filter(run=run, checkpoint_id=checkpoint_id).first()
    if checkpoint is None:
        raise services.NotFound(f"run {run.pk} has no checkpoint {checkpoint_id!r}")
    registry.describe(run.workflow_name)
    document = DjangoCheckpointStorage().decode(checkpoint.document).to_dict()
    return JsonResponse({**checkpoint_json(checkpoint), "document": document})


@api_view("GET")
def run_events(request: HttpRequest, body: None, run_id: str) -> HttpResponse:
    run = _run_or_404(run_id)
    try:
        after = max(0, int(request.GET.get("after", 0)))
    except ValueError:
        raise services.InvalidInput("after must be an integer", errors={"after": "not an integer"}) from None
    rows = selectors.run_events_after(run.pk, after, limit=_limit(request, 500))
    events = [{"seq": e.seq, "type": e.type, "data": e.data, "created_at": e.created_at.isoformat()} for e in rows]
    return JsonResponse({"events": events, "last_seq": run.last_event_seq})


@api_view("POST")
def run_resume(request: HttpRequest, body: dict[str, Any], run_id: str) -> HttpResponse:
    run = services.run_resume(run_id, checkpoint_id=_field(body, "checkpoint_id", str), user=request.user)
    return JsonResponse(run_json(run), status=202)


@api_view("POST")
def run_fork(request: HttpRequest, body: dict[str, Any], run_id: str) -> HttpResponse:
    fork = services.run_fork(
        run_id,
        checkpoint_id=_field(body, "checkpoint_id", str),
        state=_field(body, "state", dict, required=False),
        executor_states=_field(body, "executor_states", dict, required=False),
        user=request.user,
    )
    return JsonResponse(run_json(fork), status=201)


@api_view("POST")
def run_cancel(request: HttpRequest, body: dict[str, Any], run_id: str) -> HttpResponse:
    return JsonResponse(run_json(services.run_cancel(run_id, user=request.user)))


@api_view("POST")
def run_retry(request: HttpRequest, body: dict[str, Any], run_id: str) -> HttpResponse:
    return JsonResponse(run_json(services.run_retry(run_id, user=request.user)), status=202)


@api_view("GET")
def approvals(request: HttpRequest, body: None) -> HttpResponse:
    status = request.GET.get("status", ApprovalStatus.PENDING)
    if status not in ApprovalStatus.values:
        raise services.InvalidInput(f"unknown status {status!r}", errors={"status": "unknown status"})
    rows = (
        ApprovalRequest.objects.filter(status=status)
        .select_related("run", "decided_by")
        .order_by("created_at" if status == ApprovalStatus.PENDING else "-decided_at")
    )
    return JsonResponse({"approvals": [approval_json(a) for a in rows[: _limit(request)]]})


@api_view("POST")
def approval_decide(request: HttpRequest, body: dict[str, Any], request_id: str) -> HttpResponse:
    decision = _field(body, "decision", str)
    if decision not in ("approve", "reject"):
        raise services.InvalidInput("decision must be approve or reject", errors={"decision": "approve or reject"})
    approval = services.approval_decide(
        request_id,
        user=request.user,
        approved=decision == "approve",
        response=body.get("response"),
        reason=_field(body, "reason", str, required=False) or "",
    )
    return JsonResponse(approval_json(approval))


@api_view("POST")
def approval_claim(request: HttpRequest, body: dict[str, Any], request_id: str) -> HttpResponse:
    release = _field(body, "release", bool, required=False) or False
    return JsonResponse(approval_json(services.approval_claim(request_id, user=request.user, release=release)))


@api_view("POST")
def run_hold(request: HttpRequest, body: dict[str, Any], run_id: str) -> HttpResponse:
    hold = _field(body, "hold", bool, required=False)
    run = services.run_hold(
        run_id,
        user=request.user,
        hold=True if hold is None else hold,
        reason=_field(body, "reason", str, required=False) or "",
    )
    return JsonResponse(run_json(run))


@api_view("POST")
def retention_prune(request: HttpRequest, body: dict[str, Any]) -> HttpResponse:
    reports = services.checkpoint_prune(
        policy=_field(body, "policy", str, required=False),
        dry_run=_field(body, "dry_run", bool, required=False) or False,
        user=request.user,
    )
    return JsonResponse({"reports": [r.as_dict() for r in reports]})


def csrf_failure(request: HttpRequest, reason: str = "") -> HttpResponse:
    """The API answers a refused CSRF check in JSON like every other refusal (pages keep
    Django's page). Anonymous callers are told to authenticate first."""
    if not request.path.startswith("/api/"):
        return django_csrf_failure(request, reason)
    if not getattr(request.user, "is_authenticated", False):
        return _error(401, "authentication required (session or Bearer token)")
    return _error(403, f"CSRF check failed ({reason}); send the X-CSRFToken header or use a Bearer token")
