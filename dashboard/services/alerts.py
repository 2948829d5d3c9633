"""Alert rules: create, change, delete (Admins only, validated, audited).

Conditions are evaluated by ``services.alert_evaluation`` (the ``evaluate-alerts`` periodic
job); what an incident tells the outside world is ``services.alert_notifications``.
"""

from __future__ import annotations

import dataclasses
from decimal import Decimal
from typing import Any

from django.core.exceptions import ValidationError
from django.core.validators import URLValidator, validate_email
from django.db import IntegrityError, transaction
from standardwebhooks import Webhook

from dashboard import catalog, outbound
from dashboard.access import audit, authz
from dashboard.core.errors import InvalidInput, NotFound
from dashboard.core.types import Actor, is_user
from dashboard.models import AlertCondition, AlertRule
from dashboard.models.alerts import TIMED_CONDITIONS
from dashboard.services import amounts, validation
from dashboard.services.common import now

__all__ = [
    "MAX_THRESHOLD_COST",
    "MAX_THRESHOLD_MINUTES",
    "AlertRuleSpec",
    "alert_rule_check",
    "alert_rule_create",
    "alert_rule_delete",
    "alert_rule_update",
]

MAX_THRESHOLD_MINUTES = 366 * 24 * 60
# Run cost above: a run costing a million is beyond what any rule could mean to catch.
MAX_THRESHOLD_COST = Decimal(1_000_000)
MAX_EMAILS = 20
_http_url = URLValidator(schemes=["https", "http"])


@dataclasses.dataclass(frozen=True)
class AlertRuleSpec:
    """What a rule says, as the form gives it (checked by ``alert_rule_check``)."""

    name: str
    condition: str
    workflow_name: str = ""
    threshold_minutes: int | None = None
    # Run cost above: the cost, as typed (text or a number; read by ``services.amounts``).
    threshold_cost: object = None
    emails: str = ""
    slack_webhook_url: str = ""
    webhook_url: str = ""
    webhook_secret: str = ""
    notify_resolved: bool = True
    enabled: bool = True


def alert_rule_check(spec: AlertRuleSpec, *, rule_id: int | None = None) -> dict[str, Any]:
    """The model fields ``spec`` stands for, or ``InvalidInput`` naming every bad field."""
    errors: dict[str, str] = {}
    name = validation.printable(spec.name).strip()
    if not name or len(name) > 100:
        errors["name"] = "A name of 1 to 100 characters."
    elif AlertRule.objects.filter(name=name).exclude(pk=rule_id or 0).exists():
        errors["name"] = f"An alert rule named {name!r} exists already."
    fields: dict[str, Any] = {
        "name": name,
        "condition": spec.condition,
        "workflow_name": spec.workflow_name.strip(),
        "notify_resolved": spec.notify_resolved,
        "enabled": spec.enabled,
    }
    _check_subject(spec, fields, errors)
    fields["emails"] = _checked_emails(spec.emails, errors)
    for field in ("slack_webhook_url", "webhook_url"):
        fields[field] = _checked_url(getattr(spec, field), field, errors)
    fields["webhook_secret"] = _checked_secret(spec.webhook_secret, errors)
    if (
        not (fields["emails"] or fields["slack_webhook_url"] or fields["webhook_url"])
        and not errors
    ):
        errors["emails"] = "Say whom to tell: an email address, a Slack webhook or a webhook."
    if errors:
        raise InvalidInput("the alert rule is not valid", errors=errors)
    return fields


def _check_subject(spec: AlertRuleSpec, fields: dict[str, Any], errors: dict[str, str]) -> None:
    if spec.condition not in AlertCondition.values:
        errors["condition"] = f"One of: {', '.join(AlertCondition.values)}."
        return
    workflow = fields["workflow_name"]
    if spec.condition == AlertCondition.RETENTION_FAILING and workflow:
        errors["workflow_name"] = "Retention concerns every workflow: leave the workflow empty."
    elif workflow and workflow not in catalog.names():
        errors["workflow_name"] = (
            f"No workflow named {validation.printable(workflow)[:200]!r} is deployed."
        )
    minutes = spec.threshold_minutes
    if spec.condition in TIMED_CONDITIONS:
        if minutes is None or not 1 <= minutes <= MAX_THRESHOLD_MINUTES:
            errors["threshold_minutes"] = (
                f"A whole number of minutes from 1 to {MAX_THRESHOLD_MINUTES}."
            )
        fields["threshold_minutes"] = minutes
    elif minutes is not None:
        errors["threshold_minutes"] = "This condition takes no number of minutes: leave it empty."
    else:
        fields["threshold_minutes"] = None
    fields["threshold_cost"] = _checked_cost(spec, errors)


