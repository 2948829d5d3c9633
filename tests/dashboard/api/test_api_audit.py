"""The JSON API's audit export (dashboard/api/audit.py): Admins only, the page's filters, JSON
lines with each entry's seal or CSV, streamed, and itself recorded in the log."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest
from django.test import Client

from dashboard.access import audit, audit_chain
from dashboard.access.tokens import create_token
from dashboard.models import AuditEntry, AuditSeal


@pytest.fixture(autouse=True)
def database(services_db: str) -> str:
    return services_db


def bearer(user: Any) -> dict[str, str]:
    return {"Authorization": f"Bearer {create_token(user, 'auditor script')}"}


def lines(response: Any) -> list[dict[str, Any]]:
    return [json.loads(line) for line in b"".join(response.streaming_content).splitlines()]


def test_an_admin_exports_the_filtered_log_as_json_lines_with_seals(
    role_user: Callable[..., Any],
) -> None:
    ada = role_user("ada", "Admin")
    audit.record(ada, "policy_change", target="policy a")
    audit.record(ada, "cancel", target="run 1", details={"reason": "dup"})
    audit_chain.seal_pending()

    answer = Client().get(
        "/api/audit/export", {"action": "cancel", "actor": "ada"}, headers=bearer(ada)
    )

    assert answer.status_code == 200, answer.content
    assert answer["Content-Type"] == "application/jsonl; charset=utf-8"
    [only] = lines(answer)
    assert (only["action"], only["target"], only["details"]) == (
        "cancel",
        "run 1",
        {"reason": "dup"},
    )
    seal = AuditSeal.objects.get(entry_id=only["id"])
    assert only["seal"] == {"seq": seal.seq, "digest": seal.digest}
    recorded = AuditEntry.objects.get(action="audit_export")
    assert recorded.details == {
        "filters": {"actor": "ada", "action": "cancel"},
        "format": "jsonl",
    }


def test_the_export_as_csv_and_a_time_range(role_user: Callable[..., Any]) -> None:
    ada = role_user("ada", "Admin")
    audit.record(ada, "cancel", target="=1+1")
    answer = Client().get(
        "/api/audit/export",
        {"format": "csv", "created_from": "2000-01-01T00:00:00", "created_to": "2999-01-01"},
        headers=bearer(ada),
    )
    assert answer["Content-Type"] == "text/csv; charset=utf-8"
    text = b"".join(answer.streaming_content).decode()
    assert text.splitlines()[0].startswith("created_at,actor,action")
    assert "'=1+1" in text  # defused as on the page


def test_a_non_admin_is_refused_and_the_refusal_recorded(role_user: Callable[..., Any]) -> None:
    ops = role_user("ops", "Operator")
    answer = Client().get("/api/audit/export", headers=bearer(ops))
    assert answer.status_code == 403
    assert answer.json()["error"] == "the audit log is for admins: your role may not read it"
    assert AuditEntry.objects.filter(action="view", outcome=AuditEntry.DENIED).exists()


@pytest.mark.parametrize(
    ("params", "field"),
    [
        ({"format": "xml"}, "format"),
        ({"run": "not-a-uuid"}, "run"),
        ({"actor": "a\x00b"}, "actor"),
        (
            {"created_from": "2026-02-01T00:00:00", "created_to": "2026-01-01T00:00:00"},
            "created_to",
        ),
    ],
)
def test_bad_filters_are_a_400_naming_the_field(
    role_user: Callable[..., Any], params: dict[str, str], field: str
) -> None:
    ada = role_user("ada", "Admin")
    answer = Client().get("/api/audit/export", params, headers=bearer(ada))
    assert answer.status_code == 400, answer.content
    assert field in answer.json()["errors"]
    assert not AuditEntry.objects.filter(action="audit_export").exists()
