"""Executing runs: everything between "this run is queued" and its supersteps being driven.

* ``worker``: one attempt at a run (lease, engine, a commit per checkpoint, finish);
* ``shutdown``: the flag a worker's SIGTERM raises, so runs hand their lease back after a commit;
* ``heartbeat``: the file a worker touches for an orchestrator's probe;
* ``agent_replies``: a streamed reply kept as one event, and a ``model_call`` event per reply;
* ``preload``: what a worker's main process loads for its children (the agents' model clients);
* ``tasks``: the Celery tasks (execute a run, sweep leases and overdue approvals, prune) and
  their periodic jobs, plus the run executor plugged into ``services.dispatch``;
* ``bulk_tasks``: the task that works through a bulk action, and its executor;
* ``embedded``: ``enqueue`` for both modes (a broker, or a thread pool in this process in
  embedded mode) and the periodic-job threads of embedded mode;
* ``periodic``: ``run_once_per_period``, the database claim that runs each period of a job
  once, whether beat or a thread triggers it.

Which workflows exist and which periodic jobs run is the catalog's (``dashboard.catalog``).
Services sit below this package: they hand runs over through ``services.dispatch``.
"""

# Transitional, for tests/bench/pages_bench.py, which still imports the catalog by its old name
# (``from dashboard.execution import registry``): remove once it imports ``dashboard.catalog``.
from dashboard import catalog as registry  # noqa: F401
