"""Approval decisions and their governance: claims and assignment, N distinct approvals,
deadlines with a default outcome applied exactly once, and notifications. Who the rules let
decide (no self-approval, assignment) and their audited override are in ``approval_rules``."""

from __future__ import annotations

import datetime as dt
import functools
import json
from dataclasses import dataclass
from typing import Any

from django.contrib.auth.models import Group, User
from django.db import transaction
from django.db.models import prefetch_related_objects

from dashboard import broadcast, catalog
from dashboard.access import audit, authz, masking
from dashboard.core import run_events
from dashboard.core.errors import Conflict, InvalidInput, NotFound, ServiceError
from dashboard.core.types import Actor, username
from dashboard.instruments import metrics
from dashboard.models import (
    TERMINAL_RUN_STATUSES,
    ApprovalRequest,
    ApprovalRule,
    ApprovalStatus,
    ApprovalVote,
    Notification,
    RunStatus,
    WorkflowRun,
)
from dashboard.services import approval_rules, dispatch, message_answers, tool_calls, validation
from dashboard.services.common import enqueue, locked_run, now, record_events, set_status

__all__ = [
    "approval_assign",
    "approval_claim",
    "approval_decide",
    "approval_take_over",
    "BulkDecision",
    "BulkPreview",
    "approval_opened",
    "approval_response_schema",
    "approvals_decide_many",
    "approvals_decide_preview",
    "approvals_sweep",
]


def _locked_approval(request_id: str) -> ApprovalRequest:
    """The request and its run, locked until the transaction ends, with the users it names.

    The users are read only once the lock is held. A statement that waits for another
    transaction's row lock re-reads, under READ COMMITTED, just the rows it locks: users joined
    to them come from before the wait, so a decider or claimer who committed meanwhile would
    read as nobody (and PostgreSQL refuses to lock the nullable side of an outer join anyway).
    """
    try:
        approval = (
            ApprovalRequest.objects.select_for_update(of=("self", "run"))
            .select_related("run")
            .get(request_id=request_id)
        )
    except ApprovalRequest.DoesNotExist:
        raise NotFound(f"no approval request with id {request_id!r}") from None
    prefetch_related_objects([approval], "decided_by", "claimed_by", "assigned_user")
    return approval


# ---------------------------------------------------------------------------- opening requests


def approval_opened(approval: ApprovalRequest, run: WorkflowRun) -> None:
    """Apply the workflow's rules to a request just raised (inside the worker's commit):
    assignment, required approvals, deadline, and the notifications to send after commit."""
    rule = approval_rules.rule_for(run.workflow_name)
    if rule is None:
        return
    approval.required_approvals = rule.required_approvals
    approval.assigned_group = rule.assign_to_group
    if rule.deadline_minutes:
        approval.due_at = approval.created_at + dt.timedelta(minutes=rule.deadline_minutes)
    approval.save(update_fields=["required_approvals", "assigned_group", "due_at"])
    _notify(approval, rule, "approval_raised")


def _notify(approval: ApprovalRequest, rule: ApprovalRule, event: str) -> None:
    payload = {
        "event": event,
        "request_id": approval.request_id,
        "run_id": str(approval.run_id),
        "workflow": rule.workflow_name,
        "executor_id": approval.executor_id,
        "request_data": approval.request_data,
        "due_at": approval.due_at.isoformat() if approval.due_at else None,
        "created_at": approval.created_at.isoformat(),
    }
    rows = [
        Notification(
            kind=Notification.EMAIL, event=event, request=approval, target=address, payload=payload
        )
        for address in rule.email_list
    ]
    if rule.webhook_url:
        rows.append(
            Notification(
                kind=Notification.WEBHOOK,
                event=event,
                request=approval,
                target=rule.webhook_url,
                payload=payload,
            )
        )
    if rows:
        created = Notification.objects.bulk_create(rows)
        for row in created:
            dispatch.enqueue_notification(row.pk)


# ------------------------------------------------------------------------------------- decide


