"""Runs and their event log: ``WorkflowRun`` (one execution of a named workflow and where
its status machine stands) and ``RunEvent`` (its gapless, numbered events).

Models hold data and invariants only. Every state change goes through ``dashboard.services``
(inside ``transaction.atomic`` with ``select_for_update``); the constraints are the backstop
that turns a bug there into an ``IntegrityError`` instead of a corrupt run.

Engine identifiers (checkpoint ids, the engine's lineage ``run_id``, request ids) are kept as
the strings the engine produced; ``None`` mirrors the engine's "no previous checkpoint".
Note that ``QuerySet.update()`` bypasses ``auto_now``: services updating runs that way set
``updated_at`` themselves.
"""

from __future__ import annotations

import uuid
from decimal import Decimal

from django.conf import settings
from django.db import models
from django.db.models import F, Q
from django.utils import timezone

__all__ = ["ENGINE_ID_LENGTH", "TERMINAL_RUN_STATUSES", "RunEvent", "RunStatus", "WorkflowRun"]


ENGINE_ID_LENGTH = 128


class RunStatus(models.TextChoices):
    QUEUED = "queued", "Queued"
    RUNNING = "running", "Running"
    WAITING = "waiting", "Waiting for approval"
    COMPLETED = "completed", "Completed"
    FAILED = "failed", "Failed"
    CANCELLED = "cancelled", "Cancelled"
    # Its version is no longer registered and the deployed one cannot carry its checkpoint:
    # it waits for an operator to migrate it (services.versions) or cancel it.
    NEEDS_MIGRATION = "needs_migration", "Needs migration"


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
    origin_checkpoint_id = models.CharField(  # noqa: DJ001 - None for a run started afresh
        max_length=ENGINE_ID_LENGTH, null=True, blank=True
    )
    # The graph version (signature hash) the run executes on: the current one when it
    # started, changed only by a migration (automatic when compatible, or an operator's).
    graph_version = models.CharField(max_length=64, blank=True, default="", db_default="")
    # What changed and what the deployed version cannot carry, while it needs migration.
    migration_reason = models.TextField(blank=True, default="", db_default="")
    # The OpenTelemetry trace the run's spans belong to (32 hex), from its first traced
    # checkpoint; "" when untraced. A resume continues the same trace.
    trace_id = models.CharField(max_length=32, blank=True, default="", db_default="")
    # The schedule that started the run (None: started by hand, or its schedule was deleted).
    schedule = models.ForeignKey(
        "Schedule", null=True, blank=True, on_delete=models.SET_NULL, related_name="runs"
    )
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
    # Workers lost in a row with no superstep committed in between: a commit resets it, so
    # restarts spread over a long run never add up to a failure (SUPERSTEP_MAX_ATTEMPTS). The
    # database default lets code that predates the column (a rolling deploy) still insert runs.
    lost_workers = models.PositiveIntegerField(default=0, db_default=0)
    # Highest RunEvent.seq so far; the next seq is taken here under the run-row lock, which
    # keeps per-run sequence numbers gapless without a MAX() scan.
    last_event_seq = models.PositiveIntegerField(default=0)
    # What the run's agents asked of their models so far (the model_call events, summed as
    # each superstep commits), for the runs list's columns and filters; cost is in the price
    # table's currency, counting only the calls whose model has a price.
    input_tokens = models.PositiveBigIntegerField(default=0, db_default=0)
    output_tokens = models.PositiveBigIntegerField(default=0, db_default=0)
    cost = models.DecimalField(
        max_digits=18, decimal_places=6, default=Decimal(0), db_default=Decimal(0)
    )
    # Legal hold: retention never touches a held run or any of its checkpoints.
    on_hold = models.BooleanField(default=False)
    hold_reason = models.CharField(max_length=500, blank=True, default="")

    class Meta:
        get_latest_by = "created_at"
        permissions = (
            ("start_run", "Can start runs"),
            ("operate_run", "Can resume, fork, cancel and retry runs"),
            ("view_sensitive", "Can reveal sensitive fields"),
        )
        indexes = (
            models.Index(fields=["-created_at"], name="run_created"),
            models.Index(fields=["status", "-created_at"], name="run_status_created"),
            models.Index(fields=["workflow_name", "-created_at"], name="run_workflow_created"),
            # The lease sweeper: unfinished runs whose lease ran out.
            models.Index(fields=["status", "lease_expires_at"], name="run_status_lease"),
            models.Index(fields=["engine_run_id"], name="run_engine_run_id"),
            # The runs list's "cost at least / at most" filters and its sort by cost.
            models.Index(fields=["cost", "id"], name="run_cost"),
            # Its "tokens at least" filter, on the total the list compares (``run_tokens``).
            models.Index(F("input_tokens") + F("output_tokens"), name="run_tokens"),
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
