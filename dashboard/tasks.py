"""Celery tasks: thin, idempotent, and taking ids. The rules live in ``services``."""

from __future__ import annotations

from celery import shared_task

from . import services, worker
from .embedded import register_periodic

__all__ = ["execute_run", "sweep_runs"]

SWEEP_EVERY_SECONDS = 10.0


@shared_task(name="dashboard.execute_run", acks_late=True, ignore_result=True)
def execute_run(run_id: str) -> None:
    """Drive a run's supersteps while holding its lease. Running it twice is harmless: the
    second call finds the run leased, waiting or finished and does nothing."""
    worker.execute(run_id)


@shared_task(name="dashboard.sweep_runs", ignore_result=True)
def sweep_runs() -> list[str]:
    """Enqueue runs whose worker died or whose task was lost (Celery beat runs this)."""
    return services.runs_sweep()


# Every server process sweeps (embedded and production alike): the sweep locks each run row
# and re-checks it, so several Daphne instances sweeping at once enqueue a run only once.
register_periodic("sweep-runs", every=SWEEP_EVERY_SECONDS, func=services.runs_sweep)
