"""Read-only queries the views, API and consumers share (services write; selectors read)."""

from __future__ import annotations

import dataclasses
import datetime as dt
import uuid
from typing import Any

from django.core.exceptions import ValidationError
from django.db.models import Count, F, Q, QuerySet, Sum

from .models import (
    ApprovalRequest,
    ApprovalStatus,
    Checkpoint,
    CheckpointBlob,
    RunEvent,
    WorkflowRun,
)

__all__ = [
    "KeysetPage",
    "RunFilters",
    "approval_archive",
    "approval_get",
    "approval_inbox",
    "approval_pending",
    "checkpoint_document",
    "checkpoint_get",
    "checkpoint_get_any",
    "checkpoint_superstep",
    "executors_completed",
    "executors_run_after",
    "pending_approval_count",
    "pending_approvals_by_run",
    "requests_raised_after",
    "run_audit_entries",
    "run_checkpoint_rows",
    "run_checkpoints",
    "run_children",
    "run_events_after",
    "run_events_page",
    "run_events_tail",
    "run_executor_events",
    "run_get",
    "run_list",
    "storage_by_status",
    "storage_by_workflow",
    "storage_largest_runs",
    "storage_totals",
    "user_can_view",
]

REPLAY_BATCH = 500


def user_can_view(user: Any) -> bool:
    """Whether the user may look at runs at all (every role can; a user with no role cannot)."""
    from .services.authz import can

    return user is not None and can(user, "view")


def run_get(run_id: Any) -> WorkflowRun | None:
    try:
        return WorkflowRun.objects.select_related("latest_checkpoint", "created_by").get(pk=run_id)
    except (WorkflowRun.DoesNotExist, ValidationError, ValueError):
        return None


def run_events_after(run_id: Any, after_seq: int, limit: int = REPLAY_BATCH) -> list[RunEvent]:
    """Events with ``seq > after_seq`` in order: what a reconnecting client missed."""
    return list(
        RunEvent.objects.filter(run_id=run_id, seq__gt=after_seq).order_by("seq")[:limit]
    )


def run_checkpoints(run: WorkflowRun) -> QuerySet[Checkpoint]:
    return Checkpoint.objects.filter(run=run).order_by("created_at").defer("document")


def approval_pending() -> QuerySet[ApprovalRequest]:
    """Every pending request, oldest first."""
    return (
        ApprovalRequest.objects.filter(status=ApprovalStatus.PENDING)
        .select_related("run")
        .order_by("created_at")
    )


def pending_approval_count() -> int:
    return ApprovalRequest.objects.filter(status=ApprovalStatus.PENDING).count()


# ------------------------------------------------------------------------ dashboard pages
# Read-only queries behind the operator's pages (dashboard/web). Lists use keyset pagination
# on indexed columns, never OFFSET or COUNT(*), so they stay fast at 100k runs.

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


@dataclasses.dataclass(frozen=True)
class KeysetPage[T]:
    """One page of a keyset-paginated list, in display order.

    ``has_next`` means rows exist beyond the last one in the sort direction; ``has_previous``
    that rows exist before the first. Cursors are (sort value, id) of the edge rows.
    """

    rows: list[T]
    has_next: bool
    has_previous: bool


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


def _keyset(
    rows: QuerySet[Any],
    field: str,
    *,
    descending: bool,
    after: tuple[Any, Any] | None,
    before: tuple[Any, Any] | None,
    limit: int,
) -> KeysetPage[Any]:
    """Rows ordered by (field, id), ``limit`` of them after/before a cursor (value, id)."""
    newer_first = descending
    if before is not None:
        # Walk backwards from the cursor, then flip the rows into display order.
        value, pk = before
        towards = Q(**{f"{field}__gt" if newer_first else f"{field}__lt": value}) | Q(
            **{field: value, "id__gt" if newer_first else "id__lt": pk}
        )
        order = (field, "id") if newer_first else (f"-{field}", "-id")
        found = list(rows.filter(towards).order_by(*order)[: limit + 1])
        has_previous = len(found) > limit
        page = list(reversed(found[:limit]))
        return KeysetPage(page, has_next=True, has_previous=has_previous)
    order = (f"-{field}", "-id") if newer_first else (field, "id")
    if after is not None:
        value, pk = after
        rows = rows.filter(
            Q(**{f"{field}__lt" if newer_first else f"{field}__gt": value})
            | Q(**{field: value, "id__lt" if newer_first else "id__gt": pk})
        )
    found = list(rows.order_by(*order)[: limit + 1])
    return KeysetPage(found[:limit], has_next=len(found) > limit, has_previous=after is not None)


