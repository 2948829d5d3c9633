"""Retention policies: how long finished runs keep their checkpoints."""

from __future__ import annotations

from django.db import models
from django.db.models import Q
from django.utils import timezone

__all__ = ["RetentionPolicy"]


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
        null=True,
        blank=True,
        help_text="Keep this many newest checkpoints of each run (empty: no limit)",
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
