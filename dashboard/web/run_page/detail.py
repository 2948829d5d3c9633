"""The run detail page's pieces, built the same way for the page and for its live updates.

``views`` renders the whole page from ``page_context``; the run websocket in HTML
mode re-renders single partials of the same template from ``summary_context`` and
``timeline_context`` as events arrive (``dashboard.web.live.fragments``), so the page and its
updates never disagree.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Sequence
from typing import Any

from dashboard import broadcast, catalog, selectors
from dashboard.access import masking
from dashboard.models import (
    TERMINAL_RUN_STATUSES,
    ApprovalRequest,
    ApprovalStatus,
    RunEvent,
    RunStatus,
    WorkflowRun,
)
from dashboard.renderers import conversation, orchestration
from dashboard.renderers.diff_values import tree
from dashboard.selectors import alerts as alert_selectors
from dashboard.web import durations
from dashboard.web.run_page import graph_state, subworkflows
from dashboard.web.run_page.events import event_views
from dashboard.web.run_page.steps import steps_view
from dashboard.web.run_page.timeline import build_timeline
from dashboard.web.run_page.usage import usage_context

__all__ = [
    "LOG_LIMIT",
    "Frame",
    "decisions",
    "intermediate_outputs",
    "page_context",
    "summary_context",
    "timeline_context",
    "user_frame",
]

LOG_LIMIT = 200
INTERMEDIATE_LIMIT = 50
DECISIONS_LIMIT = 5
TEMPLATE = "dashboard/run_detail.html"


def deployed_hash(workflow_name: str) -> str | None:
    try:
        return str(catalog.describe(workflow_name).graph_signature_hash)
    except catalog.UnknownWorkflowError:
        return None


def intermediate_outputs(run: WorkflowRun) -> list[dict[str, Any]]:
    """The run's intermediate outputs (``ctx.yield_output`` of an ``intermediate_output_from``
    executor, or re-emitted by a sub-workflow node), oldest first, the latest
    ``INTERMEDIATE_LIMIT``."""
    rows = list(
        RunEvent.objects.filter(run_id=run.pk, type="intermediate")
        .order_by("-seq")
        .values_list("seq", "data")[:INTERMEDIATE_LIMIT]
    )
    rows.reverse()
    found = []
    for seq, data in rows:
        data = data if isinstance(data, dict) else {}
        found.append(
            {
                "seq": seq,
                "tree_id": f"intermediate-{seq}",
                "executor_id": str(data.get("executor_id") or ""),
                "value": tree(data.get("data")),
            }
        )
    return found


def decisions(run: WorkflowRun) -> list[ApprovalRequest]:
    """The requests decided on the run's current branch, latest first: who let it go on, and
    why, in the words the inbox uses."""
    return list(
        ApprovalRequest.objects.filter(
            run_id=run.pk,
            engine_run_id=run.engine_run_id,
            status__in=[ApprovalStatus.APPROVED, ApprovalStatus.REJECTED],
        )
        .select_related("decided_by")
        .order_by("-decided_at", "-pk")[:DECISIONS_LIMIT]
    )


_FRAME = re.compile(r'^\s*File "(?P<file>[^"]+)", line (?P<line>\d+), in (?P<function>.+)$')
# Frames of the engine, the dashboard (its demo workflows excepted: they are user code), the
# standard library and installed packages: what the operator did not write.
_NOT_USER_CODE = re.compile(
    r"(^|/)(workflows|dashboard)/(?!demo/)|/lib/python3[^/]*/|site-packages/|^<frozen "
)


@dataclasses.dataclass(frozen=True)
class Frame:
    file: str
    line: int
    function: str
    source: str


def user_frame(traceback: str) -> Frame | None:
    """The innermost frame of ``traceback`` in the workflow's own code (outside the engine,
    the dashboard, the standard library and installed packages): where a failed run's author
    looks first. None when every frame is someone else's, or there is no traceback."""
    lines = traceback.splitlines()
    found: Frame | None = None
    for index, text in enumerate(lines):
        match = _FRAME.match(text)
        if match is None or _NOT_USER_CODE.search(match["file"].replace("\\", "/")):
            continue
        following = lines[index + 1].strip() if index + 1 < len(lines) else ""
        source = "" if _FRAME.match(following) else following
        found = Frame(match["file"], int(match["line"]), match["function"], source)
    return found


