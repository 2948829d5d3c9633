"""Audit trail, retention policies, approval rules and votes, and the notification outbox.

Kept beside ``models.py`` (which imports these) so each module stays readable.
"""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.db import models
from django.db.models import Q
from django.utils import timezone

__all__ = ["ApprovalRule", "ApprovalVote", "AuditEntry", "Notification", "RetentionPolicy"]


# ------------------------------------------------------------------------------------- audit


class AuditLogIsAppendOnly(Exception):
    """Raised on any attempt to change or remove an audit entry through the application."""


class _AppendOnlyQuerySet(models.QuerySet["AuditEntry"]):
    def update(self, **kwargs: Any) -> int:
        raise AuditLogIsAppendOnly("audit entries cannot be changed")

    def delete(self) -> tuple[int, dict[str, int]]:
        raise AuditLogIsAppendOnly("audit entries cannot be deleted")


class AuditEntry(models.Model):
    """One operator action or refusal: who, when, what, and the checkpoints before and after.

    Append-only: the application can add entries and nothing else (the model, its queryset and
    the admin refuse changes; on PostgreSQL a trigger refuses UPDATE and DELETE as well).
    Retention never touches it, and it does not reference runs by foreign key, so a pruned run
    leaves its history here as a tombstone.
    """

    OK = "ok"
    DENIED = "denied"

    created_at = models.DateTimeField(default=timezone.now, db_index=True)
    # No database constraint and no cascade: deleting a user must not rewrite history.
    actor = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.DO_NOTHING,
        db_constraint=False,
        related_name="+",
    )
    actor_name = models.CharField(max_length=150, blank=True, default="")  # kept if the user goes
    action = models.CharField(max_length=40)
    outcome = models.CharField(max_length=10, default=OK)
    run_id = models.UUIDField(null=True, blank=True)
    workflow_name = models.CharField(max_length=200, blank=True, default="")
    target = models.CharField(max_length=300, blank=True, default="")
    checkpoint_before = models.CharField(max_length=128, blank=True, default="")
    checkpoint_after = models.CharField(max_length=128, blank=True, default="")
    details = models.JSONField(default=dict, blank=True)
    ip = models.GenericIPAddressField(null=True, blank=True)
    user_agent = models.CharField(max_length=300, blank=True, default="")

    objects = _AppendOnlyQuerySet.as_manager()

    class Meta:
        ordering = ("-created_at", "-id")
        indexes = (
            models.Index(fields=["run_id", "created_at"], name="audit_run_created"),
            models.Index(fields=["action", "created_at"], name="audit_action_created"),
        )
        constraints = (
            models.CheckConstraint(condition=Q(outcome__in=["ok", "denied"]), name="audit_outcome_valid"),
        )

    def save(self, *args: Any, **kwargs: Any) -> None:
        if not self._state.adding:
            raise AuditLogIsAppendOnly("audit entries cannot be changed")
        super().save(*args, **kwargs)

    def delete(self, *args: Any, **kwargs: Any) -> tuple[int, dict[str, int]]:
        raise AuditLogIsAppendOnly("audit entries cannot be deleted")

    def __str__(self) -> str:
        return f"{self.created_at:%Y-%m-%d %H:%M:%S} {self.actor_name or 'system'} {self.action} {self.outcome}"


# --------------------------------------------------------------------------------- retention


