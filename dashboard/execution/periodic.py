"""Each period of a periodic job runs once, whoever triggers it.

Production triggers jobs from Celery beat; embedded mode from a thread per job in the server
process (``dashboard.execution.embedded``). Both end in ``run_once_per_period``: it claims the
row (job, period) in a short transaction of its own, and only the process whose insert
succeeded runs the job. A second beat process, a beat message delivered twice, or a server
process that also runs the threads (``SUPERSTEP_BACKGROUND_SERVICES=1`` beside beat) finds the
period taken and skips it. A period is numbered ``floor(unix time / every)``.

A run that fails keeps its period (the error is recorded on the row): every job is an
idempotent sweep, so the next period does the work that this one did not.
"""

from __future__ import annotations

import datetime as dt
import logging
import math
from collections.abc import Callable

from django.db import IntegrityError, transaction
from django.utils import timezone

from dashboard.models import PeriodicJobRun

__all__ = ["period_of", "run_once_per_period"]

logger = logging.getLogger(__name__)

# Claims older than this are deleted by later claims of the same job: only the current
# period's row guards anything, the rest is a day of history for an operator.
KEEP_CLAIMS = dt.timedelta(days=1)


def period_of(every: float, now: dt.datetime) -> int:
    """The number of the ``every``-second period that ``now`` falls in."""
    if every <= 0:
        raise ValueError(f"a period must be positive, got {every!r}")
    return math.floor(now.timestamp() / every)


def run_once_per_period[T](
    job: str, every: float, func: Callable[[], T], *, now: dt.datetime | None = None
) -> tuple[bool, T | None]:
    """Run ``func()`` unless this period of ``job`` was already claimed.

    Returns ``(True, result)`` when this call ran the job, ``(False, None)`` when another did.
    An exception from ``func`` is recorded on the claim and raised again.
    """
    now = now or timezone.now()
    claim = _claim(job, period_of(every, now), every, now)
    if claim is None:
        logger.debug("periodic job %s: period already claimed", job)
        return False, None
    try:
        result = func()
    except Exception as exc:
        PeriodicJobRun.objects.filter(pk=claim.pk).update(
            finished_at=timezone.now(), error=f"{type(exc).__name__}: {exc}"[:2000]
        )
        raise
    PeriodicJobRun.objects.filter(pk=claim.pk).update(finished_at=timezone.now())
    return True, result


def _claim(job: str, period: int, every: float, now: dt.datetime) -> PeriodicJobRun | None:
    try:
        with transaction.atomic():
            claim = PeriodicJobRun.objects.create(job=job, period=period, started_at=now)
    except IntegrityError:
        return None
    keep_periods = max(2, math.ceil(KEEP_CLAIMS.total_seconds() / every))
    PeriodicJobRun.objects.filter(job=job, period__lt=period - keep_periods).delete()
    return claim
