"""One run: status, graph, timeline, live event log, and the cancel and retry actions."""

from __future__ import annotations

import uuid
from typing import Any

from django.contrib import messages
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.template.loader import render_to_string

from dashboard import selectors, services
from dashboard.core.types import Actor
from dashboard.models import WorkflowRun
from dashboard.web import conflicts
from dashboard.web.access import HtmxHttpRequest, allowed_actions, page_view
from dashboard.web.run_page import (
    detail,
    event_log,
    gantt,
    previews,
    sensitive,
    subworkflows,
    version_panel,
)

TEMPLATE = "dashboard/run_detail.html"
EVENTS_PAGE = 500
# What an action's answer redraws besides the actions (web.live.fragments redraws the same).
ANSWER_PARTIALS = ("header", "outcome", "details")


def _run_or_404(run_id: uuid.UUID, user: Actor) -> WorkflowRun:
    run = selectors.run_get(run_id, user=user)
    if run is None:
        raise Http404("No such run.")
    return run


def actions_context(
    run: WorkflowRun, user: Actor, summary: dict[str, Any] | None = None
) -> dict[str, Any]:
    """The actions and what they show; ``summary`` is the run's ``summary_context`` when the
    caller has built it already (the whole page does), so it is not read twice."""
    if summary is None:
        summary = detail.summary_context(run)
    return {
        **summary,
        "may": allowed_actions(user, run.workflow_name),
        "cancel_preview": previews.cancel_preview(run, len(summary["pending_approvals"])),
        "retry_preview": previews.retry_preview(run),
    }


def render_detail(
    request: HttpRequest, run: WorkflowRun, *, status: int = 200, error: str = ""
) -> HttpResponse:
    full = request.GET.get("timeline") == "all"
    page = detail.page_context(
        run,
        full_timeline=full,
        open_subworkflow=request.GET.get("sub", ""),
        subworkflow_checkpoint=request.GET.get("checkpoint") or None,
    )
    context = {
        **actions_context(run, request.user, summary=page),
        "action_error": error,
        "version_panel": version_panel.panel_context(run, request.user),
        **gantt.gantt_context(run),
        "audit_entries": selectors.run_audit_entries(run.pk),
        "audit_limit": selectors.AUDIT_CARD_LIMIT,
        **sensitive.masked_context(run, request.user),
    }
    return render(request, TEMPLATE, context, status=status)


@page_view("GET")
def run_detail(request: HttpRequest, run_id: uuid.UUID) -> HttpResponse:
    return render_detail(request, _run_or_404(run_id, request.user))


@page_view("GET")
def run_actions(request: HttpRequest, run_id: uuid.UUID) -> HttpResponse:
    """The action buttons alone, redrawn (with a CSRF token) when the run's status changes."""
    run = _run_or_404(run_id, request.user)
    return render(request, f"{TEMPLATE}#actions", actions_context(run, request.user))


@page_view("GET")
def run_subworkflow(request: HttpRequest, run_id: uuid.UUID) -> HttpResponse:
    """One sub-workflow panel's body (inner graph and state) at ``?checkpoint=`` (default the
    latest): what the panel's checkpoint picker and its live refresh swap in."""
    run = _run_or_404(run_id, request.user)
    executor_id = request.GET.get("sub", "")
    ids = subworkflows.subworkflow_ids(run.workflow_name)
    if executor_id not in ids:
        raise Http404("No such sub-workflow in this run's graph.")
    sub = subworkflows.panel(
        run,
        executor_id,
        checkpoint_id=request.GET.get("checkpoint") or None,
        index=ids.index(executor_id),
    )
    if sub is None:
        raise Http404("No such sub-workflow in this run's graph.")
    may = allowed_actions(request.user, run.workflow_name)
    return render(request, f"{TEMPLATE}#subworkflow_body", {"run": run, "sub": sub, "may": may})


@page_view("GET")
def run_events(request: HttpRequest, run_id: uuid.UUID) -> HttpResponse:
    """The whole event log, a page at a time: filtered by type and executor, grouped by
    superstep, normal or compact."""
    run = _run_or_404(run_id, request.user)
    try:
        before = min(int(request.GET.get("before", "0")), run.last_event_seq + 1)
    except ValueError:
        before = 0
    before = before if before > 0 else run.last_event_seq + 1
    types, executors = selectors.run_event_facets(run.pk)
    filters = event_log.read_filters(
        request.GET, known_types=[t for t, _ in types], executors=executors
    )
    events = selectors.run_events_page(
        run.pk, before_seq=before, limit=EVENTS_PAGE, types=filters.types, executor=filters.executor
    )
    first_seq = events[0].seq if events else 0
    start = selectors.run_superstep_before(run.pk, first_seq) if events else None
    context = {
        "run": run,
        "groups": event_log.grouped(events, by_superstep=filters.by_superstep, start=start),
        "filters": filters,
        "type_choices": types,
        "executor_choices": executors,
        "first_seq": first_seq,
        "last_seq": events[-1].seq if events else 0,
        "shown": len(events),
        "earlier_query": filters.query(before=first_seq),
        # The density and grouping switches keep the filters (and go back to the newest page).
        "density_query": filters.query(density="" if filters.compact else "compact"),
        "group_query": filters.query(group="" if not filters.by_superstep else "none"),
        "nav_section": "runs",
    }
    return render(request, "dashboard/run_events.html", context)


def _act(request: HtmxHttpRequest, run_id: uuid.UUID, action: str) -> HttpResponse:
    """Cancel or retry. With htmx the page stays: the answer is the actions again, the header
    as it is now and a toast, also when the action came too late (someone else acted first)."""
    run = _run_or_404(run_id, request.user)
    try:
        if action == "cancel":
            services.run_cancel(run.pk, user=request.user, reason=request.POST.get("reason", ""))
            done = f"Run {str(run.pk)[:8]} was cancelled."
        else:
            services.run_retry(run.pk, user=request.user, reason=request.POST.get("reason", ""))
            done = f"Run {str(run.pk)[:8]} is queued again."
    except services.ServiceError as exc:
        fresh = _run_or_404(run_id, request.user)
        text = exc.message
        if isinstance(exc, services.Conflict):
            text = conflicts.run_conflict(fresh, action, user=request.user, fallback=exc.message)
        if request.htmx:
            return _answer(request, fresh, text, "error", status=exc.status)
        return render_detail(request, fresh, status=exc.status, error=text)
    if request.htmx:
        return _answer(request, _run_or_404(run_id, request.user), done, "success")
    messages.success(request, done)
    return redirect("dashboard:run_detail", run_id=run.pk)


def _answer(
    request: HttpRequest, run: WorkflowRun, text: str, level: str, *, status: int = 200
) -> HttpResponse:
    """The actions partial (the request's target), then out of band the header, outcome and
    details as they are now (the page's socket may be down) and the toast."""
    context = actions_context(run, request.user)
    parts = [render_to_string(f"{TEMPLATE}#actions", context, request=request)]
    shown = {**context, "oob": True}
    parts += [render_to_string(f"{TEMPLATE}#{name}", shown) for name in ANSWER_PARTIALS]
    parts.append(render_to_string("base.html#toast_oob", {"text": text, "level": level}))
    return HttpResponse("".join(parts), status=status)


@page_view("POST")
def run_cancel(request: HtmxHttpRequest, run_id: uuid.UUID) -> HttpResponse:
    return _act(request, run_id, "cancel")


@page_view("POST")
def run_retry(request: HtmxHttpRequest, run_id: uuid.UUID) -> HttpResponse:
    return _act(request, run_id, "retry")
