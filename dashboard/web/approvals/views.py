"""The approval inbox (pending requests across runs, oldest first, live), the decision form
generated from the request's response type, and the archive of past decisions."""

from __future__ import annotations

from typing import Any

from django.contrib import messages
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils import timezone

from dashboard import selectors, services
from dashboard.access import masking
from dashboard.core.types import Actor
from dashboard.models import ApprovalRequest, ApprovalStatus
from dashboard.renderers.diff_values import tree
from dashboard.renderers.jsondiff import preview
from dashboard.web.access import (
    HtmxHttpRequest,
    allowed_actions,
    htmx_target,
    page_view,
    workflow_names,
)
from dashboard.web.approvals.forms import ApprovalFilterForm, DecisionForm
from dashboard.web.approvals.message_request import MessageForm, message_context, message_form
from dashboard.web.approvals.request_summary import inbox_items, request_fields
from dashboard.web.approvals.tool_call import ToolArgumentsForm, arguments_form, tool_call_context
from dashboard.web.conflicts import approval_conflict
from dashboard.web.display import short_type_name
from dashboard.web.forms import (
    SchemaFieldsForm,
    SchemaJsonForm,
    apply_errors,
    schema_form,
)
from dashboard.web.pagination import decode_cursor, page_links

INBOX = "dashboard/approval_inbox.html"
ARCHIVE = "dashboard/approval_archive.html"
BULK_REVIEW = "dashboard/approval_bulk_review.html"
PAGE_SIZE = 50
# The inbox's own tabs (?tab=...), in the order shown; "all" is the default.
INBOX_TABS = (("mine", "Mine"), ("groups", "My groups"), ("all", "All"))


ResponseForm = SchemaFieldsForm | SchemaJsonForm | MessageForm


def response_form(
    approval: ApprovalRequest, data: Any = None, mode: str = "form"
) -> ResponseForm | None:
    """The fields the approver fills in besides Approve/Reject; None when the buttons say it
    all (a yes/no request, a response whose only field is ``approved``, or a tool call whose
    arguments the workflow does not let approvers edit)."""
    call = services.tool_call_of(approval)
    if call is not None:
        return arguments_form(approval, call, data)
    asked = services.message_request_of(approval)
    if asked is not None:
        return message_form(approval, asked, data)
    schema = approval.response_schema or {}
    properties = schema.get("properties") if isinstance(schema.get("properties"), dict) else None
    if schema.get("type") == "boolean":
        return None
    if properties is not None and set(properties) <= {"approved"}:
        return None
    exclude = ("approved",) if properties and "approved" in properties else ()
    defaults = None
    if mode == "json" and properties is not None:
        defaults = {
            k: v.get("default")
            for k, v in properties.items()
            if k not in exclude and "default" in v
        }
    return schema_form(
        schema, data=data, mode=mode, prefix="response", exclude=exclude, defaults=defaults
    )


def panel_context(
    approval: ApprovalRequest | None,
    *,
    user: Actor,
    decision: DecisionForm | None = None,
    response: ResponseForm | None = None,
    mode: str = "form",
    error: str = "",
    notice: str = "",
) -> dict[str, Any]:
    if approval is None:
        return {"approval": None}
    shown, fields = request_fields(approval)
    pending = approval.status == ApprovalStatus.PENDING
    if response is None and pending:
        response = response_form(approval, mode=mode)
    # A rule that refuses this user (no self-approval, an assignment) replaces the decision
    # form with its reason; those who may override it get the form as an override instead.
    refusal = services.approval_rule_refusal(user, approval) if pending else ""
    holder = approval.claimed_by if pending else None
    held_by_other = holder is not None and holder.pk != getattr(user, "pk", None)
    call = services.tool_call_of(approval)
    asked = services.message_request_of(approval) if call is None else None
    return {
        **(tool_call_context(approval, call) if call is not None else {"tool_call": None}),
        **(message_context(asked) if asked is not None else {"message_request": None}),
        "approval": approval,
        "request_value": shown,
        "request_fields": fields,
        "response_type_label": short_type_name(approval.response_type),
        "response_value": _response_shown(approval, approval.response),
        "decision_form": decision or DecisionForm(),
        "response_form": response,
        "response_mode": mode,
        "decide_error": error,
        "decide_notice": notice,
        "json_capable": bool(approval.response_schema),
        "rule_refusal": refusal,
        "may_override": bool(refusal) and services.can(user, "override"),
        # Someone else holds the claim: the buttons stay off, and who may claim it is offered
        # the explicit take-over instead.
        "held_by_other": held_by_other,
        "may_take_over": held_by_other
        and not refusal
        and services.can(user, "claim", approval.run.workflow_name),
        "assign_choices": _assign_choices(approval)
        if pending and services.can(user, "assign")
        else None,
        "is_overdue": approval.status == ApprovalStatus.PENDING
        and (
            approval.overdue_at is not None
            or (approval.due_at is not None and approval.due_at < timezone.now())
        ),
    }


