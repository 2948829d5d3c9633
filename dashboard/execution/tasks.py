"""Celery tasks that execute runs and keep them moving: thin, idempotent, and taking ids.

The rules live in ``dashboard.services``. ``enqueue_run_on_commit`` is the run executor that
``DashboardConfig.ready()`` plugs into ``services.dispatch``, so services can queue a run without
importing this module.

The periodic jobs (``dashboard.catalog.periodic_jobs``) are published by Celery beat in
production and run by threads of the server process in embedded mode (registered at the
bottom). Both go through ``periodic.run_once_per_period``, so each period of a job runs once;
each job also locks and re-checks the rows it changes, so even overlapping runs do every piece
of work once.
"""

from __future__ import annotations

from celery import shared_task
from django.db import InterfaceError, OperationalError

from dashboard import services
from dashboard.access import audit_chain
from dashboard.catalog.periodic_jobs import PERIODIC_JOBS
from dashboard.execution import periodic, worker
from dashboard.execution.embedded import enqueue_on_commit, register_periodic
from dashboard.services import schedules

__all__ = [
    "enqueue_run_on_commit",
    "execute_run",
    "fire_schedules",
    "park_stranded_runs",
    "prune_checkpoints",
    "seal_audit",
    "sweep_approvals",
    "sweep_runs",
]

SWEEP_RUNS = PERIODIC_JOBS["sweep-runs"]
SWEEP_APPROVALS = PERIODIC_JOBS["sweep-approvals"]
PRUNE = PERIODIC_JOBS["prune-checkpoints"]
PARK = PERIODIC_JOBS["park-stranded-runs"]
FIRE_SCHEDULES = PERIODIC_JOBS["fire-schedules"]
SEAL_AUDIT = PERIODIC_JOBS["seal-audit"]


@shared_task(
    name="dashboard.execute_run",
    acks_late=True,
    ignore_result=True,
    # The database unreachable (a restart, a failover) must not cost the message: a worker
    # would otherwise consume the whole queue in the seconds of an outage, failing each task,
    # and leave every queued run to the lease sweeper. Retried with backoff instead.
    autoretry_for=(OperationalError, InterfaceError),
    retry_backoff=1,
    retry_backoff_max=30,
    retry_jitter=True,
    max_retries=None,
)
def execute_run(run_id: str) -> None:
    """Drive a run's supersteps while holding its lease. Running it twice is harmless: the
    second call finds the run leased, waiting or finished and does nothing."""
    worker.execute(run_id)


def enqueue_run_on_commit(run_id: str) -> None:
    """Execute ``run_id`` on a worker once the current transaction commits."""
    enqueue_on_commit(execute_run, run_id)


@shared_task(name=SWEEP_RUNS.task, ignore_result=True)
def sweep_runs() -> list[str]:
    """Enqueue runs whose worker died or whose task was lost (once per period)."""
    _, enqueued = periodic.run_once_per_period(
        SWEEP_RUNS.name, SWEEP_RUNS.every, services.runs_sweep
    )
    return enqueued or []


@shared_task(name=SWEEP_APPROVALS.task, ignore_result=True)
def sweep_approvals() -> list[str]:
    """Mark overdue approval requests and apply their default outcome, once (per period)."""
    _, swept = periodic.run_once_per_period(
        SWEEP_APPROVALS.name, SWEEP_APPROVALS.every, services.approvals_sweep
    )
    return swept or []


@shared_task(name=PARK.task, ignore_result=True)
def park_stranded_runs() -> list[str]:
    """Mark waiting runs that need migration after a deploy (once per period)."""
    _, parked = periodic.run_once_per_period(
        PARK.name, PARK.every, services.park_runs_on_removed_versions
    )
    return parked or []


@shared_task(name=PRUNE.task, ignore_result=True)
def prune_checkpoints() -> list[dict[str, object]]:
    """Apply every enabled retention policy (once per period)."""
    _, reports = periodic.run_once_per_period(PRUNE.name, PRUNE.every, services.checkpoint_prune)
    return [report.as_dict() for report in reports or []]


@shared_task(name=FIRE_SCHEDULES.task, ignore_result=True)
def fire_schedules() -> list[int]:
    """Start the runs of the schedules whose tick is due (once per period, and each tick
    once however many processes fire it)."""
    _, fired = periodic.run_once_per_period(
        FIRE_SCHEDULES.name, FIRE_SCHEDULES.every, schedules.schedules_fire_due
    )
    return fired or []


@shared_task(name=SEAL_AUDIT.task, ignore_result=True)
def seal_audit() -> int:
    """Seal the audit entries written since the last period (once per period)."""
    _, sealed = periodic.run_once_per_period(
        SEAL_AUDIT.name, SEAL_AUDIT.every, audit_chain.seal_pending
    )
    return sealed or 0


register_periodic(SWEEP_RUNS.name, every=SWEEP_RUNS.every, func=services.runs_sweep)
register_periodic(SWEEP_APPROVALS.name, every=SWEEP_APPROVALS.every, func=services.approvals_sweep)
register_periodic(PARK.name, every=PARK.every, func=services.park_runs_on_removed_versions)
register_periodic(PRUNE.name, every=PRUNE.every, func=services.checkpoint_prune)
register_periodic(SEAL_AUDIT.name, every=SEAL_AUDIT.every, func=audit_chain.seal_pending)
register_periodic(
    FIRE_SCHEDULES.name, every=FIRE_SCHEDULES.every, func=schedules.schedules_fire_due
)
