"""The checkpoint inspector: state trees, a diff against any other checkpoint of the run, the
JSON download, and the resume and fork actions (with the graph-signature check shown first)."""

from __future__ import annotations

import json
import re
import uuid
from typing import Any

from django.contrib import messages
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.utils import timezone

from dashboard import selectors, services
from dashboard.models import Checkpoint, WorkflowRun
from dashboard.web import previews, run_page
from dashboard.web.access import HtmxHttpRequest, allowed_actions, htmx_target, page_view
from dashboard.web.display import readable_checkpoint
from dashboard.web.forms import ForkForm, apply_errors
from dashboard.web.jsondiff import diff_json

TEMPLATE = "dashboard/checkpoint_detail.html"
_SAFE_NAME = re.compile(r"[^A-Za-z0-9_.-]")


def _load(run_id: uuid.UUID, checkpoint_id: str) -> tuple[WorkflowRun, Checkpoint]:
    run = selectors.run_get(run_id)
    checkpoint = selectors.checkpoint_get(run.pk, checkpoint_id) if run else None
    if run is None or checkpoint is None:
        raise Http404("No such checkpoint.")
    return run, checkpoint


def _comparable(row: Checkpoint, document: dict[str, Any]) -> dict[str, Any]:
    """What the diff compares: the readable state parts, not ids and timestamps."""
    return {"superstep": row.superstep, **readable_checkpoint(document)}


def _choice_label(row: selectors.CheckpointRow, previous_id: str | None) -> str:
    label = f"Superstep {row['superstep']}"
    if row.get("kind") and row["kind"] != "superstep":
        label += f" ({row['kind']})"
    if row["checkpoint_id"] == previous_id:
        label += " · previous"
    return f"{label} · {timezone.localtime(row['created_at']).strftime('%H:%M:%S')}"


def _diff_context(
    run: WorkflowRun,
    checkpoint: Checkpoint,
    document: dict[str, Any],
    compare: str | None,
    rows: list[selectors.CheckpointRow] | None = None,
) -> dict[str, Any]:
    if rows is None:
        rows = selectors.run_checkpoint_rows(run.pk)
    previous_id = checkpoint.previous_checkpoint_id
    choices = [
        (r["checkpoint_id"], _choice_label(r, previous_id))
        for r in rows
        if r["checkpoint_id"] != checkpoint.checkpoint_id
    ]
    other_id = compare or previous_id
    other = selectors.checkpoint_get(run.pk, other_id) if other_id else None
    if other is None and other_id:
        # The previous checkpoint may belong to the run this one was forked from.
        other = selectors.checkpoint_get_any(other_id)
    diff = None
    if other is not None:
        before = _comparable(other, selectors.checkpoint_document(other))
        diff = diff_json(before, _comparable(checkpoint, document))
    return {
        "compare_choices": choices,
        "compare": other,
        "compare_is_previous": other is not None and other.checkpoint_id == previous_id,
        "diff": diff,
    }


def inspector_context(
    request: HttpRequest,
    run: WorkflowRun,
    checkpoint: Checkpoint,
    *,
    fork_form: ForkForm | None = None,
) -> dict[str, Any]:
    document = selectors.checkpoint_document(checkpoint)
    deployed = run_page.deployed_hash(run.workflow_name)
    rows = selectors.run_checkpoint_rows(run.pk)
    rerun = selectors.executors_run_after(run.pk, checkpoint.superstep)
    if fork_form is None:
        fork_form = ForkForm(
            initial={
                "executor_states": document.get("executor_states") or {},
                "state": document.get("state") or {},
            }
        )
    return {
        "run": run,
        "checkpoint": checkpoint,
        "kind": (document.get("metadata") or {}).get("kind", "superstep"),
        "document": document,
        "parts": readable_checkpoint(document),
        "deployed_hash": deployed,
        "mismatch": deployed is None or checkpoint.graph_signature_hash != deployed,
        "resume_preview": previews.resume_preview(run, checkpoint, document, rerun),
        "fork_preview": previews.fork_preview(run, checkpoint, document, rerun),
        "fork_form": fork_form,
        "fork_open": fork_form.is_bound,
        "may": allowed_actions(request.user),
        **_diff_context(run, checkpoint, document, request.GET.get("compare"), rows),
        **run_page.timeline_context(run, selected=checkpoint.checkpoint_id, rows=rows),
        "nav_section": "runs",
    }


