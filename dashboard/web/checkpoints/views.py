"""The checkpoint inspector: state trees, a diff against any other checkpoint of the run (or the
checkpoint a fork started from), one changed value side by side, the JSON download, and the
resume and fork actions (with the graph-signature check shown first).

Forking goes through the typed editor (``fork_form``): "Review fork…" posts it to
``checkpoint_fork_check`` with htmx, which answers the editor again, with each error beside its
field (422), or with the confirmation listing the changes (200); only its "Fork" posts to
``checkpoint_fork``, which reads and checks everything again."""

from __future__ import annotations

import json
import re
import uuid
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlencode

from django.contrib import messages
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils import timezone

from dashboard import catalog, selectors, services
from dashboard.models import Checkpoint, WorkflowRun
from dashboard.renderers import checkpoint_diff, conversation
from dashboard.services.runs import fork_check
from dashboard.web.access import HtmxHttpRequest, allowed_actions, htmx_target, page_view
from dashboard.web.checkpoints.fork_form import Edits, ForkEditor
from dashboard.web.run_page import detail, previews, sensitive

TEMPLATE = "dashboard/checkpoint_detail.html"
EDITOR = "components/fork_editor.html"
_SAFE_NAME = re.compile(r"[^A-Za-z0-9_.-]")


def _load(
    request: HttpRequest, run_id: uuid.UUID, checkpoint_id: str
) -> tuple[WorkflowRun, Checkpoint]:
    run = selectors.run_get(run_id, user=request.user)
    checkpoint = selectors.checkpoint_get(run.pk, checkpoint_id) if run else None
    if run is None or checkpoint is None:
        raise Http404("No such checkpoint.")
    return run, checkpoint


def _choice_label(row: selectors.CheckpointRow, previous_id: str | None) -> str:
    label = f"Superstep {row['superstep']}"
    if row.get("kind") and row["kind"] != "superstep":
        label += f" ({row['kind']})"
    if row["checkpoint_id"] == previous_id:
        label += " · previous"
    return f"{label} · {timezone.localtime(row['created_at']).strftime('%H:%M:%S')}"


def _origin(run: WorkflowRun) -> Checkpoint | None:
    """The checkpoint of the parent run a fork started from (a resume stays in its own run)."""
    if not run.parent_run_id or not run.origin_checkpoint_id:
        return None
    return selectors.checkpoint_get(run.parent_run_id, run.origin_checkpoint_id)


def _end(row: Checkpoint, run: WorkflowRun, role: str) -> dict[str, Any]:
    """One end of the diff, for the caption: its superstep, its run when not this one."""
    elsewhere = row.run_id is not None and row.run_id != run.pk
    return {
        "checkpoint": row,
        "superstep": row.superstep,
        "role": role,
        "run_id": row.run_id if elsewhere else None,
    }


def _count(text: str | None) -> int:
    """A small non-negative int from the query string; 0 for anything else."""
    return int(text) if text and text.isdigit() and len(text) < 9 else 0


def side_for(
    request: HttpRequest, diff: checkpoint_diff.CheckpointDiff
) -> checkpoint_diff.SideBySide | None:
    """The side-by-side view the query asks for (``side``: a change's number, ``up``: how many
    containers above it), or None."""
    entry = diff.entry(_count(request.GET.get("side")))
    if entry is None:
        return None
    return checkpoint_diff.side_by_side(entry, up=_count(request.GET.get("up")))


def _diff_context(
    request: HttpRequest,
    run: WorkflowRun,
    checkpoint: Checkpoint,
    document: dict[str, Any],
    rows: list[selectors.CheckpointRow] | None = None,
) -> dict[str, Any]:
    if rows is None:
        rows = selectors.run_checkpoint_rows(run.pk)
    previous_id = checkpoint.previous_checkpoint_id
    origin = _origin(run)
    choices = [
        (r["checkpoint_id"], _choice_label(r, previous_id))
        for r in rows
        if r["checkpoint_id"] != checkpoint.checkpoint_id
    ]
    other_id = request.GET.get("compare") or previous_id
    other = selectors.checkpoint_get(run.pk, other_id) if other_id else None
    if other is None and other_id:
        # A fork's origin (and the previous checkpoint of its first one) is in its parent run.
        other = selectors.checkpoint_get_any(other_id)
        if (
            other is not None
            and other.run_id is not None
            and selectors.run_get(other.run_id, user=request.user) is None
        ):
            other = None  # a run of a workflow this user may not see
    context: dict[str, Any] = {
        "compare_choices": choices,
        "origin": origin,
        "compare": other,
        "compare_is_previous": other is not None and other.checkpoint_id == previous_id,
        "diff": None,
    }
    if other is None:
        return context
    older, newer = checkpoint_diff.older_first(other, checkpoint)
    documents = {
        checkpoint.checkpoint_id: document,
        other.checkpoint_id: selectors.checkpoint_document(other, run),
    }
    diff = checkpoint_diff.checkpoint_diff(
        checkpoint_diff.parts(documents[older.checkpoint_id], superstep=older.superstep),
        checkpoint_diff.parts(documents[newer.checkpoint_id], superstep=newer.superstep),
    )
    here = reverse("dashboard:checkpoint_detail", args=(run.pk, checkpoint.checkpoint_id))
    return {
        **context,
        "diff": diff,
        "older": _end(older, run, _role(older, checkpoint, previous_id, origin)),
        "newer": _end(newer, run, _role(newer, checkpoint, previous_id, origin)),
        "side": side_for(request, diff),
        "side_url": f"{here}?{urlencode({'compare': other.checkpoint_id})}",
    }