def _response_shown(approval: ApprovalRequest, response: Any) -> Any:
    """An answer as the pages show it: its sensitive fields masked."""
    if response is None:
        return None
    response = masking.for_run(approval.run).response(response, approval.response_type)
    return services.tool_answer_fields(response) or tree(response)


def _assign_choices(approval: ApprovalRequest) -> list[tuple[str, str, bool]]:
    """(value, label, selected) for the assign menu: role groups first, then people."""
    current_user = approval.assigned_user_id
    current_group = approval.assigned_group_id
    choices = [
        (f"group:{g.pk}", f"{g.name} (anyone in the group)", g.pk == current_group)
        for g in selectors.assignable_groups()
    ]
    choices += [
        (f"user:{u.pk}", u.get_full_name() or u.get_username(), u.pk == current_user)
        for u in selectors.assignable_users()[:200]
    ]
    return choices


def _inbox_context(request: HttpRequest) -> dict[str, Any]:
    """The list side of the inbox (filters, one keyset page), and what the user may do."""
    workflows = workflow_names(request.user)
    form = ApprovalFilterForm(request.GET, workflows=workflows)
    filters = form.cleaned()
    age = ApprovalFilterForm.AGE_DELTAS.get(filters.get("age", ""))
    inbox_tab = request.GET.get("tab", "all")
    if inbox_tab not in selectors.APPROVAL_TABS:
        inbox_tab = "all"
    page = selectors.approval_inbox(
        tab=inbox_tab,
        user=request.user,
        workflow=filters.get("workflow", ""),
        older_than=timezone.now() - age if age else None,
        after=decode_cursor(request.GET.get("after"), int),
        before=decode_cursor(request.GET.get("before"), int),
        limit=PAGE_SIZE,
    )
    selected_id = request.GET.get("request") or (page.rows[0].request_id if page.rows else "")
    return {
        "filter_form": form,
        "approvals": page.rows,
        "inbox_items": inbox_items(page.rows),
        "page": page_links(
            request,
            page,
            lambda a: (a.created_at, a.pk),
            path=reverse("dashboard:approval_inbox"),
            previous_label="Older",
            next_label="Newer",
        ),
        "selected_id": selected_id,
        "query_items": [(k, item) for k, values in request.GET.lists() for item in values],
        "now": timezone.now(),
        "nav_section": "approvals",
        "tab": "inbox",
        "inbox_tab": inbox_tab,
        "inbox_tabs": INBOX_TABS,
        "may": allowed_actions(request.user),
    }


@page_view("GET")
def approval_inbox(request: HtmxHttpRequest) -> HttpResponse:
    context = _inbox_context(request)
    target = htmx_target(request)
    if target == "approval-list":
        return render(request, f"{INBOX}#list", context)
    mode = "json" if request.GET.get("mode") == "json" else "form"
    approval = (
        selectors.approval_get(context["selected_id"], user=request.user)
        if context["selected_id"]
        else None
    )
    context.update(panel_context(approval, user=request.user, mode=mode))
    if target == "approval-panel":
        return render(request, f"{INBOX}#panel", context)
    return render(request, INBOX, context)


