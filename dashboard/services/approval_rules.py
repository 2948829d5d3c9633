"""Who an approval rule lets decide a request: not the user who started the run when the
workflow's rule forbids self-approval, and only the assignee (user or group) of an assigned
request. The rules bind everyone, superusers included. An administrator who must decide against
one overrides it explicitly, with a reason; the override is kept in the audit log and in the
run's event log.
"""

from __future__ import annotations

from django.contrib.auth.models import User

from dashboard.access import audit, authz
from dashboard.core import run_events
from dashboard.core.errors import Conflict, Forbidden, InvalidInput, NotFound
from dashboard.core.types import Actor, is_user
from dashboard.models import ApprovalRequest, ApprovalRule, WorkflowRun
from dashboard.services.common import record_events

__all__ = [
    "approval_rule_refusal",
    "overridden_rule",
    "record_override",
    "refuse_by_rule",
    "rule_for",
]


def rule_for(workflow_name: str) -> ApprovalRule | None:
    return ApprovalRule.objects.filter(workflow_name=workflow_name).first()


def approval_rule_refusal(user: Actor, approval: ApprovalRequest) -> str:
    """Why the rules refuse ``user`` this request ("" when they do not): the workflow forbids
    deciding a run one started, or the request is assigned to another user or group. They bind
    superusers too; only an explicit override lifts them."""
    if not is_user(user):
        return ""
    rule = rule_for(approval.run.workflow_name)
    if rule is not None and rule.forbid_self_approval and approval.run.created_by_id == user.pk:
        return "the rules of this workflow forbid deciding a run you started"
    if approval.assigned_user_id and approval.assigned_user_id != user.pk:
        return "this request is assigned to another user"
    if (
        approval.assigned_group_id
        and not user.groups.filter(pk=approval.assigned_group_id).exists()
    ):
        return "this request is assigned to a group you are not in"
    return ""


def _unlocked(request_id: str) -> ApprovalRequest | None:
    return ApprovalRequest.objects.select_related("run").filter(request_id=request_id).first()


def refuse_by_rule(user: User | None, request_id: str, action: str) -> None:
    """Rule checks that must leave an audited refusal, done before the decision's transaction."""
    approval = _unlocked(request_id) if user is not None else None
    if approval is None:
        return  # the system decides by no rule; an unknown request is refused under the lock
    refusal = approval_rule_refusal(user, approval)
    if refusal:
        audit.record(
            user,
            action,
            outcome="denied",
            run=approval.run,
            target=f"request {request_id}",
            details={"reason": refusal},
        )
        may_override = action != "claim" and authz.can(user, "override")
        raise Forbidden(
            refusal + (" (you may override the rule, giving a reason)" if may_override else "")
        )


def overridden_rule(user: User | None, request_id: str, action: str, reason: str) -> str:
    """The rule an override lifts, once the override itself is allowed: only administrators
    override, always with a reason, and only a rule that does refuse them."""
    target = f"request {request_id}"
    approval = _unlocked(request_id)
    authz.require(user, "override", run=approval.run if approval else None, target=target)
    if user is None:
        raise InvalidInput(
            "only a user can override a rule", errors={"override": "a user is required"}
        )
    if not reason.strip():
        raise InvalidInput(
            "an override needs a reason", errors={"reason": "required for an override"}
        )
    if approval is None:
        raise NotFound(f"no approval request with id {request_id!r}")
    refusal = approval_rule_refusal(user, approval)
    if not refusal:
        raise Conflict(
            f"no rule refuses you request {request_id!r}: {action} it without an override"
        )
    return refusal


def record_override(
    approval: ApprovalRequest, run: WorkflowRun, user: User, action: str, rule: str, reason: str
) -> None:
    """Inside the decision's transaction: the override is kept with the decision or not at all."""
    reason = reason.strip()[:5000]
    record_events(
        run,
        [
            run_events.approval_override(
                approval.request_id, user.get_username(), action, rule, reason
            )
        ],
    )
    audit.record(
        user,
        "override",
        run=run,
        target=f"request {approval.request_id}",
        checkpoint_before=approval.checkpoint_id,
        details={"decision": action, "rule": rule, "reason": reason},
    )
