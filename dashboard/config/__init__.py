"""The Django project.

* ``settings``, ``settings_test``: the settings, and those the suite runs with;
* ``asgi``: the application Daphne serves, HTTP plus websockets;
* ``celery``: the Celery app, re-exported by ``dashboard`` for ``celery -A dashboard worker``;
* ``telemetry``: OpenTelemetry tracing, configured once per process;
* ``urls``: the root URLconf.

Nothing here holds behaviour: it wires the packages beside it together.
"""
