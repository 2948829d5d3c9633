"""Runs: one run, the filtered and keyset-paginated run list, its events and children."""

from __future__ import annotations

import dataclasses
import datetime as dt
import uuid
from collections.abc import Sequence
from decimal import Decimal

from django.conf import settings
from django.core.exceptions import ValidationError
from django.db.models import Count, Exists, F, OuterRef, Q, QuerySet

from dashboard.access.authz import can
from dashboard.core.types import Actor, RunId
from dashboard.models import (
    ApprovalRequest,
    ApprovalStatus,
    RunEvent,
    WorkflowRun,
)
from dashboard.selectors.paging import KeysetPage, keyset

__all__ = [
    "REPLAY_BATCH",
    "RUN_LIST_COLUMNS",
    "RUN_SORT_FIELDS",
    "RUN_TRIGGERS",
    "RunFilters",
    "filtered_runs",
    "run_children",
    "run_events_after",
    "run_events_page",
    "run_events_tail",
    "run_get",
    "run_list",
    "run_list_full",
    "run_status_counts",
    "trace_url",
]


REPLAY_BATCH = 500
# The event log's filters offer at most this many types and executors.
FACET_LIMIT = 200


def run_get(run_id: RunId, *, user: Actor = None) -> WorkflowRun | None:
    """The run, or None when there is none, or ``user`` may not see its workflow."""
    try:
        run = WorkflowRun.objects.select_related("latest_checkpoint", "created_by", "schedule").get(
            pk=run_id
        )
    except (WorkflowRun.DoesNotExist, ValidationError, ValueError):
        return None
    return run if can(user, "view", run.workflow_name) else None


def run_events_after(
    run_id: uuid.UUID, after_seq: int, limit: int = REPLAY_BATCH
) -> list[RunEvent]:
    """Events with ``seq > after_seq`` in order: what a reconnecting client missed."""
    return list(RunEvent.objects.filter(run_id=run_id, seq__gt=after_seq).order_by("seq")[:limit])


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
    "schedule__name",  # a scheduled run names its schedule instead of "system"
    "error_message",  # its first line on a failed run's row
    "input_tokens",
    "output_tokens",
    "cost",
)
# How the list may be ordered: by creation time, or by cost (each with the id as tie-break,
# on the ``run_created`` and ``run_cost`` indexes).
RUN_SORT_FIELDS = {"created": "created_at", "cost": "cost"}

# What started a run, as far as its row can tell: a schedule (its own tick, or a person's
# "Trigger now"), or a person with no schedule (from a page or the API: the row does not say
# which). A run whose schedule or user has since been deleted matches neither.
RUN_TRIGGERS = (("schedule", "A schedule"), ("manual", "A person"))


@dataclasses.dataclass(frozen=True)
class RunFilters:
    """What the runs list shows; empty values mean "any"."""

    status: str = ""
    workflow: str = ""
    created_from: dt.datetime | None = None
    created_to: dt.datetime | None = None
    q: str = ""
    # The workflows the viewer may see (``access.authz.visible_workflows``): None for all.
    workflows: frozenset[str] | None = None
    # Runs an executor holds up: failed in it, or waiting for a decision it asked for.
    executor: str = ""
    # One of RUN_TRIGGERS' values.
    trigger: str = ""
    # What the run's agents cost and read so far (``services.amounts`` checked them).
    cost_min: Decimal | None = None
    cost_max: Decimal | None = None
    tokens_min: int | None = None

    @property
    def narrowed(self) -> bool:
        """Whether any filter leaves runs out (the viewer's workflows aside)."""
        return any(
            [self.status, self.workflow, self.created_from, self.created_to, self.q.strip()]
            + [self.executor, self.trigger, self.cost_min is not None]
            + [self.cost_max is not None, self.tokens_min is not None]
        )


def _run_search(q: str) -> Q:
    """Run id (full, or a hex prefix as an index range on the primary key), or text in the
    input, the output or the error message (trigram-indexed on PostgreSQL: migrations 0005,
    0019)."""
    text = q.strip()
    match = Q(input__icontains=text) | Q(output__icontains=text) | Q(error_message__icontains=text)
    compact = text.replace("-", "").lower()
    if 4 <= len(compact) <= 32 and all(c in "0123456789abcdef" for c in compact):
        low = uuid.UUID(compact.ljust(32, "0"))
        high = uuid.UUID(compact.ljust(32, "f"))
        match |= Q(id__gte=low, id__lte=high)
    return match


