"""Schedules: start a workflow with a fixed input on a cron expression or an interval.

``Schedule`` says what to start and when; ``next_fire_at`` is the tick that is due next (None
while paused). ``ScheduleTick`` is the claim of one tick and what came of it: at most one row
per (schedule, tick time) for the timed ticks, so two beat processes, or beat and a server's
embedded threads, that fire the same tick cannot both start a run. A manual "trigger now" is
its own row, outside that constraint.
"""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.db.models import Q
from django.utils import timezone

__all__ = ["Schedule", "ScheduleTick"]


class Schedule(models.Model):
    """A recurring start of ``workflow_name`` with ``input``, by cron (in ``time_zone``) or
    every ``interval_seconds`` from ``created_at``."""

    class Kind(models.TextChoices):
        CRON = "cron", "Cron expression"
        INTERVAL = "interval", "Interval"

    name = models.CharField(max_length=100, unique=True)
    workflow_name = models.CharField(max_length=200)
    input = models.JSONField(null=True, blank=True)
    kind = models.CharField(max_length=8, choices=Kind.choices)
    cron = models.CharField(max_length=200, blank=True, default="")
    interval_seconds = models.PositiveIntegerField(null=True, blank=True)
    # An IANA zone name ("Europe/Paris"); the cron fields are read on its wall clock.
    time_zone = models.CharField(max_length=64, default="UTC")
    paused = models.BooleanField(default=False)
    # Don't start while this schedule's previous run is still unfinished (the skip is recorded).
    skip_if_running = models.BooleanField(default=True)
    next_fire_at = models.DateTimeField(null=True, blank=True)
    last_fired_at = models.DateTimeField(null=True, blank=True)
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
        indexes = (
            # The firing job: unpaused schedules whose tick is due.
            models.Index(fields=["paused", "next_fire_at"], name="schedule_due"),
        )
        constraints = (
            models.CheckConstraint(
                condition=Q(kind__in=["cron", "interval"]), name="schedule_kind_valid"
            ),
            # Exactly one way of telling time, matching the kind.
            models.CheckConstraint(
                condition=(Q(kind="cron") & ~Q(cron="") & Q(interval_seconds__isnull=True))
                | (
                    Q(kind="interval")
                    & Q(cron="")
                    & Q(interval_seconds__isnull=False)  # NULL would pass the comparison
                    & Q(interval_seconds__gte=1)
                ),
                name="schedule_cron_xor_interval",
            ),
        )

    def __str__(self) -> str:
        return self.name


class ScheduleTick(models.Model):
    """One tick of a schedule, claimed by whichever process fired it, and its outcome."""

    class Outcome(models.TextChoices):
        STARTED = "started", "Started a run"
        SKIPPED = "skipped", "Skipped: the previous run was still active"
        FAILED = "failed", "Failed to start"

    schedule = models.ForeignKey(Schedule, on_delete=models.CASCADE, related_name="ticks")
    # The moment the tick was due (the cron or interval time), not when it was fired.
    tick_at = models.DateTimeField()
    manual = models.BooleanField(default=False)
    outcome = models.CharField(max_length=8, choices=Outcome.choices)
    run = models.ForeignKey(
        "WorkflowRun", null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    detail = models.TextField(blank=True, default="")
    fired_at = models.DateTimeField(default=timezone.now)

    class Meta:
        indexes = (models.Index(fields=["schedule", "-tick_at"], name="schedule_tick_recent"),)
        constraints = (
            models.UniqueConstraint(
                fields=["schedule", "tick_at"],
                condition=Q(manual=False),
                name="schedule_tick_once",
            ),
        )

    def __str__(self) -> str:
        return f"{self.schedule_id} at {self.tick_at:%Y-%m-%d %H:%M} ({self.outcome})"