@page_view("GET")
def approval_status(request: HttpRequest, request_id: str) -> HttpResponse:
    """The selected request's status line, redrawn live (someone else may decide it). When the
    panel still shows a form (``?shown=pending``) for a request decided meanwhile, the decision
    comes too, out of band, in the form's place."""
    approval = selectors.approval_get(request_id, user=request.user)
    if approval is None:
        raise Http404("No such request.")
    context: dict[str, Any] = {"approval": approval}
    if request.GET.get("shown") == ApprovalStatus.PENDING:
        # The claim line and the decision bar hold nothing typed, so they follow every change
        # (a claim taken, released or taken over elsewhere turns the buttons off or on).
        decided = approval.status != ApprovalStatus.PENDING
        context.update(panel_context(approval, user=request.user))
        context.update(
            decision_oob=decided,
            claim_oob=not decided,
            bar_oob=True,
            may=allowed_actions(request.user, approval.run.workflow_name),
        )
    return render(request, f"{INBOX}#status", context)


def _outcome_text(approval: ApprovalRequest) -> str:
    if approval.status == ApprovalStatus.PENDING:  # one vote of several (an approval rule)
        return (
            f"Your approval is recorded; this request needs {approval.required_approvals} "
            "approvals before the run continues."
        )
    return f"Request {approval.status} for run {str(approval.run_id)[:8]}."


@page_view("POST")
def approval_decide(request: HtmxHttpRequest, request_id: str) -> HttpResponse:
    approval = selectors.approval_get(request_id, user=request.user)
    if approval is None:
        raise Http404("No such request.")
    mode = "json" if request.POST.get("mode") == "json" else "form"
    decision = DecisionForm(request.POST)
    response = (
        response_form(approval, request.POST, mode=mode)
        if approval.status == ApprovalStatus.PENDING
        else None
    )
    if isinstance(response, ToolArgumentsForm) and request.POST.get("decision") == "reject":
        response = None  # a rejected call runs nothing: what its fields say does not matter
    status, error = 422, ""
    if decision.is_valid() and (response is None or response.is_valid()):
        approved = decision.cleaned_data["decision"] == "approve"
        try:
            decided = services.approval_decide(
                approval.request_id,
                user=request.user,
                approved=approved,
                response=response.value() if response is not None else None,
                reason=decision.cleaned_data["reason"],
                override=request.POST.get("override") == "1",
            )
        except services.ServiceError as exc:
            own = {k: v for k, v in exc.errors.items() if k in decision.fields}
            apply_errors(decision, own)
            if response is not None:
                rest = {k: v for k, v in exc.errors.items() if k not in own}
                if isinstance(response, ToolArgumentsForm):
                    rest = response.field_errors(rest)
                apply_errors(response, rest)
            status, error = (422 if exc.status == 400 else exc.status), exc.message
            if isinstance(exc, services.Conflict):
                error = approval_conflict(
                    selectors.approval_get(request_id, user=request.user),
                    user=request.user,
                    fallback=exc.message,
                )
        else:
            outcome = _outcome_text(decided)
            if not request.htmx:
                messages.success(request, outcome)
                return redirect(
                    f"{reverse('dashboard:approval_inbox')}?request={decided.request_id}"
                )
            # The panel says it itself: a flash message would only show on the next page. It
            # goes on to the request the list showed next (``next``, set by static/js/inbox.js),
            # if that one still waits, so the list and the panel show the same request.
            following = _next_pending(request)
            context = panel_context(
                following or selectors.approval_get(request_id, user=request.user),
                user=request.user,
                notice=outcome,
            )
            context["may"] = allowed_actions(request.user)
            return render(request, f"{INBOX}#panel", context)
    fresh = selectors.approval_get(request_id, user=request.user)
    keep = response if fresh is not None and fresh.status == ApprovalStatus.PENDING else None
    context = panel_context(
        fresh, user=request.user, decision=decision, response=keep, mode=mode, error=error
    )
    context["may"] = allowed_actions(request.user)
    if request.htmx:
        return render(request, f"{INBOX}#panel", context, status=status)
    return render(request, INBOX, {**_inbox_context(request), **context}, status=status)


