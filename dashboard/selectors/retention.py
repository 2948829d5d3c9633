"""Checkpoint storage by workflow, status and run, totals and daily growth (the storage
page retention decisions are made from)."""

from __future__ import annotations

import datetime as dt
import uuid
from typing import TypedDict

from django.db.models import Count, F, Sum
from django.db.models.functions import TruncDate
from django.utils import timezone

from dashboard.models import (
    Checkpoint,
    CheckpointBlob,
    WorkflowRun,
)

__all__ = [
    "DayGrowth",
    "RunStorage",
    "StatusStorage",
    "StorageTotals",
    "WorkflowStorage",
    "newest_run_id",
    "storage_by_status",
    "storage_by_workflow",
    "storage_growth",
    "storage_largest_runs",
    "storage_totals",
]


class WorkflowStorage(TypedDict):
    workflow_name: str
    checkpoints: int
    bytes: int


class StatusStorage(TypedDict):
    status: str | None  # None: checkpoints the engine wrote outside any run
    checkpoints: int
    bytes: int


class RunStorage(TypedDict):
    run_id: uuid.UUID
    checkpoints: int
    bytes: int
    run: WorkflowRun | None


class StorageTotals(TypedDict):
    checkpoints: int
    checkpoint_bytes: int
    blobs: int
    blob_bytes: int
    runs: int


class DayGrowth(TypedDict):
    day: dt.date
    checkpoints: int
    bytes: int


def storage_by_workflow() -> list[WorkflowStorage]:
    """Checkpoint count and bytes (as written, before blob sharing) per workflow."""
    rows = (
        Checkpoint.objects.values("workflow_name")
        .annotate(checkpoints=Count("checkpoint_id"), bytes=Sum("size_bytes"))
        .order_by("-bytes")
    )
    return [
        WorkflowStorage(
            workflow_name=row["workflow_name"],
            checkpoints=row["checkpoints"],
            bytes=row["bytes"] or 0,
        )
        for row in rows
    ]


def storage_by_status() -> list[StatusStorage]:
    """Checkpoint count and bytes per status of the run they belong to."""
    rows = (
        Checkpoint.objects.values(status=F("run__status"))
        .annotate(checkpoints=Count("checkpoint_id"), bytes=Sum("size_bytes"))
        .order_by("-bytes")
    )
    return [
        StatusStorage(status=row["status"], checkpoints=row["checkpoints"], bytes=row["bytes"] or 0)
        for row in rows
    ]


def storage_largest_runs(limit: int = 10) -> list[RunStorage]:
    """The runs whose checkpoints take the most bytes."""
    rows = list(
        Checkpoint.objects.filter(run__isnull=False)
        .values("run_id")
        .annotate(checkpoints=Count("checkpoint_id"), bytes=Sum("size_bytes"))
        .order_by("-bytes")[:limit]
    )
    runs = WorkflowRun.objects.in_bulk([row["run_id"] for row in rows]) if rows else {}
    return [
        RunStorage(
            run_id=row["run_id"],
            checkpoints=row["checkpoints"],
            bytes=row["bytes"] or 0,
            run=runs.get(row["run_id"]),
        )
        for row in rows
    ]


def storage_totals() -> StorageTotals:
    """Checkpoints and their bytes as written, and what the shared blob table really holds."""
    checkpoints = Checkpoint.objects.aggregate(
        count=Count("checkpoint_id"), bytes=Sum("size_bytes")
    )
    blobs = CheckpointBlob.objects.aggregate(count=Count("digest"), bytes=Sum("size_bytes"))
    return StorageTotals(
        checkpoints=checkpoints["count"] or 0,
        checkpoint_bytes=checkpoints["bytes"] or 0,
        blobs=blobs["count"] or 0,
        blob_bytes=blobs["bytes"] or 0,
        runs=WorkflowRun.objects.count(),
    )


def newest_run_id() -> uuid.UUID | None:
    """The most recently created run's id (one row of the creation-time index), or None."""
    return WorkflowRun.objects.order_by("-created_at").values_list("pk", flat=True).first()


def storage_growth(days: int = 30) -> list[DayGrowth]:
    """Checkpoint bytes and counts by the day they were written, for the last ``days`` days
    (every day present, zeros included), oldest first. Pruned checkpoints no longer count."""
    today = timezone.now().date()
    first = today - dt.timedelta(days=days - 1)
    rows = (
        Checkpoint.objects.filter(created_at__date__gte=first)
        .annotate(day=TruncDate("created_at"))
        .values("day")
        .annotate(checkpoints=Count("checkpoint_id"), bytes=Sum("size_bytes"))
    )
    found: dict[dt.date, DayGrowth] = {
        row["day"]: DayGrowth(
            day=row["day"], checkpoints=row["checkpoints"], bytes=row["bytes"] or 0
        )
        for row in rows
    }
    return [
        found.get(day) or DayGrowth(day=day, checkpoints=0, bytes=0)
        for day in (first + dt.timedelta(days=n) for n in range(days))
    ]
