"""Storage: checkpoint bytes and counts per workflow and per run status, the largest runs, and
growth over the last 30 days (bytes written per day, as a bar chart drawn from numbers only),
as of a moment at most half a minute ago (``kept_figures``)."""

from __future__ import annotations

import threading
import time
from collections.abc import Sequence
from typing import Any

from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.utils import timezone

from dashboard import selectors, services
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
    return {
        "bars": bars,
        "width": CHART_WIDTH,
        "height": CHART_HEIGHT,
        "peak": peak,
        "total": running,
    }


def _figures() -> dict[str, Any]:
    totals = selectors.storage_totals()
    total = totals["checkpoint_bytes"]
    labels = dict(RunStatus.choices)
    by_status = _with_share(selectors.storage_by_status(), total)
    for row in by_status:
        row["label"] = labels.get(row["status"], "No run (engine only)")
    return {
        "totals": totals,
        "saved_bytes": max(0, total - totals["blob_bytes"]),
        "by_workflow": _with_share(selectors.storage_by_workflow(), total),
        "by_status": by_status,
        "largest": _with_share(selectors.storage_largest_runs(), total),
        "growth": _growth_chart(selectors.storage_growth(30)),
        "figures_at": timezone.now(),
    }


# The figures aggregate every checkpoint and run ever kept, so their cost grows with history
# (tens of milliseconds at 100,000 runs, seconds at millions of checkpoints), while retention
# decisions need them to the minute, not to the second. Each process keeps the last figures
# (plain objects, no cache backend that would pickle them) until they are KEEP_SECONDS old or
# a newer run exists.
KEEP_SECONDS = 30.0
_kept: dict[str, tuple[float, dict[str, Any]]] = {}
_kept_lock = threading.Lock()


def kept_figures() -> dict[str, Any]:
    """The storage figures, computed again only when old or when a run has started since."""
    newest = str(selectors.newest_run_id())
    with _kept_lock:
        kept = _kept.get(newest)
    if kept is not None and time.monotonic() - kept[0] < KEEP_SECONDS:
        return kept[1]
    began, figures = time.monotonic(), _figures()
    with _kept_lock:
        _kept.clear()
        _kept[newest] = (began, figures)
    return figures


@page_view("GET")
def storage(request: HttpRequest) -> HttpResponse:
    context = {**kept_figures(), "nav_section": "storage"}
    visible = services.visible_workflows(request.user)
    if visible is not None:
        # A role for named workflows: their rows only (the totals name no workflow).
        context["by_workflow"] = [
            r for r in context["by_workflow"] if r["workflow_name"] in visible
        ]
        context["largest"] = [
            r
            for r in context["largest"]
            if r["run"] is not None and r["run"].workflow_name in visible
        ]
    return render(request, "dashboard/storage.html", context)
