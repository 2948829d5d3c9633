"""Superstep's Django project: models, services, Celery worker and the operator dashboard.

The Celery app is exposed here so ``celery -A dashboard worker`` finds it, and so it is loaded
whenever Django is: ``@shared_task`` functions then bind to this app, not to a default one.
"""

from .celery import app as celery_app

__all__ = ["celery_app"]
