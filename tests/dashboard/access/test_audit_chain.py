"""The audit log's hash chain (dashboard/access/audit_chain.py, ``manage.py audit_verify``): each
entry sealed once, in one gapless chain; an entry changed or deleted behind the application's
back, a seal removed, an entry left unsealed, each reported as the first broken link. On
PostgreSQL the seals are append-only like the entries; the tests that tamper do so as an owner of
the database would, by switching the trigger off first."""

from __future__ import annotations

import datetime as dt
import io
from typing import Any

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError
from django.db import connection, transaction
from django.db.utils import DatabaseError
from django.utils import timezone

from dashboard.access import audit, audit_chain
from dashboard.models import AuditEntry, AuditLogIsAppendOnly, AuditSeal


@pytest.fixture(autouse=True)
def database(services_db: str) -> str:
    return services_db


def entries(n: int) -> list[AuditEntry]:
    return [
        audit.record(None, "policy_change", target=f"policy {i}", details={"n": i})
        for i in range(n)
    ]


def sql(statement: str, *params: Any) -> None:
    """As someone holding the database: with the append-only triggers off (PostgreSQL)."""
    with connection.cursor() as cursor:
        if connection.vendor == "postgresql":
            cursor.execute("ALTER TABLE dashboard_auditentry DISABLE TRIGGER USER")
            cursor.execute("ALTER TABLE dashboard_auditseal DISABLE TRIGGER USER")
        cursor.execute(statement, list(params))


def verify_command() -> str:
    out = io.StringIO()
    call_command("audit_verify", stdout=out)
    return out.getvalue()


def test_entries_are_sealed_once_in_id_order_and_the_chain_holds() -> None:
    written = entries(5)

    assert audit_chain.seal_pending() == 5
    assert audit_chain.seal_pending() == 0

    seals = list(AuditSeal.objects.order_by("seq"))
    assert [(s.seq, s.entry_id) for s in seals] == [(i + 1, e.pk) for i, e in enumerate(written)]
    verdict = audit_chain.verify()
    assert verdict.intact and verdict.checked == 5 and verdict.latest_digest == seals[-1].digest
    assert verify_command().strip() == (
        f"the audit chain holds: 5 entries; latest digest {seals[-1].digest}"
    )


def test_each_link_depends_on_the_one_before() -> None:
    first, second = entries(2)
    audit_chain.seal_pending()
    seal_1, seal_2 = AuditSeal.objects.order_by("seq")
    assert seal_1.digest == audit_chain.digest_of(audit_chain.GENESIS, first)
    assert seal_2.digest == audit_chain.digest_of(seal_1.digest, second)
    assert seal_2.digest != audit_chain.digest_of(audit_chain.GENESIS, second)


def test_an_entry_changed_behind_the_applications_back_is_the_first_broken_link() -> None:
    written = entries(4)
    audit_chain.seal_pending()
    sql(
        "UPDATE dashboard_auditentry SET target = %s WHERE id = %s", "nothing to see", written[2].pk
    )

    verdict = audit_chain.verify()

    assert (verdict.broken_seq, verdict.broken_entry, verdict.checked) == (3, written[2].pk, 2)
    assert "does not match its seal" in verdict.reason
    with pytest.raises(CommandError, match=f"broken at link 3: entry {written[2].pk} does not"):
        verify_command()


def test_a_deleted_entry_and_a_deleted_seal_are_reported() -> None:
    written = entries(4)
    audit_chain.seal_pending()
    sql("DELETE FROM dashboard_auditentry WHERE id = %s", written[1].pk)
    assert "is missing (deleted after it was sealed)" in audit_chain.verify().reason

    sql("DELETE FROM dashboard_auditseal WHERE seq IN (2, 3)")
    verdict = audit_chain.verify()
    assert verdict.broken_seq == 4 and verdict.reason == "seals 2 to 3 are missing (deleted)"


def test_a_seal_rewritten_to_match_a_changed_entry_breaks_the_next_link() -> None:
    written = entries(3)
    audit_chain.seal_pending()
    sql("UPDATE dashboard_auditentry SET action = 'view' WHERE id = %s", written[0].pk)
    changed = AuditEntry.objects.get(pk=written[0].pk)
    forged = audit_chain.digest_of(audit_chain.GENESIS, changed)
    sql("UPDATE dashboard_auditseal SET digest = %s WHERE seq = 1", forged)

    verdict = audit_chain.verify()

    assert verdict.broken_seq == 2  # the forger would have to rewrite every later link too


def test_an_entry_that_committed_after_a_later_one_was_sealed_is_sealed_next() -> None:
    late_id = entries(1)[0].pk + 50  # a lower id than the next one, committed after it
    later = AuditEntry.objects.create(id=late_id + 1, action="view", target="later")
    audit_chain.seal_pending()
    late = AuditEntry.objects.create(id=late_id, action="view", target="late")

    assert audit_chain.seal_pending() == 1

    assert [s.entry_id for s in AuditSeal.objects.order_by("seq")][-2:] == [later.pk, late.pk]
    assert audit_chain.verify().intact


def test_an_old_entry_without_a_seal_is_reported() -> None:
    entries(2)
    audit_chain.seal_pending()
    entries(1)

    assert audit_chain.verify().intact  # just written: the job seals it within seconds
    verdict = audit_chain.verify(now=timezone.now() + dt.timedelta(minutes=11))
    assert verdict.unsealed == 1 and not verdict.intact
    assert "1 entries older than 10 minutes have no seal" in verdict.reason


def test_the_verify_command_seals_first_when_asked() -> None:
    entries(3)
    out = io.StringIO()
    call_command("audit_verify", "--seal", stdout=out)
    assert out.getvalue().startswith("the audit chain holds: 3 entries")


def test_seals_cannot_be_changed_or_deleted_and_on_postgresql_not_even_by_sql() -> None:
    entries(1)
    audit_chain.seal_pending()
    seal = AuditSeal.objects.get()
    with pytest.raises(AuditLogIsAppendOnly):
        seal.save()
    with pytest.raises(AuditLogIsAppendOnly):
        AuditSeal.objects.filter(seq=1).update(digest="x")
    with pytest.raises(AuditLogIsAppendOnly):
        AuditSeal.objects.all().delete()
    if connection.vendor == "postgresql":
        for statement in (
            "UPDATE dashboard_auditseal SET digest = 'x' WHERE seq = 1",
            "DELETE FROM dashboard_auditseal WHERE seq = 1",
        ):
            with pytest.raises(DatabaseError, match="append-only"), transaction.atomic():
                connection.cursor().execute(statement)
    assert AuditSeal.objects.get().digest == seal.digest
