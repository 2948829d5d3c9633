"""Reads for the alerts page and the run page's alerts card (``services.alerts`` writes)."""

from __future__ import annotations

import dataclasses
import uuid

from django.db.models import Count, Q

from dashboard.models import AlertIncident, AlertRule

__all__ = [
    "RECENT_INCIDENTS",
    "RUN_CARD_LIMIT",
    "AlertRuleRow",
    "alert_rule_get",
    "alert_rule_rows",
    "open_incident_count",
    "recent_incidents",
    "run_incidents",
]

RECENT_INCIDENTS = 50
RUN_CARD_LIMIT = 10
# Open incidents shown under each rule; the count says how many there are in all.
OPEN_SHOWN = 5


@dataclasses.dataclass(frozen=True)
class AlertRuleRow:
    rule: AlertRule
    open_count: int
    open_incidents: list[AlertIncident]


def alert_rule_rows() -> list[AlertRuleRow]:
    """Every rule with how many incidents it has open and the latest few of them."""
    open_filter = Q(incidents__resolved_at__isnull=True)
    rules = list(AlertRule.objects.annotate(open_count=Count("incidents", filter=open_filter)))
    open_by_rule: dict[int, list[AlertIncident]] = {}
    for rule in rules:
        if rule.open_count:
            open_by_rule[rule.pk] = list(
                AlertIncident.objects.filter(rule=rule, resolved_at__isnull=True).order_by(
                    "-opened_at", "-pk"
                )[:OPEN_SHOWN]
            )
    return [AlertRuleRow(rule, rule.open_count, open_by_rule.get(rule.pk, [])) for rule in rules]


def alert_rule_get(rule_id: int) -> AlertRule | None:
    if not 0 < rule_id < 2**63:  # beyond any key, which the databases refuse to compare
        return None
    return AlertRule.objects.filter(pk=rule_id).first()


def open_incident_count(rule: AlertRule) -> int:
    return AlertIncident.objects.filter(rule=rule, resolved_at__isnull=True).count()


def recent_incidents(limit: int = RECENT_INCIDENTS) -> list[AlertIncident]:
    """The latest incidents of every rule, open or resolved, newest first."""
    return list(AlertIncident.objects.select_related("rule").order_by("-opened_at", "-pk")[:limit])


def run_incidents(run_id: uuid.UUID, limit: int = RUN_CARD_LIMIT) -> list[AlertIncident]:
    """The incidents about one run, newest first (the run page's alerts card)."""
    return list(
        AlertIncident.objects.filter(run_id=run_id)
        .select_related("rule")
        .order_by("-opened_at", "-pk")[:limit]
    )
