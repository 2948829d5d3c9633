"""The dashboard's models, one module per concern; the database is the source of truth.

* ``runs``: ``WorkflowRun`` and its ``RunEvent`` log;
* ``checkpoints``: ``Checkpoint``, ``CheckpointBlob`` and ``CheckpointBlobUse``;
* ``approvals``: ``ApprovalRequest``, ``ApprovalRule``, ``ApprovalVote``, ``Notification``;
* ``alerts``: ``AlertRule`` and ``AlertIncident`` (each open incident notified once);
* ``retention``: ``RetentionPolicy``;
* ``pricing``: ``ModelPrice`` (what a model's tokens cost);
* ``bulk``: ``BulkAction`` and its ``BulkActionItem`` rows (actions on many runs at once);
* ``jobs``: ``PeriodicJobRun`` (each period of a periodic job claimed once);
* ``schedules``: ``Schedule`` and ``ScheduleTick`` (each tick of a schedule claimed once);
* ``views``: ``SavedView`` (a named runs-list filter, pinned, shared);
* ``access``: ``ApiToken``, ``WorkflowGrant``, ``SingleSignOnIdentity`` and the append-only
  ``AuditEntry`` with its hash chain, ``AuditSeal``.

All of them belong to the ``dashboard`` app (label ``dashboard``: table names, migrations and
permissions are those of the app). Import them from here: ``from dashboard.models import ...``.
"""

from .access import (
    ApiToken,
    AuditEntry,
    AuditLogIsAppendOnly,
    AuditSeal,
    SingleSignOnIdentity,
    WorkflowGrant,
)
from .alerts import AlertCondition, AlertIncident, AlertRule
from .approvals import ApprovalRequest, ApprovalRule, ApprovalStatus, ApprovalVote, Notification
from .bulk import BulkAction, BulkActionItem
from .checkpoints import Checkpoint, CheckpointBlob, CheckpointBlobUse
from .jobs import PeriodicJobRun
from .pricing import ModelPrice
from .retention import RetentionPolicy
from .runs import ENGINE_ID_LENGTH, TERMINAL_RUN_STATUSES, RunEvent, RunStatus, WorkflowRun
from .schedules import Schedule, ScheduleTick
from .views import SavedView

__all__ = [
    "ENGINE_ID_LENGTH",
    "TERMINAL_RUN_STATUSES",
    "AlertCondition",
    "AlertIncident",
    "AlertRule",
    "ApiToken",
    "ApprovalRequest",
    "ApprovalRule",
    "ApprovalStatus",
    "ApprovalVote",
    "AuditEntry",
    "AuditSeal",
    "AuditLogIsAppendOnly",
    "BulkAction",
    "BulkActionItem",
    "Checkpoint",
    "CheckpointBlob",
    "CheckpointBlobUse",
    "ModelPrice",
    "Notification",
    "PeriodicJobRun",
    "RetentionPolicy",
    "RunEvent",
    "RunStatus",
    "SavedView",
    "Schedule",
    "ScheduleTick",
    "SingleSignOnIdentity",
    "WorkflowGrant",
    "WorkflowRun",
]
