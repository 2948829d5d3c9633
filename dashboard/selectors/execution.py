"""What executed when: executor events and the requests raised after a superstep."""

from __future__ import annotations

import dataclasses
import uuid
from decimal import Decimal
from typing import Any

from dashboard.models import (
    RunEvent,
)

__all__ = [
    "EXECUTOR_EVENT_TYPES",
    "executors_completed",
    "executors_run_after",
    "model_calls_after",
    "orchestration_events",
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


# The engine's events an orchestration raises, and the one that says which superstep it is.
ORCHESTRATION_EVENT_TYPES = (  # the superstep's last: it alone is not an orchestration's
    "handoff_sent",
    "group_chat",
    "magentic_orchestrator",
    "superstep_started",
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


@dataclasses.dataclass(frozen=True)
class RerunCalls:
    """The model calls one executor made on one model after a superstep: what a resume or a
    fork from there asks of the model again, and what those calls cost the first time."""

    executor_id: str
    model: str
    calls: int
    tokens: int
    cost: Decimal | None


def model_calls_after(run_id: uuid.UUID, superstep: int) -> list[RerunCalls]:
    """The run's model calls committed after ``superstep``, by executor and model, in order
    of the first call. A superstep that ran more than once (a resume, a retry) counts its
    latest attempt only: what its calls cost once."""
    rows = RunEvent.objects.filter(
        run_id=run_id, type__in=("model_call", "superstep_started"), data__iteration__gt=superstep
    ).order_by("seq")
    events = list(rows.values_list("seq", "type", "data"))
    latest = {data["iteration"]: seq for seq, kind, data in events if kind == "superstep_started"}
    found: dict[tuple[str, str], list[dict[str, Any]]] = {}
    for seq, kind, data in events:
        if kind != "model_call" or seq < latest.get(data["iteration"], 0):
            continue  # an earlier attempt at that superstep
        found.setdefault((str(data["executor_id"]), str(data["model"])), []).append(data)
    return [
        RerunCalls(
            executor_id=executor_id,
            model=model,
            calls=len(calls),
            tokens=sum(int(c["input_tokens"]) + int(c["output_tokens"]) for c in calls),
            cost=None
            if any(c.get("cost") is None for c in calls)
            else sum((Decimal(c["cost"]) for c in calls), Decimal(0)),
        )
        for (executor_id, model), calls in found.items()
    ]


def orchestration_events(run_id: uuid.UUID, limit: int = 20_000) -> list[tuple[str, Any]]:
    """(type, data) of the run's orchestration events and superstep starts, oldest first (the
    newest ``limit`` of them): what ``renderers.orchestration`` draws. None at all for a run
    that raised no orchestration event (most runs), which costs one query."""
    raised = ORCHESTRATION_EVENT_TYPES[:-1]
    if not RunEvent.objects.filter(run_id=run_id, type__in=raised).exists():
        return []
    rows = list(
        RunEvent.objects.filter(run_id=run_id, type__in=ORCHESTRATION_EVENT_TYPES)
        .order_by("-seq")
        .values_list("type", "data")[:limit]
    )
    rows.reverse()
    return rows


def requests_raised_after(run_id: uuid.UUID, superstep: int) -> int:
    return RunEvent.objects.filter(
        run_id=run_id, type="request_info", data__iteration__gt=superstep
    ).count()
