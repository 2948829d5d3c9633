"""Runs, checkpoints, approvals and events: the database is the source of truth.

Models hold data and invariants only. Every state change goes through ``dashboard.services``
(inside ``transaction.atomic`` with ``select_for_update``); the constraints below are the
backstop that turns a bug there into an ``IntegrityError`` instead of a corrupt run.

Engine identifiers (checkpoint ids, the engine's lineage ``run_id``, request ids) are kept as
the strings the engine produced; ``None`` mirrors the engine's "no previous checkpoint".
Note that ``QuerySet.update()`` bypasses ``auto_now``: services updating runs that way set
``updated_at`` themselves.
"""

from __future__ import annotations

import uuid

from django.conf import settings
from django.db import models
from django.db.models import F, Q
from django.utils import timezone

ENGINE_ID_LENGTH = 128


class RunStatus(models.TextChoices):
    QUEUED = "queued", "Queued"
    RUNNING = "running", "Running"
    WAITING = "waiting", "Waiting for approval"
    COMPLETED = "completed", "Completed"
    FAILED = "failed", "Failed"
    CANCELLED = "cancelled", "Cancelled"


TERMINAL_RUN_STATUSES = (RunStatus.COMPLETED, RunStatus.FAILED, RunStatus.CANCELLED)


class WorkflowRun(models.Model):
    """One execution of a named workflow, driven superstep by superstep by a worker."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    workflow_name = models.CharField(max_length=200)
    status = models.CharField(max_length=16, choices=RunStatus.choices, default=RunStatus.QUEUED)
    input = models.JSONField(null=True, blank=True)
    output = models.JSONField(null=True, blank=True)
    error_message = models.TextField(blank=True, default="")
    error_type = models.CharField(max_length=200, blank=True, default="")
    traceback = models.TextField(blank=True, default="")
    current_superstep = models.PositiveIntegerField(default=0)
    latest_checkpoint = models.ForeignKey(
        "Checkpoint", null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    # Resume/fork lineage: the run and the checkpoint this run started from.
    parent_run = models.ForeignKey(
        "self", null=True, blank=True, on_delete=models.SET_NULL, related_name="children"
    )
    origin_checkpoint_id = models.CharField(max_length=ENGINE_ID_LENGTH, null=True, blank=True)
    # The engine's lineage run_id: resuming keeps it, a fresh start gets a new one.
    engine_run_id = models.CharField(max_length=ENGINE_ID_LENGTH, blank=True, default="")
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="workflow_runs",
    )
    created_at = models.DateTimeField(default=timezone.now)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    updated_at = models.DateTimeField(auto_now=True)
    # Worker ownership (reliability.md 2.2): one owner at a time until lease_expires_at; the
    # epoch grows with every claim so a worker that lost its lease cannot commit.
    attempts = models.PositiveIntegerField(default=0)
    lease_owner = models.CharField(max_length=200, blank=True, default="")
    lease_expires_at = models.DateTimeField(null=True, blank=True)
    fencing_epoch = models.PositiveBigIntegerField(default=0)
    # Highest RunEvent.seq so far; the next seq is taken here under the run-row lock, which
    # keeps per-run sequence numbers gapless without a MAX() scan.
    last_event_seq = models.PositiveIntegerField(default=0)
    # Legal hold: retention never touches a held run or any of its checkpoints.
    on_hold = models.BooleanField(default=False)
    hold_reason = models.CharField(max_length=500, blank=True, default="")

    class Meta:
        get_latest_by = "created_at"
        permissions = (
            ("start_run", "Can start runs"),
            ("operate_run", "Can resume, fork, cancel and retry runs"),
        )
        indexes = (
            models.Index(fields=["-created_at"], name="run_created"),
            models.Index(fields=["status", "-created_at"], name="run_status_created"),
            models.Index(fields=["workflow_name", "-created_at"], name="run_workflow_created"),
            # The lease sweeper: unfinished runs whose lease ran out.
            models.Index(fields=["status", "lease_expires_at"], name="run_status_lease"),
            models.Index(fields=["engine_run_id"], name="run_engine_run_id"),
        )
        constraints = (
            models.CheckConstraint(
                condition=Q(status__in=RunStatus.values), name="run_status_valid"
            ),
            # finished_at is set exactly when the run reached a terminal status.
            models.CheckConstraint(
                condition=Q(status__in=TERMINAL_RUN_STATUSES, finished_at__isnull=False)
                | (~Q(status__in=TERMINAL_RUN_STATUSES) & Q(finished_at__isnull=True)),
                name="run_finished_iff_terminal",
            ),
            models.CheckConstraint(
                condition=~Q(status=RunStatus.FAILED) | ~Q(error_message=""),
                name="run_failed_has_error",
            ),
            # A lease is an owner and an expiry, or neither.
            models.CheckConstraint(
                condition=Q(lease_owner="", lease_expires_at__isnull=True)
                | (~Q(lease_owner="") & Q(lease_expires_at__isnull=False)),
                name="run_lease_complete",
            ),
            models.CheckConstraint(condition=~Q(parent_run=F("id")), name="run_not_own_parent"),
        )

    def __str__(self) -> str:
        return f"{self.workflow_name} {self.id} ({self.status})"

    @property
    def is_terminal(self) -> bool:
        return self.status in TERMINAL_RUN_STATUSES


class CheckpointBlob(models.Model):
    """Content-addressed JSON: a value that did not change between checkpoints is stored once.

    ``digest`` is a hash of the canonical JSON (e.g. ``sha256:<hex>``); identical content maps
    to the same row, so writers use ``get_or_create``/``bulk_create(ignore_conflicts=True)``.
    """

    digest = models.CharField(max_length=ENGINE_ID_LENGTH, primary_key=True)
    data = models.JSONField()
    size_bytes = models.PositiveIntegerField()
    created_at = models.DateTimeField(default=timezone.now)

    def __str__(self) -> str:
        return self.digest


class CheckpointBlobUse(models.Model):
    """Checkpoints of a lineage (the engine's run id) refer to ``blob``.

    One row per lineage and blob, not per checkpoint: a run whose large state does not change
    writes none after its first checkpoint; each later save only locks the row, so retention
    cannot release it under a save in flight. Retention deletes a row once no checkpoint of the
    lineage refers to the blob any more, and a blob once no row refers to it
    (``dashboard.blob_uses``).
    """

    engine_run_id = models.CharField(max_length=ENGINE_ID_LENGTH)
    # PROTECT: the database refuses to drop a blob some lineage still uses.
    blob = models.ForeignKey(
        CheckpointBlob, on_delete=models.PROTECT, related_name="uses", db_index=False
    )

    class Meta:
        constraints = (
            models.UniqueConstraint(fields=["engine_run_id", "blob"], name="blob_use_once"),
        )
        # A plain index (no LIKE-pattern twin): "is this blob used at all" for collection.
        indexes = (models.Index(fields=["blob"], name="blob_use_blob"),)

    def __str__(self) -> str:
        return f"{self.engine_run_id} uses {self.blob_id}"


class Checkpoint(models.Model):
    """The engine's checkpoint: its JSON ``document`` plus the columns lists filter on.

    ``run`` is null for checkpoints saved through the storage without a dashboard run (the
    engine's contract suite does exactly that); ``engine_run_id`` is always the engine's.
    """

    checkpoint_id = models.CharField(max_length=ENGINE_ID_LENGTH, primary_key=True)
    run = models.ForeignKey(
        WorkflowRun,
        null=True,
        blank=True,
        on_delete=models.CASCADE,
        related_name="checkpoints",
        db_index=False,  # the (run, superstep) index serves run lookups
    )
    engine_run_id = models.CharField(max_length=ENGINE_ID_LENGTH, blank=True, default="")
    workflow_name = models.CharField(max_length=200)
    superstep = models.PositiveIntegerField()  # the engine's iteration_count
    previous_checkpoint_id = models.CharField(max_length=ENGINE_ID_LENGTH, null=True, blank=True)
    graph_signature_hash = models.CharField(max_length=ENGINE_ID_LENGTH)
    document = models.JSONField()  # jsonb on PostgreSQL; its "blob_refs" name the blobs it uses
    size_bytes = models.PositiveIntegerField()
    pending_request_count = models.PositiveIntegerField(default=0)
    created_at = models.DateTimeField(default=timezone.now)
    on_hold = models.BooleanField(default=False)

    class Meta:
        get_latest_by = "created_at"
        indexes = (
            models.Index(fields=["run", "superstep"], name="checkpoint_run_superstep"),
            models.Index(
                fields=["workflow_name", "created_at"], name="checkpoint_workflow_created"
            ),
            models.Index(fields=["engine_run_id", "created_at"], name="checkpoint_lineage_created"),
        )
        constraints = (
            models.CheckConstraint(
                condition=~Q(previous_checkpoint_id=F("checkpoint_id")),
                name="checkpoint_not_own_previous",
            ),
        )

    def __str__(self) -> str:
        return f"{self.workflow_name} superstep {self.superstep} ({self.checkpoint_id})"


class ApprovalStatus(models.TextChoices):
    PENDING = "pending", "Pending"
    APPROVED = "approved", "Approved"
    REJECTED = "rejected", "Rejected"
    CANCELLED = "cancelled", "Cancelled"


class ApprovalRequest(models.Model):
    """A human decision a paused run waits for (the engine's ``request_info``)."""

    # "<lineage>:<engine request id>": unique even when a resumed branch re-raises a request
    # the engine saved under the same id.
    request_id = models.CharField(max_length=2 * ENGINE_ID_LENGTH + 1, unique=True)
    engine_request_id = models.CharField(max_length=ENGINE_ID_LENGTH)
    engine_run_id = models.CharField(max_length=ENGINE_ID_LENGTH)
    run = models.ForeignKey(
        WorkflowRun,
        on_delete=models.CASCADE,
        related_name="approval_requests",
        db_index=False,  # the (run, status) index serves run lookups
    )
    # RESTRICT: retention must never delete the checkpoint a request was raised in, yet
    # deleting the whole run (which cascades to both) stays possible; PROTECT would refuse.
    checkpoint = models.ForeignKey(
        Checkpoint, on_delete=models.RESTRICT, related_name="approval_requests"
    )
    executor_id = models.CharField(max_length=200)
    request_data = models.JSONField(null=True, blank=True)
    response_type = models.CharField(max_length=200, blank=True, default="")
    response_schema = models.JSONField(default=dict, blank=True)
    status = models.CharField(
        max_length=16, choices=ApprovalStatus.choices, default=ApprovalStatus.PENDING
    )
    response = models.JSONField(null=True, blank=True)
    reason = models.TextField(blank=True, default="")
    # PROTECT: an approver who decided something is deactivated, never deleted (audit).
    decided_by = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.PROTECT,
        related_name="approval_decisions",
    )
    decided_at = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(default=timezone.now)
    # Governance (see ApprovalRule): who should decide, who took it, how many must agree, and
    # by when. ``default_applied`` marks a deadline's default outcome, applied exactly once.
    assigned_user = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    assigned_group = models.ForeignKey(
        "auth.Group", null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    claimed_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    claimed_at = models.DateTimeField(null=True, blank=True)
    required_approvals = models.PositiveSmallIntegerField(default=1)
    due_at = models.DateTimeField(null=True, blank=True)
    overdue_at = models.DateTimeField(null=True, blank=True)
    default_applied = models.BooleanField(default=False)

    class Meta:
        permissions = (("decide_approval", "Can approve or reject requests"),)
        indexes = (
            models.Index(fields=["status", "due_at"], name="approval_status_due"),
            # The approval inbox: pending requests, oldest first.
            models.Index(
                fields=["created_at"],
                condition=Q(status=ApprovalStatus.PENDING),
                name="approval_pending_created",
            ),
            models.Index(fields=["run", "status"], name="approval_run_status"),
        )
        constraints = (
            models.CheckConstraint(
                condition=Q(status__in=ApprovalStatus.values), name="approval_status_valid"
            ),
            # One decision per request: a pending request carries no decision; an approved or
            # rejected one names who decided and when (or, past a deadline, that the system
            # applied the default); a cancelled one (run cancelled, maybe by the system) at
            # least says when.
            models.CheckConstraint(
                condition=(
                    Q(
                        status=ApprovalStatus.PENDING,
                        decided_by__isnull=True,
                        decided_at__isnull=True,
                    )
                    | Q(
                        status__in=[ApprovalStatus.APPROVED, ApprovalStatus.REJECTED],
                        decided_by__isnull=False,
                        decided_at__isnull=False,
                    )
                    # A deadline's default outcome is decided by the system, not a person.
                    | Q(
                        status__in=[ApprovalStatus.APPROVED, ApprovalStatus.REJECTED],
                        decided_by__isnull=True,
                        decided_at__isnull=False,
                        default_applied=True,
                    )
                    | Q(status=ApprovalStatus.CANCELLED, decided_at__isnull=False)
                ),
                name="approval_decided_iff_not_pending",
            ),
        )

    def __str__(self) -> str:
        return f"{self.executor_id} request {self.request_id} ({self.status})"


class RunEvent(models.Model):
    """An engine or lifecycle event of a run, numbered 1, 2, 3... without gaps per run.

    Written in the transaction that produced it; a reconnecting websocket replays
    ``seq > last_seen`` from here, since the channel layer itself may drop messages.
    """

    # No separate index: the (run, seq) unique constraint serves run lookups.
    run = models.ForeignKey(
        WorkflowRun, on_delete=models.CASCADE, related_name="events", db_index=False
    )
    seq = models.PositiveIntegerField()
    type = models.CharField(max_length=100)
    data = models.JSONField(default=dict, blank=True)
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        constraints = (
            # Also the index that serves "events of run R after seq N".
            models.UniqueConstraint(fields=["run", "seq"], name="event_run_seq_unique"),
            models.CheckConstraint(condition=Q(seq__gte=1), name="event_seq_positive"),
        )

    def __str__(self) -> str:
        return f"{self.run_id} #{self.seq} {self.type}"


class ApiToken(models.Model):
    """A bearer token for the JSON API; only its SHA-256 is stored (see ``dashboard.tokens``)."""

    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="api_tokens"
    )
    name = models.CharField(max_length=100, blank=True, default="")
    key_hash = models.CharField(max_length=64, unique=True)
    created_at = models.DateTimeField(default=timezone.now)
    last_used_at = models.DateTimeField(null=True, blank=True)
    revoked_at = models.DateTimeField(null=True, blank=True)

    def __str__(self) -> str:
        return f"{self.name or 'token'} for {self.user}"


# Defined beside this module (governance, audit, retention); imported so Django registers them.
from .models_governance import (  # noqa: E402
    ApprovalRule,
    ApprovalVote,
    AuditEntry,
    Notification,
    RetentionPolicy,
)

__all__ = [
    "TERMINAL_RUN_STATUSES",
    "ApiToken",
    "ApprovalRequest",
    "ApprovalRule",
    "ApprovalStatus",
    "ApprovalVote",
    "AuditEntry",
    "Checkpoint",
    "CheckpointBlob",
    "CheckpointBlobUse",
    "Notification",
    "RetentionPolicy",
    "RunEvent",
    "RunStatus",
    "WorkflowRun",
]
