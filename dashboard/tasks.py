"""Celery tasks: thin, idempotent, and taking ids. The rules live in ``services``.

Every server process also runs the periodic jobs registered at the bottom (embedded and
production alike): each one locks and re-checks the rows it changes, so several processes
running them at once do every piece of work once.
"""

from __future__ import annotations

from celery import shared_task

from . import notifications, services, worker
from .embedded import enqueue, register_periodic

__all__ = ["deliver_notification", "execute_run", "prune_checkpoints", "sweep_approvals", "sweep_runs"]

SWEEP_RUNS_EVERY_SECONDS = 10.0
SWEEP_APPROVALS_EVERY_SECONDS = 15.0
RETRY_NOTIFICATIONS_EVERY_SECONDS = 30.0
PRUNE_EVERY_SECONDS = 3600.0


@shared_task(name="dashboard.execute_run", acks_late=True, ignore_result=True)
def execute_run(run_id: str) -> None:
    """Drive a run's supersteps while holding its lease. Running it twice is harmless: the
    second call finds the run leased, waiting or finished and does nothing."""
    worker.execute(run_id)


@shared_task(name="dashboard.sweep_runs", ignore_result=True)
def sweep_runs() -> list[str]:
    """Enqueue runs whose worker died or whose task was lost."""
    return services.runs_sweep()


@shared_task(name="dashboard.sweep_approvals", ignore_result=True)
def sweep_approvals() -> list[str]:
    """Mark overdue approval requests and apply their default outcome, once."""
    return services.approvals_sweep()


@shared_task(name="dashboard.deliver_notification", acks_late=True, ignore_result=True)
def deliver_notification(notification_id: int) -> bool:
    """Send one email or webhook; a failure is recorded and retried by the periodic job."""
    return notifications.deliver(notification_id)


@shared_task(name="dashboard.prune_checkpoints", ignore_result=True)
def prune_checkpoints() -> list[dict[str, object]]:
    """Apply every enabled retention policy."""
    return [report.as_dict() for report in services.checkpoint_prune()]


def _retry_notifications() -> None:
    for notification_id in notifications.due_for_retry():
        enqueue(deliver_notification, notification_id)


register_periodic("sweep-runs", every=SWEEP_RUNS_EVERY_SECONDS, func=services.runs_sweep)
register_periodic("sweep-approvals", every=SWEEP_APPROVALS_EVERY_SECONDS, func=services.approvals_sweep)
register_periodic("retry-notifications", every=RETRY_NOTIFICATIONS_EVERY_SECONDS, func=_retry_notifications)
register_periodic("prune-checkpoints", every=PRUNE_EVERY_SECONDS, func=services.checkpoint_prune)
