"""Checkpoint storage by workflow, status and run, totals and daily growth (the storage
page retention decisions are made from)."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from django.db.models import Count, F, Sum
from django.db.models.functions import TruncDate
from django.utils import timezone

from dashboard.models import (
    Checkpoint,
    CheckpointBlob,
    WorkflowRun,
)

__all__ = ["storage_by_status", "storage_by_workflow", "storage_growth", "storage_largest_runs", "storage_totals"]


def storage_by_workflow() -> list[dict[str, Any]]:
    """Checkpoint count and bytes (as written, before blob sharing) per workflow."""
    rows = (
        Checkpoint.objects.values("workflow_name")
        .annotate(checkpoints=Count("checkpoint_id"), bytes=Sum("size_bytes"))
        .order_by("-bytes")
    )
    return [dict(row) for row in rows]


def storage_by_status() -> list[dict[str, Any]]:
    """Checkpoint count and bytes per status of the run they belong to."""
    rows = (
        Checkpoint.objects.values(status=F("run__status"))
        .annotate(checkpoints=Count("checkpoint_id"), bytes=Sum("size_bytes"))
        .order_by("-bytes")
    )
    return [dict(row) for row in rows]


def storage_largest_runs(limit: int = 10) -> list[dict[str, Any]]:
    """The runs whose checkpoints take the most bytes."""
    rows: list[dict[str, Any]] = [
        dict(row)
        for row in Checkpoint.objects.filter(run__isnull=False)
        .values("run_id")
        .annotate(checkpoints=Count("checkpoint_id"), bytes=Sum("size_bytes"))
        .order_by("-bytes")[:limit]
    ]
    runs = WorkflowRun.objects.in_bulk([row["run_id"] for row in rows]) if rows else {}
    for row in rows:
        row["run"] = runs.get(row["run_id"])
    return rows


def storage_totals() -> dict[str, int]:
    """Checkpoints and their bytes as written, and what the shared blob table really holds."""
    checkpoints = Checkpoint.objects.aggregate(
        count=Count("checkpoint_id"), bytes=Sum("size_bytes")
    )
    blobs = CheckpointBlob.objects.aggregate(count=Count("digest"), bytes=Sum("size_bytes"))
    return {
        "checkpoints": checkpoints["count"] or 0,
        "checkpoint_bytes": checkpoints["bytes"] or 0,
        "blobs": blobs["count"] or 0,
        "blob_bytes": blobs["bytes"] or 0,
        "runs": WorkflowRun.objects.count(),
    }


def storage_growth(days: int = 30) -> list[dict[str, Any]]:
    """Checkpoint bytes and counts by the day they were written, for the last ``days`` days
    (every day present, zeros included), oldest first. Pruned checkpoints no longer count."""
    today = timezone.now().date()
    first = today - timedelta(days=days - 1)
    rows = (
        Checkpoint.objects.filter(created_at__date__gte=first)
        .annotate(day=TruncDate("created_at"))
        .values("day")
        .annotate(checkpoints=Count("checkpoint_id"), bytes=Sum("size_bytes"))
    )
    found = {row["day"]: row for row in rows}
    return [
        {
            "day": day,
            "checkpoints": found.get(day, {}).get("checkpoints", 0),
            "bytes": found.get(day, {}).get("bytes") or 0,
        }
        for day in (first + timedelta(days=n) for n in range(days))
    ]

