"""Reading the metrics, and the health probes. The instruments themselves are
``dashboard.instruments``'.

* ``exposition``: one scrape, every process's values merged;
* ``collector``: the run gauges, read from the database at scrape time;
* ``views``, ``urls``, ``access``: the protected ``/metrics`` page and who may read it;
* ``exporter``: the exporter of a host that runs only workers;
* ``health``: ``/healthz`` and ``/readyz``, the probes of a load balancer or an orchestrator.
"""
