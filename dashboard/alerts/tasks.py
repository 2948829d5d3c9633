"""The ``evaluate-alerts`` periodic job: published by Celery beat in production, run on a
thread in embedded mode, once per period either way (``dashboard.execution.periodic``).

A pass that another process runs at the same moment (a second beat, or beat beside a server's
threads) cannot notify twice: the evaluation opens each incident in a transaction whose insert
only one process can win (``services.alert_evaluation``).
"""

from __future__ import annotations

from celery import shared_task

from dashboard.execution import periodic
from dashboard.execution.embedded import register_periodic
from dashboard.execution.schedule import PERIODIC_JOBS
from dashboard.services import alert_evaluation

__all__ = ["evaluate_alerts"]

EVALUATE_ALERTS = PERIODIC_JOBS["evaluate-alerts"]


def _evaluate() -> dict[str, list[int]]:
    return alert_evaluation.alerts_evaluate().as_dict()


@shared_task(name=EVALUATE_ALERTS.task, ignore_result=True)
def evaluate_alerts() -> dict[str, list[int]]:
    """Open incidents whose condition holds and resolve those that cleared (once per period)."""
    _, report = periodic.run_once_per_period(EVALUATE_ALERTS.name, EVALUATE_ALERTS.every, _evaluate)
    return report or {"opened": [], "resolved": []}


register_periodic(EVALUATE_ALERTS.name, every=EVALUATE_ALERTS.every, func=_evaluate)
