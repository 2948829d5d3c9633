"""Executing runs: everything between "this run is queued" and its supersteps being driven.

* ``registry``: the workflows this deployment knows, by name, their input and response types;
* ``workflow_sources``: where they come from (entry points, ``SUPERSTEP_WORKFLOWS`` modules,
  settings, the demo), all imported at startup;
* ``worker``: one attempt at a run (lease, engine, a commit per checkpoint, finish);
* ``tasks``: the Celery tasks (execute a run, sweep leases and overdue approvals, prune) and
  their periodic jobs, plus the run executor plugged into ``services.dispatch``;
* ``embedded``: ``enqueue`` for both modes (a broker, or a thread pool in this process in
  embedded mode) and the periodic-job threads of embedded mode;
* ``schedule``: the periodic jobs and their intervals, declared once (Celery beat's
  ``beat_schedule`` and the embedded threads both read it);
* ``periodic``: ``run_once_per_period``, the database claim that runs each period of a job
  once, whether beat or a thread triggers it.

Services sit below this package: they hand runs over through ``services.dispatch``.
"""
