"""Saved views of the runs list: a name for a filter, pinned in the navigation, shareable."""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.utils import timezone

__all__ = ["SavedView"]


class SavedView(models.Model):
    """A runs-list filter (its query string) under a name. Its owner may pin it in the
    navigation; a shared one is listed for everyone who may see runs (each still sees only
    the runs of workflows their role covers)."""

    owner = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="saved_views"
    )
    name = models.CharField(max_length=80)
    query = models.CharField(max_length=1000, blank=True, default="")
    pinned = models.BooleanField(default=False)
    shared = models.BooleanField(default=False)
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        constraints = (
            models.UniqueConstraint(fields=["owner", "name"], name="saved_view_name_per_owner"),
        )
        ordering = ("name",)

    def __str__(self) -> str:
        return self.name
