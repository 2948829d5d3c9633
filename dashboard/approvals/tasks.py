"""Celery tasks that deliver approval notifications, and the periodic retry of failed ones.

``enqueue_delivery`` is the notification sender that ``DashboardConfig.ready()`` plugs into
``services.dispatch``: services write ``Notification`` rows in the transaction that raised the
request and hand their ids over without importing this module.
"""

from __future__ import annotations

from celery import shared_task

from dashboard.approvals import notifications
from dashboard.execution.embedded import enqueue, enqueue_on_commit, register_periodic

__all__ = ["deliver_notification", "enqueue_delivery"]

RETRY_NOTIFICATIONS_EVERY_SECONDS = 30.0


@shared_task(name="dashboard.deliver_notification", acks_late=True, ignore_result=True)
def deliver_notification(notification_id: int) -> bool:
    """Send one email or webhook; a failure is recorded and retried by the periodic job."""
    return notifications.deliver(notification_id)


def enqueue_delivery(notification_id: int) -> None:
    """Deliver notification ``notification_id`` once the current transaction commits."""
    enqueue_on_commit(deliver_notification, notification_id)


def _retry_notifications() -> None:
    for notification_id in notifications.due_for_retry():
        enqueue(deliver_notification, notification_id)


register_periodic(
    "retry-notifications", every=RETRY_NOTIFICATIONS_EVERY_SECONDS, func=_retry_notifications
)
