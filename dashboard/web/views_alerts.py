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

from django import forms
from django.contrib import messages
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render

from dashboard import services
from dashboard.execution import registry
from dashboard.models import AlertCondition, AlertRule, AuditEntry
from dashboard.selectors import alerts as selected
from dashboard.services import alerts
from dashboard.web.access import page_view
from dashboard.web.forms import apply_errors

PAGE = "dashboard/alerts.html"
FORM = "dashboard/alert_rule_form.html"
DENIED = "Alert rules are managed by admins: your role may not see or change them."


class AlertRuleForm(forms.Form):
    """Types only; what a rule may say is ``alerts.alert_rule_check``'s rule, whose messages
    land beside these fields."""

    name = forms.CharField(strip=True, widget=forms.TextInput(attrs={"maxlength": 100}))
    condition = forms.ChoiceField(label="When", choices=AlertCondition.choices)
    threshold_minutes = forms.IntegerField(
        required=False,
        label="Minutes",
        help_text="Stuck, slower than and approval waiting: after how many minutes. Empty otherwise.",
        widget=forms.NumberInput(attrs={"min": 1}),
    )
    workflow_name = forms.ChoiceField(label="Workflow", required=False, choices=())
    emails = forms.CharField(
        required=False,
        label="Email addresses",
        help_text="One per line.",
        widget=forms.Textarea(attrs={"rows": 3, "spellcheck": "false"}),
    )
    slack_webhook_url = forms.CharField(
        required=False,
        label="Slack incoming webhook URL",
        widget=forms.URLInput(attrs={"maxlength": 500, "spellcheck": "false"}),
    )
    webhook_url = forms.CharField(
        required=False,
        label="Webhook URL",
        help_text="Receives the incident as JSON, signed per Standard Webhooks.",
        widget=forms.URLInput(attrs={"maxlength": 500, "spellcheck": "false"}),
    )
    webhook_secret = forms.CharField(
        required=False,
        label="Webhook secret",
        help_text="whsec_<base64>, or any text (its UTF-8 bytes are the key). Empty: unsigned.",
        widget=forms.PasswordInput(
            render_value=True, attrs={"maxlength": 200, "autocomplete": "off"}
        ),
    )
    notify_resolved = forms.BooleanField(
        required=False, initial=True, label="Also tell them when it is resolved"
    )
    enabled = forms.BooleanField(required=False, initial=True, label="Enabled")

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        choices = [("", "Every workflow"), *((name, name) for name in registry.names())]
        self.fields["workflow_name"].choices = choices  # type: ignore[attr-defined]

    def spec(self) -> alerts.AlertRuleSpec:
        return alerts.AlertRuleSpec(**self.cleaned_data)

    @classmethod
    def initial_for(cls, rule: AlertRule) -> dict[str, Any]:
        return {field: getattr(rule, field) for field in cls.base_fields}


def _refused(request: HttpRequest) -> HttpResponse | None:
    if services.can(request.user, "alert_change"):
        return None
    target = f"page {request.path}"[:300]
    services.audit.record(request.user, "view", outcome=AuditEntry.DENIED, target=target)
    return _page(request, status=403, denied=DENIED)


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
    if refused := _refused(request):
        return refused
    if request.method == "GET":
        return _form_page(request, AlertRuleForm(), None)
    return _save(request, None)


@page_view("GET", "POST")
def alert_rule_edit(request: HttpRequest, rule_id: int) -> HttpResponse:
    if refused := _refused(request):
        return refused
    rule = selected.alert_rule_get(rule_id)
    if rule is None:
        return _page(request, status=404, error=f"No alert rule has the id {rule_id}.")
    if request.method == "GET":
        return _form_page(request, AlertRuleForm(initial=AlertRuleForm.initial_for(rule)), rule)
    return _save(request, rule)


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


def _save(request: HttpRequest, rule: AlertRule | None) -> HttpResponse:
    """The posted form through ``alert_rule_create`` (``rule`` None) or ``alert_rule_update``."""
    form = AlertRuleForm(request.POST)
    if not form.is_valid():
        return _form_page(request, form, rule, status=422)
    try:
        if rule is None:
            saved = alerts.alert_rule_create(form.spec(), user=request.user)
        else:
            saved = alerts.alert_rule_update(rule.pk, form.spec(), user=request.user)
    except services.ServiceError as exc:
        apply_errors(form, exc.errors or {"__root__": exc.message})
        return _form_page(request, form, rule, status=422 if exc.status == 400 else exc.status)
    messages.success(request, f"Alert rule {saved.name} saved.")
    return redirect("dashboard:alerts")


def _form_page(
    request: HttpRequest, form: AlertRuleForm, rule: AlertRule | None, *, status: int = 200
) -> HttpResponse:
    context = {"form": form, "rule": rule, "nav_section": "alerts"}
    return render(request, FORM, context, status=status)
