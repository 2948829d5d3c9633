"""Helpers every service shares: time, status changes, events, locking, enqueueing."""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable, Mapping
from typing import Any

from django.conf import settings
from django.core.exceptions import ValidationError
from django.db import transaction
from django.utils import timezone

from dashboard import broadcast
from dashboard.access import masking
from dashboard.core.errors import NotFound
from dashboard.core.types import RunId
from dashboard.models import TERMINAL_RUN_STATUSES, RunEvent, RunStatus, WorkflowRun
from dashboard.services import dispatch

ACTIVE_STATUSES = (RunStatus.QUEUED, RunStatus.RUNNING)


def now() -> dt.datetime:
    return timezone.now()


def lease_seconds() -> int:
    return int(settings.SUPERSTEP_LEASE_SECONDS)


def record_events(run: WorkflowRun, events: Iterable[Mapping[str, Any]]) -> list[RunEvent]:
    """Append events to a run with gapless sequence numbers; the caller holds the run's row
    lock (``select_for_update``) inside a transaction. Broadcast happens after commit."""
    rows = []
    seq = run.last_event_seq
    stamp = now()
    # The log is shown, streamed and exported as it is stored, so sensitive fields are masked
    # before it is written: the checkpoints keep the values (and reveal them, audited).
    masker = masking.for_run(run)
    for event in events:
        seq += 1
        shown = masking.masked_event(masker, event) if masker.active else event
        data = {k: v for k, v in shown.items() if k != "type"}
        rows.append(
            RunEvent(run=run, seq=seq, type=str(event["type"])[:100], data=data, created_at=stamp)
        )
    if not rows:
        return []
    RunEvent.objects.bulk_create(rows)
    run.last_event_seq = seq
    WorkflowRun.objects.filter(pk=run.pk).update(last_event_seq=seq)
    payload = [broadcast.event_payload(row) for row in rows]
    transaction.on_commit(lambda: broadcast.broadcast_run_events(run.pk, payload), robust=True)
    return rows


def locked_run(run_id: RunId) -> WorkflowRun:
    try:
        return WorkflowRun.objects.select_for_update().get(pk=run_id)
    except (WorkflowRun.DoesNotExist, ValidationError):
        raise NotFound(f"no run with id {run_id}") from None


def set_status(run: WorkflowRun, status: str, **fields: Any) -> None:
    run.status = status
    if status in TERMINAL_RUN_STATUSES:
        run.finished_at = now()
    else:
        run.finished_at = None
    for key, value in fields.items():
        setattr(run, key, value)


def enqueue(run: WorkflowRun) -> None:
    dispatch.enqueue_run(str(run.pk))
    transaction.on_commit(lambda: broadcast.broadcast_run_changed(run.pk), robust=True)