def summary_context(run: WorkflowRun) -> dict[str, Any]:
    """Header, details card, outcome (output, error, what it waits on, the decisions that let
    it go on) and the actions."""
    pending = selectors.pending_approvals_by_run([run.pk]).get(run.pk, [])
    parent = selectors.run_get(run.parent_run_id) if run.parent_run_id else None
    origin_superstep = selectors.checkpoint_superstep(run.origin_checkpoint_id)
    latest = run.latest_checkpoint
    return {
        "run": run,
        "workflow_registered": run.workflow_name in catalog.names(),
        "pending_approvals": pending,
        "parent": parent,
        "origin_superstep": origin_superstep,
        "output": tree(masking.for_run(run).output(run.output)) if run.output is not None else None,
        "intermediate_outputs": intermediate_outputs(run),
        "decisions": decisions(run),
        # What the actions depend on; the header carries it too, and when the two differ the
        # actions are stale and reload (static/js/live.js), whichever signal went missing.
        "actions_key": f"{run.status}:{int(run.latest_checkpoint_id is not None)}",
        "duration": durations.run_duration(run),
        "can_cancel": run.status not in TERMINAL_RUN_STATUSES,
        "can_retry": run.status == RunStatus.FAILED,
        "retry_from": latest.superstep if latest is not None else None,
        "is_active": run.status in (RunStatus.QUEUED, RunStatus.RUNNING),
        "trace_url": selectors.trace_url(run.trace_id),
        "user_frame": user_frame(run.traceback) if run.status == RunStatus.FAILED else None,
    }


def timeline_context(
    run: WorkflowRun,
    *,
    selected: str | None = None,
    full: bool = False,
    rows: list[selectors.CheckpointRow] | None = None,
) -> dict[str, Any]:
    if rows is None:
        rows = selectors.run_checkpoint_rows(run.pk)
    timeline = build_timeline(
        run,
        rows,
        selectors.run_children(run.pk),
        deployed_hash=deployed_hash(run.workflow_name),
        selected=selected,
        full=full,
    )
    return {"run": run, "timeline": timeline, "timeline_full": full}


def events_context(run: WorkflowRun) -> dict[str, Any]:
    # Only the events the run row already counted: the page says "I have up to N", and the
    # socket replays everything after N. An event committed between reading the run and
    # reading its events would otherwise be in the log but not in the header, for good.
    events = selectors.run_events_tail(run.pk, LOG_LIMIT, up_to=run.last_event_seq)
    first = events[0].seq if events else 0
    return {
        "events": event_views(events),
        "events_earlier": first > 1,
        "events_first_seq": first,
        "last_seq": run.last_event_seq,
    }


def conversations(run: WorkflowRun) -> Sequence[conversation.Conversation]:
    """The agents' conversations at the run's latest checkpoint. Only runs whose agents have
    answered read it (they counted tokens): other runs pay nothing for it."""
    checkpoint = run.latest_checkpoint if run.latest_checkpoint_id else None
    if not (run.input_tokens or run.output_tokens) or checkpoint is None:
        return []
    document = selectors.checkpoint_document(checkpoint, run)
    return conversation.conversations_of(document.get("executor_states"))


def conversations_at(run: WorkflowRun) -> str:
    """The checkpoint the run page's conversations are read from: where their earlier pages
    load from."""
    latest = run.latest_checkpoint if run.latest_checkpoint_id else None
    return latest.checkpoint_id if latest is not None else ""


def orchestration_view(run: WorkflowRun, *, up_to: int | None = None) -> Any:
    """Who handed off to whom, who spoke in which round, the plan and its ledgers, as of the
    end of superstep ``up_to`` (a checkpoint's) or now."""
    return orchestration.orchestration_of(selectors.orchestration_events(run.pk), up_to=up_to)


def page_context(
    run: WorkflowRun,
    *,
    full_timeline: bool = False,
    open_subworkflow: str = "",
    subworkflow_checkpoint: str | None = None,
) -> dict[str, Any]:
    graph, _ = graph_state.run_graph(run)
    context = {
        "subworkflows": subworkflows.panels(
            run, open_id=open_subworkflow, checkpoint_id=subworkflow_checkpoint
        ),
        **summary_context(run),
        **timeline_context(run, full=full_timeline),
        **events_context(run),
        "graph": graph,
        "steps": steps_view(run),
        "input": masking.for_run(run).input(run.input),
        "alert_incidents": alert_selectors.run_incidents(run.pk),
        "live_replies": broadcast.replies_so_far(run.pk) if not run.is_terminal else [],
        "conversations": conversations(run),
        "conversations_at": conversations_at(run),
        "orchestration": orchestration_view(run),
        **usage_context(run),
        "ws_url": f"/ws/runs/{run.pk}/?view=html",
        "nav_section": "runs",
    }
    return context