def _role(
    row: Checkpoint, here: Checkpoint, previous_id: str | None, origin: Checkpoint | None
) -> str:
    if row.checkpoint_id == here.checkpoint_id:
        return "this checkpoint"
    if origin is not None and row.checkpoint_id == origin.checkpoint_id:
        return "where this run was forked"
    if row.checkpoint_id == previous_id:
        return "the previous checkpoint"
    return ""


def inspector_context(
    request: HttpRequest,
    run: WorkflowRun,
    checkpoint: Checkpoint,
    *,
    editor: ForkEditor | None = None,
) -> dict[str, Any]:
    document, masked = selectors.masked_checkpoint(checkpoint, run)
    deployed = detail.deployed_hash(run.workflow_name)
    shown = checkpoint_diff.parts(document, superstep=checkpoint.superstep)
    rows = selectors.run_checkpoint_rows(run.pk)
    rerun = selectors.executors_run_after(run.pk, checkpoint.superstep)
    return {
        "run": run,
        "checkpoint": checkpoint,
        "kind": (document.get("metadata") or {}).get("kind", "superstep"),
        "parts": checkpoint_diff.trees(conversation.folded(shown)),
        "conversations": conversation.conversations_of(document.get("executor_states")),
        "orchestration": detail.orchestration_view(run, up_to=checkpoint.superstep),
        "deployed_hash": deployed,
        # Any registered version resumes its own checkpoints (versions kept side by side).
        "mismatch": deployed is None
        or checkpoint.graph_signature_hash not in catalog.versions(run.workflow_name),
        "resume_preview": previews.resume_preview(run, checkpoint, document, rerun),
        "editor": editor or ForkEditor(document),
        # Opened by "Fork…" without JavaScript (?fork=open), or to show what was refused.
        "fork_open": editor is not None or request.GET.get("fork") == "open",
        "may": allowed_actions(request.user, run.workflow_name),
        **_diff_context(request, run, checkpoint, document, rows),
        **detail.timeline_context(run, selected=checkpoint.checkpoint_id, rows=rows),
        **sensitive.masked_context(run, request.user, checkpoint.checkpoint_id, masked),
        "nav_section": "runs",
    }


@page_view("GET")
def checkpoint_detail(
    request: HtmxHttpRequest, run_id: uuid.UUID, checkpoint_id: str
) -> HttpResponse:
    run, checkpoint = _load(request, run_id, checkpoint_id)
    target = htmx_target(request)
    if target == "checkpoint-diff" or target.startswith("diff-side-"):
        document = selectors.checkpoint_document(checkpoint, run)
        context = {
            "run": run,
            "checkpoint": checkpoint,
            **_diff_context(request, run, checkpoint, document),
        }
        if target == "checkpoint-diff":
            return render(request, f"{TEMPLATE}#diff", context)
        if context.get("side") is None:
            raise Http404("No such change in this diff.")
        return render(request, "components/diff_side.html", context)
    return render(request, TEMPLATE, inspector_context(request, run, checkpoint))


@page_view("GET")
def checkpoint_conversation(
    request: HttpRequest, run_id: uuid.UUID, checkpoint_id: str, executor_id: str
) -> HttpResponse:
    """One earlier page of an agent's conversation at this checkpoint (``?before=N``: the
    turns before the N-th), for the card's "Show earlier messages"."""
    run, checkpoint = _load(request, run_id, checkpoint_id)
    raw = request.GET.get("before", "")
    if not raw.isdecimal() or len(raw) > 9:
        return HttpResponse(
            "before must be the number of a turn, such as 50", status=400, content_type="text/plain"
        )
    states = selectors.checkpoint_document(checkpoint, run).get("executor_states") or {}
    found = conversation.conversation_of(executor_id, states.get(executor_id), before=int(raw))
    if found is None:
        raise Http404(f"{executor_id!r} holds no conversation at this checkpoint.")
    context = {"conversation": found, "run_id": run.pk, "checkpoint_id": checkpoint.checkpoint_id}
    return render(request, "components/chat_turns.html", context)


