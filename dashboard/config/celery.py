"""The Celery application: ``celery -A dashboard worker`` and ``celery -A dashboard beat``
(production mode only).

Configured from Django settings under the ``CELERY_`` prefix (see dashboard/config/settings.py
for why acks are late, prefetch is one and only JSON is accepted). The task modules are
``dashboard.execution.tasks`` and ``dashboard.notifications.tasks``, named below and also
imported by ``DashboardConfig.ready()``, so every process Django runs in knows them.

``beat_schedule`` publishes the periodic jobs of ``dashboard.catalog.periodic_jobs`` (lease
sweeper, approval deadlines, notification retries, retention). Celery's own scheduler, not
django-celery-beat (which pins an older Django): the schedule is code, and exactly-once per
period comes from a database claim each task makes (``dashboard.execution.periodic``), so a
second beat process or a message delivered twice runs nothing twice.

A warm shutdown (SIGTERM) raises ``dashboard.execution.shutdown``'s flag: each run the worker
executes stops after its next superstep commit and goes back to the queue for another worker.
"""

from __future__ import annotations

import logging
import os
from typing import Any

from celery import Celery
from celery.signals import (
    after_setup_logger,
    after_setup_task_logger,
    worker_init,
    worker_process_init,
    worker_process_shutdown,
    worker_shutting_down,
)

from dashboard.catalog.periodic_jobs import PERIODIC_JOBS
from dashboard.core.logs import JsonFormatter
from dashboard.execution import shutdown
from dashboard.execution.heartbeat import Heartbeat
from dashboard.execution.preload import preload_agent_clients
from dashboard.instruments.processes import forget_celery_child

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "dashboard.config.settings")


class SuperstepCelery(Celery):
    def send_task(self, name: str, *args: Any, **kwargs: Any) -> Any:
        """Refuse to publish in embedded mode instead of losing the task.

        Embedded mode has no broker or worker: a ``task.delay()`` there would sit in the
        memory transport forever and leave its run queued with no error anywhere. Every
        ``apply_async``/``delay`` ends here, so this catches code that bypasses
        ``dashboard.execution.embedded.enqueue``.
        """
        from django.conf import settings

        if settings.SUPERSTEP_EMBEDDED:
            raise RuntimeError(
                f"task {name!r} was published to a broker in embedded mode (REDIS_URL "
                "unset); enqueue tasks with dashboard.execution.embedded.enqueue_on_commit()"
            )
        return super().send_task(name, *args, **kwargs)


app = SuperstepCelery("dashboard")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks(["dashboard.execution", "dashboard.notifications"])
# A prefork child leaves with os._exit, past atexit: its live metric gauges are dropped here.
worker_process_shutdown.connect(forget_celery_child)
# SIGTERM: each run stops after its next commit and hands its lease back. Imported here, in the
# main process before it forks, so that the children share the flag.
worker_shutting_down.connect(shutdown.request)
# SUPERSTEP_WORKER_HEARTBEAT_FILE: a file the worker touches while its event loop turns.
app.steps["worker"].add(Heartbeat)


def _warm_up(**kwargs: Any) -> None:
    from dashboard.broadcast import warm_up

    warm_up(**kwargs)


# A new child connects to Redis before its first run streams words through it.
worker_process_init.connect(_warm_up)
# The main process loads the agents' model clients once, before it forks the children.
worker_init.connect(preload_agent_clients)


def _log_format(logger: logging.Logger, **kwargs: Any) -> None:
    """Celery sets up its own handlers (for ``--loglevel``, ``--logfile``); with
    ``SUPERSTEP_LOG_FORMAT=json`` their lines are JSON objects as the other processes' are."""
    from django.conf import settings

    if settings.SUPERSTEP_LOG_FORMAT == "json":
        for handler in logger.handlers:
            handler.setFormatter(JsonFormatter())


after_setup_logger.connect(_log_format)
after_setup_task_logger.connect(_log_format)
app.conf.beat_schedule = {
    job.name: {
        "task": job.task,
        "schedule": job.every,
        # A sweep still queued when the next one is due is worth nothing: drop it.
        "options": {"expires": job.every},
    }
    for job in PERIODIC_JOBS.values()
}
