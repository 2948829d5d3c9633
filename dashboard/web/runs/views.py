"""The runs list (filters, sort and keyset pages in the URL; live) and the "Start run" form."""

from __future__ import annotations

import uuid
from typing import Any

from django.contrib import messages
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse

from dashboard import catalog, selectors, services
from dashboard.models import RunStatus
from dashboard.services import bulk, saved_views
from dashboard.web.access import (
    HtmxHttpRequest,
    allowed_actions,
    htmx_target,
    page_view,
    workflow_names,
)
from dashboard.web.display import cost_label, tokens_label
from dashboard.web.durations import run_durations
from dashboard.web.forms import (
    SchemaFieldsForm,
    SchemaJsonForm,
    apply_errors,
    schema_form,
)
from dashboard.web.pagination import decode_cost_cursor, decode_cursor, page_links
from dashboard.web.runs.filters import filters_from_query
from dashboard.web.runs.rows import run_row

PAGE_SIZE = 50
# The runs list's density, remembered per browser: a choice made once holds on every later
# visit, filter and live refresh without being carried in each link.
DENSITY_COOKIE = "runs_density"
DENSITY_COOKIE_AGE = 365 * 24 * 3600
LIST_TEMPLATE = "dashboard/run_list.html"
START_TEMPLATE = "dashboard/run_start.html"
START_DENIED = (
    "Your role may look at runs but not start them; an administrator can give you a role "
    "that may (Operator)."
)


@page_view("GET")
def run_list(request: HtmxHttpRequest) -> HttpResponse:
    form, filters = filters_from_query(request.GET, request.user)
    sort, descending = form.sort_order()
    by_cost = sort == "cost"
    decode = decode_cost_cursor if by_cost else decode_cursor
    page = selectors.run_list(
        filters,
        newest_first=descending,
        after=decode(request.GET.get("after"), uuid.UUID),
        before=decode(request.GET.get("before"), uuid.UUID),
        limit=PAGE_SIZE,
        sort=sort,
    )
    waiting = selectors.pending_approvals_by_run(
        [run.pk for run in page.rows if run.status == RunStatus.WAITING]
    )
    spans = run_durations(page.rows)
    rows = [run_row(run, waiting.get(run.pk, []), spans[run.pk]) for run in page.rows]
    counts = selectors.run_status_counts(filters)
    if by_cost:
        labels = ("Dearer", "Cheaper") if descending else ("Cheaper", "Dearer")
    else:
        labels = ("Newer", "Older") if descending else ("Older", "Newer")
    context: dict[str, Any] = {
        "form": form,
        "rows": rows,
        "page": page_links(
            request,
            page,
            (lambda run: (run.cost, run.pk)) if by_cost else (lambda run: (run.created_at, run.pk)),
            path=reverse("dashboard:run_list"),
            previous_label=labels[0],
            next_label=labels[1],
        ),
        "filtered": filters.narrowed,
        "refused": form.refusals(),
        # A workflow's runs add up: what the filter's runs read and cost, from their columns.
        "totals": _totals(filters) if filters.workflow else None,
        # The list's filter as a query string: what "every run matching" and "save view" take.
        "filter_query": _filter_query(request),
        # The same, as a saved view stores it: the navigation marks the pinned view it matches.
        "open_view_query": _as_saved(_filter_query(request)),
        "bulk_actions": [
            (name, spec.label)
            for name, spec in bulk.BULK_ACTIONS.items()
            if services.can(request.user, spec.permission)
        ],
        "newest_first": descending and not by_cost,
        "sort": sort,
        "descending": descending,
        "query_items": [(key, item) for key, values in request.GET.lists() for item in values],
        "nav_section": "runs",
        "statuses": RunStatus.choices,
        # A chip per status that the other filters leave runs in, with how many.
        "status_counts": [
            (value, label, counts[value]) for value, label in RunStatus.choices if counts.get(value)
        ],
        "status_total": sum(counts.values()),
        "may": allowed_actions(request.user),
        "compact": _compact(request),
    }
    # An amount that does not read is refused (its message beside the field), the rest shown.
    status = 400 if context["refused"] else 200
    if htmx_target(request) == "runs-table":
        return render(request, f"{LIST_TEMPLATE}#runs_table", context, status=status)
    response = render(request, LIST_TEMPLATE, context, status=status)
    if "density" in request.GET:
        density = "compact" if context["compact"] else "normal"
        response.set_cookie(
            DENSITY_COOKIE, density, max_age=DENSITY_COOKIE_AGE, samesite="Lax", httponly=True
        )
    return response


