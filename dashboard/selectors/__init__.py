"""Read-only queries the views, API and consumers share (services write; selectors read).

One module per concern, mirroring ``dashboard.services``: ``runs``, ``execution``,
``checkpoints``, ``approvals``, ``retention`` (storage use), ``audit`` and ``authz``. Callers
use the names re-exported here: ``selectors.run_list(...)``.
"""

from dashboard.selectors.approvals import (
    APPROVAL_TABS,
    approval_archive,
    approval_get,
    approval_inbox,
    approval_pending,
    approvals_by_status,
    pending_approval_count,
    pending_approvals_by_run,
)
from dashboard.selectors.audit import (
    AUDIT_CARD_LIMIT,
    run_audit_entries,
)
from dashboard.selectors.authz import (
    user_can_view,
)
from dashboard.selectors.checkpoints import (
    CHECKPOINT_ROW_FIELDS,
    CheckpointRow,
    checkpoint_document,
    checkpoint_get,
    checkpoint_get_any,
    checkpoint_superstep,
    run_checkpoint_rows,
    run_checkpoints,
)
from dashboard.selectors.execution import (
    EXECUTOR_EVENT_TYPES,
    executors_completed,
    executors_run_after,
    requests_raised_after,
    run_executor_events,
)
from dashboard.selectors.paging import KeysetPage, keyset
from dashboard.selectors.retention import (
    DayGrowth,
    RunStorage,
    StatusStorage,
    StorageTotals,
    WorkflowStorage,
    storage_by_status,
    storage_by_workflow,
    storage_growth,
    storage_largest_runs,
    storage_totals,
)
from dashboard.selectors.runs import (
    REPLAY_BATCH,
    RUN_LIST_COLUMNS,
    RunFilters,
    run_children,
    run_events_after,
    run_events_page,
    run_events_tail,
    run_get,
    run_list,
    run_list_full,
    trace_url,
)

__all__ = [
    "APPROVAL_TABS",
    "AUDIT_CARD_LIMIT",
    "CHECKPOINT_ROW_FIELDS",
    "CheckpointRow",
    "DayGrowth",
    "EXECUTOR_EVENT_TYPES",
    "KeysetPage",
    "REPLAY_BATCH",
    "RUN_LIST_COLUMNS",
    "RunFilters",
    "RunStorage",
    "StatusStorage",
    "StorageTotals",
    "WorkflowStorage",
    "approval_archive",
    "approval_get",
    "approval_inbox",
    "approval_pending",
    "approvals_by_status",
    "checkpoint_document",
    "checkpoint_get",
    "checkpoint_get_any",
    "checkpoint_superstep",
    "executors_completed",
    "executors_run_after",
    "keyset",
    "pending_approval_count",
    "pending_approvals_by_run",
    "requests_raised_after",
    "run_audit_entries",
    "run_checkpoint_rows",
    "run_checkpoints",
    "run_children",
    "run_events_after",
    "run_events_page",
    "run_events_tail",
    "run_executor_events",
    "run_get",
    "run_list",
    "run_list_full",
    "trace_url",
    "storage_by_status",
    "storage_by_workflow",
    "storage_growth",
    "storage_largest_runs",
    "storage_totals",
    "user_can_view",
]
