"""How services hand work to the layers above them without importing those layers.

Services decide *that* a run must be executed or a notification delivered; the execution and
approvals packages decide *how* (a Celery task on a worker, or the embedded thread pool). Those
packages import services, so services must not import them back (no import cycles, not even
inside functions): they plug their enqueuers in here instead, from
``DashboardConfig.ready()`` (dashboard/apps.py).

Every hook is called inside the transaction that made the work necessary and must defer the
actual enqueueing until that transaction commits. Calling a hook nothing has plugged in raises
``ImproperlyConfigured``: a run silently left queued would be worse.
"""

from __future__ import annotations

from collections.abc import Callable

from django.core.exceptions import ImproperlyConfigured

__all__ = [
    "enqueue_notification",
    "enqueue_run",
    "execute_bulk_on_commit",
    "plug_bulk_executor",
    "plug_notification_sender",
    "plug_run_executor",
]

_run_executor: Callable[[str], None] | None = None
_notification_sender: Callable[[int], None] | None = None
_bulk_executor: Callable[[str], None] | None = None


def plug_run_executor(enqueue: Callable[[str], None]) -> None:
    """Install the function that executes a run (by id) after the current commit."""
    global _run_executor
    _run_executor = enqueue


def plug_notification_sender(enqueue: Callable[[int], None]) -> None:
    """Install the function that delivers a notification (by id) after the current commit."""
    global _notification_sender
    _notification_sender = enqueue


def plug_bulk_executor(enqueue: Callable[[str], None]) -> None:
    """Install the function that works through a bulk action (by id) after the current commit."""
    global _bulk_executor
    _bulk_executor = enqueue


def execute_bulk_on_commit(bulk_id: str) -> None:
    """Have a worker work through bulk action ``bulk_id`` once the current transaction commits."""
    if _bulk_executor is None:
        raise ImproperlyConfigured(
            "no bulk action executor is plugged in (dashboard.execution plugs one in from "
            "DashboardConfig.ready(); is 'dashboard' in INSTALLED_APPS?)"
        )
    _bulk_executor(bulk_id)


def enqueue_run(run_id: str) -> None:
    """Have a worker execute ``run_id`` once the current transaction commits."""
    if _run_executor is None:
        raise ImproperlyConfigured(
            "no run executor is plugged in (dashboard.execution plugs one in from "
            "DashboardConfig.ready(); is 'dashboard' in INSTALLED_APPS?)"
        )
    _run_executor(run_id)


def enqueue_notification(notification_id: int) -> None:
    """Have notification ``notification_id`` delivered once the current transaction commits."""
    if _notification_sender is None:
        raise ImproperlyConfigured(
            "no notification sender is plugged in (dashboard.notifications plugs one in from "
            "DashboardConfig.ready(); is 'dashboard' in INSTALLED_APPS?)"
        )
    _notification_sender(notification_id)
