"""What executed when: executor events and the requests raised after a superstep."""

from __future__ import annotations

import uuid
from typing import Any

from dashboard.models import (
    RunEvent,
)

__all__ = [
    "EXECUTOR_EVENT_TYPES",
    "executors_completed",
    "executors_run_after",
    "requests_raised_after",
    "run_executor_events",
]


EXECUTOR_EVENT_TYPES = (
    "executor_invoked",
    "executor_completed",
    "executor_failed",
    "request_info",
    "run_status",
)


def executors_completed(run_id: uuid.UUID, names: list[str]) -> list[str]:
    """Which of these executors completed at least once in the run."""
    if not names:
        return []
    rows = RunEvent.objects.filter(
        run_id=run_id, type="executor_completed", data__executor_id__in=names
    ).values_list("data__executor_id", flat=True)
    return sorted({str(name) for name in rows})


def run_executor_events(run_id: uuid.UUID, limit: int = 4000) -> list[tuple[str, Any, Any, Any]]:
    """(type, executor_id, status, action) of the run's latest executor and status events,
    oldest first: enough to colour the graph without reading payloads."""
    rows = list(
        RunEvent.objects.filter(run_id=run_id, type__in=EXECUTOR_EVENT_TYPES)
        .order_by("-seq")
        .values_list("type", "data__executor_id", "data__status", "data__action")[:limit]
    )
    rows.reverse()
    return rows


def executors_run_after(run_id: uuid.UUID, superstep: int) -> list[str]:
    """Executors invoked in supersteps after ``superstep`` of this run, in order of first run:
    what resuming from that superstep's checkpoint executes again."""
    rows = (
        RunEvent.objects.filter(
            run_id=run_id, type="executor_invoked", data__iteration__gt=superstep
        )
        .order_by("seq")
        .values_list("data__executor_id", flat=True)
    )
    return list(dict.fromkeys(str(name) for name in rows if name))


def requests_raised_after(run_id: uuid.UUID, superstep: int) -> int:
    return RunEvent.objects.filter(
        run_id=run_id, type="request_info", data__iteration__gt=superstep
    ).count()
