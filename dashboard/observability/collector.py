"""Gauges of runs read from the database at scrape time, in one aggregate query.

Counted where the truth is, not by per-process counters: any process (a worker, the sweeper,
an operator's page, a migration) changes a run's status, and a restarted process would start
again from zero. Every registered workflow gets every status, at zero when it has no such run,
so an alert on a series sees 0 instead of nothing.
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Iterator

from django.db import DatabaseError
from django.db.models import Count, Q
from prometheus_client.metrics_core import GaugeMetricFamily, Metric

from dashboard import catalog
from dashboard.models import RunStatus, WorkflowRun
from dashboard.services.common import now

__all__ = ["RunCounts", "RunsCollector", "run_counts"]

logger = logging.getLogger(__name__)


@dataclasses.dataclass
class RunCounts:
    """One workflow's runs in one status."""

    runs: int = 0
    leased: int = 0  # held by a worker whose lease is still running
    lease_expired: int = 0  # a worker's lease ran out and nobody took the run back yet


def run_counts() -> dict[tuple[str, str], RunCounts]:
    """(workflow, status) -> counts, for every registered workflow and every status."""
    moment = now()
    rows = (
        WorkflowRun.objects.order_by()
        .values_list("workflow_name", "status")
        .annotate(
            runs=Count("pk"),
            leased=Count("pk", filter=Q(lease_expires_at__gt=moment)),
            lease_expired=Count("pk", filter=Q(lease_expires_at__lte=moment)),
        )
    )
    counts = {
        (workflow, status): RunCounts()
        for workflow in catalog.names()
        for status in RunStatus.values
    }
    for workflow, status, runs, leased, lease_expired in rows:
        counts[workflow, status] = RunCounts(runs, leased, lease_expired)
    return counts


class RunsCollector:
    """A prometheus_client collector; registered on each scrape's registry only, so the
    query runs once per scrape and never at import."""

    def collect(self) -> Iterator[Metric]:
        up = GaugeMetricFamily(
            "superstep_database_up", "1 when the run gauges could be read from the database."
        )
        try:
            counts = run_counts()
        except DatabaseError:
            logger.warning("metrics: the runs could not be counted", exc_info=True)
            up.add_metric([], 0)
            yield up
            return
        up.add_metric([], 1)
        yield up
        yield from _families(counts)


def _families(counts: dict[tuple[str, str], RunCounts]) -> Iterator[Metric]:
    by_status = GaugeMetricFamily(
        "superstep_runs", "Runs by workflow and status.", labels=["workflow", "status"]
    )
    queued = GaugeMetricFamily(
        "superstep_runs_queued", "Runs waiting for a worker.", labels=["workflow"]
    )
    waiting = GaugeMetricFamily(
        "superstep_runs_waiting", "Runs waiting for an approval.", labels=["workflow"]
    )
    leased = GaugeMetricFamily(
        "superstep_runs_leased", "Runs a worker holds an unexpired lease on.", labels=["workflow"]
    )
    expired = GaugeMetricFamily(
        "superstep_runs_lease_expired",
        "Runs whose worker's lease ran out and that no worker or sweeper took back yet.",
        labels=["workflow"],
    )
    totals: dict[str, RunCounts] = {}
    for (workflow, status), count in sorted(counts.items()):
        by_status.add_metric([workflow, status], count.runs)
        total = totals.setdefault(workflow, RunCounts())
        total.leased += count.leased
        total.lease_expired += count.lease_expired
        if status == RunStatus.QUEUED:
            queued.add_metric([workflow], count.runs)
        elif status == RunStatus.WAITING:
            waiting.add_metric([workflow], count.runs)
    for workflow, total in totals.items():
        leased.add_metric([workflow], total.leased)
        expired.add_metric([workflow], total.lease_expired)
    yield from (by_status, queued, waiting, leased, expired)