def filtered_runs(filters: RunFilters) -> QuerySet[WorkflowRun]:
    rows = WorkflowRun.objects.all()
    if filters.workflows is not None:
        rows = rows.filter(workflow_name__in=sorted(filters.workflows))
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
    if filters.trigger == "schedule":
        rows = rows.filter(schedule__isnull=False)
    elif filters.trigger == "manual":
        rows = rows.filter(schedule__isnull=True, created_by__isnull=False)
    if filters.cost_min is not None:
        rows = rows.filter(cost__gte=filters.cost_min)
    if filters.cost_max is not None:
        rows = rows.filter(cost__lte=filters.cost_max)
    if filters.tokens_min is not None:
        # The very expression of the ``run_tokens`` index, so the database can use it.
        rows = rows.alias(tokens=F("input_tokens") + F("output_tokens")).filter(
            tokens__gte=filters.tokens_min
        )
    if filters.executor:
        rows = rows.filter(
            Exists(
                ApprovalRequest.objects.filter(
                    run=OuterRef("pk"), status=ApprovalStatus.PENDING, executor_id=filters.executor
                )
            )
            | Exists(
                RunEvent.objects.filter(
                    run=OuterRef("pk"), type="executor_failed", data__executor_id=filters.executor
                )
            )
        )
    return rows


def run_list(
    filters: RunFilters,
    *,
    newest_first: bool = True,
    after: tuple[object, uuid.UUID] | None = None,
    before: tuple[object, uuid.UUID] | None = None,
    limit: int = 50,
    sort: str = "created",
) -> KeysetPage[WorkflowRun]:
    """Runs matching ``filters``, by creation time or (``sort="cost"``) by cost, one keyset
    page (only list columns loaded); ``newest_first`` is descending, whichever the field."""
    rows = filtered_runs(filters).select_related("created_by", "schedule").only(*RUN_LIST_COLUMNS)
    field = RUN_SORT_FIELDS[sort]
    return keyset(rows, field, descending=newest_first, after=after, before=before, limit=limit)


def run_status_counts(filters: RunFilters) -> dict[str, int]:
    """How many runs match ``filters`` in each status, leaving out their status filter: the
    counts the list shows above its rows, one per status (one query)."""
    rows = filtered_runs(dataclasses.replace(filters, status="")).order_by()
    counted = rows.values("status").annotate(count=Count("id")).values_list("status", "count")
    return dict(counted)


def run_ids_matching(filters: RunFilters, *, limit: int) -> tuple[list[uuid.UUID], int]:
    """The ids of the runs ``filters`` match (newest first, at most ``limit``) and how many
    match in all: what "every run matching this filter" picks."""
    rows = filtered_runs(filters)
    return list(rows.order_by("-created_at").values_list("pk", flat=True)[:limit]), rows.count()


def run_list_full(filters: RunFilters, *, limit: int = 50) -> list[WorkflowRun]:
    """Newest runs matching ``filters`` first, with every column (the JSON API returns whole
    runs)."""
    rows = filtered_runs(filters)
    return list(rows.select_related("created_by").order_by("-created_at")[:limit])


def run_events_tail(run_id: uuid.UUID, limit: int, *, up_to: int | None = None) -> list[RunEvent]:
    """The last ``limit`` events of a run (up to ``seq == up_to``), in order."""
    events = RunEvent.objects.filter(run_id=run_id)
    if up_to is not None:
        events = events.filter(seq__lte=up_to)
    rows = list(events.order_by("-seq")[:limit])
    rows.reverse()
    return rows


def run_events_page(
    run_id: uuid.UUID,
    *,
    before_seq: int,
    limit: int,
    types: Sequence[str] = (),
    executor: str = "",
) -> list[RunEvent]:
    """Up to ``limit`` events with ``seq < before_seq``, in order (older history); only those
    of ``types`` and of ``executor`` when given."""
    rows = RunEvent.objects.filter(run_id=run_id, seq__lt=before_seq)
    if types:
        rows = rows.filter(type__in=list(types))
    if executor:
        rows = rows.filter(data__executor_id=executor)
    page = list(rows.order_by("-seq")[:limit])
    page.reverse()
    return page


def run_event_facets(run_id: uuid.UUID) -> tuple[list[tuple[str, int]], list[str]]:
    """The event types of a run with their counts, and the executors its events name: what the
    event log's filters offer."""
    counts = (
        RunEvent.objects.filter(run_id=run_id)
        .values_list("type")
        .annotate(n=Count("id"))
        .order_by("type")
    )
    executors = (
        RunEvent.objects.filter(run_id=run_id, data__executor_id__isnull=False)
        .values_list("data__executor_id", flat=True)
        .distinct()
    )
    named = sorted({str(e) for e in executors[:FACET_LIMIT] if isinstance(e, str) and e})
    return [(t, n) for t, n in counts[:FACET_LIMIT]], named


def run_superstep_before(run_id: uuid.UUID, seq: int) -> int | None:
    """The superstep in progress at event ``seq``: that of the last event before it that names
    one (where a page of the event log starts)."""
    found = (
        RunEvent.objects.filter(run_id=run_id, seq__lt=seq, data__iteration__isnull=False)
        .order_by("-seq")
        .values_list("data__iteration", flat=True)
        .first()
    )
    return found if isinstance(found, int) and not isinstance(found, bool) else None


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
