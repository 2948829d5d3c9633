"""Read-only queries the views, API and consumers share (services write; selectors read)."""

from __future__ import annotations

from typing import Any

from django.core.exceptions import ValidationError
from django.db.models import QuerySet

from .models import ApprovalRequest, ApprovalStatus, Checkpoint, RunEvent, WorkflowRun

__all__ = [
    "approval_pending",
    "pending_approval_count",
    "run_checkpoints",
    "run_events_after",
    "run_get",
    "user_can_view",
]

REPLAY_BATCH = 500


def user_can_view(user: Any) -> bool:
    """Whether the user may look at runs at all (roles refine what they may change)."""
    return bool(getattr(user, "is_authenticated", False) and getattr(user, "is_active", False))


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
