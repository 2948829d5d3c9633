"""Checkpoints as the engine saved them, and the content-addressed blobs they share.

Written only by ``dashboard.checkpoints`` (the storage and its write path); retention removes
them through ``dashboard.services.retention``.
"""

from __future__ import annotations

from django.db import models
from django.db.models import F, Q
from django.utils import timezone

from .runs import ENGINE_ID_LENGTH, WorkflowRun

__all__ = ["Checkpoint", "CheckpointBlob", "CheckpointBlobUse"]


class CheckpointBlob(models.Model):
    """Content-addressed JSON text: a value that did not change between checkpoints is stored once.

    ``digest`` is a hash of the canonical JSON (e.g. ``sha256:<hex>``); identical content maps
    to the same row, so writers use ``get_or_create``/``bulk_create(ignore_conflicts=True)``.
    """

    digest = models.CharField(max_length=ENGINE_ID_LENGTH, primary_key=True)
    # The value's JSON text, exactly as its digest was computed: the storage parses it; the
    # database never looks inside, so it is not made to parse it into jsonb on every write
    # (the bulk of a 64 KiB save's cost on the server).
    data = models.TextField()
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
    (``dashboard.checkpoints.blob_uses``).
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
    previous_checkpoint_id = models.CharField(  # noqa: DJ001 - None for a lineage's first
        max_length=ENGINE_ID_LENGTH, null=True, blank=True
    )
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
