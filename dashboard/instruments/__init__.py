"""The Prometheus instruments, recorded into by services and workers; no Django here, so any
process (a Celery child, a test's subprocess) can record.

* ``metrics``: the instruments and one small function per thing that happened;
* ``processes``: the sharing of values between processes (``PROMETHEUS_MULTIPROC_DIR``).

Reading them (the scrape, the run gauges from the database, ``/metrics``) is
``dashboard.observability``'s.
"""
