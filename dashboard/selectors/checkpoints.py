"""Checkpoints of a run: rows for lists, one checkpoint, its decoded document."""

from __future__ import annotations

import datetime as dt
import uuid
from typing import Any, TypedDict, cast

from django.db.models import F, QuerySet

from dashboard.access import masking
from dashboard.checkpoints import documents
from dashboard.models import (
    Checkpoint,
    WorkflowRun,
)
from workflows import StepRecord, read_steps

__all__ = [
    "CHECKPOINT_ROW_FIELDS",
    "CheckpointRow",
    "checkpoint_document",
    "checkpoint_get",
    "checkpoint_get_any",
    "checkpoint_steps",
    "checkpoint_superstep",
    "masked_checkpoint",
    "run_checkpoint_rows",
    "run_checkpoints",
]


def run_checkpoints(run: WorkflowRun) -> QuerySet[Checkpoint]:
    return Checkpoint.objects.filter(run=run).order_by("created_at").defer("document")


CHECKPOINT_ROW_FIELDS = (
    "checkpoint_id",
    "engine_run_id",
    "superstep",
    "previous_checkpoint_id",
    "graph_signature_hash",
    "size_bytes",
    "pending_request_count",
    "created_at",
)


class CheckpointRow(TypedDict):
    """A checkpoint without its document: ``CHECKPOINT_ROW_FIELDS`` and the ``kind``."""

    checkpoint_id: str
    engine_run_id: str
    superstep: int
    previous_checkpoint_id: str | None
    graph_signature_hash: str
    size_bytes: int
    pending_request_count: int
    created_at: dt.datetime
    kind: str | None  # entry, superstep, responses, fork; None when the engine recorded none


def run_checkpoint_rows(run_id: uuid.UUID) -> list[CheckpointRow]:
    """Every checkpoint of a run without its document (plus the kind the engine recorded:
    entry, superstep, responses, fork), in the order they were written."""
    rows = (
        Checkpoint.objects.filter(run_id=run_id)
        .order_by("created_at", "checkpoint_id")
        .values(*CHECKPOINT_ROW_FIELDS, kind=F("document__metadata__kind"))
    )
    return cast(list[CheckpointRow], list(rows))  # values() gives exactly these keys


def checkpoint_get(run_id: uuid.UUID, checkpoint_id: str) -> Checkpoint | None:
    if not isinstance(checkpoint_id, str) or not 0 < len(checkpoint_id) <= 128:
        return None
    if "\x00" in checkpoint_id:
        return None
    return Checkpoint.objects.filter(run_id=run_id, checkpoint_id=checkpoint_id).first()


def checkpoint_get_any(checkpoint_id: str) -> Checkpoint | None:
    """A checkpoint by id whatever run it belongs to (a fork's origin is in its parent)."""
    if not isinstance(checkpoint_id, str) or not 0 < len(checkpoint_id) <= 128:
        return None
    if "\x00" in checkpoint_id:
        return None
    return Checkpoint.objects.filter(checkpoint_id=checkpoint_id).first()


def checkpoint_superstep(checkpoint_id: str | None) -> int | None:
    if not checkpoint_id:
        return None
    return (
        Checkpoint.objects.filter(checkpoint_id=checkpoint_id)
        .values_list("superstep", flat=True)
        .first()
    )


def checkpoint_document(checkpoint: Checkpoint, run: WorkflowRun | None = None) -> dict[str, Any]:
    """The checkpoint's whole document in the codec's JSON (``checkpoints.documents``), with
    its sensitive fields masked (``access.masking``): what pages and the API show. ``run`` is
    the checkpoint's run when the caller has it loaded already."""
    return masked_checkpoint(checkpoint, run)[0]


def masked_checkpoint(
    checkpoint: Checkpoint, run: WorkflowRun | None = None
) -> tuple[dict[str, Any], list[masking.Masked]]:
    """``checkpoint_document`` and the fields it shows masked."""
    masker = masking.for_run(run if run is not None else checkpoint.run)
    document = masker.document(documents.checkpoint_document(checkpoint))
    return document, masker.found


def checkpoint_steps(checkpoint: Checkpoint, run: WorkflowRun | None = None) -> list[StepRecord]:
    """A functional run's step calls at this checkpoint, in call order, each with its saved
    result in the codec's JSON (nothing decoded: it reads when the step's types are gone).
    Empty for a graph run's checkpoint."""
    state = checkpoint_document(checkpoint, run).get("state")
    return read_steps(state if isinstance(state, dict) else {})