def run_list(
    filters: RunFilters,
    *,
    newest_first: bool = True,
    after: tuple[dt.datetime, Any] | None = None,
    before: tuple[dt.datetime, Any] | None = None,
    limit: int = 50,
) -> KeysetPage[WorkflowRun]:
    """Runs matching ``filters``, by creation time, one keyset page (only list columns loaded)."""
    rows = _filtered_runs(filters).select_related("created_by").only(*RUN_LIST_COLUMNS)
    return _keyset(
        rows, "created_at", descending=newest_first, after=after, before=before, limit=limit
    )


def pending_approvals_by_run(run_ids: list[Any]) -> dict[Any, list[ApprovalRequest]]:
    """Pending requests of these runs, oldest first: the runs list's "waiting on" column."""
    found: dict[Any, list[ApprovalRequest]] = {}
    if not run_ids:
        return found
    rows = (
        ApprovalRequest.objects.filter(run_id__in=run_ids, status=ApprovalStatus.PENDING)
        .only("id", "request_id", "run_id", "executor_id", "response_type", "created_at")
        .order_by("created_at")
    )
    for approval in rows:
        found.setdefault(approval.run_id, []).append(approval)
    return found


def run_events_tail(run_id: Any, limit: int, *, up_to: int | None = None) -> list[RunEvent]:
    """The last ``limit`` events of a run (up to ``seq == up_to``), in order."""
    events = RunEvent.objects.filter(run_id=run_id)
    if up_to is not None:
        events = events.filter(seq__lte=up_to)
    rows = list(events.order_by("-seq")[:limit])
    rows.reverse()
    return rows


def run_events_page(run_id: Any, *, before_seq: int, limit: int) -> list[RunEvent]:
    """Up to ``limit`` events with ``seq < before_seq``, in order (older history)."""
    rows = list(
        RunEvent.objects.filter(run_id=run_id, seq__lt=before_seq).order_by("-seq")[:limit]
    )
    rows.reverse()
    return rows


EXECUTOR_EVENT_TYPES = (
    "executor_invoked",
    "executor_completed",
    "executor_failed",
    "request_info",
    "run_status",
)


def executors_completed(run_id: Any, names: list[str]) -> list[str]:
    """Which of these executors completed at least once in the run."""
    if not names:
        return []
    rows = RunEvent.objects.filter(
        run_id=run_id, type="executor_completed", data__executor_id__in=names
    ).values_list("data__executor_id", flat=True)
    return sorted({str(name) for name in rows})


def run_executor_events(run_id: Any, limit: int = 4000) -> list[tuple[str, Any, Any, Any]]:
    """(type, executor_id, status, action) of the run's latest executor and status events,
    oldest first: enough to colour the graph without reading payloads."""
    rows = list(
        RunEvent.objects.filter(run_id=run_id, type__in=EXECUTOR_EVENT_TYPES)
        .order_by("-seq")
        .values_list("type", "data__executor_id", "data__status", "data__action")[:limit]
    )
    rows.reverse()
    return rows


def executors_run_after(run_id: Any, superstep: int) -> list[str]:
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


def requests_raised_after(run_id: Any, superstep: int) -> int:
    return RunEvent.objects.filter(
        run_id=run_id, type="request_info", data__iteration__gt=superstep
    ).count()


CHECKPOINT_ROW_FIELDS = (
    "checkpoint_id",
    "engine_run_id",
    "superstep",
    "previous_checkpoint_id",
    "graph_signature_hash",
    "size_bytes",
    "pending_request_count",
    "created_at",
)


def run_checkpoint_rows(run_id: Any) -> list[dict[str, Any]]:
    """Every checkpoint of a run without its document (plus the kind the engine recorded:
    entry, superstep, responses, fork), in the order they were written."""
    return list(
        Checkpoint.objects.filter(run_id=run_id)
        .order_by("created_at", "checkpoint_id")
        .values(*CHECKPOINT_ROW_FIELDS, kind=F("document__metadata__kind"))
    )


def run_children(run_id: Any) -> list[WorkflowRun]:
    """Runs forked from this one, oldest first."""
    return list(
        WorkflowRun.objects.filter(parent_run_id=run_id)
        .only(
            "id", "status", "workflow_name", "origin_checkpoint_id", "created_at", "parent_run_id"
        )
        .order_by("created_at")
    )


def checkpoint_get(run_id: Any, checkpoint_id: str) -> Checkpoint | None:
    if not isinstance(checkpoint_id, str) or not 0 < len(checkpoint_id) <= 128:
        return None
    if "\x00" in checkpoint_id:
        return None
    return Checkpoint.objects.filter(run_id=run_id, checkpoint_id=checkpoint_id).first()


def checkpoint_get_any(checkpoint_id: str) -> Checkpoint | None:
    """A checkpoint by id whatever run it belongs to (a fork's origin is in its parent)."""
    if not isinstance(checkpoint_id, str) or not 0 < len(checkpoint_id) <= 128:
        return None
    if "\x00" in checkpoint_id:
        return None
    return Checkpoint.objects.filter(checkpoint_id=checkpoint_id).first()


