"""The ``dashboard`` app: its models, admin, migrations and commands, plus the wiring of its
layers. ``ready()`` starts nothing: threads belong to server processes (config/asgi.py).

``ready()`` plugs the execution and approvals packages into ``services.dispatch`` (services
sit below them and never import them) and, by importing their ``tasks`` modules, registers
their Celery tasks and periodic jobs in every process Django runs in (web server, Celery
worker, shell, tests). It also loads the workflow catalog, so a workflow module that does not
import stops every process at startup.
"""

from __future__ import annotations

from typing import Any

from django.apps import AppConfig, apps
from django.conf import settings
from django.core import checks


class DashboardConfig(AppConfig):
    name = "dashboard"
    verbose_name = "Superstep"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        checks.register(check_shared_database, checks.Tags.database)
        # Imported here, not at the top: task modules import models, which are only ready now.
        from dashboard import catalog
        from dashboard.config.telemetry import configure_tracing
        from dashboard.execution import bulk_tasks
        from dashboard.execution import tasks as execution_tasks
        from dashboard.notifications import tasks as notification_tasks
        from dashboard.services import dispatch

        dispatch.plug_run_executor(execution_tasks.enqueue_run_on_commit)
        dispatch.plug_notification_sender(notification_tasks.enqueue_delivery)
        dispatch.plug_bulk_executor(bulk_tasks.enqueue_bulk)
        # Import every registered workflow now: a broken source stops the process at startup
        # with its name, not a page later with a 500.
        catalog.load()
        configure_tracing()
        from dashboard.access import lockout, sso

        lockout.connect()

        # A role map that does not parse stops every process now, not a sign-in later.
        if sso.enabled():
            sso.role_map()


def check_shared_database(app_configs: Any = None, **kwargs: Any) -> list[checks.CheckMessage]:
    """Celery workers on other machines cannot share a SQLite file with the web server."""
    if app_configs is not None and apps.get_app_config("dashboard") not in app_configs:
        return []
    engine = settings.DATABASES["default"]["ENGINE"]
    if not settings.SUPERSTEP_EMBEDDED and engine.endswith("sqlite3"):
        return [
            checks.Warning(
                "REDIS_URL is set (Celery workers run the workflows) but the database is SQLite.",
                hint="Set DATABASE_URL to a PostgreSQL database every worker can reach.",
                id="dashboard.W001",
            )
        ]
    return []
