"""Approvals: the requests paused runs wait for, each workflow's approval rules, the votes
of N-of-M approvals and the notification outbox (emails and webhooks sent after commit).
"""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.db.models import Q
from django.utils import timezone

from .checkpoints import Checkpoint
from .runs import ENGINE_ID_LENGTH, WorkflowRun

__all__ = ["ApprovalRequest", "ApprovalRule", "ApprovalStatus", "ApprovalVote", "Notification"]


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
    webhook_secret = models.CharField(
        max_length=200,
        blank=True,
        default="",
        help_text=(
            "Signs each webhook per the Standard Webhooks spec: a whsec_<base64> secret, or any "
            "other text (its UTF-8 bytes are the key). Empty: webhooks are sent unsigned."
        ),
    )

    class Meta:
        constraints = (
            models.CheckConstraint(
                condition=Q(required_approvals__gte=1), name="rule_needs_an_approval"
            ),
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

    def __str__(self) -> str:
        verdict = "approve" if self.approve else "reject"
        return f"{verdict} by user {self.user_id} on request {self.request_id}"


class Notification(models.Model):
    """An email, Slack message or signed webhook about an approval request or an alert
    incident (exactly one of the two), sent after commit and retried until sent.

    Delivery claims the row in one short transaction (``claim_token``, valid until
    ``claimed_until``), sends with no transaction open, and records the outcome in another:
    a worker that dies mid-send leaves a claim that expires, and the retry sweep sends again.
    """

    EMAIL = "email"
    WEBHOOK = "webhook"
    SLACK = "slack"

    kind = models.CharField(
        max_length=10, choices=((EMAIL, "Email"), (WEBHOOK, "Webhook"), (SLACK, "Slack"))
    )
    # approval_raised, approval_overdue; alert_opened, alert_resolved
    event = models.CharField(max_length=30)
    request = models.ForeignKey(
        "dashboard.ApprovalRequest",
        null=True,
        blank=True,
        on_delete=models.CASCADE,
        related_name="notifications",
    )
    incident = models.ForeignKey(
        "dashboard.AlertIncident",
        null=True,
        blank=True,
        on_delete=models.CASCADE,
        related_name="notifications",
    )
    target = models.CharField(max_length=500)
    payload = models.JSONField(default=dict)
    attempts = models.PositiveSmallIntegerField(default=0)
    next_attempt_at = models.DateTimeField(default=timezone.now)
    sent_at = models.DateTimeField(null=True, blank=True)
    last_error = models.TextField(blank=True, default="")
    created_at = models.DateTimeField(default=timezone.now)
    # The Standard Webhooks ``webhook-id``: set by the first attempt and kept by every retry,
    # so a receiver can drop a delivery it already processed.
    message_id = models.CharField(max_length=64, blank=True, default="")
    # The attempt in flight: its token, and until when it owns the notification.
    claim_token = models.CharField(max_length=32, blank=True, default="")
    claimed_until = models.DateTimeField(null=True, blank=True)

    class Meta:
        indexes = (
            models.Index(
                fields=["next_attempt_at"],
                condition=Q(sent_at__isnull=True),
                name="notification_due",
            ),
        )
        constraints = (
            models.CheckConstraint(
                condition=Q(request__isnull=False, incident__isnull=True)
                | Q(request__isnull=True, incident__isnull=False),
                name="notification_about_one_thing",
            ),
        )

    def __str__(self) -> str:
        return f"{self.kind} {self.event} to {self.target}"