def approval_decide(
    request_id: str,
    *,
    user: Actor,
    approved: bool,
    response: Any = None,
    reason: str = "",
    override: bool = False,
) -> ApprovalRequest:
    """Record a vote (or the one decision) on a request and, once it is decided, send the run on.

    A rejection decides at once; an approval decides when ``required_approvals`` distinct users
    have approved. ``user`` must be a person: the system decides only through a deadline's
    default outcome (``approvals_sweep``). ``override``:
    an administrator decides although a rule (no self-approval, an assignment) refuses them;
    it needs a ``reason`` and is recorded in the audit log and the run's event log.

    Raises:
        Forbidden: the user's role may not decide, the rules forbid deciding one's own run, or
            the request is assigned to someone else; or an override by a user who may not
            override (each refusal is audited).
        NotFound: no such request.
        Conflict: already decided (saying by whom and when), cancelled, claimed by someone
            else, voted already, or stale (the run moved to another branch); an override when
            no rule refuses the user.
        InvalidInput: the response does not fit the request's response type; an override
            without a reason, or by the system.
    """
    action = "approve" if approved else "reject"
    if user is None:
        # A system decision must say which deadline it applies (default_applied), or the
        # database refuses the row; there is no other way for the system to decide.
        raise InvalidInput(
            "a request is decided by a person; "
            "the system only applies a deadline's default outcome",
            errors={"user": "required"},
        )
    who = authz.require_for_request(user, action, request_id, target=f"request {request_id}")
    validation.require_storable(reason, field="reason")
    validation.require_storable(response, field="response")
    if override:
        overridden = approval_rules.overridden_rule(who, request_id, action, reason)
    else:
        approval_rules.refuse_by_rule(who, request_id, action)
        overridden = ""
    with transaction.atomic():
        approval = _locked_approval(request_id)
        if approval.status != ApprovalStatus.PENDING:
            raise Conflict(_already_decided(approval))
        run = locked_run(approval.run_id)
        if run.status in TERMINAL_RUN_STATUSES or approval.engine_run_id != run.engine_run_id:
            raise Conflict(
                f"request {request_id!r} is stale: run {run.pk} is {run.status} on another branch"
            )
        claimer = approval.claimed_by
        if who is not None and claimer is not None and claimer.pk != who.pk:
            # The claim is what keeps two approvers from deciding one request at once; a
            # page that still offered the buttons (or a script) must not slip past it.
            raise Conflict(
                f"request {request_id!r} is claimed by {claimer.get_username()}: only they "
                "can decide it, unless you take it over"
            )
        # A rejection sends the run down another branch: the person says why; an approval is
        # what the request asked for, and its reason is optional.
        reason = validation.reason_for("reject a request", reason, user=user, required=not approved)
        value = _response_value(run.workflow_name, approval, approved, response, reason)
        if overridden and who is not None:
            approval_rules.record_override(approval, run, who, action, overridden, reason)
        if who is not None and approval.required_approvals > 1:
            if ApprovalVote.objects.filter(request=approval, user=who).exists():
                raise Conflict(f"{who.get_username()} has already voted on request {request_id!r}")
            ApprovalVote.objects.create(
                request=approval, user=who, approve=approved, reason=reason or ""
            )
            approvals = approval.votes.filter(approve=True).count()
            record_events(
                run,
                [
                    run_events.approval_vote(
                        request_id,
                        who.get_username(),
                        approved,
                        approvals,
                        approval.required_approvals,
                    )
                ],
            )
            audit.record(
                who,
                f"vote_{action}",
                run=run,
                target=f"request {request_id}",
                checkpoint_before=approval.checkpoint_id,
                details={"approvals": approvals},
            )
            if approved and approvals < approval.required_approvals:
                transaction.on_commit(broadcast.broadcast_approvals_changed, robust=True)
                return approval
        _decide(approval, run, who, approved, value, reason)
    return approval


def _decide(
    approval: ApprovalRequest,
    run: WorkflowRun,
    user: User | None,
    approved: bool,
    value: Any,
    reason: str,
) -> None:
    approval.status = ApprovalStatus.APPROVED if approved else ApprovalStatus.REJECTED
    approval.response = value
    approval.reason = (reason or "")[:5000]
    approval.decided_by = user
    approval.decided_at = now()
    approval.save()
    waited = (approval.decided_at - approval.created_at).total_seconds()
    decision = "approved" if approved else "rejected"
    transaction.on_commit(
        functools.partial(metrics.approval_decided, run.workflow_name, waited, decision=decision),
        robust=True,
    )
    record_events(
        run,
        [
            run_events.approval_decided(
                approval.request_id, approval.status, username(user) or "system", approval.reason
            )
        ],
    )
    # The audit log is read by auditors who may not see sensitive fields: it keeps the mask.
    shown = masking.for_run(run).response(value, approval.response_type)
    details: dict[str, Any] = {"response": shown, "reason": approval.reason}
    edit = tool_calls.argument_edit(approval, value)
    if edit is not None:  # the tool runs with the approver's arguments, not the agent's
        details["arguments"] = edit
    audit.record(
        user,
        "approve" if approved else "reject",
        run=run,
        target=f"request {approval.request_id}",
        checkpoint_before=approval.checkpoint_id,
        details=details,
    )
    if run.status == RunStatus.WAITING:
        set_status(run, RunStatus.QUEUED, attempts=0)
        run.save()
        record_events(run, [run_events.run_status(RunStatus.QUEUED, action="approval")])
        enqueue(run)
    transaction.on_commit(broadcast.broadcast_approvals_changed, robust=True)