def _next_pending(request: HttpRequest) -> ApprovalRequest | None:
    request_id = request.POST.get("next", "")[:300]
    following = selectors.approval_get(request_id, user=request.user) if request_id else None
    return following if following and following.status == ApprovalStatus.PENDING else None


@page_view("POST")
def approval_claim(request: HttpRequest, request_id: str) -> HttpResponse:
    """Claim a pending request (or, with ``release``, give it back; with ``take_over``, take
    it from whoever holds it); the service decides."""
    approval = selectors.approval_get(request_id, user=request.user)
    if approval is None:
        raise Http404("No such request.")
    release = request.POST.get("release") == "1"
    take_over = request.POST.get("take_over") == "1"
    holder = approval.claimed_by.get_username() if approval.claimed_by else ""
    try:
        if take_over:
            services.approval_take_over(approval.request_id, user=request.user)
        else:
            services.approval_claim(approval.request_id, user=request.user, release=release)
    except services.ServiceError as exc:
        fresh = selectors.approval_get(request_id, user=request.user)
        error = exc.message
        if isinstance(exc, services.Conflict):
            error = approval_conflict(
                fresh, user=request.user, fallback=exc.message, release=release
            )
        context = {
            **_inbox_context(request),
            **panel_context(fresh, user=request.user, error=error),
        }
        context["selected_id"] = approval.request_id
        return render(request, INBOX, context, status=exc.status)
    if take_over:
        done = f"You took the request over from {holder}: only you can decide it now."
    elif release:
        done = "Request released."
    else:
        done = "Request claimed: others cannot decide it now."
    messages.success(request, done)
    return redirect(f"{reverse('dashboard:approval_inbox')}?request={approval.request_id}")


@page_view("POST")
def approvals_decide_many(request: HttpRequest) -> HttpResponse:
    """Approve or reject the requests picked in the inbox list, in two steps: a review of
    each answer that will be recorded (and of what will be skipped, and why), with the one
    reason it requires; then, confirmed (``confirm=1``), the decisions, and a message saying
    how many were decided and which were skipped."""
    decision = request.POST.get("decision")
    back = f"{reverse('dashboard:approval_inbox')}?{request.POST.get('back', '')[:2000]}"
    if decision not in ("approve", "reject"):
        messages.error(request, "Choose Approve or Reject for the picked requests.")
        return redirect(back)
    picked = request.POST.getlist("request")
    reason = request.POST.get("reason", "")[:2000].strip()
    if request.POST.get("confirm") != "1" or not reason:
        return _bulk_review(request, picked, decision, back, reason)
    try:
        outcomes = services.approvals_decide_many(
            picked, user=request.user, approved=decision == "approve", reason=reason
        )
    except services.ServiceError as exc:
        messages.error(request, f"Nothing was decided: {exc.message}.")
        return redirect(back)
    done = [o for o in outcomes if o.decided]
    skipped = [o for o in outcomes if not o.decided]
    verb = "Approved" if decision == "approve" else "Rejected"
    if done:
        messages.success(request, f"{verb} {len(done)} of {len(outcomes)} requests.")
    for outcome in skipped[:10]:
        why = outcome.reason if len(outcome.reason) <= 200 else outcome.reason[:199] + "…"
        messages.warning(request, f"Skipped {short_request(outcome.request_id)}: {why}.")
    if len(skipped) > 10:
        messages.warning(request, f"… and {len(skipped) - 10} more skipped.")
    return redirect(back)


