"""Celery tasks that notify people: delivering one notification, the periodic retry of failed
ones, and the periodic alert evaluation that opens incidents (periodic jobs are published by
Celery beat in production and run on a thread in embedded mode; once per period either way,
through ``dashboard.execution.periodic``).

An alert pass that another process runs at the same moment (a second beat, or beat beside a
server's threads) cannot notify twice: the evaluation opens each incident in a transaction whose
insert only one process can win (``services.alert_evaluation``).

``enqueue_delivery`` is the notification sender that ``DashboardConfig.ready()`` plugs into
``services.dispatch``: services write ``Notification`` rows in the transaction that raised the
request and hand their ids over without importing this module.
"""

from __future__ import annotations

from celery import shared_task

from dashboard.catalog.periodic_jobs import PERIODIC_JOBS
from dashboard.execution import periodic
from dashboard.execution.embedded import enqueue, enqueue_on_commit, register_periodic
from dashboard.notifications import delivery
from dashboard.services import alert_evaluation

__all__ = ["deliver_notification", "enqueue_delivery", "evaluate_alerts", "retry_notifications"]

RETRY_NOTIFICATIONS = PERIODIC_JOBS["retry-notifications"]
EVALUATE_ALERTS = PERIODIC_JOBS["evaluate-alerts"]


@shared_task(name="dashboard.deliver_notification", acks_late=True, ignore_result=True)
def deliver_notification(notification_id: int) -> bool:
    """Send one email or webhook; a failure is recorded and retried by the periodic job."""
    return delivery.deliver(notification_id)


def enqueue_delivery(notification_id: int) -> None:
    """Deliver notification ``notification_id`` once the current transaction commits."""
    enqueue_on_commit(deliver_notification, notification_id)


def _retry_notifications() -> list[int]:
    due = delivery.due_for_retry()
    for notification_id in due:
        enqueue(deliver_notification, notification_id)
    return due


@shared_task(name=RETRY_NOTIFICATIONS.task, ignore_result=True)
def retry_notifications() -> list[int]:
    """Enqueue the notifications due for another attempt (once per period)."""
    _, due = periodic.run_once_per_period(
        RETRY_NOTIFICATIONS.name, RETRY_NOTIFICATIONS.every, _retry_notifications
    )
    return due or []


register_periodic(
    RETRY_NOTIFICATIONS.name, every=RETRY_NOTIFICATIONS.every, func=_retry_notifications
)


def _evaluate_alerts() -> dict[str, list[int]]:
    return alert_evaluation.alerts_evaluate().as_dict()


@shared_task(name=EVALUATE_ALERTS.task, ignore_result=True)
def evaluate_alerts() -> dict[str, list[int]]:
    """Open incidents whose condition holds and resolve those that cleared (once per period)."""
    _, report = periodic.run_once_per_period(
        EVALUATE_ALERTS.name, EVALUATE_ALERTS.every, _evaluate_alerts
    )
    return report or {"opened": [], "resolved": []}


register_periodic(EVALUATE_ALERTS.name, every=EVALUATE_ALERTS.every, func=_evaluate_alerts)
