"""The dashboard's models, one module per concern; the database is the source of truth.

* ``runs``: ``WorkflowRun`` and its ``RunEvent`` log;
* ``checkpoints``: ``Checkpoint``, ``CheckpointBlob`` and ``CheckpointBlobUse``;
* ``approvals``: ``ApprovalRequest``, ``ApprovalRule``, ``ApprovalVote``, ``Notification``;
* ``retention``: ``RetentionPolicy``;
* ``jobs``: ``PeriodicJobRun`` (each period of a periodic job claimed once);
* ``access``: ``ApiToken`` and the append-only ``AuditEntry``.

All of them belong to the ``dashboard`` app (label ``dashboard``: table names, migrations and
permissions are those of the app). Import them from here: ``from dashboard.models import ...``.
"""

from .access import ApiToken, AuditEntry, AuditLogIsAppendOnly
from .approvals import ApprovalRequest, ApprovalRule, ApprovalStatus, ApprovalVote, Notification
from .checkpoints import Checkpoint, CheckpointBlob, CheckpointBlobUse
from .jobs import PeriodicJobRun
from .retention import RetentionPolicy
from .runs import ENGINE_ID_LENGTH, TERMINAL_RUN_STATUSES, RunEvent, RunStatus, WorkflowRun

__all__ = [
    "ENGINE_ID_LENGTH",
    "TERMINAL_RUN_STATUSES",
    "ApiToken",
    "ApprovalRequest",
    "ApprovalRule",
    "ApprovalStatus",
    "ApprovalVote",
    "AuditEntry",
    "AuditLogIsAppendOnly",
    "Checkpoint",
    "CheckpointBlob",
    "CheckpointBlobUse",
    "Notification",
    "PeriodicJobRun",
    "RetentionPolicy",
    "RunEvent",
    "RunStatus",
    "WorkflowRun",
]
