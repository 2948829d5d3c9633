"""Alerts for admins (``alert_change``): every rule with its open incidents, the latest
incidents of all rules (opened, delivered, resolved), and the form that creates, changes or
deletes a rule.

Rules name outside addresses and webhooks, so the page is an admin's like retention: another
role gets a 403 and the refusal lands in the audit log. Every change goes through
``services.alerts``, which checks the role again, validates and audits; refused input answers
422 with the message beside the field it concerns.
"""

from __future__ import annotations

from typing import Any

from django.contrib import messages
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render

from dashboard import services
from dashboard.selectors import alerts as selected
from dashboard.services import alerts
from dashboard.web.access import page_view
from dashboard.web.operations.crud import Crud, refused
from dashboard.web.operations.forms import AlertRuleForm

PAGE = "dashboard/alerts.html"
FORM = "dashboard/alert_rule_form.html"
DENIED = "Alert rules are managed by admins: your role may not see or change them."


RULES = Crud(
    form=AlertRuleForm,
    create=alerts.alert_rule_create,
    update=alerts.alert_rule_update,
    template=FORM,
    record_name="rule",
    saved=lambda rule: f"Alert rule {rule.name} saved.",
    nav_section="alerts",
    section="Alerts",
    noun="alert rule",
    new_title="New alert rule",
    form_id="alert-rule-form",
    list_url="dashboard:alerts",
    new_url="dashboard:alert_rule_new",
    edit_url="dashboard:alert_rule_edit",
)


def _refused(request: HttpRequest) -> HttpResponse | None:
    return refused(request, "alert_change", lambda: _page(request, status=403, denied=DENIED))


def _page(
    request: HttpRequest, *, status: int = 200, error: str = "", denied: str = ""
) -> HttpResponse:
    context: dict[str, Any] = {"nav_section": "alerts", "denied": denied, "error": error}
    if not denied:
        context["rows"] = selected.alert_rule_rows()
        context["incidents"] = selected.recent_incidents()
    return render(request, PAGE, context, status=status)


@page_view("GET")
def alert_list(request: HttpRequest) -> HttpResponse:
    return _refused(request) or _page(request)


@page_view("GET", "POST")
def alert_rule_new(request: HttpRequest) -> HttpResponse:
    return _refused(request) or RULES.new(request)


@page_view("GET", "POST")
def alert_rule_edit(request: HttpRequest, rule_id: int) -> HttpResponse:
    if denied := _refused(request):
        return denied
    rule = selected.alert_rule_get(rule_id)
    if rule is None:
        return _page(request, status=404, error=f"No alert rule has the id {rule_id}.")
    return RULES.edit(request, rule)


@page_view("POST")
def alert_rule_delete(request: HttpRequest, rule_id: int) -> HttpResponse:
    found = selected.alert_rule_get(rule_id)
    try:
        alerts.alert_rule_delete(rule_id, user=request.user)
    except services.ServiceError as exc:
        if isinstance(exc, services.Forbidden):
            return _page(request, status=403, denied=exc.message)
        return _page(request, status=exc.status, error=exc.message)
    messages.success(request, f"Alert rule {found.name if found else rule_id} deleted.")
    return redirect("dashboard:alerts")
