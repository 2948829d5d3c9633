"""Runs: one run, the filtered and keyset-paginated run list, its events and children."""

from __future__ import annotations

import dataclasses
import datetime as dt
import uuid

from django.conf import settings
from django.core.exceptions import ValidationError
from django.db.models import Q, QuerySet

from dashboard.models import (
    RunEvent,
    WorkflowRun,
)
from dashboard.selectors.paging import KeysetPage, keyset
from dashboard.services.types import RunId

__all__ = ["REPLAY_BATCH", "RUN_LIST_COLUMNS", "RunFilters", "run_children", "run_events_after", "run_events_page", "run_events_tail", "run_get", "run_list", "run_list_full", "trace_url"]


REPLAY_BATCH = 500


def run_get(run_id: RunId) -> WorkflowRun | None:
    try:
        return WorkflowRun.objects.select_related("latest_checkpoint", "created_by").get(pk=run_id)
    except (WorkflowRun.DoesNotExist, ValidationError, ValueError):
        return None


def run_events_after(run_id: uuid.UUID, after_seq: int, limit: int = REPLAY_BATCH) -> list[RunEvent]:
    """Events with ``seq > after_seq`` in order: what a reconnecting client missed."""
    return list(
        RunEvent.objects.filter(run_id=run_id, seq__gt=after_seq).order_by("seq")[:limit]
    )


RUN_LIST_COLUMNS = (
    "id",
    "workflow_name",
    "status",
    "current_superstep",
    "created_at",
    "started_at",
    "finished_at",
    "parent_run_id",
    "created_by__username",
)


@dataclasses.dataclass(frozen=True)
class RunFilters:
    """What the runs list shows; empty values mean "any"."""

    status: str = ""
    workflow: str = ""
    created_from: dt.datetime | None = None
    created_to: dt.datetime | None = None
    q: str = ""


def _run_search(q: str) -> Q:
    """Run id (full, or a hex prefix as an index range on the primary key) or input text."""
    text = q.strip()
    match = Q(input__icontains=text)
    compact = text.replace("-", "").lower()
    if 4 <= len(compact) <= 32 and all(c in "0123456789abcdef" for c in compact):
        low = uuid.UUID(compact.ljust(32, "0"))
        high = uuid.UUID(compact.ljust(32, "f"))
        match |= Q(id__gte=low, id__lte=high)
    return match


def _filtered_runs(filters: RunFilters) -> QuerySet[WorkflowRun]:
    rows = WorkflowRun.objects.all()
    if filters.status:
        rows = rows.filter(status=filters.status)
    if filters.workflow:
        rows = rows.filter(workflow_name=filters.workflow)
    if filters.created_from:
        rows = rows.filter(created_at__gte=filters.created_from)
    if filters.created_to:
        rows = rows.filter(created_at__lt=filters.created_to)
    if filters.q.strip():
        rows = rows.filter(_run_search(filters.q))
    return rows


def run_list(
    filters: RunFilters,
    *,
    newest_first: bool = True,
    after: tuple[dt.datetime, uuid.UUID] | None = None,
    before: tuple[dt.datetime, uuid.UUID] | None = None,
    limit: int = 50,
) -> KeysetPage[WorkflowRun]:
    """Runs matching ``filters``, by creation time, one keyset page (only list columns loaded)."""
    rows = _filtered_runs(filters).select_related("created_by").only(*RUN_LIST_COLUMNS)
    return keyset(
        rows, "created_at", descending=newest_first, after=after, before=before, limit=limit
    )


def run_list_full(*, status: str = "", workflow: str = "", limit: int = 50) -> list[WorkflowRun]:
    """Newest runs first with every column (the JSON API returns whole runs)."""
    rows = _filtered_runs(RunFilters(status=status, workflow=workflow))
    return list(rows.select_related("created_by").order_by("-created_at")[:limit])


def run_events_tail(run_id: uuid.UUID, limit: int, *, up_to: int | None = None) -> list[RunEvent]:
    """The last ``limit`` events of a run (up to ``seq == up_to``), in order."""
    events = RunEvent.objects.filter(run_id=run_id)
    if up_to is not None:
        events = events.filter(seq__lte=up_to)
    rows = list(events.order_by("-seq")[:limit])
    rows.reverse()
    return rows


def run_events_page(run_id: uuid.UUID, *, before_seq: int, limit: int) -> list[RunEvent]:
    """Up to ``limit`` events with ``seq < before_seq``, in order (older history)."""
    rows = list(
        RunEvent.objects.filter(run_id=run_id, seq__lt=before_seq).order_by("-seq")[:limit]
    )
    rows.reverse()
    return rows


def run_children(run_id: uuid.UUID) -> list[WorkflowRun]:
    """Runs forked from this one, oldest first."""
    return list(
        WorkflowRun.objects.filter(parent_run_id=run_id)
        .only(
            "id", "status", "workflow_name", "origin_checkpoint_id", "created_at", "parent_run_id"
        )
        .order_by("created_at")
    )


def trace_url(trace_id: str) -> str | None:
    """Where the tracing UI shows a run's trace (``SUPERSTEP_TRACE_URL``), None without one."""
    template: str = settings.SUPERSTEP_TRACE_URL
    return template.replace("{trace_id}", trace_id) if template and trace_id else None
