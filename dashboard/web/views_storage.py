"""Storage: checkpoint bytes and counts per workflow and per run status, and the largest runs.

A 30-day growth chart needs daily totals kept over time (a snapshot table written by the
periodic retention job); until then this page shows the present totals only.
"""

from __future__ import annotations

from typing import Any

from django.http import HttpRequest, HttpResponse
from django.shortcuts import render

from dashboard import selectors
from dashboard.models import RunStatus
from dashboard.web.access import page_view


def _with_share(rows: list[dict[str, Any]], total: int) -> list[dict[str, Any]]:
    for row in rows:
        row["share"] = round(100 * (row["bytes"] or 0) / total, 1) if total else 0
    return rows


@page_view("GET")
def storage(request: HttpRequest) -> HttpResponse:
    totals = selectors.storage_totals()
    total = totals["checkpoint_bytes"]
    labels = dict(RunStatus.choices)
    by_status = _with_share(selectors.storage_by_status(), total)
    for row in by_status:
        row["label"] = labels.get(row["status"], "No run (engine only)")
    context = {
        "totals": totals,
        "saved_bytes": max(0, total - totals["blob_bytes"]),
        "by_workflow": _with_share(selectors.storage_by_workflow(), total),
        "by_status": by_status,
        "largest": _with_share(selectors.storage_largest_runs(), total),
        "nav_section": "storage",
    }
    return render(request, "dashboard/storage.html", context)