class RetentionPolicy(models.Model):
    """How long finished runs of some workflows keep their checkpoints, for one final status.

    Always protected, whatever the policy: runs that are queued, running or waiting; the newest
    checkpoint of every run; checkpoints an approval request was raised in; the origin
    checkpoint of an existing fork; anything on hold.
    """

    class Status(models.TextChoices):
        COMPLETED = "completed", "Completed"
        FAILED = "failed", "Failed"
        CANCELLED = "cancelled", "Cancelled"

    name = models.CharField(max_length=100, unique=True)
    enabled = models.BooleanField(default=True)
    workflow_pattern = models.CharField(
        max_length=200, default="*", help_text="Workflow name or shell-style pattern, e.g. return-*"
    )
    status = models.CharField(max_length=16, choices=Status.choices)
    keep_last_checkpoints = models.PositiveIntegerField(
        null=True, blank=True, help_text="Keep this many newest checkpoints of each run (empty: no limit)"
    )
    delete_checkpoints_older_than_days = models.PositiveIntegerField(null=True, blank=True)
    delete_runs_older_than_days = models.PositiveIntegerField(
        null=True, blank=True, help_text="Delete whole runs that finished longer ago than this"
    )
    created_at = models.DateTimeField(default=timezone.now)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        verbose_name_plural = "retention policies"
        permissions = (("manage_retention", "Can manage retention, holds and prune"),)
        constraints = (
            models.CheckConstraint(
                condition=Q(keep_last_checkpoints__isnull=False)
                | Q(delete_checkpoints_older_than_days__isnull=False)
                | Q(delete_runs_older_than_days__isnull=False),
                name="retention_has_a_rule",
            ),
            models.CheckConstraint(
                condition=Q(keep_last_checkpoints__isnull=True) | Q(keep_last_checkpoints__gte=1),
                name="retention_keeps_at_least_one",
            ),
        )

    def __str__(self) -> str:
        return f"{self.name} ({self.workflow_pattern}, {self.status})"


# ----------------------------------------------------------------------------- governance


class ApprovalRule(models.Model):
    """Per-workflow rules for its approval requests."""

    class DefaultOutcome(models.TextChoices):
        NONE = "", "None (only mark overdue)"
        APPROVE = "approve", "Approve"
        REJECT = "reject", "Reject"

    workflow_name = models.CharField(max_length=200, unique=True)
    forbid_self_approval = models.BooleanField(
        default=False, help_text="The user who started a run may not decide its requests"
    )
    required_approvals = models.PositiveSmallIntegerField(default=1)
    assign_to_group = models.ForeignKey(
        "auth.Group", null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    deadline_minutes = models.PositiveIntegerField(null=True, blank=True)
    default_outcome = models.CharField(
        max_length=10, choices=DefaultOutcome.choices, blank=True, default=""
    )
    notify_emails = models.TextField(blank=True, default="", help_text="One address per line")
    webhook_url = models.URLField(blank=True, default="")
    webhook_secret = models.CharField(max_length=200, blank=True, default="")

    class Meta:
        constraints = (
            models.CheckConstraint(condition=Q(required_approvals__gte=1), name="rule_needs_an_approval"),
            models.CheckConstraint(
                condition=Q(default_outcome="") | Q(deadline_minutes__isnull=False),
                name="rule_default_needs_deadline",
            ),
        )

    def __str__(self) -> str:
        return f"rules for {self.workflow_name}"

    @property
    def email_list(self) -> list[str]:
        return [line.strip() for line in self.notify_emails.splitlines() if line.strip()]


class ApprovalVote(models.Model):
    """One approver's vote on a request that needs several approvals (N of M)."""

    request = models.ForeignKey(
        "dashboard.ApprovalRequest", on_delete=models.CASCADE, related_name="votes"
    )
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="+")
    approve = models.BooleanField()
    reason = models.TextField(blank=True, default="")
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        constraints = (
            models.UniqueConstraint(fields=["request", "user"], name="vote_once_per_user"),
        )


class Notification(models.Model):
    """An email or signed webhook about an approval, sent after commit and retried until sent."""

    EMAIL = "email"
    WEBHOOK = "webhook"

    kind = models.CharField(max_length=10, choices=((EMAIL, "Email"), (WEBHOOK, "Webhook")))
    event = models.CharField(max_length=30)  # approval_raised, approval_overdue
    request = models.ForeignKey(
        "dashboard.ApprovalRequest", on_delete=models.CASCADE, related_name="notifications"
    )
    target = models.CharField(max_length=500)
    payload = models.JSONField(default=dict)
    attempts = models.PositiveSmallIntegerField(default=0)
    next_attempt_at = models.DateTimeField(default=timezone.now)
    sent_at = models.DateTimeField(null=True, blank=True)
    last_error = models.TextField(blank=True, default="")
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        indexes = (
            models.Index(
                fields=["next_attempt_at"], condition=Q(sent_at__isnull=True), name="notification_due"
            ),
        )