def _already_decided(approval: ApprovalRequest) -> str:
    if approval.status == ApprovalStatus.CANCELLED:
        return f"request {approval.request_id!r} was cancelled (its run was cancelled or resumed)"
    who = approval.decided_by.get_username() if approval.decided_by else "the system (deadline)"
    when = approval.decided_at.isoformat(timespec="seconds") if approval.decided_at else "earlier"
    return f"request {approval.request_id!r} was already {approval.status} by {who} at {when}"


def _response_value(
    workflow_name: str, approval: ApprovalRequest, approved: bool, response: Any, reason: str = ""
) -> Any:
    if workflow_name not in catalog.names():  # removed by a deploy: its response types went with it
        raise Conflict(
            f"workflow {workflow_name!r} is not registered any more; register it again to decide "
            "its requests"
        )
    try:
        rtype = catalog.response_type(workflow_name, approval.response_type)
    except catalog.InputError as exc:
        raise Conflict(
            f"request {approval.request_id!r} takes a {approval.response_type}, which this "
            "deployment does not know: register the types of its workflow"
        ) from exc
    call = tool_calls.tool_call_of(approval)
    asked = message_answers.message_request_of(approval) if call is None else None
    if call is not None:
        value: Any = tool_calls.tool_response(approval, call, approved, response, reason)
    elif asked is not None:
        value = message_answers.message_answer(approval, asked, approved, response, reason)
    elif rtype is bool:
        value = approved
    else:
        value = dict(response) if isinstance(response, dict) else response
        if value is None:
            value = {}
        if isinstance(value, dict) and "approved" in (
            approval.response_schema.get("properties") or {}
        ):
            _refuse_contradiction(value.get("approved"), approved)
            value["approved"] = approved
    try:
        typed = catalog.validate_value(rtype, value, known_fields_only=True)
    except catalog.InputError as exc:
        raise InvalidInput(
            exc.summary("the response", "the response does not fit the request"), errors=exc.errors
        ) from None
    stored = catalog.to_json(rtype, typed)
    validation.require_storable(stored)  # "NaN" is a float to the type; no database stores it
    return stored


def approval_response_schema(approval: ApprovalRequest) -> dict[str, Any]:
    """The JSON schema of the ``response`` ``approval_decide`` takes for the request: a tool
    call's arguments or an orchestration's text, which their requests' stored schema (that
    of MAF's ``Content`` or messages) cannot say, else the stored one."""
    call = tool_calls.tool_call_of(approval)
    if call is not None:
        return tool_calls.response_schema(call)
    asked = message_answers.message_request_of(approval)
    if asked is not None:
        return message_answers.response_schema(asked)
    stored = approval.response_schema
    return stored if isinstance(stored, dict) else {}


def _refuse_contradiction(given: Any, approved: bool) -> None:
    """The button decides ``approved``; an answer saying otherwise is refused, not overwritten,
    since the person meant one of the two and nothing says which."""
    if given is None:
        return
    try:
        said = catalog.validate_value(bool, given)
    except catalog.InputError:
        said = None
    if said is not approved:
        button = "Approve" if approved else "Reject"
        said_text = json.dumps(given, default=str)[:40]
        raise InvalidInput(
            f"the response says approved: {said_text}, but the button pressed was {button}; "
            "remove the field or press the other button",
            errors={"approved": f"contradicts {button}"},
        )


# Decisions at once: one page of the inbox at most, so the loop stays short.
MAX_BULK_DECISIONS = 100


@dataclass(frozen=True)
class BulkDecision:
    """What happened to one request of a decision made on several: decided, or why not."""

    request_id: str
    decided: bool
    reason: str = ""