def _checked_cost(spec: AlertRuleSpec, errors: dict[str, str]) -> Decimal | None:
    given = spec.threshold_cost
    empty = given is None or (isinstance(given, str) and not given.strip())
    if spec.condition != AlertCondition.RUN_COST:
        if not empty:
            errors["threshold_cost"] = "This condition takes no cost: leave it empty."
        return None
    if empty:
        errors["threshold_cost"] = "Say above which cost a run alerts, such as 0.50."
        return None
    found: dict[str, str] = {}
    cost = amounts.read_cost(given, "threshold_cost", found)
    if not found and not 0 < cost <= MAX_THRESHOLD_COST:
        found["threshold_cost"] = f"A cost above 0 and at most {MAX_THRESHOLD_COST:,}."
    errors.update(found)
    return None if found else cost


def _checked_emails(text: str, errors: dict[str, str]) -> str:
    addresses = [line.strip() for line in text.replace(",", "\n").splitlines() if line.strip()]
    if len(addresses) > MAX_EMAILS:
        errors["emails"] = f"At most {MAX_EMAILS} addresses."
    for address in addresses:
        try:
            validate_email(address)
        except ValidationError:
            errors["emails"] = f"{validation.printable(address)[:100]!r} is not an email address."
            break
    return "\n".join(addresses)


def _checked_url(text: str, field: str, errors: dict[str, str]) -> str:
    url = text.strip()
    if not url:
        return ""
    try:
        if len(url) > 500:
            raise ValidationError("too long")
        _http_url(url)
    except ValidationError:
        errors[field] = "An http:// or https:// URL of at most 500 characters."
        return url
    refused = outbound.refusal(url)
    if refused:
        errors[field] = refused
    return url


def _checked_secret(text: str, errors: dict[str, str]) -> str:
    secret = text.strip()
    if len(secret) > 200 or validation.printable(secret) != secret:
        errors["webhook_secret"] = "At most 200 printable characters."
    elif secret.startswith("whsec_"):
        try:
            Webhook(secret)
        except Exception:  # noqa: BLE001 -- the library's refusal of a bad base64 key, any type
            errors["webhook_secret"] = "A whsec_ secret must be base64 after the prefix."
    return secret


def _described(rule: AlertRule) -> dict[str, Any]:
    # No secret and no Slack URL (its path is the credential) in the audit log.
    return {
        "condition": rule.condition,
        "workflow": rule.workflow_name or "*",
        "threshold_minutes": rule.threshold_minutes,
        "threshold_cost": rule.threshold_cost_text or None,
        "emails": rule.email_list,
        "slack": bool(rule.slack_webhook_url),
        "webhook_url": rule.webhook_url,
        "signed": bool(rule.webhook_secret),
        "notify_resolved": rule.notify_resolved,
        "enabled": rule.enabled,
    }


def alert_rule_create(spec: AlertRuleSpec, *, user: Actor = None) -> AlertRule:
    authz.require(user, "alert_change", target=f"alert rule {spec.name}"[:300])
    fields = alert_rule_check(spec)
    with transaction.atomic():
        rule = AlertRule(**fields, created_by=user if is_user(user) else None, created_at=now())
        _save(rule)
        audit.record(
            user, "alert_rule_create", target=f"alert rule {rule.name}", details=_described(rule)
        )
    return rule


def alert_rule_update(rule_id: int, spec: AlertRuleSpec, *, user: Actor = None) -> AlertRule:
    """Change a rule; its open incidents are checked again under the new rule by the next
    evaluation (resolved if it no longer holds for them)."""
    authz.require(user, "alert_change", target=f"alert rule {rule_id}")
    fields = alert_rule_check(spec, rule_id=rule_id)
    with transaction.atomic():
        rule = _locked(rule_id)
        before = _described(rule)
        for key, value in fields.items():
            setattr(rule, key, value)
        _save(rule)
        audit.record(
            user,
            "alert_rule_update",
            target=f"alert rule {rule.name}",
            details={"before": before, "after": _described(rule)},
        )
    return rule


def alert_rule_delete(rule_id: int, *, user: Actor = None) -> None:
    """Delete a rule with its incidents and their unsent notifications (the audit log keeps
    what happened)."""
    authz.require(user, "alert_change", target=f"alert rule {rule_id}")
    with transaction.atomic():
        rule = _locked(rule_id)
        audit.record(
            user, "alert_rule_delete", target=f"alert rule {rule.name}", details=_described(rule)
        )
        rule.delete()


def _locked(rule_id: int) -> AlertRule:
    rule = AlertRule.objects.select_for_update().filter(pk=rule_id).first()
    if rule is None:
        raise NotFound(f"no alert rule with id {rule_id}")
    return rule


def _save(rule: AlertRule) -> None:
    try:
        with transaction.atomic():
            rule.save()
    except IntegrityError:  # the same name saved a moment ago by someone else
        raise InvalidInput(
            "the alert rule is not valid", errors={"name": "This name is taken."}
        ) from None
