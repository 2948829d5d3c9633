"""A run's audit trail, newest first."""

from __future__ import annotations

import uuid

from dashboard.core.types import RunId
from dashboard.models import AuditEntry

__all__ = ["AUDIT_CARD_LIMIT", "run_audit_entries"]


AUDIT_CARD_LIMIT = 50


def run_audit_entries(run_id: RunId, limit: int = AUDIT_CARD_LIMIT) -> list[AuditEntry]:
    """A run's audit log, newest first (the ``audit_run_created`` index serves it)."""
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
