"""Periodic jobs: one row per job and period, so each period of a job runs once.

Celery beat (production) and the embedded threads both claim a period before running a job
(``dashboard.execution.periodic``); a second beat process, a duplicated beat message or a
thread in another server process finds the row already there and does nothing.
"""

from __future__ import annotations

from django.db import models
from django.utils import timezone

__all__ = ["PeriodicJobRun"]


class PeriodicJobRun(models.Model):
    """The claim of one period of one periodic job, and how that run ended."""

    job = models.CharField(max_length=100)
    # Whole periods since the epoch: floor(unix time / the job's interval in seconds).
    period = models.BigIntegerField()
    started_at = models.DateTimeField(default=timezone.now)
    finished_at = models.DateTimeField(null=True, blank=True)
    error = models.TextField(blank=True, default="")

    class Meta:
        constraints = (
            models.UniqueConstraint(fields=["job", "period"], name="periodic_job_once_per_period"),
        )

    def __str__(self) -> str:
        return f"{self.job} period {self.period}"