def _bulk_review(
    request: HttpRequest, picked: list[str], decision: str, back: str, reason: str
) -> HttpResponse:
    if not picked:
        messages.error(request, "Nothing was decided: pick the requests to decide.")
        return redirect(back)
    if not services.can(request.user, decision):
        messages.error(request, f"Nothing was decided: your role may not {decision} requests.")
        return redirect(back)
    previews = services.approvals_decide_preview(
        picked, user=request.user, approved=decision == "approve"
    )
    rows = [
        (p, response_text(p.approval, p.answer) if not p.skip and p.approval else None)
        for p in previews
    ]
    workflows = sorted({p.approval.run.workflow_name for p in previews if p.approval})
    confirmed = request.POST.get("confirm") == "1"
    context = {
        "rows": rows,
        "decision": decision,
        "verb": "Approve" if decision == "approve" else "Reject",
        "acting": sum(1 for p in previews if not p.skip),
        "workflows": workflows,
        "reason": reason,
        "reason_error": "Give the reason: it is recorded with every decision." if confirmed else "",
        "back": back,
        "back_query": request.POST.get("back", "")[:2000],
        "nav_section": "approvals",
    }
    return render(request, BULK_REVIEW, context, status=422 if confirmed else 200)


def short_request(request_id: str) -> str:
    run, _, own = request_id.partition(":")
    return f"request {own[:8] or run[:8]} of run {run[:8]}"


@page_view("POST")
def approval_assign(request: HttpRequest, request_id: str) -> HttpResponse:
    """Assign a pending request to a person or a role group (or clear it), from the panel."""
    approval = selectors.approval_get(request_id, user=request.user)
    if approval is None:
        raise Http404("No such request.")
    back = f"{reverse('dashboard:approval_inbox')}?request={approval.request_id}"
    choice = request.POST.get("assignee", "")
    assignee = group = None
    kind, _, pk = choice.partition(":")
    if choice and (kind not in ("user", "group") or not pk.isdigit()):
        messages.error(request, "Pick a person or a group to assign the request to.")
        return redirect(back)
    if kind == "user":
        assignee = selectors.assignable_users().filter(pk=int(pk)).first()
    elif kind == "group":
        group = selectors.assignable_groups().filter(pk=int(pk)).first()
    if choice and assignee is None and group is None:
        messages.error(request, "That person or group cannot decide requests.")
        return redirect(back)
    try:
        services.approval_assign(
            approval.request_id, user=request.user, assignee=assignee, group=group
        )
    except services.ServiceError as exc:
        messages.error(request, f"Not assigned: {exc.message}.")
        return redirect(back)
    target = assignee.get_username() if assignee else group.name if group else ""
    messages.success(request, f"Assigned to {target}." if target else "Assignment cleared.")
    return redirect(back)


def response_text(approval: ApprovalRequest, response: Any) -> str | None:
    """A decision's response on one line: ``discount_percent: 10, note: "ok"`` for an object."""
    if response is None:
        return None
    shown = _response_shown(approval, response)
    if isinstance(shown, dict):
        text = ", ".join(f"{key}: {preview(value, limit=80)}" for key, value in shown.items())
        return text if len(text) <= 300 else text[:299] + "…"
    return preview(shown, limit=300)


@page_view("GET")
def approval_archive(request: HtmxHttpRequest) -> HttpResponse:
    workflows = workflow_names(request.user)
    form = ApprovalFilterForm(request.GET, workflows=workflows)
    filters = form.cleaned()
    page = selectors.approval_archive(
        user=request.user,
        workflow=filters.get("workflow", ""),
        after=decode_cursor(request.GET.get("after"), int),
        before=decode_cursor(request.GET.get("before"), int),
        limit=PAGE_SIZE,
    )
    rows = [(a, response_text(a, a.response)) for a in page.rows]
    context = {
        "filter_form": form,
        "rows": rows,
        "page": page_links(
            request,
            page,
            lambda a: (a.decided_at, a.pk),
            path=reverse("dashboard:approval_archive"),
        ),
        "nav_section": "approvals",
        "tab": "archive",
    }
    if htmx_target(request) == "archive-table":
        return render(request, f"{ARCHIVE}#table", context)
    return render(request, ARCHIVE, context)
