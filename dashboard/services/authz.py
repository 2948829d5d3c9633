"""Who may do what. Roles are groups (Viewer, Operator, Approver, Admin, created by a data
migration) holding these permissions; every service checks here, so views, the JSON API,
consumers and the admin enforce the same rules."""

from __future__ import annotations

from django.contrib.auth.models import User

from dashboard.models import AuditEntry, WorkflowRun
from dashboard.services import audit
from dashboard.services.common import is_user
from dashboard.services.errors import Forbidden
from dashboard.services.types import Actor

__all__ = ["ACTION_PERMISSIONS", "can", "require"]

ACTION_PERMISSIONS: dict[str, str] = {
    "view": "dashboard.view_workflowrun",
    "start": "dashboard.start_run",
    "resume": "dashboard.operate_run",
    "fork": "dashboard.operate_run",
    "cancel": "dashboard.operate_run",
    "retry": "dashboard.operate_run",
    "migrate": "dashboard.operate_run",
    "approve": "dashboard.decide_approval",
    "reject": "dashboard.decide_approval",
    "claim": "dashboard.decide_approval",
    "assign": "dashboard.decide_approval",
    # Deciding against an approval rule: for those who may change the rules anyway (Admin,
    # superusers), and then only as a recorded override.
    "override": "dashboard.change_approvalrule",
    "prune": "dashboard.manage_retention",
    "hold": "dashboard.manage_retention",
    "release": "dashboard.manage_retention",
    "policy_change": "dashboard.manage_retention",
}


def can(user: Actor, action: str) -> bool:
    """``user`` None is the system itself (workers, sweeper, scheduled retention)."""
    if user is None:
        return True
    if not user.is_authenticated or not user.is_active:
        return False
    return user.has_perm(ACTION_PERMISSIONS[action])


def require(
    user: Actor, action: str, *, run: WorkflowRun | None = None, target: str = ""
) -> User | None:
    """Raise Forbidden (and record the refusal) unless ``user`` may do ``action``.

    Call it before opening the action's transaction: the refusal must be kept even though the
    action does not happen. Returns who acts, now known to be signed in, or None for the system.
    """
    if can(user, action):
        return user if is_user(user) else None
    audit.record(user, action, outcome=AuditEntry.DENIED, run=run, target=target)
    who = user.get_username() if user is not None and user.is_authenticated else "anonymous users"
    raise Forbidden(f"{who} may not {action.replace('_', ' ')} (role required)")
