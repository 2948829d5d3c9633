"""The periodic jobs and how often they run, declared once and free of Django.

Celery beat reads it (``beat_schedule`` in ``dashboard/config/celery.py``, imported before
Django is set up) to publish each job's task; the task modules register the same names and
intervals with ``dashboard.execution.embedded`` for the threads of embedded mode. Either way a
job runs through ``dashboard.execution.periodic.run_once_per_period``, so each period of a job
runs once however many beats or server processes there are.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["PERIODIC_JOBS", "PeriodicSchedule"]


@dataclass(frozen=True, slots=True)
class PeriodicSchedule:
    """Job ``name`` runs every ``every`` seconds as the Celery task named ``task``."""

    name: str
    task: str
    every: float


PERIODIC_JOBS: dict[str, PeriodicSchedule] = {
    schedule.name: schedule
    for schedule in (
        # Runs whose worker died (lease expired) or whose task was lost.
        PeriodicSchedule("sweep-runs", "dashboard.sweep_runs", 10.0),
        # Bulk actions whose worker died (claim expired) or whose task was lost.
        PeriodicSchedule("sweep-bulk-actions", "dashboard.sweep_bulk_actions", 10.0),
        # Overdue approval requests and their default outcome.
        PeriodicSchedule("sweep-approvals", "dashboard.sweep_approvals", 15.0),
        # Failed notifications whose backoff elapsed, and deliveries a dead worker left claimed.
        PeriodicSchedule("retry-notifications", "dashboard.retry_notifications", 30.0),
        # Waiting runs whose version a deploy removed and the deployed one cannot carry.
        PeriodicSchedule("park-stranded-runs", "dashboard.park_stranded_runs", 30.0),
        # Schedules whose tick is due (each tick starts its run once: services.schedules).
        PeriodicSchedule("fire-schedules", "dashboard.fire_schedules", 5.0),
        # Alert rules: open incidents whose condition holds, resolve those that cleared.
        PeriodicSchedule("evaluate-alerts", "dashboard.evaluate_alerts", 15.0),
        # The audit log's new entries, each given the next link of its hash chain.
        PeriodicSchedule("seal-audit", "dashboard.seal_audit", 5.0),
        # Every enabled retention policy.
        PeriodicSchedule("prune-checkpoints", "dashboard.prune_checkpoints", 3600.0),
    )
}
