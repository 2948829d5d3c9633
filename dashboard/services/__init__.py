"""Every business rule of the dashboard: run lifecycle, leases, checkpoints, approvals,
governance and retention.

Views, the JSON API, consumers, Celery tasks, admin actions and commands call these functions;
nothing else changes runs. Each transition checks the user's role (``dashboard.access.authz``),
locks the rows it changes (``select_for_update``), checks the current status, writes, records
events and an audit entry, and only after the commit enqueues work or broadcasts
(``transaction.on_commit``).

One module per concern, named for it (``runs`` for start, cancel, resume, fork and retry;
``execution`` for leases, checkpoint commits and finishing). The errors they raise and the
types of their signatures (``Actor`` and ``RunId``, who acts and which run) are
``dashboard.core``'s; the role checks and the audit trail are ``dashboard.access``'s,
re-exported here for callers (``services.require``, ``services.audit``). This package sits
below execution, notifications, live consumers, web and API, which import it and never the
reverse: work it hands upwards (execute a run, deliver a notification) goes through the hooks
in ``dispatch``, plugged in by ``DashboardConfig.ready()``.

Run status machine::

    queued ──lease──▶ running ──▶ completed | failed | cancelled
       ▲                 │
       │                 └──▶ waiting ──approval decided──▶ queued
       └── retry (failed) / resume (not active) / lease expired (sweeper)
       └── migrate ◀── needs_migration ◀── (its version removed, the new graph cannot carry it)
"""

from dashboard.access import audit
from dashboard.access.authz import ACTION_PERMISSIONS, can, require, visible_workflows
from dashboard.core.errors import (
    Conflict,
    Forbidden,
    InvalidInput,
    LeaseLost,
    NotFound,
    ServiceError,
)
from dashboard.services import retention
from dashboard.services.approval_rules import approval_rule_refusal
from dashboard.services.approvals import (
    BulkDecision,
    BulkPreview,
    approval_assign,
    approval_claim,
    approval_decide,
    approval_opened,
    approval_response_schema,
    approval_take_over,
    approvals_decide_many,
    approvals_decide_preview,
    approvals_sweep,
)
from dashboard.services.common import record_events
from dashboard.services.execution import (
    ApprovalSpec,
    ExecutionPlan,
    Lease,
    RunError,
    checkpoint_commit,
    execution_plan,
    lease_acquire,
    lease_release,
    lease_renew,
    run_finish,
    runs_sweep,
    worker_identity,
)
from dashboard.services.message_answers import MessageRequest, message_request_of
from dashboard.services.model_prices import price_delete, price_set
from dashboard.services.retention import PruneReport, checkpoint_prune, retention_preview
from dashboard.services.retention_policies import (
    PolicySpec,
    policy_apply,
    policy_check,
    policy_create,
    policy_set_enabled,
    policy_update,
)
from dashboard.services.runs import (
    fork_check,
    run_cancel,
    run_fork,
    run_hold,
    run_resume,
    run_retry,
    run_start,
)
from dashboard.services.sensitive import Revealed, masked_fields, reveal
from dashboard.services.tokens import allowed_scopes, token_create, token_revoke
from dashboard.services.tool_calls import ToolCall, tool_call_of
from dashboard.services.tool_calls import answer_fields as tool_answer_fields
from dashboard.services.versions import (
    BulkMigration,
    VersionState,
    attempt_version,
    migration_preview,
    park_runs_on_removed_versions,
    run_migrate,
    run_version,
    runs_migrate,
    version_state,
)

__all__ = [
    "ACTION_PERMISSIONS",
    "ApprovalSpec",
    "BulkDecision",
    "BulkMigration",
    "BulkPreview",
    "Conflict",
    "ExecutionPlan",
    "Forbidden",
    "InvalidInput",
    "Lease",
    "LeaseLost",
    "MessageRequest",
    "NotFound",
    "PolicySpec",
    "PruneReport",
    "Revealed",
    "RunError",
    "ServiceError",
    "ToolCall",
    "VersionState",
    "approval_assign",
    "approval_claim",
    "approval_decide",
    "approvals_decide_many",
    "approvals_decide_preview",
    "approval_opened",
    "approval_response_schema",
    "approval_rule_refusal",
    "allowed_scopes",
    "approval_take_over",
    "approvals_sweep",
    "attempt_version",
    "audit",
    "can",
    "checkpoint_commit",
    "checkpoint_prune",
    "execution_plan",
    "fork_check",
    "lease_acquire",
    "lease_release",
    "lease_renew",
    "masked_fields",
    "message_request_of",
    "migration_preview",
    "park_runs_on_removed_versions",
    "policy_apply",
    "policy_check",
    "policy_create",
    "policy_set_enabled",
    "policy_update",
    "price_delete",
    "price_set",
    "record_events",
    "require",
    "retention",
    "retention_preview",
    "reveal",
    "run_cancel",
    "run_finish",
    "run_fork",
    "run_hold",
    "run_migrate",
    "run_resume",
    "run_retry",
    "run_start",
    "run_version",
    "runs_migrate",
    "runs_sweep",
    "token_create",
    "token_revoke",
    "tool_answer_fields",
    "tool_call_of",
    "version_state",
    "visible_workflows",
    "worker_identity",
]
