"""Who may do what. Roles are groups (Viewer, Operator, Approver, Admin, created by a data
migration) holding these permissions; every service checks here, so views, the JSON API,
consumers and the admin enforce the same rules.

A role held as a group counts for every workflow. A ``WorkflowGrant`` gives a role for one
workflow only: its holder sees and acts on that workflow's runs and requests, and nothing of
the others (they are not found, as if they did not exist). Lists filter with
``visible_workflows``; actions on one run or request pass its workflow to ``require``.

A user who came with an API token is held to its scopes as well (``tokens.missing_scope``):
the roles and the token's scopes must both allow an action.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable

from django.contrib.auth.models import Permission, User
from django.db.models import CharField, Value

from dashboard.access import audit, tokens
from dashboard.core.errors import Forbidden, NotFound
from dashboard.core.types import Actor, is_user
from dashboard.models import ApprovalRequest, AuditEntry, WorkflowGrant, WorkflowRun

__all__ = [
    "ACTION_PERMISSIONS",
    "ROLE_NAMES",
    "can",
    "decides_only",
    "load_permissions",
    "require",
    "require_for_request",
    "require_for_run",
    "visible_workflows",
]

# The roles data migrations create (dashboard/migrations/0003), least to most powerful, then
# (0025) "Sensitive data": revealing masked fields, held beside another role (for every
# workflow as a group, or for one by a grant).
ROLE_NAMES = ("Viewer", "Approver", "Operator", "Admin", "Sensitive data")

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
    # Alert rules send run details to outside addresses and services: an Admin's, like retention.
    "alert_change": "dashboard.manage_retention",
    # What models cost is an Admin's setting, read into every run's cost.
    "price_change": "dashboard.manage_retention",
    # Seeing and revoking everyone's API tokens (each user manages their own): an Admin's.
    "token_admin": "dashboard.manage_retention",
    # Schedules start runs unattended: managing one is an Operator's job, like operating runs.
    "schedule_change": "dashboard.operate_run",
    "schedule_trigger": "dashboard.start_run",
    # Seeing a masked field's value (dashboard.access.masking), one field at a time, audited.
    "reveal": "dashboard.view_sensitive",
}


def can(user: Actor, action: str, workflow: str | None = None) -> bool:
    """Whether ``user`` may do ``action``: on runs of ``workflow``, or (None) on some workflow.

    ``user`` None is the system itself (workers, sweeper, scheduled retention).
    """
    if user is None:
        return True
    if not user.is_authenticated or not user.is_active:
        return False
    if tokens.missing_scope(user, action) is not None:
        return False
    permission = ACTION_PERMISSIONS[action]
    if user.has_perm(permission):
        return True
    granted = _granted(user, permission)
    return bool(granted) if workflow is None else workflow in granted


def decides_only(user: Actor) -> bool:
    """Whether ``user``'s role may decide requests (somewhere) but not operate runs: an
    approver's day starts in the inbox, not on the runs list."""
    return is_user(user) and can(user, "approve") and not can(user, "resume")


def visible_workflows(user: Actor, action: str = "view") -> frozenset[str] | None:
    """The workflows whose runs ``user`` may ``action``: None for all of them."""
    if user is None:
        return None
    if (
        not user.is_authenticated
        or not user.is_active
        or tokens.missing_scope(user, action) is not None
    ):
        return frozenset()
    if user.has_perm(ACTION_PERMISSIONS[action]):
        return None
    return _granted(user, ACTION_PERMISSIONS[action])


def _granted(user: User, permission: str) -> frozenset[str]:
    """The workflows a grant gives ``user`` ``permission`` on; read once per user object, as
    Django caches a user's own permissions (with them, by ``load_permissions``)."""
    cache: dict[str, frozenset[str]] | None = getattr(user, _GRANTS, None)
    if cache is None:
        rows = WorkflowGrant.objects.filter(user=user).values_list(*_GRANT_FIELDS)
        cache = _by_permission(
            (workflow, app_label, codename) for app_label, codename, workflow in rows
        )
        setattr(user, _GRANTS, cache)
    return cache.get(permission, frozenset())


_GRANTS = "_superstep_grants"  # a cache the User class does not declare
_GRANT_FIELDS = (
    "role__permissions__content_type__app_label",
    "role__permissions__codename",
    "workflow_name",
)


