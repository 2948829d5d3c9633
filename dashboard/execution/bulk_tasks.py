"""The Celery tasks of bulk actions (``services.bulk``): the one that works through an action,
its enqueuer, which ``DashboardConfig.ready()`` plugs into ``services.dispatch``, and the
periodic sweep that queues again the actions a dead worker left."""

from __future__ import annotations

from celery import shared_task

from dashboard.catalog.periodic_jobs import PERIODIC_JOBS
from dashboard.execution import periodic
from dashboard.execution.embedded import enqueue_on_commit, register_periodic
from dashboard.services import bulk

__all__ = ["enqueue_bulk", "execute_bulk", "sweep_bulk_actions"]

SWEEP_BULK = PERIODIC_JOBS["sweep-bulk-actions"]


# Late acknowledgement: a worker that dies mid-way leaves the message with the broker, and
# the sweep below queues the action again sooner than the broker would give it back.
@shared_task(name="dashboard.execute_bulk", acks_late=True, ignore_result=True)
def execute_bulk(bulk_id: str) -> None:
    bulk.bulk_execute(bulk_id)


def enqueue_bulk(bulk_id: str) -> None:
    enqueue_on_commit(execute_bulk, bulk_id)


@shared_task(name=SWEEP_BULK.task, ignore_result=True)
def sweep_bulk_actions() -> list[str]:
    """Queue again the bulk actions whose worker died (once per period)."""
    _, queued = periodic.run_once_per_period(SWEEP_BULK.name, SWEEP_BULK.every, bulk.bulk_sweep)
    return queued or []


register_periodic(SWEEP_BULK.name, every=SWEEP_BULK.every, func=bulk.bulk_sweep)
