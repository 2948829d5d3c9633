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
from dashboard.execution import registry
from dashboard.models import ApprovalRequest, ApprovalStatus
from dashboard.services.types import Actor
from dashboard.web.access import HtmxHttpRequest, allowed_actions, htmx_target, page_view
from dashboard.web.conflicts import approval_conflict
from dashboard.web.diff_values import tree
from dashboard.web.display import short_type_name
from dashboard.web.forms import (
    ApprovalFilterForm,
    DecisionForm,
    SchemaFieldsForm,
    SchemaJsonForm,
    apply_errors,
    schema_form,
)
from dashboard.web.jsondiff import preview
from dashboard.web.pagination import decode_cursor, page_links

INBOX = "dashboard/approval_inbox.html"
ARCHIVE = "dashboard/approval_archive.html"
PAGE_SIZE = 50
# The inbox's own tabs (?tab=...), in the order shown; "all" is the default.
INBOX_TABS = (("mine", "Mine"), ("groups", "My groups"), ("all", "All"))


def response_form(
    approval: ApprovalRequest, data: Any = None, mode: str = "form"
) -> SchemaFieldsForm | SchemaJsonForm | None:
    """The fields the approver fills in besides Approve/Reject; None when the buttons say it
    all (a yes/no request, or a response whose only field is ``approved``)."""
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


def _field_text(value: Any) -> tuple[str, bool]:
    """A request field as one line of text, and whether it is JSON (shown monospaced)."""
    if value is None:
        return "null", True
    if isinstance(value, bool):
        return ("yes" if value else "no"), False
    if isinstance(value, str | int | float):
        return str(value), False
    if isinstance(value, list) and all(isinstance(v, str | int | float) for v in value):
        return ", ".join(str(v) for v in value) or "(none)", False
    return preview(value, limit=300), True


def request_fields(approval: ApprovalRequest) -> tuple[Any, list[tuple[str, str, bool]]]:
    """The request data made readable, and its top-level fields for a quick key/value list."""
    shown = tree(approval.request_data)
    fields: list[tuple[str, str, bool]] = []
    if isinstance(shown, dict):
        for key, value in shown.items():
            if not str(key).startswith("$"):
                fields.append((str(key), *_field_text(value)))
    elif shown is not None:
        fields.append(("value", *_field_text(shown)))
    return shown, fields


def panel_context(
    approval: ApprovalRequest | None,
    *,
    user: Actor,
    decision: DecisionForm | None = None,
    response: SchemaFieldsForm | SchemaJsonForm | None = None,
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
    return {
        "approval": approval,
        "request_value": shown,
        "request_fields": fields,
        "response_type_label": short_type_name(approval.response_type),
        "response_value": tree(approval.response) if approval.response is not None else None,
        "decision_form": decision or DecisionForm(),
        "response_form": response,
        "response_mode": mode,
        "decide_error": error,
        "decide_notice": notice,
        "json_capable": bool(approval.response_schema),
        "rule_refusal": refusal,
        "may_override": bool(refusal) and services.can(user, "override"),
        "is_overdue": approval.status == ApprovalStatus.PENDING
        and (
            approval.overdue_at is not None
            or (approval.due_at is not None and approval.due_at < timezone.now())
        ),
    }


def _inbox_context(request: HttpRequest) -> dict[str, Any]:
    """The list side of the inbox (filters, one keyset page), and what the user may do."""
    workflows = registry.names()
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
    approval = selectors.approval_get(context["selected_id"]) if context["selected_id"] else None
    context.update(panel_context(approval, user=request.user, mode=mode))
    if target == "approval-panel":
        return render(request, f"{INBOX}#panel", context)
    return render(request, INBOX, context)


@page_view("GET")
def approval_status(request: HttpRequest, request_id: str) -> HttpResponse:
    """The selected request's status line, redrawn live (someone else may decide it). When the
    panel still shows a form (``?shown=pending``) for a request decided meanwhile, the decision
    comes too, out of band, in the form's place."""
    approval = selectors.approval_get(request_id)
    if approval is None:
        raise Http404("No such request.")
    context: dict[str, Any] = {"approval": approval}
    decided = approval.status != ApprovalStatus.PENDING
    if decided and request.GET.get("shown") == ApprovalStatus.PENDING:
        context.update(panel_context(approval, user=request.user))
        context.update(decision_oob=True, may=allowed_actions(request.user))
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
    approval = selectors.approval_get(request_id)
    if approval is None:
        raise Http404("No such request.")
    mode = "json" if request.POST.get("mode") == "json" else "form"
    decision = DecisionForm(request.POST)
    response = (
        response_form(approval, request.POST, mode=mode)
        if approval.status == ApprovalStatus.PENDING
        else None
    )
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
                apply_errors(response, {k: v for k, v in exc.errors.items() if k not in own})
            status, error = (422 if exc.status == 400 else exc.status), exc.message
            if isinstance(exc, services.Conflict):
                error = approval_conflict(
                    selectors.approval_get(request_id), user=request.user, fallback=exc.message
                )
        else:
            outcome = _outcome_text(decided)
            if not request.htmx:
                messages.success(request, outcome)
                return redirect(
                    f"{reverse('dashboard:approval_inbox')}?request={decided.request_id}"
                )
            # The panel says it itself: a flash message would only show on the next page.
            context = panel_context(
                selectors.approval_get(request_id), user=request.user, notice=outcome
            )
            context["may"] = allowed_actions(request.user)
            return render(request, f"{INBOX}#panel", context)
    fresh = selectors.approval_get(request_id)
    keep = response if fresh is not None and fresh.status == ApprovalStatus.PENDING else None
    context = panel_context(
        fresh, user=request.user, decision=decision, response=keep, mode=mode, error=error
    )
    context["may"] = allowed_actions(request.user)
    if request.htmx:
        return render(request, f"{INBOX}#panel", context, status=status)
    return render(request, INBOX, {**_inbox_context(request), **context}, status=status)


@page_view("POST")
def approval_claim(request: HttpRequest, request_id: str) -> HttpResponse:
    """Claim a pending request (or, with ``release``, give it back); the service decides."""
    approval = selectors.approval_get(request_id)
    if approval is None:
        raise Http404("No such request.")
    release = request.POST.get("release") == "1"
    try:
        services.approval_claim(approval.request_id, user=request.user, release=release)
    except services.ServiceError as exc:
        fresh = selectors.approval_get(request_id)
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
    messages.success(
        request,
        "Request released." if release else "Request claimed: others cannot decide it now.",
    )
    return redirect(f"{reverse('dashboard:approval_inbox')}?request={approval.request_id}")


def response_text(response: Any) -> str | None:
    """A decision's response on one line: ``discount_percent: 10, note: "ok"`` for an object."""
    if response is None:
        return None
    shown = tree(response)
    if isinstance(shown, dict):
        text = ", ".join(f"{key}: {preview(value, limit=80)}" for key, value in shown.items())
        return text if len(text) <= 300 else text[:299] + "…"
    return preview(shown, limit=300)


@page_view("GET")
def approval_archive(request: HtmxHttpRequest) -> HttpResponse:
    workflows = registry.names()
    form = ApprovalFilterForm(request.GET, workflows=workflows)
    filters = form.cleaned()
    page = selectors.approval_archive(
        workflow=filters.get("workflow", ""),
        after=decode_cursor(request.GET.get("after"), int),
        before=decode_cursor(request.GET.get("before"), int),
        limit=PAGE_SIZE,
    )
    rows = [(a, response_text(a.response)) for a in page.rows]
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
