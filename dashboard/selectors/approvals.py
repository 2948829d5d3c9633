"""Approval requests: the inbox (by tab), the archive, one request, pending counts."""

from __future__ import annotations

import datetime as dt
import uuid

from django.contrib.auth.models import Group, User
from django.db.models import Q, QuerySet

from dashboard.access.authz import visible_workflows
from dashboard.core.types import Actor, is_user
from dashboard.models import (
    ApprovalRequest,
    ApprovalStatus,
)
from dashboard.selectors.paging import KeysetPage, keyset

__all__ = [
    "APPROVAL_TABS",
    "approval_archive",
    "approval_get",
    "approval_inbox",
    "approval_pending",
    "approvals_by_status",
    "assignable_groups",
    "assignable_users",
    "pending_approval_count",
    "pending_approvals_by_run",
]

DECIDE_PERMISSION = ("dashboard", "decide_approval")


def approval_pending() -> QuerySet[ApprovalRequest]:
    """Every pending request, oldest first."""
    return (
        ApprovalRequest.objects.filter(status=ApprovalStatus.PENDING)
        .select_related("run")
        .order_by("created_at")
    )


def _visible(rows: QuerySet[ApprovalRequest], user: Actor) -> QuerySet[ApprovalRequest]:
    """Only the requests of workflows ``user`` may see (all of them for a role held as a group)."""
    workflows = visible_workflows(user)
    return rows if workflows is None else rows.filter(run__workflow_name__in=sorted(workflows))


def pending_approval_count(user: Actor = None) -> int:
    return _visible(ApprovalRequest.objects.filter(status=ApprovalStatus.PENDING), user).count()


def pending_approvals_by_run(run_ids: list[uuid.UUID]) -> dict[uuid.UUID, list[ApprovalRequest]]:
    """Pending requests of these runs, oldest first: the runs list's "waiting on" column."""
    found: dict[uuid.UUID, list[ApprovalRequest]] = {}
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


APPROVAL_TABS = ("mine", "groups", "all")


def approval_inbox(
    *,
    workflow: str = "",
    older_than: dt.datetime | None = None,
    after: tuple[dt.datetime, int] | None = None,
    before: tuple[dt.datetime, int] | None = None,
    limit: int = 50,
    tab: str = "all",
    user: Actor = None,
) -> KeysetPage[ApprovalRequest]:
    """Pending requests across runs, oldest first (the partial index serves it).

    ``tab``: "mine" (assigned to or claimed by ``user``), "groups" (assigned to a group
    ``user`` is in) or "all"; "mine" and "groups" are empty without a signed-in user.
    """
    rows = _visible(approval_pending(), user).select_related(
        "run", "claimed_by", "assigned_user", "assigned_group"
    )
    if tab in APPROVAL_TABS[:2]:
        if not is_user(user):
            rows = rows.none()
        elif tab == "mine":
            rows = rows.filter(Q(assigned_user=user) | Q(claimed_by=user))
        else:
            rows = rows.filter(assigned_group__in=user.groups.all())
    if workflow:
        rows = rows.filter(run__workflow_name=workflow)
    if older_than is not None:
        rows = rows.filter(created_at__lte=older_than)
    return keyset(rows, "created_at", descending=False, after=after, before=before, limit=limit)


def approval_archive(
    *,
    user: Actor = None,
    workflow: str = "",
    after: tuple[dt.datetime, int] | None = None,
    before: tuple[dt.datetime, int] | None = None,
    limit: int = 50,
) -> KeysetPage[ApprovalRequest]:
    """Decided and cancelled requests, most recently decided first."""
    rows = _visible(
        ApprovalRequest.objects.exclude(status=ApprovalStatus.PENDING), user
    ).select_related("run", "decided_by")
    if workflow:
        rows = rows.filter(run__workflow_name=workflow)
    return keyset(rows, "decided_at", descending=True, after=after, before=before, limit=limit)


def approval_get(request_id: str, *, user: Actor = None) -> ApprovalRequest | None:
    """The request, or None when there is none or ``user`` may not see its workflow."""
    if not isinstance(request_id, str) or not request_id or "\x00" in request_id:
        return None
    return (
        _visible(ApprovalRequest.objects.all(), user)
        .select_related("run", "decided_by", "claimed_by", "assigned_user", "assigned_group")
        .filter(request_id=request_id)
        .first()
    )


def approvals_by_status(
    status: str, *, limit: int = 50, user: Actor = None
) -> list[ApprovalRequest]:
    """Requests in one status: pending ones oldest first, the others latest decided first."""
    rows = _visible(ApprovalRequest.objects.filter(status=status), user).select_related(
        "run", "decided_by", "claimed_by"
    )
    order = "created_at" if status == ApprovalStatus.PENDING else "-decided_at"
    return list(rows.order_by(order)[:limit])


def assignable_users() -> QuerySet[User]:
    """Active people who may decide requests (through a role or as superusers), by name."""
    app_label, codename = DECIDE_PERMISSION
    grants = Q(
        groups__permissions__codename=codename,
        groups__permissions__content_type__app_label=app_label,
    )
    grants |= Q(user_permissions__codename=codename) | Q(is_superuser=True)
    return User.objects.filter(grants, is_active=True).distinct().order_by("username")


def assignable_groups() -> QuerySet[Group]:
    """The role groups whose members may decide requests."""
    app_label, codename = DECIDE_PERMISSION
    return Group.objects.filter(
        permissions__codename=codename, permissions__content_type__app_label=app_label
    ).order_by("name")