def _totals(filters: selectors.RunFilters) -> dict[str, Any]:
    found = selectors.usage_totals(filters)
    return {
        "runs": found.runs,
        "input_tokens": tokens_label(found.input_tokens),
        "output_tokens": tokens_label(found.output_tokens),
        "cost": cost_label(found.cost),
    }


def _compact(request: HttpRequest) -> bool:
    """``density=compact|normal`` in the query chooses; without it, the browser's last choice."""
    wanted = request.GET.get("density") or request.COOKIES.get(DENSITY_COOKIE, "")
    return wanted == "compact"


def _filter_query(request: HttpRequest) -> str:
    kept = request.GET.copy()
    for key in ("after", "before", "density"):
        kept.pop(key, None)
    return kept.urlencode()


def _as_saved(query: str) -> str:
    try:
        return saved_views.clean_query(query) if query else ""
    except services.InvalidInput:  # not a filter a view could hold: no view is open
        return ""


def _start_forms(
    request: HttpRequest, workflow: str, mode: str, data: Any = None
) -> SchemaFieldsForm | SchemaJsonForm | None:
    if workflow not in catalog.names():
        return None
    schema = catalog.input_schema(workflow)
    return schema_form(schema, data=data, mode=mode, defaults=catalog.default_input(workflow))


@page_view("GET", "POST")
def run_start(request: HtmxHttpRequest) -> HttpResponse:
    try:
        # A role that may start nothing is told so, not shown a form it cannot send (audited).
        services.require(request.user, "start", target="page /runs/start/")
    except services.Forbidden:
        denied = {"denied": START_DENIED, "nav_section": "runs"}
        return render(request, START_TEMPLATE, denied, status=403)
    source = request.POST if request.method == "POST" else request.GET
    workflows = workflow_names(request.user, "start")
    workflow = source.get("workflow") or (workflows[0] if workflows else "")
    mode = "json" if source.get("mode") == "json" else "form"
    form = _start_forms(request, workflow, mode, request.POST if request.method == "POST" else None)
    status = 200
    error = ""
    if request.method == "POST":
        if form is None:
            error = "Choose a registered workflow."
            status = 422
        elif form.is_valid():
            try:
                run = services.run_start(
                    workflow_name=workflow, input=form.value(), user=request.user
                )
            except services.ServiceError as exc:
                apply_errors(form, {k: v for k, v in exc.errors.items() if k != "workflow"})
                error = exc.message
                status = exc.status if exc.status != 400 else 422
            else:
                messages.success(request, f"Run {str(run.pk)[:8]} of {workflow} is queued.")
                return redirect("dashboard:run_detail", run_id=run.pk)
        else:
            status = 422
    context = {
        "workflows": [_workflow_choice(name) for name in workflows],
        "workflow": workflow,
        "description": _description(workflow),
        "form": form,
        "mode": mode,
        "error": error,
        "nav_section": "runs",
        "may": allowed_actions(request.user),
    }
    if request.method == "GET" and htmx_target(request) == "start-input":
        return render(request, f"{START_TEMPLATE}#input_fields", context)
    return render(request, START_TEMPLATE, context, status=status)


def _workflow_choice(name: str) -> dict[str, str]:
    return {"name": name, "description": _description(name)}


def _description(name: str) -> str:
    if name not in catalog.names():
        return ""
    return catalog.describe(name).description or ""
