"""Celery tasks that deliver approval notifications, and the periodic retry of failed ones
(published by Celery beat in production, run on a thread in embedded mode; once per period
either way, through ``dashboard.execution.periodic``).

``enqueue_delivery`` is the notification sender that ``DashboardConfig.ready()`` plugs into
``services.dispatch``: services write ``Notification`` rows in the transaction that raised the
request and hand their ids over without importing this module.
"""

from __future__ import annotations

from celery import shared_task

from dashboard.approvals import notifications
from dashboard.execution import periodic
from dashboard.execution.embedded import enqueue, enqueue_on_commit, register_periodic
from dashboard.execution.schedule import PERIODIC_JOBS

__all__ = ["deliver_notification", "enqueue_delivery", "retry_notifications"]

RETRY_NOTIFICATIONS = PERIODIC_JOBS["retry-notifications"]


@shared_task(name="dashboard.deliver_notification", acks_late=True, ignore_result=True)
def deliver_notification(notification_id: int) -> bool:
    """Send one email or webhook; a failure is recorded and retried by the periodic job."""
    return notifications.deliver(notification_id)


def enqueue_delivery(notification_id: int) -> None:
    """Deliver notification ``notification_id`` once the current transaction commits."""
    enqueue_on_commit(deliver_notification, notification_id)


def _retry_notifications() -> list[int]:
    due = notifications.due_for_retry()
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