def checkpoint_superstep(checkpoint_id: str | None) -> int | None:
    if not checkpoint_id:
        return None
    return (
        Checkpoint.objects.filter(checkpoint_id=checkpoint_id)
        .values_list("superstep", flat=True)
        .first()
    )


APPROVAL_TABS = ("mine", "groups", "all")


def approval_inbox(
    *,
    workflow: str = "",
    older_than: dt.datetime | None = None,
    after: tuple[dt.datetime, Any] | None = None,
    before: tuple[dt.datetime, Any] | None = None,
    limit: int = 50,
    tab: str = "all",
    user: Any = None,
) -> KeysetPage[ApprovalRequest]:
    """Pending requests across runs, oldest first (the partial index serves it).

    ``tab``: "mine" (assigned to or claimed by ``user``), "groups" (assigned to a group
    ``user`` is in) or "all"; "mine" and "groups" are empty without a signed-in user.
    """
    rows = approval_pending().select_related("run", "claimed_by", "assigned_user", "assigned_group")
    if tab in APPROVAL_TABS[:2]:
        if user is None or not getattr(user, "is_authenticated", False):
            rows = rows.none()
        elif tab == "mine":
            rows = rows.filter(Q(assigned_user=user) | Q(claimed_by=user))
        else:
            rows = rows.filter(assigned_group__in=user.groups.all())
    if workflow:
        rows = rows.filter(run__workflow_name=workflow)
    if older_than is not None:
        rows = rows.filter(created_at__lte=older_than)
    return _keyset(rows, "created_at", descending=False, after=after, before=before, limit=limit)


def approval_archive(
    *,
    workflow: str = "",
    after: tuple[dt.datetime, Any] | None = None,
    before: tuple[dt.datetime, Any] | None = None,
    limit: int = 50,
) -> KeysetPage[ApprovalRequest]:
    """Decided and cancelled requests, most recently decided first."""
    rows = ApprovalRequest.objects.exclude(status=ApprovalStatus.PENDING).select_related(
        "run", "decided_by"
    )
    if workflow:
        rows = rows.filter(run__workflow_name=workflow)
    return _keyset(rows, "decided_at", descending=True, after=after, before=before, limit=limit)


def approval_get(request_id: str) -> ApprovalRequest | None:
    if not isinstance(request_id, str) or not request_id or "\x00" in request_id:
        return None
    return (
        ApprovalRequest.objects.select_related(
            "run", "decided_by", "claimed_by", "assigned_user", "assigned_group"
        )
        .filter(request_id=request_id)
        .first()
    )


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


def checkpoint_document(checkpoint: Checkpoint) -> dict[str, Any]:
    """The checkpoint's whole document in the codec's JSON: its record with every blob put
    back (``blob_refs`` paths: ``state/<key>``, ``executor_states/<id>/<key>``, or a top-level
    part). Nothing is decoded, so it reads even when the types it names are gone."""
    record = checkpoint.document if isinstance(checkpoint.document, dict) else {}
    refs = [r for r in record.get("blob_refs") or [] if isinstance(r, list) and len(r) == 2]
    blobs = dict(
        CheckpointBlob.objects.filter(digest__in=[r[1] for r in refs]).values_list("digest", "data")
    )
    doc = {k: v for k, v in record.items() if k not in ("blob_refs", "pending_request_ids")}
    doc["state"] = dict(doc.get("state") or {})
    doc["executor_states"] = {k: dict(v) for k, v in (doc.get("executor_states") or {}).items()}
    for path, digest in refs:
        value = blobs.get(digest, {"$missing": f"blob {digest} is missing"})
        if len(path) == 2 and path[0] == "state":
            doc["state"][path[1]] = value
        elif len(path) == 3 and path[0] == "executor_states":
            doc["executor_states"].setdefault(path[1], {})[path[2]] = value
        elif len(path) == 1:
            doc[path[0]] = value
    return doc


AUDIT_CARD_LIMIT = 50


def run_audit_entries(run_id: Any, limit: int = AUDIT_CARD_LIMIT) -> list[Any]:
    """A run's audit log, newest first (the ``audit_run_created`` index serves it)."""
    from .models_governance import AuditEntry

    try:
        key = run_id if isinstance(run_id, uuid.UUID) else uuid.UUID(str(run_id))
    except ValueError:
        return []
    return list(
        AuditEntry.objects.filter(run_id=key)
        .order_by("-created_at", "-id")
        .only(
            "created_at",
            "actor_name",
            "action",
            "outcome",
            "target",
            "checkpoint_before",
            "checkpoint_after",
        )[:limit]
    )


def storage_growth(days: int = 30) -> list[dict[str, Any]]:
    """Checkpoint bytes and counts by the day they were written, for the last ``days`` days
    (every day present, zeros included), oldest first. Pruned checkpoints no longer count."""
    from datetime import timedelta

    from django.db.models.functions import TruncDate
    from django.utils import timezone

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
