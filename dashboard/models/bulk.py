"""Actions on many runs at once: what was asked, by whom, and each run's outcome.

A ``BulkAction`` names its runs when it is asked (a filter is evaluated then, so runs started
afterwards are not swept in) and a worker works through them a chunk at a time, each run in
its own short transaction through the same service a single click uses, its item's outcome
recorded in that transaction. The rows say how far it got: a worker that dies mid-way leaves
items without an outcome, and the task queued again carries on from there.
"""

from __future__ import annotations

import uuid

from django.conf import settings
from django.db import models
from django.db.models import Q
from django.utils import timezone

__all__ = ["BulkAction", "BulkActionItem"]


class BulkAction(models.Model):
    QUEUED = "queued"
    RUNNING = "running"
    FINISHED = "finished"

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    action = models.CharField(max_length=20)
    reason = models.TextField(blank=True, default="")
    requested_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    # What the operator picked, in words: "3 runs" or "runs matching status failed, workflow x".
    described = models.CharField(max_length=300, blank=True, default="")
    status = models.CharField(max_length=10, default=QUEUED)
    total = models.PositiveIntegerField(default=0)
    done = models.PositiveIntegerField(default=0)
    skipped = models.PositiveIntegerField(default=0)
    created_at = models.DateTimeField(default=timezone.now)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    # The worker working through it, until when: a second delivery of the task finds the
    # claim live and leaves the work to it; a dead worker's claim expires and is taken over.
    claim_token = models.CharField(max_length=32, blank=True, default="")
    claimed_until = models.DateTimeField(null=True, blank=True)

    class Meta:
        indexes = (models.Index(fields=["-created_at"], name="bulk_action_newest"),)

    def __str__(self) -> str:
        return f"{self.action} on {self.total} runs ({self.status})"

    @property
    def handled(self) -> int:
        return self.done + self.skipped

    @property
    def percent(self) -> int:
        return 100 if not self.total else min(100, round(100 * self.handled / self.total))


class BulkActionItem(models.Model):
    DONE = "done"
    SKIPPED = "skipped"

    bulk = models.ForeignKey(BulkAction, on_delete=models.CASCADE, related_name="items")
    position = models.PositiveIntegerField()
    # No foreign key: retention may delete a run the history of this action still names.
    run_id = models.UUIDField()
    workflow_name = models.CharField(max_length=200, blank=True, default="")
    outcome = models.CharField(max_length=10, blank=True, default="")
    message = models.CharField(max_length=500, blank=True, default="")

    class Meta:
        constraints = (models.UniqueConstraint(fields=["bulk", "run_id"], name="bulk_item_once"),)
        indexes = (
            models.Index(
                fields=["bulk", "position"], condition=Q(outcome=""), name="bulk_item_pending"
            ),
        )

    def __str__(self) -> str:
        return f"{self.run_id}: {self.outcome or 'pending'}"
