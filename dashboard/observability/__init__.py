"""Prometheus metrics: the instruments services and workers record into (``metrics``), the
gauges read from the database at scrape time (``collector``), the sharing of values between
processes (``processes``) and the protected ``/metrics`` page (``views``)."""
