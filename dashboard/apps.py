"""App config. ``ready()`` starts nothing: threads belong to server processes (asgi.py)."""

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
