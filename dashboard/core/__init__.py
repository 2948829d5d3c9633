"""The words every layer shares, and nothing else: no models, no queries, no side effects.

* ``errors``: the errors a refused operation raises (``ServiceError`` and its kinds, each with
  the HTTP status the pages and the API answer with), and ``LeaseLost``;
* ``types``: who acts (``Actor``, ``is_user``) and which run (``RunId``), in every service and
  selector signature;
* ``run_events``: every type a run's event log holds and what its data carries;
* ``logs``: the JSON log format and the run fields (``bind``) its lines carry;
* ``cache_json``: the Redis cache's values as JSON instead of Django's pickle.
"""
