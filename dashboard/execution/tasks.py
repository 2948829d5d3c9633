"""Celery tasks that execute runs and keep them moving: thin, idempotent, and taking ids.

The rules live in ``dashboard.services``. ``enqueue_run_on_commit`` is the run executor that
``DashboardConfig.ready()`` plugs into ``services.dispatch``, so services can queue a run without
importing this module.

Every server process also runs the periodic jobs registered at the bottom (embedded and
production alike): each one locks and re-checks the rows it changes, so several processes
running them at once do every piece of work once.
"""

from __future__ import annotations

from celery import shared_task

from dashboard import services
from dashboard.execution import worker
from dashboard.execution.embedded import enqueue_on_commit, register_periodic

__all__ = ["enqueue_run_on_commit", "execute_run", "prune_checkpoints", "sweep_approvals", "sweep_runs"]

SWEEP_RUNS_EVERY_SECONDS = 10.0
SWEEP_APPROVALS_EVERY_SECONDS = 15.0
PRUNE_EVERY_SECONDS = 3600.0


@shared_task(name="dashboard.execute_run", acks_late=True, ignore_result=True)
def execute_run(run_id: str) -> None:
    """Drive a run's supersteps while holding its lease. Running it twice is harmless: the
    second call finds the run leased, waiting or finished and does nothing."""
    worker.execute(run_id)


def enqueue_run_on_commit(run_id: str) -> None:
    """Execute ``run_id`` on a worker once the current transaction commits."""
    enqueue_on_commit(execute_run, run_id)


@shared_task(name="dashboard.sweep_runs", ignore_result=True)
def sweep_runs() -> list[str]:
    """Enqueue runs whose worker died or whose task was lost."""
    return services.runs_sweep()


@shared_task(name="dashboard.sweep_approvals", ignore_result=True)
def sweep_approvals() -> list[str]:
    """Mark overdue approval requests and apply their default outcome, once."""
    return services.approvals_sweep()


@shared_task(name="dashboard.prune_checkpoints", ignore_result=True)
def prune_checkpoints() -> list[dict[str, object]]:
    """Apply every enabled retention policy."""
    return [report.as_dict() for report in services.checkpoint_prune()]


register_periodic("sweep-runs", every=SWEEP_RUNS_EVERY_SECONDS, func=services.runs_sweep)
register_periodic("sweep-approvals", every=SWEEP_APPROVALS_EVERY_SECONDS, func=services.approvals_sweep)
register_periodic("prune-checkpoints", every=PRUNE_EVERY_SECONDS, func=services.checkpoint_prune)