def approvals_decide_many(
    request_ids: list[str], *, user: Actor, approved: bool, reason: str = ""
) -> list[BulkDecision]:
    """Approve or reject several requests with one reason, each as ``approval_decide`` would
    (its own transaction, rules, audit entry and run event); one that cannot be decided so
    (decided meanwhile, refused by a rule, needing a response only its form can give) is
    skipped with the reason, and the others are still decided."""
    unique = list(dict.fromkeys(request_ids))
    if not unique:
        raise InvalidInput("pick the requests to decide", errors={"request": "none picked"})
    if len(unique) > MAX_BULK_DECISIONS:
        raise InvalidInput(
            f"at most {MAX_BULK_DECISIONS} requests are decided at once, not {len(unique)}",
            errors={"request": "too many"},
        )
    authz.require(user, "approve" if approved else "reject", target=f"{len(unique)} requests")
    # One reason decides many requests at once, approvals too: it is what the audit of each
    # one says about why it was not looked at on its own.
    verb = "approve" if approved else "reject"
    reason = validation.reason_for(f"{verb} several requests", reason, user=user)
    outcomes = []
    for request_id in unique:
        try:
            decided = approval_decide(request_id, user=user, approved=approved, reason=reason)
        except InvalidInput as exc:
            if set(exc.errors) - {"reason"}:
                why = "its response has fields to fill in: decide it on its own"
            else:
                why = exc.message
            outcomes.append(BulkDecision(request_id, False, why))
        except ServiceError as exc:
            outcomes.append(BulkDecision(request_id, False, exc.message))
        else:
            counted = decided.status != ApprovalStatus.PENDING
            outcomes.append(
                BulkDecision(request_id, True, "" if counted else "your vote is recorded")
            )
    return outcomes


@dataclass(frozen=True)
class BulkPreview:
    """One picked request as a decision on several would treat it: the answer that would be
    recorded, or why it would be skipped. ``approval`` is None for a request the user cannot
    see (or that does not exist)."""

    request_id: str
    approval: ApprovalRequest | None
    answer: Any = None
    skip: str = ""


def approvals_decide_preview(
    request_ids: list[str], *, user: Actor, approved: bool
) -> list[BulkPreview]:
    """What ``approvals_decide_many`` would do to each request, decided nothing: the same
    checks (status, claims, rules, a response only its form can give), without the locks; a
    request decided meanwhile is still skipped when the decision is sent."""
    unique = list(dict.fromkeys(request_ids))[: MAX_BULK_DECISIONS + 1]
    visible = authz.visible_workflows(user)
    found = ApprovalRequest.objects.select_related("run", "claimed_by", "decided_by").filter(
        request_id__in=unique
    )
    if visible is not None:
        found = found.filter(run__workflow_name__in=visible)
    by_id = {approval.request_id: approval for approval in found}
    return [_preview(request_id, by_id.get(request_id), user, approved) for request_id in unique]


def _preview(
    request_id: str, approval: ApprovalRequest | None, user: Actor, approved: bool
) -> BulkPreview:
    if approval is None:
        return BulkPreview(request_id, None, skip="no such request")
    if approval.status != ApprovalStatus.PENDING:
        return BulkPreview(request_id, approval, skip=_already_decided(approval))
    holder = approval.claimed_by
    if holder is not None and holder.pk != getattr(user, "pk", None):
        return BulkPreview(request_id, approval, skip=f"claimed by {holder.get_username()}")
    refusal = approval_rules.approval_rule_refusal(user, approval)
    if refusal:
        return BulkPreview(request_id, approval, skip=refusal)
    try:
        answer = _response_value(approval.run.workflow_name, approval, approved, None)
    except InvalidInput:
        return BulkPreview(
            request_id, approval, skip="its response has fields to fill in: decide it on its own"
        )
    except Conflict as exc:
        return BulkPreview(request_id, approval, skip=exc.message)
    return BulkPreview(request_id, approval, answer=answer)


# ---------------------------------------------------------------------------- claim & assign


def approval_claim(request_id: str, *, user: Actor, release: bool = False) -> ApprovalRequest:
    """Take a pending request (others then cannot decide it), or give it back."""
    who = authz.require_for_request(user, "claim", request_id, target=f"request {request_id}")
    if who is None:
        raise InvalidInput("only a user can claim a request", errors={"user": "a user is required"})
    if not release:
        approval_rules.refuse_by_rule(
            who, request_id, "claim"
        )  # no claiming what one may not decide
    with transaction.atomic():
        approval = _locked_approval(request_id)
        if approval.status != ApprovalStatus.PENDING:
            raise Conflict(_already_decided(approval))
        claimer = approval.claimed_by
        if release:
            if claimer is None or claimer.pk != who.pk:
                raise Conflict(f"request {request_id!r} is not claimed by you")
            approval.claimed_by, approval.claimed_at = None, None
        else:
            if claimer is not None and claimer.pk != who.pk:
                raise Conflict(
                    f"request {request_id!r} is already claimed by {claimer.get_username()}"
                )
            approval.claimed_by, approval.claimed_at = who, now()
        approval.save(update_fields=["claimed_by", "claimed_at"])
        audit.record(
            who, "unclaim" if release else "claim", run=approval.run, target=f"request {request_id}"
        )
        transaction.on_commit(broadcast.broadcast_approvals_changed, robust=True)
    return approval


