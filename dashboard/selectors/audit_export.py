"""The audit log as an auditor takes it away: CSV for a spreadsheet, JSON lines for a script,
the same rows the page's filters match, newest first, streamed a batch at a time.

Each JSON line is one entry with every field and its seal (``seq`` and ``digest`` of its link in
the hash chain, ``dashboard.access.audit_chain``; null until the job seals it), so that an
auditor can check the export against ``manage.py audit_verify``'s latest digest. CSV cells that a
spreadsheet would run as a formula are defused (OWASP "CSV injection").
"""

from __future__ import annotations

import csv
import dataclasses
import json
from collections.abc import AsyncIterator, Iterator
from typing import Any

from asgiref.sync import sync_to_async
from django.utils import timezone

from dashboard.models import AuditEntry, AuditSeal
from dashboard.selectors.audit_log import AuditFilters, audit_log_batches

__all__ = ["EXPORT_FORMATS", "Download", "async_lines", "defuse", "download"]

EXPORT_BATCH = 500
# Format -> (content type, file extension).
EXPORT_FORMATS = {
    "csv": ("text/csv; charset=utf-8", "csv"),
    "jsonl": ("application/jsonl; charset=utf-8", "jsonl"),
}
COLUMNS = (
    "created_at",
    "actor",
    "action",
    "outcome",
    "run_id",
    "workflow",
    "target",
    "checkpoint_before",
    "checkpoint_after",
    "ip",
    "user_agent",
    "details",
)
# A spreadsheet runs a cell starting with one of these as a formula; a leading apostrophe makes
# it text. Tab and carriage return start formulas in some too.
FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")


def defuse(cell: str) -> str:
    return f"'{cell}" if cell.startswith(FORMULA_STARTS) else cell


def _json(value: object) -> str:
    return json.dumps(value, ensure_ascii=False, sort_keys=True, default=str)


class _Line:
    """The file ``csv.writer`` writes to: it hands back each line instead of storing it."""

    def write(self, text: str) -> str:
        return text


def _cells(entry: AuditEntry) -> list[str]:
    return [
        entry.created_at.isoformat(),
        entry.actor_name,
        entry.action,
        entry.outcome,
        str(entry.run_id or ""),
        entry.workflow_name,
        entry.target,
        entry.checkpoint_before,
        entry.checkpoint_after,
        entry.ip or "",
        entry.user_agent,
        _json(entry.details) if entry.details else "",
    ]


def _csv_lines(filters: AuditFilters) -> Iterator[bytes]:
    writer = csv.writer(_Line())
    yield writer.writerow(COLUMNS).encode()
    for batch in audit_log_batches(filters, batch_size=EXPORT_BATCH):
        lines = [writer.writerow([defuse(cell) for cell in _cells(entry)]) for entry in batch]
        yield "".join(lines).encode("utf-8", errors="replace")


def _record(entry: AuditEntry, seal: AuditSeal | None) -> dict[str, Any]:
    return {
        "id": entry.pk,
        "created_at": entry.created_at.isoformat(),
        "actor": entry.actor_name,
        "actor_id": entry.actor_id,
        "action": entry.action,
        "outcome": entry.outcome,
        "run_id": str(entry.run_id) if entry.run_id else None,
        "workflow": entry.workflow_name,
        "target": entry.target,
        "checkpoint_before": entry.checkpoint_before,
        "checkpoint_after": entry.checkpoint_after,
        "ip": entry.ip,
        "user_agent": entry.user_agent,
        "details": entry.details,
        "seal": {"seq": seal.seq, "digest": seal.digest} if seal else None,
    }


def _jsonl_lines(filters: AuditFilters) -> Iterator[bytes]:
    for batch in audit_log_batches(filters, batch_size=EXPORT_BATCH):
        seals = {
            seal.entry_id: seal
            for seal in AuditSeal.objects.filter(entry_id__in=[entry.pk for entry in batch])
        }
        lines = [
            json.dumps(_record(entry, seals.get(entry.pk)), ensure_ascii=False, sort_keys=True)
            for entry in batch
        ]
        yield ("\n".join(lines) + "\n").encode("utf-8", errors="replace")


@dataclasses.dataclass(frozen=True)
class Download:
    lines: Iterator[bytes]  # a batch of entries at a time
    content_type: str
    filename: str


def download(filters: AuditFilters, export_format: str) -> Download:
    """The export to stream. ``export_format``: a key of ``EXPORT_FORMATS`` (checked by the
    caller, which answers a bad one with its own error)."""
    content_type, extension = EXPORT_FORMATS[export_format]
    lines = _jsonl_lines(filters) if export_format == "jsonl" else _csv_lines(filters)
    stamp = timezone.now().strftime("%Y%m%d-%H%M%S")
    return Download(lines, content_type, f"audit-{stamp}.{extension}")


async def async_lines(lines: Iterator[bytes]) -> AsyncIterator[bytes]:
    """``lines`` for a streaming response under ASGI, each batch read by Django's sync thread
    (thread_sensitive), where the view ran: Daphne would read a sync iterator whole into
    memory first."""
    step = sync_to_async(_next, thread_sensitive=True)
    while (chunk := await step(lines)) is not None:
        yield chunk


def _next(lines: Iterator[bytes]) -> bytes | None:
    return next(lines, None)