def _by_permission(rows: Iterable[tuple[str, str | None, str | None]]) -> dict[str, frozenset[str]]:
    found: dict[str, set[str]] = {}
    for workflow, app_label, codename in rows:
        if codename:  # a role without permissions joins to none
            found.setdefault(f"{app_label}.{codename}", set()).add(workflow)
    return {name: frozenset(workflows) for name, workflows in found.items()}


def load_permissions(user: User) -> set[str]:
    """A signed-in user's own and their roles' permissions, and (cached for ``_granted``) what
    their workflow grants give: one query, where Django's backend takes two and the grants a
    third. Every page checks a permission, most pages one the user holds only by grant or not
    at all."""
    fields = ("content_type__app_label", "codename")
    # Unordered: Permission's default ordering is not allowed inside a UNION. "" marks a
    # permission held for every workflow (no workflow is named "").
    every = Permission.objects.order_by()
    anywhere = Value("", output_field=CharField())
    rows = (
        every.filter(user=user)
        .annotate(w=anywhere)
        .values_list(*fields, "w")
        .union(
            every.filter(group__user=user).annotate(w=anywhere).values_list(*fields, "w"),
            WorkflowGrant.objects.filter(user=user).order_by().values_list(*_GRANT_FIELDS),
            all=True,
        )
        .order_by()
    )
    everywhere: set[str] = set()
    granted: list[tuple[str, str | None, str | None]] = []
    for app_label, codename, workflow in rows:
        if workflow:
            granted.append((workflow, app_label, codename))
        elif codename:
            everywhere.add(f"{app_label}.{codename}")
    setattr(user, _GRANTS, _by_permission(granted))
    return everywhere


def require(
    user: Actor,
    action: str,
    *,
    run: WorkflowRun | None = None,
    workflow: str | None = None,
    target: str = "",
) -> User | None:
    """Raise Forbidden (and record the refusal) unless ``user`` may do ``action`` (on runs of
    ``workflow``, or of ``run``'s workflow, when given).

    Call it before opening the action's transaction: the refusal must be kept even though the
    action does not happen. Returns who acts, now known to be signed in, or None for the system.
    """
    if workflow is None and run is not None:
        workflow = run.workflow_name
    if can(user, action, workflow):
        return user if is_user(user) else None
    audit.record(
        user,
        action,
        outcome=AuditEntry.DENIED,
        run=run,
        target=target,
        details={"workflow": workflow} if workflow else None,
    )
    who = user.get_username() if user is not None and user.is_authenticated else "anonymous users"
    if (scope := tokens.missing_scope(user, action)) is not None:
        raise Forbidden(
            f"this API token may not {action.replace('_', ' ')}: it lacks the {scope!r} scope"
        )
    if workflow is not None and can(user, action):
        raise Forbidden(f"{who} may not {action.replace('_', ' ')} runs of workflow {workflow!r}")
    raise Forbidden(f"{who} may not {action.replace('_', ' ')} (role required)")


def require_for_run(user: Actor, action: str, run_id: object, *, target: str = "") -> User | None:
    """``require`` for an action on the run ``run_id``, whose workflow is looked up first (an
    unknown run is left for the action itself to report)."""
    workflow = (
        WorkflowRun.objects.filter(pk=str(run_id)).values_list("workflow_name", flat=True).first()
        if _is_uuid(run_id)
        else None
    )
    _require_visible(user, action, workflow, target, f"no run {run_id}")
    return require(user, action, workflow=workflow, target=target)


def require_for_request(
    user: Actor, action: str, request_id: str, *, target: str = ""
) -> User | None:
    """``require`` for an action on the approval request ``request_id`` (its run's workflow)."""
    workflow = (
        ApprovalRequest.objects.filter(request_id=request_id)
        .values_list("run__workflow_name", flat=True)
        .first()
    )
    _require_visible(user, action, workflow, target, f"no approval request with id {request_id!r}")
    return require(user, action, workflow=workflow, target=target)


def _require_visible(
    user: Actor, action: str, workflow: str | None, target: str, missing: str
) -> None:
    """What a user may not even see is not found, rather than forbidden: a refusal naming the
    workflow would tell them what they are not meant to know."""
    if workflow is None or can(user, "view", workflow):
        return
    audit.record(
        user, action, outcome=AuditEntry.DENIED, target=target, details={"workflow": workflow}
    )
    raise NotFound(missing)


def _is_uuid(value: object) -> bool:
    if isinstance(value, uuid.UUID):
        return True
    try:
        uuid.UUID(str(value))
    except ValueError:
        return False
    return True