@page_view("GET")
def checkpoint_detail(request: HtmxHttpRequest, run_id: uuid.UUID, checkpoint_id: str) -> HttpResponse:
    run, checkpoint = _load(run_id, checkpoint_id)
    if htmx_target(request) == "checkpoint-diff":
        document = selectors.checkpoint_document(checkpoint)
        context = {
            "run": run,
            "checkpoint": checkpoint,
            **_diff_context(run, checkpoint, document, request.GET.get("compare")),
        }
        return render(request, f"{TEMPLATE}#diff", context)
    return render(request, TEMPLATE, inspector_context(request, run, checkpoint))


@page_view("GET")
def checkpoint_download(request: HttpRequest, run_id: uuid.UUID, checkpoint_id: str) -> HttpResponse:
    """The whole checkpoint in the codec's JSON, as stored (blobs joined back in)."""
    run, checkpoint = _load(run_id, checkpoint_id)
    body = json.dumps(selectors.checkpoint_document(checkpoint), indent=2, ensure_ascii=False)
    response = HttpResponse(body, content_type="application/json; charset=utf-8")
    name = _SAFE_NAME.sub(
        "_", f"{run.workflow_name}-superstep-{checkpoint.superstep}-{checkpoint.checkpoint_id}"
    )
    response["Content-Disposition"] = f'attachment; filename="{name}.json"'
    return response


@page_view("POST")
def checkpoint_resume(request: HttpRequest, run_id: uuid.UUID, checkpoint_id: str) -> HttpResponse:
    run, checkpoint = _load(run_id, checkpoint_id)
    try:
        services.run_resume(run.pk, checkpoint_id=checkpoint.checkpoint_id, user=request.user)
    except services.ServiceError as exc:
        context = {**inspector_context(request, run, checkpoint), "action_error": exc.message}
        return render(request, TEMPLATE, context, status=exc.status)
    messages.success(request, f"Resuming from superstep {checkpoint.superstep}.")
    return redirect("dashboard:run_detail", run_id=run.pk)


@page_view("POST")
def checkpoint_fork(request: HttpRequest, run_id: uuid.UUID, checkpoint_id: str) -> HttpResponse:
    run, checkpoint = _load(run_id, checkpoint_id)
    form = ForkForm(request.POST)
    status = 422
    error = ""
    if form.is_valid():
        document = selectors.checkpoint_document(checkpoint)
        edited = form.edited(document)
        try:
            fork = services.run_fork(
                run.pk,
                checkpoint_id=checkpoint.checkpoint_id,
                state=edited["state"],
                executor_states=edited["executor_states"],
                user=request.user,
            )
        except services.ServiceError as exc:
            apply_errors(form, exc.errors)
            error, status = exc.message, (422 if exc.status == 400 else exc.status)
        else:
            changed = edited["state"] is not None or edited["executor_states"] is not None
            note = " with edited state" if changed else ""
            messages.success(
                request,
                f"Forked run {str(fork.pk)[:8]} from superstep {checkpoint.superstep}{note}.",
            )
            return redirect("dashboard:run_detail", run_id=fork.pk)
    # Bad state goes beside the editor; a refusal (role, conflict) at the top of the page.
    where = "fork_error" if status == 422 else "action_error"
    context = {**inspector_context(request, run, checkpoint, fork_form=form), where: error}
    return render(request, TEMPLATE, context, status=status)
