"""The JSON API's alert rules: list and create them; read, change and delete one (Admins, as
the Alerts page). ``services.alerts`` validates, checks the role and audits.

A rule's credentials are never answered: the Slack incoming webhook's URL (its path is the
key) and the webhook's signing secret show as whether they are set. On a ``PUT`` either one
left out (or null) keeps the rule's, and "" removes it, so reading a rule and writing it back
changes nothing.
"""

from __future__ import annotations

import datetime as dt
from typing import Literal

from django.http import HttpRequest
from ninja import Router, Schema
from ninja.responses import Status
from pydantic import ConfigDict, Field

from dashboard import services
from dashboard.access import authz
from dashboard.api.views import refusals, refuse_other_methods
from dashboard.models import AlertRule
from dashboard.selectors import alerts as selected
from dashboard.services import alerts

__all__ = ["router"]

router = Router(tags=["alerts"])

Condition = Literal[
    "run_failed", "run_stuck", "run_slow", "approval_waiting", "retention_failing", "run_cost"
]


class AlertRuleIn(Schema):
    model_config = ConfigDict(strict=True, extra="ignore")

    name: str
    condition: Condition
    workflow: str | None = Field(None, description="one workflow's runs; null: every workflow")
    threshold_minutes: int | None = Field(
        None, description="run_stuck, run_slow and approval_waiting: after how many minutes"
    )
    threshold_cost: str | None = Field(
        None, description="run_cost: the cost a run alerts above, a decimal string ('2.50')"
    )
    emails: list[str] = Field(default_factory=list)
    slack_webhook_url: str | None = Field(None, description="on PUT, null keeps the rule's")
    webhook_url: str = ""
    webhook_secret: str | None = Field(None, description="on PUT, null keeps the rule's")
    notify_resolved: bool = True
    enabled: bool = True


class AlertRuleOut(Schema):
    id: int
    name: str
    condition: Condition
    workflow: str | None
    threshold_minutes: int | None
    threshold_cost: str | None = Field(description="run_cost: the cost a run alerts above")
    emails: list[str]
    slack: bool = Field(description="a Slack incoming webhook is set (its URL is not shown)")
    webhook_url: str
    webhook_signed: bool = Field(description="the webhook is signed (its secret is not shown)")
    notify_resolved: bool
    enabled: bool
    open_incidents: int
    created_at: dt.datetime
    updated_at: dt.datetime


class AlertRulesOut(Schema):
    rules: list[AlertRuleOut]


def _out(rule: AlertRule, open_incidents: int) -> AlertRuleOut:
    return AlertRuleOut(
        id=rule.pk,
        name=rule.name,
        condition=rule.condition,  # type: ignore[arg-type]
        workflow=rule.workflow_name or None,
        threshold_minutes=rule.threshold_minutes,
        threshold_cost=rule.threshold_cost_text or None,
        emails=rule.email_list,
        slack=bool(rule.slack_webhook_url),
        webhook_url=rule.webhook_url,
        webhook_signed=bool(rule.webhook_secret),
        notify_resolved=rule.notify_resolved,
        enabled=rule.enabled,
        open_incidents=open_incidents,
        created_at=rule.created_at,
        updated_at=rule.updated_at,
    )


def _one(rule: AlertRule) -> AlertRuleOut:
    return _out(rule, selected.open_incident_count(rule))


def _spec(payload: AlertRuleIn, current: AlertRule | None = None) -> alerts.AlertRuleSpec:
    def kept(given: str | None, field: str) -> str:
        if given is not None:
            return given
        return getattr(current, field) if current is not None else ""

    return alerts.AlertRuleSpec(
        name=payload.name,
        condition=payload.condition,
        workflow_name=payload.workflow or "",
        threshold_minutes=payload.threshold_minutes,
        threshold_cost=payload.threshold_cost,
        emails="\n".join(payload.emails),
        slack_webhook_url=kept(payload.slack_webhook_url, "slack_webhook_url"),
        webhook_url=payload.webhook_url,
        webhook_secret=kept(payload.webhook_secret, "webhook_secret"),
        notify_resolved=payload.notify_resolved,
        enabled=payload.enabled,
    )


def _rule_or_404(request: HttpRequest, rule_id: int) -> AlertRule:
    authz.require(request.user, "alert_change", target=f"alert rule {rule_id}")
    rule = selected.alert_rule_get(rule_id)
    if rule is None:
        raise services.NotFound(f"no alert rule with id {rule_id}")
    return rule


@router.get("/alerts/rules/", response={200: AlertRulesOut, **refusals()}, url_name="alert-rules")
def alert_rule_list(request: HttpRequest) -> AlertRulesOut:
    """Every rule, with how many incidents it has open."""
    authz.require(request.user, "alert_change", target="alert rules")
    return AlertRulesOut(
        rules=[_out(row.rule, row.open_count) for row in selected.alert_rule_rows()]
    )


@router.post(
    "/alerts/rules/", response={201: AlertRuleOut, **refusals(413)}, url_name="alert-rule-create"
)
def alert_rule_create(request: HttpRequest, payload: AlertRuleIn) -> Status[AlertRuleOut]:
    """Create a rule (400 names each field that does not fit)."""
    rule = alerts.alert_rule_create(_spec(payload), user=request.user)
    return Status(201, _out(rule, 0))


@router.get(
    "/alerts/rules/{int:rule_id}/",
    response={200: AlertRuleOut, **refusals(404)},
    url_name="alert-rule",
)
def alert_rule_detail(request: HttpRequest, rule_id: int) -> AlertRuleOut:
    return _one(_rule_or_404(request, rule_id))


@router.put(
    "/alerts/rules/{int:rule_id}/",
    response={200: AlertRuleOut, **refusals(404, 413)},
    url_name="alert-rule-update",
)
def alert_rule_update(request: HttpRequest, rule_id: int, payload: AlertRuleIn) -> AlertRuleOut:
    """Replace a rule's fields; its open incidents are checked again under the new rule by the
    next evaluation."""
    current = _rule_or_404(request, rule_id)
    return _one(alerts.alert_rule_update(rule_id, _spec(payload, current), user=request.user))


@router.delete(
    "/alerts/rules/{int:rule_id}/",
    response={204: None, **refusals(404)},
    url_name="alert-rule-delete",
)
def alert_rule_delete(request: HttpRequest, rule_id: int) -> Status[None]:
    """Delete a rule with its incidents (the audit log keeps what happened)."""
    alerts.alert_rule_delete(rule_id, user=request.user)
    return Status(204, None)


refuse_other_methods(router)
