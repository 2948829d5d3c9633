"""The Celery task that works through a bulk action (``services.bulk``), and its enqueuer,
which ``DashboardConfig.ready()`` plugs into ``services.dispatch``."""

from __future__ import annotations

from celery import shared_task

from dashboard.execution.embedded import enqueue_on_commit
from dashboard.services import bulk

__all__ = ["enqueue_bulk", "execute_bulk"]


# Late acknowledgement: a worker that dies mid-way has the task delivered again, and it
# carries on from the first run without an outcome.
@shared_task(name="dashboard.execute_bulk", acks_late=True, ignore_result=True)
def execute_bulk(bulk_id: str) -> None:
    bulk.bulk_execute(bulk_id)


def enqueue_bulk(bulk_id: str) -> None:
    enqueue_on_commit(execute_bulk, bulk_id)
