"""Superstep's dashboard: the Django project (``config``) and the ``dashboard`` app around it.

Packages by concern, one obvious place per behaviour (README.md, "Layout"): ``models``,
``services`` (every write) and ``selectors`` (reads), ``checkpoints``, ``execution``, ``live``,
``approvals``, ``access``, ``web``, ``api``, and the ``demo`` app.

The Celery app is exposed here so ``celery -A dashboard worker`` finds it, and so it is loaded
whenever Django is: ``@shared_task`` functions then bind to this app, not to a default one.
"""

from dashboard.config.celery import app as celery_app

__all__ = ["celery_app"]
