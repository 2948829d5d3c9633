"""Every business rule of the dashboard: run lifecycle, leases, checkpoints, approvals,
governance, retention and the audit trail.

Views, the JSON API, consumers, Celery tasks, admin actions and commands call these functions;
nothing else changes runs. Each transition checks the user's role (``authz``), locks the rows it
changes (``select_for_update``), checks the current status, writes, records events and an audit
entry, and only after the commit enqueues work or broadcasts (``transaction.on_commit``).

Run status machine::

    queued ──lease──▶ running ──▶ completed | failed | cancelled
       ▲                 │
       │                 └──▶ waiting ──approval decided──▶ queued
       └── retry (failed) / resume (not active) / lease expired (sweeper)
"""

from .approvals import (
    approval_assign,
    approval_claim,
    approval_decide,
    approval_opened,
    approvals_sweep,
)
from .authz import ACTION_PERMISSIONS, can, require
from . import audit
from .common import record_events
from .errors import Conflict, Forbidden, InvalidInput, LeaseLost, NotFound, ServiceError
from .execution import (
    ExecutionPlan,
    Lease,
    checkpoint_commit,
    execution_plan,
    lease_acquire,
    lease_renew,
    run_finish,
    runs_sweep,
    worker_identity,
)
from . import retention
from .retention import PruneReport, checkpoint_prune, retention_preview
from .runs import run_cancel, run_fork, run_hold, run_resume, run_retry, run_start

__all__ = [
    "ACTION_PERMISSIONS",
    "Conflict",
    "ExecutionPlan",
    "Forbidden",
    "InvalidInput",
    "Lease",
    "LeaseLost",
    "NotFound",
    "PruneReport",
    "ServiceError",
    "approval_assign",
    "approval_claim",
    "approval_decide",
    "approval_opened",
    "approvals_sweep",
    "can",
    "checkpoint_commit",
    "checkpoint_prune",
    "execution_plan",
    "lease_acquire",
    "lease_renew",
    "record_events",
    "require",
    "retention_preview",
    "run_cancel",
    "run_finish",
    "run_fork",
    "run_hold",
    "run_resume",
    "run_retry",
    "run_start",
    "runs_sweep",
    "worker_identity",
]
