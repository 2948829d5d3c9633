"""The JSON API's audit export (Admins, as the audit page): the log filtered by time, actor,
action, outcome, run, workflow and target text, streamed as JSON lines (each with its seal in the
hash chain) or CSV. The export is itself recorded in the log, with what was asked for."""

from __future__ import annotations

import datetime as dt
import uuid
from typing import Literal, cast

from django.core.handlers.asgi import ASGIRequest
from django.http import HttpRequest, HttpResponse, StreamingHttpResponse
from ninja import Router

from dashboard import services
from dashboard.api.views import refusals
from dashboard.models import AuditEntry
from dashboard.selectors import audit_export, audit_log
from dashboard.services import validation

__all__ = ["router"]

router = Router(tags=["audit"])
PERMISSION = "dashboard.view_auditentry"


def _allowed(request: HttpRequest) -> None:
    if request.user.has_perm(PERMISSION):
        return
    services.audit.record(
        request.user, "view", outcome=AuditEntry.DENIED, target=f"api {request.path}"[:300]
    )
    raise services.Forbidden("the audit log is for admins: your role may not read it")


@router.get(
    "/audit/export",
    response={200: None, **refusals()},
    url_name="audit_export",
    openapi_extra={
        "responses": {
            "200": {
                "description": "The matching entries, newest first",
                "content": {"application/jsonl": {}, "text/csv": {}},
            }
        }
    },
)
def export(
    request: HttpRequest,
    format: Literal["jsonl", "csv"] = "jsonl",
    actor: str = "",
    action: str = "",
    outcome: Literal["", "ok", "denied"] = "",
    run: uuid.UUID | None = None,
    workflow: str = "",
    created_from: dt.datetime | None = None,
    created_to: dt.datetime | None = None,
    q: str = "",
) -> HttpResponse:
    """Every entry the filters match (``created_to`` exclusive; times without an offset are
    UTC), streamed a batch at a time."""
    _allowed(request)
    for name, value in {"actor": actor, "action": action, "workflow": workflow, "q": q}.items():
        if found := validation.unstorable(value):
            raise services.InvalidInput(f"{name}: it {found[1]}", errors={name: f"it {found[1]}"})
    start, end = _utc(created_from), _utc(created_to)
    if start and end and end < start:
        raise services.InvalidInput(
            "the range ends before it starts", errors={"created_to": "before created_from"}
        )
    filters = audit_log.AuditFilters(
        actor=actor.strip(),
        action=action.strip(),
        outcome=outcome,
        run_id=run,
        workflow=workflow.strip(),
        created_from=start,
        created_to=end,
        target=q.strip(),
    )
    asked = {
        key: str(value)
        for key, value in {
            "actor": actor,
            "action": action,
            "outcome": outcome,
            "run": run,
            "workflow": workflow,
            "created_from": created_from,
            "created_to": created_to,
            "q": q,
        }.items()
        if value not in (None, "")
    }
    services.audit.record(
        request.user,
        "audit_export",
        target=f"api audit log ({format})",
        details={"filters": asked, "format": format},
    )
    download = audit_export.download(filters, format)
    content = (
        audit_export.async_lines(download.lines)
        if isinstance(request, ASGIRequest)
        else download.lines
    )
    response = StreamingHttpResponse(content, content_type=download.content_type)
    response["Content-Disposition"] = f'attachment; filename="{download.filename}"'
    return cast(HttpResponse, response)


def _utc(moment: dt.datetime | None) -> dt.datetime | None:
    if moment is None or moment.tzinfo is not None:
        return moment
    return moment.replace(tzinfo=dt.UTC)
