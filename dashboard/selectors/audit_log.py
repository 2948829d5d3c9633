"""The whole audit log, filtered, newest first: a page at a time for the audit page, in batches
for its CSV export. Both walk (created_at, id) with keyset cursors, so a page or a batch is one
query however deep it is, and the export never holds the log in memory."""

from __future__ import annotations

import dataclasses
import datetime as dt
import uuid
from collections.abc import Iterator

from django.db.models import Exists, OuterRef, Q, QuerySet

from dashboard.models import AuditEntry, WorkflowRun
from dashboard.selectors.paging import Cursor, KeysetPage, keyset

__all__ = ["KNOWN_AUDIT_ACTIONS", "AuditFilters", "audit_log_batches", "audit_log_page"]

# What the services record, for the action filter's suggestions (any text is accepted: a newer
# service may record an action this list has not heard of).
KNOWN_AUDIT_ACTIONS = (
    "alert_change",
    "alert_delivered",
    "alert_opened",
    "alert_resolved",
    "alert_rule_create",
    "alert_rule_delete",
    "alert_rule_update",
    "approve",
    "assign",
    "audit_export",
    "bulk_cancel",
    "bulk_hold",
    "bulk_release",
    "bulk_resume",
    "bulk_retry",
    "cancel",
    "claim",
    "fork",
    "grant",
    "hold",
    "migrate",
    "needs_migration",
    "override",
    "policy_change",
    "prune",
    "reject",
    "release",
    "resume",
    "retry",
    "run_pruned",
    "schedule_create",
    "schedule_delete",
    "schedule_pause",
    "schedule_resume",
    "schedule_trigger",
    "schedule_update",
    "sso_sign_in",
    "start",
    "take_over",
    "unclaim",
    "ungrant",
    "view",
    "view_delete",
    "view_save",
    "vote_approve",
    "vote_reject",
)


@dataclasses.dataclass(frozen=True)
class AuditFilters:
    """Empty values match everything; ``created_to`` is exclusive."""

    actor: str = ""
    action: str = ""
    outcome: str = ""
    run_id: uuid.UUID | None = None
    workflow: str = ""
    created_from: dt.datetime | None = None
    created_to: dt.datetime | None = None
    target: str = ""

    def __bool__(self) -> bool:
        return any(dataclasses.astuple(self))


def _filtered(filters: AuditFilters) -> QuerySet[AuditEntry]:
    rows = AuditEntry.objects.all()
    if filters.actor:
        rows = rows.filter(actor_name__iexact=filters.actor)
    if filters.action:
        rows = rows.filter(action=filters.action)
    if filters.outcome:
        rows = rows.filter(outcome=filters.outcome)
    if filters.run_id is not None:
        rows = rows.filter(run_id=filters.run_id)
    if filters.workflow:
        rows = rows.filter(workflow_name=filters.workflow)
    if filters.created_from is not None:
        rows = rows.filter(created_at__gte=filters.created_from)
    if filters.created_to is not None:
        rows = rows.filter(created_at__lt=filters.created_to)
    if filters.target:
        rows = rows.filter(target__icontains=filters.target)
    return rows


def audit_log_page(
    filters: AuditFilters,
    *,
    after: Cursor[int] | None = None,
    before: Cursor[int] | None = None,
    limit: int = 50,
) -> KeysetPage[AuditEntry]:
    """One page of matching entries, newest first; each has ``run_exists`` (its run is still
    there to link to, not pruned or deleted)."""
    rows = _filtered(filters).annotate(
        run_exists=Exists(WorkflowRun.objects.filter(pk=OuterRef("run_id")))
    )
    return keyset(rows, "created_at", descending=True, after=after, before=before, limit=limit)


def audit_log_batches(
    filters: AuditFilters, *, batch_size: int = 500
) -> Iterator[list[AuditEntry]]:
    """Every matching entry, newest first, ``batch_size`` per query."""
    rows = _filtered(filters).order_by("-created_at", "-id")
    last: tuple[dt.datetime, int] | None = None
    while True:
        page = rows
        if last is not None:
            page = rows.filter(Q(created_at__lt=last[0]) | Q(created_at=last[0], id__lt=last[1]))
        batch = list(page[:batch_size])
        if batch:
            yield batch
        if len(batch) < batch_size:
            return
        last = (batch[-1].created_at, batch[-1].pk)
