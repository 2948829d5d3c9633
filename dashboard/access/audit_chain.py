"""The audit log's hash chain: what makes an entry changed or deleted behind the application's
back show, even to someone who holds the database.

The application only ever inserts entries, and on PostgreSQL a trigger refuses UPDATE and
DELETE. That stops the application and a careless script, not an owner of the database, who can
drop the trigger. So every entry is also sealed: ``seal_pending`` (a periodic job, every few
seconds) gives it the next link of a chain, ``AuditSeal(seq, entry_id, digest)``, whose digest is
SHA-256 of the previous link's digest and of the entry's content in one canonical form. Changing
an entry's content breaks its link; deleting an entry leaves a seal with nothing to match;
deleting a seal leaves a gap in ``seq``; rewriting the whole chain changes the latest digest,
which ``manage.py audit_verify`` prints for an auditor to keep outside the database.

Seals are kept apart from the entries so that sealing never updates an entry, and the chain
runs in the order entries were sealed: ids are handed out before their transactions commit, so
id order is not commit order, and a late commit with a lower id is sealed when it shows up.
Sealing takes a lock (an advisory lock on PostgreSQL; SQLite has one writer), so two processes
never hand out the same link.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import hashlib
import json
from collections.abc import Iterator

from django.db import connection, transaction
from django.db.models import Exists, OuterRef

from dashboard.models import AuditEntry, AuditSeal

__all__ = ["GENESIS", "Verdict", "digest_of", "seal_pending", "verify"]

GENESIS = "0" * 64  # the digest before the first link
# A transaction that inserted an entry commits within this many ids of the newest sealed one:
# the window searched for entries that committed late. Far wider than the writers in flight.
LATE_COMMIT_WINDOW = 10_000
SEAL_BATCH = 2_000
_LOCK_KEY = 0x5375_7065_7253  # "SupeRS": this job's advisory lock on PostgreSQL
# An entry older than this without a seal is reported: the job seals within seconds.
UNSEALED_GRACE = dt.timedelta(minutes=10)


def _content(entry: AuditEntry) -> bytes:
    """The entry as sealed: every field, in one canonical JSON form."""
    fields = {
        "id": entry.pk,
        "created_at": entry.created_at.astimezone(dt.UTC).isoformat(timespec="microseconds"),
        "actor_id": entry.actor_id,
        "actor_name": entry.actor_name,
        "action": entry.action,
        "outcome": entry.outcome,
        "run_id": str(entry.run_id) if entry.run_id else None,
        "workflow_name": entry.workflow_name,
        "target": entry.target,
        "checkpoint_before": entry.checkpoint_before,
        "checkpoint_after": entry.checkpoint_after,
        "details": entry.details,
        "ip": entry.ip,
        "user_agent": entry.user_agent,
    }
    text = json.dumps(fields, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    return text.encode("utf-8", "surrogatepass")


def digest_of(previous: str, entry: AuditEntry) -> str:
    return hashlib.sha256(previous.encode("ascii") + b"\n" + _content(entry)).hexdigest()


def _lock() -> None:
    if connection.vendor == "postgresql":
        with connection.cursor() as cursor:
            cursor.execute("SELECT pg_advisory_xact_lock(%s)", [_LOCK_KEY])


def seal_pending(batch: int = SEAL_BATCH) -> int:
    """Seal the entries that have no seal yet, oldest id first; how many were sealed."""
    with transaction.atomic():
        _lock()
        last = AuditSeal.objects.order_by("-seq").first()
        seq, previous = (last.seq, last.digest) if last else (0, GENESIS)
        newest = AuditSeal.objects.order_by("-entry_id").values_list("entry_id", flat=True)
        low = max(0, (newest.first() or 0) - LATE_COMMIT_WINDOW)
        unsealed = (
            AuditEntry.objects.filter(pk__gt=low)
            .filter(~Exists(AuditSeal.objects.filter(entry_id=OuterRef("pk"))))
            .order_by("pk")[:batch]
        )
        seals = []
        for entry in unsealed:
            seq += 1
            previous = digest_of(previous, entry)
            seals.append(AuditSeal(seq=seq, entry_id=entry.pk, digest=previous))
        AuditSeal.objects.bulk_create(seals)
        return len(seals)


@dataclasses.dataclass(frozen=True, slots=True)
class Verdict:
    """What ``verify`` found: how many links held, and the first that did not (if any)."""

    checked: int
    latest_digest: str
    broken_seq: int | None = None
    broken_entry: int | None = None
    reason: str = ""
    unsealed: int = 0  # entries older than UNSEALED_GRACE that no seal covers

    @property
    def intact(self) -> bool:
        return self.broken_seq is None and not self.unsealed


def _seals(chunk: int = 2_000) -> Iterator[list[AuditSeal]]:
    after = 0
    while True:
        seals = list(AuditSeal.objects.filter(seq__gt=after).order_by("seq")[:chunk])
        if not seals:
            return
        yield seals
        after = seals[-1].seq


def verify(*, now: dt.datetime | None = None) -> Verdict:
    """Walk the chain from its first link and report the first broken one."""
    previous, expected, checked = GENESIS, 1, 0
    for seals in _seals():
        entries = AuditEntry.objects.in_bulk([seal.entry_id for seal in seals])
        for seal in seals:
            broken = None
            if seal.seq != expected:
                broken = f"seals {expected} to {seal.seq - 1} are missing (deleted)"
            elif (entry := entries.get(seal.entry_id)) is None:
                broken = f"entry {seal.entry_id} is missing (deleted after it was sealed)"
            elif digest_of(previous, entry) != seal.digest:
                broken = (
                    f"entry {seal.entry_id} does not match its seal: the entry or the seal"
                    " was changed after it was sealed"
                )
            if broken:
                return Verdict(checked, previous, seal.seq, seal.entry_id, broken)
            previous, expected, checked = seal.digest, expected + 1, checked + 1
    moment = now or dt.datetime.now(dt.UTC)
    unsealed = (
        AuditEntry.objects.filter(created_at__lt=moment - UNSEALED_GRACE)
        .filter(~Exists(AuditSeal.objects.filter(entry_id=OuterRef("pk"))))
        .count()
    )
    reason = f"{unsealed} entries older than 10 minutes have no seal" if unsealed else ""
    return Verdict(checked, previous, reason=reason, unsealed=unsealed)