def approval_take_over(request_id: str, *, user: Actor) -> ApprovalRequest:
    """Take a request someone else has claimed, so that ``user`` may decide it: an explicit
    step, recorded as ``take_over`` in the audit log with the previous holder, never a side
    effect of deciding. Anyone who could claim the request may take it over (a holder can be
    away, or gone home).

    Raises:
        Forbidden: the user's role may not decide, or a rule refuses them the request.
        NotFound: no such request.
        Conflict: decided or cancelled meanwhile; not claimed by anyone (claim it instead), or
            claimed by the user already.
    """
    who = authz.require_for_request(user, "claim", request_id, target=f"request {request_id}")
    if who is None:
        raise InvalidInput("only a user can take over a request", errors={"user": "required"})
    approval_rules.refuse_by_rule(who, request_id, "claim")
    with transaction.atomic():
        approval = _locked_approval(request_id)
        if approval.status != ApprovalStatus.PENDING:
            raise Conflict(_already_decided(approval))
        holder = approval.claimed_by
        if holder is None:
            raise Conflict(f"request {request_id!r} is not claimed by anyone: claim it instead")
        if holder.pk == who.pk:
            raise Conflict(f"request {request_id!r} is already claimed by you")
        approval.claimed_by, approval.claimed_at = who, now()
        approval.save(update_fields=["claimed_by", "claimed_at"])
        audit.record(
            who,
            "take_over",
            run=approval.run,
            target=f"request {request_id}",
            details={"from": holder.get_username()},
        )
        transaction.on_commit(broadcast.broadcast_approvals_changed, robust=True)
    return approval


def approval_assign(
    request_id: str, *, user: Actor, assignee: User | None = None, group: Group | None = None
) -> ApprovalRequest:
    """Assign a pending request to a user or a group (or clear the assignment)."""
    authz.require_for_request(user, "assign", request_id, target=f"request {request_id}")
    if assignee is not None and group is not None:
        raise InvalidInput(
            "assign to a user or a group, not both", errors={"assignee": "user or group"}
        )
    with transaction.atomic():
        approval = _locked_approval(request_id)
        if approval.status != ApprovalStatus.PENDING:
            raise Conflict(_already_decided(approval))
        approval.assigned_user, approval.assigned_group = assignee, group
        approval.save(update_fields=["assigned_user", "assigned_group"])
        audit.record(
            user,
            "assign",
            run=approval.run,
            target=f"request {request_id}",
            details={
                "user": assignee.get_username() if assignee else None,
                "group": group.name if group else None,
            },
        )
        transaction.on_commit(broadcast.broadcast_approvals_changed, robust=True)
    return approval


# ---------------------------------------------------------------------------------- deadlines


def approvals_sweep() -> list[str]:
    """Mark overdue requests (notifying once) and apply a configured default outcome.

    Safe with any number of workers sweeping at once: each request is locked and re-checked,
    so a default outcome is applied exactly once.
    """
    applied: list[str] = []
    due = ApprovalRequest.objects.filter(
        status=ApprovalStatus.PENDING, due_at__lte=now(), default_applied=False
    ).values_list("request_id", flat=True)
    for request_id in list(due[:500]):
        with transaction.atomic():
            approval = _locked_approval(request_id)
            if approval.status != ApprovalStatus.PENDING or approval.default_applied:
                continue
            run = locked_run(approval.run_id)
            rule = approval_rules.rule_for(run.workflow_name)
            if approval.overdue_at is None:
                approval.overdue_at = now()
                record_events(run, [run_events.approval_overdue(request_id)])
                if rule is not None:
                    _notify(approval, rule, "approval_overdue")
            outcome = rule.default_outcome if rule is not None else ""
            if (
                outcome
                and run.status not in TERMINAL_RUN_STATUSES
                and approval.engine_run_id == run.engine_run_id
            ):
                approval.default_applied = True
                approval.save(update_fields=["overdue_at", "default_applied"])
                value = _response_value(run.workflow_name, approval, outcome == "approve", {})
                _decide(
                    approval,
                    run,
                    None,
                    outcome == "approve",
                    value,
                    "deadline passed: default outcome",
                )
                applied.append(request_id)
            else:
                approval.default_applied = True  # overdue is recorded; nothing more to apply
                approval.save(update_fields=["overdue_at", "default_applied"])
            transaction.on_commit(broadcast.broadcast_approvals_changed, robust=True)
    return applied
