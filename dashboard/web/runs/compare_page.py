"""Two runs side by side (dashboard/web/runs/compare.py); the page asks for the second run when
only one is given."""

from __future__ import annotations

from typing import Any

from django.http import Http404, HttpResponse
from django.shortcuts import render
from django.urls import reverse

from dashboard.web.access import HtmxHttpRequest, htmx_target, page_view
from dashboard.web.checkpoints.views import side_for
from dashboard.web.runs import compare

TEMPLATE = "dashboard/run_compare.html"


@page_view("GET")
def run_compare_page(request: HtmxHttpRequest) -> HttpResponse:
    a, a_error = compare.find_run(request.GET.get("a", "")[:80], request.user)
    b, b_error = compare.find_run(request.GET.get("b", "")[:80], request.user)
    context: dict[str, Any] = {
        "a": a,
        "b": b,
        "a_text": request.GET.get("a", "")[:80],
        "b_text": request.GET.get("b", "")[:80],
        "a_error": a_error,
        "b_error": b_error,
        "choices": compare.candidates(a, request.user) if a is not None else [],
        "nav_section": "runs",
    }
    status = 200 if not (a_error or b_error) else 404
    if a is not None and b is not None:
        comparison = compare.compare(a, b)
        here = reverse("dashboard:run_compare")
        context.update(
            comparison=comparison,
            side=side_for(request, comparison.checkpoints) if comparison.checkpoints else None,
            side_url=f"{here}?{compare.query(a, b)}",
        )
        if htmx_target(request).startswith("diff-side-"):
            if context["side"] is None:
                raise Http404("No such change in this comparison.")
            return render(request, "components/diff_side.html", context)
    return render(request, TEMPLATE, context, status=status)
