"""Workflow versions on the pages: the run page's version panel (which version a run executes
on, and the migration form when the deployed one cannot carry it), and the page of every run
that needs migration, to move them in bulk."""

from __future__ import annotations

import uuid

from django.contrib import messages
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse

from dashboard import selectors, services
from dashboard.core.types import Actor
from dashboard.models import RunStatus, WorkflowRun
from dashboard.web.access import page_view
from dashboard.web.run_page.version_panel import panel_context
from dashboard.web.run_page.views import render_detail

PANEL = "dashboard/_run_version.html"
BULK_LIMIT = 500


def _run_or_404(run_id: uuid.UUID, user: Actor) -> WorkflowRun:
    run = selectors.run_get(run_id, user=user)
    if run is None:
        raise Http404("No such run.")
    return run


@page_view("GET")
def run_version(request: HttpRequest, run_id: uuid.UUID) -> HttpResponse:
    """The version panel alone: redrawn when the run changes, or for another checkpoint
    (``?checkpoint=``) when the operator picks where to migrate from."""
    run = _run_or_404(run_id, request.user)
    context = panel_context(
        run, request.user, request.GET.get("checkpoint_id") or request.GET.get("checkpoint") or None
    )
    return render(request, PANEL, context)


@page_view("POST")
def run_migrate(request: HttpRequest, run_id: uuid.UUID) -> HttpResponse:
    run = _run_or_404(run_id, request.user)
    checkpoint_id = request.POST.get("checkpoint_id") or None
    discard = request.POST.get("discard_unmatched") == "on"
    try:
        services.run_migrate(
            run.pk, checkpoint_id=checkpoint_id, discard_unmatched=discard, user=request.user
        )
    except services.ServiceError as exc:
        return render_detail(
            request, _run_or_404(run_id, request.user), status=exc.status, error=exc.message
        )
    messages.success(request, f"Run {str(run.pk)[:8]} moved to the deployed version and is queued.")
    return redirect("dashboard:run_detail", run_id=run.pk)


@page_view("GET", "POST")
def migrations(request: HttpRequest) -> HttpResponse:
    """Every run that needs migration, by workflow; migrate the selected ones at once."""
    if request.method == "POST":
        run_ids = request.POST.getlist("run_id")[:BULK_LIMIT]
        if not run_ids:
            messages.error(request, "Select at least one run to migrate.")
            return redirect("dashboard:migrations")
        discard = request.POST.get("discard_unmatched") == "on"
        try:
            valid = [str(uuid.UUID(value)) for value in run_ids]
        except ValueError:
            messages.error(request, "The selection holds something that is not a run id.")
            return redirect("dashboard:migrations")
        try:
            result = services.runs_migrate(valid, discard_unmatched=discard, user=request.user)
        except services.ServiceError as exc:
            messages.error(request, exc.message)
            return redirect("dashboard:migrations")
        _report(request, result)
        return redirect("dashboard:migrations")
    runs = list(
        WorkflowRun.objects.filter(status=RunStatus.NEEDS_MIGRATION).order_by(
            "workflow_name", "-updated_at"
        )[:BULK_LIMIT]
    )
    groups: dict[str, list[WorkflowRun]] = {}
    for run in runs:
        groups.setdefault(run.workflow_name, []).append(run)
    return render(
        request,
        "dashboard/migrations.html",
        {
            "groups": groups,
            "count": len(runs),
            "may_migrate": services.can(request.user, "migrate"),
            "limit": BULK_LIMIT,
            "nav_section": "runs",
        },
    )


def _report(request: HttpRequest, result: services.BulkMigration) -> None:
    moved = len(result.migrated)
    if moved:
        messages.success(
            request,
            f"{moved} run{'s' if moved != 1 else ''} moved to the deployed version and queued.",
        )
    for run_id, reason in result.skipped.items():
        link = reverse("dashboard:run_detail", args=[run_id])
        messages.warning(request, f"Run {run_id[:8]} ({link}) was skipped: {reason}")
