"""A run event as one readable line of the event log (``dashboard/_event_rows.html``).

Events are what the engine and the services recorded (``RunEvent``): type plus JSON data. The
log shows a sentence per event and, folded away, the data itself, as the operator thinks of it
(``diff_values``: ``{1: 1, 2: 4}`` in a sentence, int keys as their digits in the details; never a
codec tag). Every piece of text here is plain text; the template escapes it.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import json
from typing import Any

from dashboard.core.run_events import RUN_EVENT_KINDS
from dashboard.models import RunEvent
from dashboard.renderers import diff_values
from dashboard.web.display import short_type_name
from dashboard.web.timefmt import CreatedAtLabels

__all__ = ["EventView", "describe_event", "event_views"]

DETAILS_LIMIT = 4000


@dataclasses.dataclass(frozen=True)
class EventView(CreatedAtLabels):
    seq: int
    type: str
    created_at: dt.datetime
    summary: str
    tone: str  # "", "success", "danger", "warning", "info": the badge colour
    details: str
    link_run: str = ""
    executor: str = ""


def _text(value: Any, limit: int = 120) -> str:
    if isinstance(value, str):
        return value if len(value) <= limit else value[: limit - 1] + "…"
    return diff_values.text(value, limit=limit)


def _status(data: dict[str, Any]) -> tuple[str, str]:
    status = str(data.get("status", ""))
    parts = [f"Run {status}"]
    if data.get("action"):
        parts.append(f"({data['action']}")
        if data.get("superstep") is not None:
            parts[-1] += f" from superstep {data['superstep']}"
        parts[-1] += ")"
    if data.get("by"):
        parts.append(f"by {data['by']}")
    if data.get("attempt"):
        parts.append(f"· attempt {data['attempt']}")
    if data.get("reason"):
        parts.append(f"· {data['reason']}")
    tone = {"completed": "success", "failed": "danger", "waiting": "warning", "running": "info"}
    return " ".join(parts), tone.get(status, "")


# The engine's run states (``workflows.WorkflowRunState``) as an operator says them.
_ENGINE_STATES = {
    "STARTED": "Run started",
    "IN_PROGRESS": "Running",
    "IN_PROGRESS_PENDING_REQUESTS": "Running, with requests waiting for a decision",
    "IDLE": "Finished: nothing left to do",
    "IDLE_WITH_PENDING_REQUESTS": "Paused, waiting for approval",
    "FAILED": "Stopped by an error",
    "CANCELLED": "Cancelled",
}


def describe_event(event: RunEvent) -> EventView:
    data = event.data if isinstance(event.data, dict) else {}
    kind = event.type
    executor = str(data.get("executor_id") or "")
    step = data.get("iteration")
    at_step = f" (superstep {step})" if step is not None else ""
    tone = ""
    link = ""
    if kind == "run_status":
        summary, tone = _status(data)
    elif kind == "executor_invoked":
        summary = f"{executor} started{at_step}"
    elif kind == "executor_completed":
        summary = f"{executor} finished{at_step}"
    elif kind == "executor_failed":
        details = data.get("details") or {}
        summary = f"{executor} failed{at_step}: {_text(details.get('message', ''))}"
    elif kind == "superstep_started":
        summary = f"Superstep {step} started"
    elif kind in ("superstep_completed", "checkpoint"):
        size = _size(data.get("size_bytes"))
        pending = data.get("pending_requests") or 0
        what = (
            f"Superstep {step} completed"
            if kind == "superstep_completed"
            else f"Checkpoint ({data.get('kind', '')})"
        )
        summary = f"{what} · checkpoint {size}" + (
            f" · {pending} pending request(s)" if pending else ""
        )
    elif kind == "request_info":
        wanted = short_type_name(str(data.get("response_type") or ""))
        summary = f"{executor} asks for a decision" + (f" ({wanted})" if wanted else "")
    elif kind == "approval_decided":
        summary = f"Request {data.get('decision', 'decided')} by {data.get('by') or 'someone'}"
        if data.get("reason"):
            summary += f": {_text(data['reason'])}"
        tone = "success" if data.get("decision") == "approved" else "danger"
    elif kind == "output":
        summary = f"Output: {_text(data.get('data'))}"
    elif kind == "intermediate":
        summary = f"Intermediate output of {executor}: {_text(data.get('data'))}"
    elif kind == "run_forked":
        summary = (
            f"Forked into run {str(data.get('fork', ''))[:8]} by {data.get('by') or 'someone'}"
        )
        link = str(data.get("fork") or "")
    elif kind == "status":
        state = str(data.get("state", ""))
        summary = _ENGINE_STATES.get(state) or f"Run state: {state.replace('_', ' ').lower()}"
    elif kind == "failed":
        details = data.get("details") or {}
        summary = f"Run failed: {_text(details.get('message', ''))}"
    elif kind == "warning":
        summary = f"Warning: {_text(data.get('data'))}"
    elif kind == "error":
        summary = f"Error: {_text(data.get('data'))}"
    elif kind == "run_recovered":
        summary = f"Recovered by another worker (attempt {data.get('attempt')})"
    elif kind == "run_requeued":
        summary = f"Queued again: {data.get('reason', '')}"
    elif kind == "approval_vote":
        verdict = "for" if data.get("approve") else "against"
        summary = (
            f"{data.get('by') or 'someone'} voted {verdict} request {data.get('request_id', '')} "
            f"({data.get('approvals')}/{data.get('required')} approvals)"
        )
    elif kind == "approval_overdue":
        summary = f"Request {data.get('request_id', '')} passed its deadline"
    elif kind == "approval_override":
        summary = (
            f"{data.get('by') or 'someone'} overrode a rule to {data.get('decision', 'decide')} "
            f"request {data.get('request_id', '')} ({_text(data.get('rule', ''))}): "
            f"{_text(data.get('reason', ''))}"
        )
    elif kind in ("run_hold", "run_released"):
        what = "Put on hold" if kind == "run_hold" else "Released from hold"
        summary = f"{what} by {data.get('by') or 'someone'}" + (
            f": {_text(data['reason'])}" if data.get("reason") else ""
        )
    elif kind == "run_migrated":
        moved = (
            f"Moved from version {str(data.get('from_version', ''))[:12]} to "
            f"{str(data.get('to_version', ''))[:12]}"
        )
        who = f" by {data['by']}" if data.get("by") else " (the new version carries it)"
        dropped = data.get("discarded") or []
        summary = moved + who + (f"; discarded {len(dropped)} item(s)" if dropped else "")
    elif kind == "checkpoints_pruned":
        summary = f"Retention deleted {data.get('count')} checkpoint(s) ({data.get('policy', '')})"
    elif kind == "started":
        summary = "The workflow started"
    else:
        summary = kind.replace("_", " ").capitalize() + (f" · {executor}" if executor else "")
    declared = RUN_EVENT_KINDS.get(kind)
    return EventView(
        seq=event.seq,
        type=kind,
        created_at=event.created_at,
        summary=summary,
        tone=tone or (declared.tone if declared else ""),
        details="" if declared is not None and declared.plain else _details(data),
        link_run=link,
        executor=executor,
    )


def _size(value: Any) -> str:
    if not isinstance(value, int):
        return ""
    if value < 1024:
        return f"{value} B"
    if value < 1024 * 1024:
        return f"{value / 1024:.1f} KB"
    return f"{value / 1024 / 1024:.1f} MB"


def _details(data: dict[str, Any]) -> str:
    if not data:
        return ""
    text = json.dumps(diff_values.tree(data), indent=2, ensure_ascii=False, default=str)
    return text if len(text) <= DETAILS_LIMIT else text[: DETAILS_LIMIT - 1] + "…"


def event_views(events: list[RunEvent]) -> list[EventView]:
    return [describe_event(event) for event in events]
