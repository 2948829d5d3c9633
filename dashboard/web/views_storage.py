"""Storage: checkpoint bytes and counts per workflow and per run status, the largest runs, and
growth over the last 30 days (bytes written per day, as a bar chart drawn from numbers only)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from django.http import HttpRequest, HttpResponse
from django.shortcuts import render

from dashboard import selectors
from dashboard.models import RunStatus
from dashboard.selectors import DayGrowth, RunStorage, StatusStorage, WorkflowStorage
from dashboard.web.access import page_view


def _with_share(
    rows: Sequence[WorkflowStorage | StatusStorage | RunStorage], total: int
) -> list[dict[str, Any]]:
    return [{**row, "share": round(100 * row["bytes"] / total, 1) if total else 0} for row in rows]


CHART_WIDTH, CHART_HEIGHT = 600, 140


def _growth_chart(days: list[DayGrowth]) -> dict[str, Any]:
    """Bar geometry for the growth chart; the template only prints these numbers."""
    peak = max((d["bytes"] for d in days), default=0) or 1
    slot = CHART_WIDTH / max(1, len(days))
    bars = []
    running = 0
    for index, day in enumerate(days):
        running += day["bytes"]
        height = round(CHART_HEIGHT * day["bytes"] / peak, 1)
        bars.append(
            {
                **day,
                "x": round(index * slot + slot * 0.15, 1),
                "y": round(CHART_HEIGHT - height, 1),
                "width": round(slot * 0.7, 1),
                "height": height,
                "cumulative": running,
            }
        )
    return {"bars": bars, "width": CHART_WIDTH, "height": CHART_HEIGHT, "peak": peak, "total": running}


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
        "growth": _growth_chart(selectors.storage_growth(30)),
        "nav_section": "storage",
    }
    return render(request, "dashboard/storage.html", context)
