"""The Django project: ``settings`` (and ``settings_test`` for the suite), ``asgi`` (the
application Daphne serves: HTTP plus websockets), ``celery`` (the Celery app, re-exported by
``dashboard`` for ``celery -A dashboard worker``) and ``urls`` (the root URLconf).

Nothing here holds behaviour: it wires the packages beside it together.
"""
