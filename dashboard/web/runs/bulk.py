"""Acting on many runs from the runs list: review (how many change, which are skipped and why),
confirm, then watch the progress (``services.bulk`` does the work on a worker)."""

from __future__ import annotations

import uuid
from typing import Any

from django.http import Http404, HttpRequest, HttpResponse, QueryDict
from django.shortcuts import redirect, render
from django.urls import reverse

from dashboard import selectors, services
from dashboard.models import BulkAction, BulkActionItem
from dashboard.services import bulk
from dashboard.web.access import HtmxHttpRequest, htmx_target, page_view
from dashboard.web.runs.filters import filters_from_query

CONFIRM = "dashboard/bulk_confirm.html"
PROGRESS = "dashboard/bulk_progress.html"
SKIPPED_SHOWN = 200
# Who may watch one: whoever asked for it, or may do the same action.
BULK_PERMISSION = {name: spec.permission for name, spec in bulk.BULK_ACTIONS.items()}


def _picked(request: HttpRequest) -> tuple[list[str], str, str]:
    """The runs the form names, what to call them, and the list's query to go back to: the
    ticked rows, or every run the list's filter matches."""
    query = request.POST.get("query", "")[:2000]
    if request.POST.get("all_matching") == "1":
        form, filters = filters_from_query(QueryDict(query), request.user)
        if refused := form.refusals():
            raise services.InvalidInput(
                "the filter has an amount that does not read: " + " ".join(refused.values()),
                errors=refused,
            )
        ids, count = selectors.run_ids_matching(filters, limit=bulk.MAX_BULK_RUNS + 1)
        if count > bulk.MAX_BULK_RUNS:
            raise services.InvalidInput(
                f"{count} runs match this filter; "
                f"at most {bulk.MAX_BULK_RUNS} are acted on at once",
                errors={"runs": "too many"},
            )
        return [str(i) for i in ids], f"every run matching the filter ({count})", query
    picked = request.POST.getlist("run")[: bulk.MAX_BULK_RUNS + 1]
    return picked, f"{len(picked)} picked run{'' if len(picked) == 1 else 's'}", query


@page_view("POST")
def bulk_review(request: HttpRequest) -> HttpResponse:
    """The confirmation: what the action would do to the picked runs; confirming starts it."""
    action = request.POST.get("action", "")
    back = f"{reverse('dashboard:run_list')}?{request.POST.get('query', '')[:2000]}"
    reason_error = ""
    try:
        run_ids, described, query = _picked(request)
        if request.POST.get("confirm") == "1":
            try:
                started = bulk.bulk_start(
                    action,
                    run_ids,
                    user=request.user,
                    reason=request.POST.get("reason", ""),
                    described=described,
                )
                return redirect("dashboard:bulk_progress", bulk_id=started.pk)
            except services.InvalidInput as exc:
                if "reason" not in exc.errors:
                    raise
                reason_error = exc.message  # the review again, the message under the reason
        preview = bulk.bulk_preview(action, run_ids, user=request.user)
    except services.ServiceError as exc:
        return render(
            request,
            CONFIRM,
            {"error": exc.message, "back": back, "nav_section": "runs"},
            status=exc.status if exc.status != 400 else 422,
        )
    context: dict[str, Any] = {
        "preview": preview,
        "done_word": bulk.BULK_ACTIONS[preview.action].done,
        "run_ids": run_ids,
        "described": described,
        "query": query,
        "all_matching": request.POST.get("all_matching") == "1",
        "back": back,
        "reason": request.POST.get("reason", "")[:2000],
        "reason_error": reason_error,
        "nav_section": "runs",
    }
    return render(request, CONFIRM, context, status=422 if reason_error else 200)


@page_view("GET")
def bulk_progress(request: HtmxHttpRequest, bulk_id: uuid.UUID) -> HttpResponse:
    action = BulkAction.objects.select_related("requested_by").filter(pk=bulk_id).first()
    if action is None or not (
        action.requested_by_id == request.user.pk
        or services.can(request.user, BULK_PERMISSION.get(action.action, "view"))
    ):
        raise Http404("No such bulk action.")
    skipped = list(
        BulkActionItem.objects.filter(bulk=action, outcome=BulkActionItem.SKIPPED).order_by(
            "position"
        )[:SKIPPED_SHOWN]
    )
    context = {
        "action": action,
        "label": bulk.BULK_ACTIONS[action.action].label
        if action.action in bulk.BULK_ACTIONS
        else action.action,
        "skipped_items": skipped,
        "nav_section": "runs",
    }
    if htmx_target(request) == "bulk-progress":
        return render(request, f"{PROGRESS}#progress", context)
    return render(request, PROGRESS, context)
