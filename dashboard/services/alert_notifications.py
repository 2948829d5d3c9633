"""What an alert incident tells the outside world: the ``Notification`` rows of its rule's
targets (email, Slack, the signed webhook), with a link back to the run.

The rows are written in the transaction that opened or resolved the incident and handed to
``dispatch.enqueue_notification``: the same outbox, claims, retries and Standard Webhooks
signing as approval notifications (``dashboard.notifications.delivery``), which calls
``alert_notification_sent`` back once a row reached its target. Each change of an incident
about a run (opened, delivered, resolved) is broadcast to that run's open pages after commit
(``incident_changed``): the delivery is recorded a moment after the receiver has it, and a
page drawn in between must not keep saying "opened".
"""

from __future__ import annotations

import urllib.parse
from typing import Any

from django.conf import settings
from django.db import transaction
from django.urls import reverse

from dashboard import broadcast
from dashboard.access import audit
from dashboard.models import AlertIncident, Notification
from dashboard.services import dispatch
from dashboard.services.common import now

__all__ = ["alert_notification_sent", "alert_notify", "incident_changed", "incident_url"]


def incident_url(incident: AlertIncident) -> str:
    """The page an alert links to: the run's, or retention's; absolute when
    ``SUPERSTEP_BASE_URL`` says where the dashboard is."""
    if incident.run_id is not None:
        path = reverse("dashboard:run_detail", args=[incident.run_id])
    else:
        path = reverse("dashboard:retention")
    return f"{settings.SUPERSTEP_BASE_URL}{path}"


def incident_changed(incident: AlertIncident) -> None:
    """Tell the open pages of the incident's run, once the caller's transaction commits, that
    the incident opened, was delivered or resolved: a page drawn a moment before shows it."""
    if incident.run_id is not None:
        run_id = incident.run_id
        transaction.on_commit(lambda: broadcast.broadcast_run_alerts_changed(run_id), robust=True)


def alert_notify(incident: AlertIncident, event: str) -> list[Notification]:
    """Write the notifications of ``event`` (alert_opened, alert_resolved) to every target of
    the incident's rule, delivered once the caller's transaction commits."""
    rule = incident.rule
    payload = _payload(incident, event)
    rows = [
        Notification(
            kind=Notification.EMAIL, event=event, incident=incident, target=address, payload=payload
        )
        for address in rule.email_list
    ]
    if rule.slack_webhook_url:
        rows.append(
            Notification(
                kind=Notification.SLACK,
                event=event,
                incident=incident,
                target=rule.slack_webhook_url,
                payload={"text": _slack_text(payload)},
            )
        )
    if rule.webhook_url:
        rows.append(
            Notification(
                kind=Notification.WEBHOOK,
                event=event,
                incident=incident,
                target=rule.webhook_url,
                payload=payload,
            )
        )
    created = Notification.objects.bulk_create(rows)
    for row in created:
        dispatch.enqueue_notification(row.pk)
    return created


def _payload(incident: AlertIncident, event: str) -> dict[str, Any]:
    rule = incident.rule
    return {
        "event": event,
        "incident_id": incident.pk,
        "rule": rule.name,
        "condition": rule.condition,
        "threshold_minutes": rule.threshold_minutes,
        "threshold_cost": rule.threshold_cost_text or None,
        "workflow": incident.workflow_name,
        "run_id": str(incident.run_id) if incident.run_id else None,
        "subject": incident.subject,
        "summary": incident.summary,
        "url": incident_url(incident),
        "opened_at": incident.opened_at.isoformat(),
        "resolved_at": incident.resolved_at.isoformat() if incident.resolved_at else None,
        "resolution": incident.resolution,
    }


def _slack_text(payload: dict[str, Any]) -> str:
    # Slack's mrkdwn: &, < and > are its control characters, escaped in text we did not write.
    def escaped(text: str) -> str:
        return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")

    resolved = payload["event"] == "alert_resolved"
    head = ":white_check_mark: Resolved" if resolved else ":rotating_light: Alert"
    lines = [f"{head}: *{escaped(payload['rule'])}*: {escaped(payload['summary'])}"]
    if resolved and payload["resolution"]:
        lines.append(escaped(payload["resolution"]))
    lines.append(f"<{payload['url']}|Open in Superstep>")
    return "\n".join(lines)


def alert_notification_sent(notification: Notification) -> None:
    """Record that one of an incident's notifications reached its target: the incident is
    delivered from the first one on, and each lands in the audit log."""
    incident = notification.incident
    if incident is None:
        return
    moment = now()
    with transaction.atomic():
        if notification.event == "alert_opened":
            first = AlertIncident.objects.filter(pk=incident.pk, delivered_at__isnull=True).update(
                delivered_at=moment
            )
            if first:
                incident_changed(incident)
        audit.record(
            None,
            "alert_delivered",
            run=incident.run,
            target=f"alert {incident.rule.name}"[:300],
            details={
                "incident": incident.pk,
                "event": notification.event,
                "kind": notification.kind,
                "to": _recipient(notification),
            },
        )


def _recipient(notification: Notification) -> str:
    if notification.kind == Notification.EMAIL:
        return notification.target
    if notification.kind == Notification.SLACK:
        return "Slack"  # the URL itself is the Slack credential
    return urllib.parse.urlsplit(notification.target).netloc
