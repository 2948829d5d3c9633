"""Alerts: the rules an operator sets ("tell me when a payments run fails") and the incidents
they open.

An ``AlertIncident`` is one occurrence of a rule's condition for one subject (a run, an
approval request, the retention job), open from when the evaluation job saw it until it saw
the condition clear. At most one incident per (rule, subject) is open at a time: the partial
unique constraint ``alert_incident_open_once`` is what makes "notified once per incident" hold
when two processes evaluate at the same moment, since only the insert that wins writes the
notifications. Its notifications are ``Notification`` rows like an approval's.
"""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.db.models import Q
from django.utils import timezone

__all__ = ["AlertCondition", "AlertIncident", "AlertRule"]


class AlertCondition(models.TextChoices):
    RUN_FAILED = "run_failed", "Run failed"
    RUN_STUCK = "run_stuck", "Run stuck (no progress while running)"
    RUN_SLOW = "run_slow", "Run slower than"
    APPROVAL_WAITING = "approval_waiting", "Approval waiting longer than"
    RETENTION_FAILING = "retention_failing", "Retention failing"
    RUN_COST = "run_cost", "Run cost above"


# The conditions measured against a number of minutes (the others need none).
TIMED_CONDITIONS = (
    AlertCondition.RUN_STUCK,
    AlertCondition.RUN_SLOW,
    AlertCondition.APPROVAL_WAITING,
)


class AlertRule(models.Model):
    """When to alert (a condition, for one workflow or all) and whom to tell."""

    name = models.CharField(max_length=100, unique=True)
    condition = models.CharField(max_length=20, choices=AlertCondition.choices)
    # Empty: every workflow (retention failing concerns no workflow and keeps it empty).
    workflow_name = models.CharField(max_length=200, blank=True, default="")
    threshold_minutes = models.PositiveIntegerField(null=True, blank=True)
    # Run cost above: the cost a run must go above, in the price table's currency.
    threshold_cost = models.DecimalField(max_digits=18, decimal_places=6, null=True, blank=True)
    emails = models.TextField(blank=True, default="", help_text="One address per line")
    slack_webhook_url = models.URLField(max_length=500, blank=True, default="")
    webhook_url = models.URLField(max_length=500, blank=True, default="")
    webhook_secret = models.CharField(max_length=200, blank=True, default="")
    notify_resolved = models.BooleanField(default=True)
    enabled = models.BooleanField(default=True)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="+",
    )
    created_at = models.DateTimeField(default=timezone.now)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ("name",)
        constraints = (
            models.CheckConstraint(
                condition=Q(condition__in=AlertCondition.values), name="alert_condition_valid"
            ),
            models.CheckConstraint(
                condition=Q(condition__in=TIMED_CONDITIONS, threshold_minutes__gte=1)
                | (~Q(condition__in=TIMED_CONDITIONS) & Q(threshold_minutes__isnull=True)),
                name="alert_threshold_iff_timed",
            ),
            models.CheckConstraint(
                condition=Q(condition=AlertCondition.RUN_COST, threshold_cost__gt=0)
                | (~Q(condition=AlertCondition.RUN_COST) & Q(threshold_cost__isnull=True)),
                name="alert_cost_iff_run_cost",
            ),
        )

    def __str__(self) -> str:
        return f"alert rule {self.name}"

    @property
    def threshold_cost_text(self) -> str:
        """The cost threshold as typed, without trailing zeros (``2.5``, ``100``); "" without."""
        if self.threshold_cost is None:
            return ""
        text = f"{self.threshold_cost:f}"
        return text.rstrip("0").rstrip(".") if "." in text else text

    @property
    def email_list(self) -> list[str]:
        return [line.strip() for line in self.emails.splitlines() if line.strip()]


class AlertIncident(models.Model):
    """One occurrence of a rule's condition for one subject, open until it clears."""

    rule = models.ForeignKey(AlertRule, on_delete=models.CASCADE, related_name="incidents")
    # What the condition holds for, unique per rule among open incidents: a run id, an
    # approval request id, or the name of a periodic job.
    subject = models.CharField(max_length=300)
    # SET_NULL: retention may delete the run; the incident stays in the history (and resolves).
    run = models.ForeignKey(
        "WorkflowRun",
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="alert_incidents",
        db_index=False,  # the (run, opened_at) index serves run lookups
    )
    workflow_name = models.CharField(max_length=200, blank=True, default="")
    summary = models.CharField(max_length=500)
    details = models.JSONField(default=dict, blank=True)
    opened_at = models.DateTimeField(default=timezone.now)
    # The first notification that reached its target (None: none yet, or nobody to tell).
    delivered_at = models.DateTimeField(null=True, blank=True)
    resolved_at = models.DateTimeField(null=True, blank=True)
    resolution = models.CharField(max_length=300, blank=True, default="")
    # When the evaluation job last checked that it still holds: it checks the longest
    # unchecked first, a bounded number per pass.
    checked_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ("-opened_at", "-pk")
        indexes = (
            models.Index(
                fields=["checked_at"],
                condition=Q(resolved_at__isnull=True),
                name="alert_open_checked",
            ),
            models.Index(fields=["run", "-opened_at"], name="alert_run_opened"),
            models.Index(fields=["-opened_at"], name="alert_opened"),
        )
        constraints = (
            models.UniqueConstraint(
                fields=["rule", "subject"],
                condition=Q(resolved_at__isnull=True),
                name="alert_incident_open_once",
            ),
        )

    def __str__(self) -> str:
        state = "resolved" if self.resolved_at else "open"
        return f"{self.rule_id}:{self.subject} ({state})"

    @property
    def state(self) -> str:
        """opened (nobody told yet), delivered, or resolved."""
        if self.resolved_at is not None:
            return "resolved"
        return "delivered" if self.delivered_at is not None else "opened"
