"""Superstep's dashboard: the Django project (``config``) and the ``dashboard`` app around it.

Its packages are layers, each importing only from the layers below it (README.md, "Layout",
says which is which and where each behaviour lives).

The Celery app is exposed here so ``celery -A dashboard worker`` finds it, and so it is loaded
whenever Django is: ``@shared_task`` functions then bind to this app, not to a default one.
"""

from dashboard.config.celery import app as celery_app

__all__ = ["celery_app"]