@page_view("GET")
def checkpoint_download(
    request: HttpRequest, run_id: uuid.UUID, checkpoint_id: str
) -> HttpResponse:
    """The whole checkpoint in the codec's JSON, as stored (blobs joined back in)."""
    run, checkpoint = _load(request, run_id, checkpoint_id)
    body = json.dumps(selectors.checkpoint_document(checkpoint, run), indent=2, ensure_ascii=False)
    response = HttpResponse(body, content_type="application/json; charset=utf-8")
    name = _SAFE_NAME.sub(
        "_", f"{run.workflow_name}-superstep-{checkpoint.superstep}-{checkpoint.checkpoint_id}"
    )
    response["Content-Disposition"] = f'attachment; filename="{name}.json"'
    return response


@page_view("POST")
def checkpoint_resume(request: HttpRequest, run_id: uuid.UUID, checkpoint_id: str) -> HttpResponse:
    run, checkpoint = _load(request, run_id, checkpoint_id)
    try:
        services.run_resume(
            run.pk,
            checkpoint_id=checkpoint.checkpoint_id,
            user=request.user,
            reason=request.POST.get("reason", ""),
        )
    except services.ServiceError as exc:
        context = {**inspector_context(request, run, checkpoint), "action_error": exc.message}
        return render(request, TEMPLATE, context, status=exc.status)
    messages.success(request, f"Resuming from superstep {checkpoint.superstep}.")
    return redirect("dashboard:run_detail", run_id=run.pk)


@dataclass
class _Outcome:
    """What the service said of the editor's edits: ``status`` to answer with, the fork when
    one was made, or a ``refusal`` of the action itself (a role, the run's state), which is not
    about any value. Errors about values are in the editor, beside their fields."""

    status: int
    edits: Edits | None = None
    fork: WorkflowRun | None = None
    refusal: str = ""


def _checked(
    request: HttpRequest,
    run: WorkflowRun,
    checkpoint: Checkpoint,
    editor: ForkEditor,
    *,
    fork: bool,
) -> _Outcome:
    """Read the editor and have the service check the edits (or fork with them)."""
    edits = editor.read()
    if edits is None:
        return _Outcome(422)
    where = {"checkpoint_id": checkpoint.checkpoint_id, "user": request.user, **edits.as_kwargs()}
    try:
        if fork:
            reason = request.POST.get("reason", "")
            return _Outcome(302, edits, services.run_fork(run.pk, reason=reason, **where))
        fork_check(run.pk, **where)
    except services.ServiceError as exc:
        if exc.status != 400:
            return _Outcome(exc.status, refusal=exc.message)
        editor.add_errors(exc.errors, exc.message)
        return _Outcome(422)
    return _Outcome(200, edits)


@page_view("POST")
def checkpoint_fork_check(
    request: HttpRequest, run_id: uuid.UUID, checkpoint_id: str
) -> HttpResponse:
    """The editor again (htmx swaps it in place): errors beside their fields (422), or the
    confirmation, open, saying what the fork will change (200)."""
    run, checkpoint = _load(request, run_id, checkpoint_id)
    document = selectors.checkpoint_document(checkpoint, run)
    editor = ForkEditor(document, request.POST)
    outcome = _checked(request, run, checkpoint, editor, fork=False)
    if outcome.refusal:
        editor.errors.append(outcome.refusal)
    context: dict[str, Any] = {"run": run, "checkpoint": checkpoint, "editor": editor}
    if outcome.edits is not None:
        rerun = selectors.executors_run_after(run.pk, checkpoint.superstep)
        context["confirm"] = previews.fork_preview(run, checkpoint, document, rerun)
        context["changes"] = editor.changes(outcome.edits)
    return render(request, EDITOR, context, status=outcome.status)


@page_view("POST")
def checkpoint_fork(request: HttpRequest, run_id: uuid.UUID, checkpoint_id: str) -> HttpResponse:
    run, checkpoint = _load(request, run_id, checkpoint_id)
    editor = ForkEditor(selectors.checkpoint_document(checkpoint, run), request.POST)
    outcome = _checked(request, run, checkpoint, editor, fork=True)
    if outcome.fork is not None and outcome.edits is not None:
        note = " with edited values" if outcome.edits.changed else ""
        messages.success(
            request,
            f"Forked run {str(outcome.fork.pk)[:8]} from superstep {checkpoint.superstep}{note}.",
        )
        return redirect("dashboard:run_detail", run_id=outcome.fork.pk)
    context = inspector_context(request, run, checkpoint, editor=editor)
    # A refusal of the action goes at the top of the page; errors about values are beside them.
    return render(
        request, TEMPLATE, {**context, "action_error": outcome.refusal}, status=outcome.status
    )
