"""The audit log page (dashboard/web/operations/audit.py): newest first, each row linking to its
run while it exists, filters by actor, action, outcome, run, dates and target text, keyset pages,
admins only, 400 with the message beside the field for filters that cannot mean anything, a
fixed number of queries, and the export as CSV or JSON lines: the filtered rows, streamed,
formulas defused, seals carried."""

from __future__ import annotations

import csv
import datetime as dt
import io
import json
import uuid
from collections.abc import Callable
from typing import Any

import pytest
from asgiref.sync import async_to_sync
from django.test import AsyncRequestFactory, Client
from django.utils import timezone

from dashboard.access import audit_chain
from dashboard.models import AuditEntry, AuditSeal, WorkflowRun
from dashboard.selectors import audit_export
from dashboard.web.operations import audit as views_audit

pytestmark = pytest.mark.django_db

NOW = timezone.now().replace(microsecond=0)


def entry(action: str = "cancel", *, minutes_ago: float = 0, **fields: Any) -> AuditEntry:
    fields.setdefault("actor_name", "dee")
    fields.setdefault("target", f"run {fields.get('run_id') or 'x'}")
    return AuditEntry.objects.create(
        action=action, created_at=NOW - dt.timedelta(minutes=minutes_ago), **fields
    )


def listed(response: Any) -> list[int]:
    return [row.pk for row, _ in response.context["rows"]]


def text(response: Any) -> str:
    return " ".join(response.content.decode().split())


def test_the_log_lists_newest_first_and_links_each_row_to_its_run_while_it_exists(
    admin_role_client: Client, make_run: Callable[..., Any]
) -> None:
    run = make_run()
    gone = uuid.uuid4()
    old = entry("start", minutes_ago=10, run_id=run.pk, workflow_name="squares")
    new = entry(
        "run_pruned", minutes_ago=1, run_id=gone, workflow_name="squares", actor_name="system"
    )

    response = admin_role_client.get("/audit/")

    assert listed(response) == [new.pk, old.pk]
    page = text(response)
    assert f'<a class="run-id" href="/runs/{run.pk}/">{str(run.pk)[:8]}</a>' in page
    assert f'title="{gone}">{str(gone)[:8]}</span> <span class="cell-sub">deleted</span>' in page
    assert "Download CSV" in page


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ({"actor": "ANN"}, ["ann-cancel"]),
        ({"action": "hold"}, ["bob-hold"]),
        ({"outcome": "denied"}, ["eve-denied"]),
        ({"q": "POLICY"}, ["sys-prune"]),
        ({"created_from": "{yesterday}"}, ["ann-cancel", "bob-hold", "eve-denied"]),
        ({"created_to": "{two_days_ago}"}, ["sys-prune"]),
        ({"created_from": "{two_days_ago}", "created_to": "{two_days_ago}"}, ["sys-prune"]),
        ({"run": "{run}"}, ["bob-hold"]),
        ({"action": "hold", "actor": "ann"}, []),
    ],
)
def test_filters_by_actor_action_outcome_target_dates_and_run(
    admin_role_client: Client, query: dict[str, str], expected: list[str]
) -> None:
    run_id = uuid.uuid4()
    names = {
        entry("cancel", actor_name="ann").pk: "ann-cancel",
        entry("hold", actor_name="bob", run_id=run_id, minutes_ago=5).pk: "bob-hold",
        entry(
            "view", actor_name="eve", outcome="denied", target="page /audit/", minutes_ago=9
        ).pk: "eve-denied",
        entry(
            "prune", actor_name="system", target="policy keep-5", minutes_ago=2 * 24 * 60
        ).pk: "sys-prune",
    }
    today = timezone.localdate()
    fill = {
        "yesterday": str(today - dt.timedelta(days=1)),
        "two_days_ago": str((NOW - dt.timedelta(days=2)).date()),
        "run": str(run_id),
    }

    response = admin_role_client.get(
        "/audit/", {key: value.format(**fill) for key, value in query.items()}
    )

    assert response.status_code == 200
    assert [names[pk] for pk in listed(response)] == expected
    if not expected:
        assert "No entry matches these filters" in text(response)


def test_the_log_pages_with_keyset_cursors_that_keep_the_filters(admin_role_client: Client) -> None:
    made = [entry("cancel", minutes_ago=n).pk for n in range(60)]
    entry("hold", minutes_ago=0.5)

    first = admin_role_client.get("/audit/", {"action": "cancel"})
    older = admin_role_client.get(first.context["page"].next_url)
    newer = admin_role_client.get(older.context["page"].previous_url)

    assert listed(first) == made[:50]
    assert "action=cancel" in first.context["page"].next_url
    assert listed(older) == made[50:]
    assert older.context["page"].has_next is False
    assert listed(newer) == made[:50]


def test_a_cursor_no_row_could_have_written_shows_the_first_page(admin_role_client: Client) -> None:
    import base64
    import json

    latest = entry("cancel")
    cursors = [
        json.dumps([NOW.isoformat(), str(10**40)]),
        json.dumps(["0001-01-01T00:00:00+05:00", "3"]),
        "not base64 at all",
    ]
    for raw in cursors:
        cursor = base64.urlsafe_b64encode(raw.encode()).decode().rstrip("=")
        response = admin_role_client.get("/audit/", {"after": cursor})
        assert response.status_code == 200 and listed(response) == [latest.pk]


@pytest.mark.parametrize(
    ("query", "field", "message"),
    [
        ({"run": "not-a-uuid"}, "run", "Not a run id"),
        ({"run": "9" * 5000}, "run", "Ensure this value has at most 36 characters"),
        ({"created_from": "2026-02-30"}, "created_from", "Enter a valid date"),
        ({"created_from": "99999-01-01"}, "created_from", "Enter a valid date"),
        ({"created_to": "9999-12-31"}, "created_to", "Choose a day between 1970 and 9998"),
        ({"created_from": "0001-01-01"}, "created_from", "Choose a day between 1970 and 9998"),
        (
            {"created_from": "2026-03-02", "created_to": "2026-03-01"},
            "created_to",
            "ends before it starts",
        ),
        ({"q": "x" * 201}, "q", "at most 200 characters"),
        ({"q": "nul\x00"}, "q", "Null characters are not allowed"),
        ({"actor": "a\x00"}, "actor", "Null characters are not allowed"),
        ({"outcome": "maybe"}, "outcome", "Select a valid choice"),
    ],
)
def test_filters_that_cannot_mean_anything_answer_400_beside_the_field_with_no_rows(
    admin_role_client: Client, query: dict[str, str], field: str, message: str
) -> None:
    entry("cancel")

    for url in ("/audit/", "/audit/export/"):
        response = admin_role_client.get(url, query)
        assert response.status_code == 400
        assert field in response.context["form"].errors
        assert message in text(response) and "These filters cannot be applied" in text(response)
        assert "data-audit-entry" not in text(response)


def test_a_lone_surrogate_in_the_query_arrives_replaced_and_matches_nothing(
    admin_role_client: Client,
) -> None:
    entry("cancel", target="run 1")
    response = admin_role_client.get("/audit/?q=%ED%A0%80&actor=%ED%A0%80")
    assert response.status_code == 200 and listed(response) == []


@pytest.mark.parametrize("role", ["Viewer", "Operator", "Approver"])
@pytest.mark.parametrize("url", ["/audit/", "/audit/export/"])
def test_the_log_is_refused_to_other_roles_with_a_message_and_recorded(
    client_as: Callable[..., Client], role: str, url: str
) -> None:
    entry("cancel", target="secret target")

    response = client_as(role).get(url)

    assert response.status_code == 403
    assert "The audit log is for admins" in text(response) and "secret target" not in text(response)
    refusal = AuditEntry.objects.filter(outcome="denied").get()
    assert (refusal.action, refusal.target) == ("view", f"page {url}")


def test_the_page_takes_the_same_queries_for_one_row_as_for_a_full_page(
    admin_role_client: Client, make_run: Callable[..., Any], django_assert_max_num_queries: Any
) -> None:
    entry("start", run_id=make_run().pk)
    # +1 for the saved views pinned in the navigation.
    with django_assert_max_num_queries(7) as few:
        admin_role_client.get("/audit/")
    for n in range(80):
        entry("start", run_id=make_run().pk if n % 2 else uuid.uuid4(), minutes_ago=n)
    with django_assert_max_num_queries(len(few.captured_queries)):
        page = admin_role_client.get("/audit/")
    assert len(listed(page)) == 50


# --------------------------------------------------------------------------------- export


def rows_of(content: bytes) -> list[list[str]]:
    return list(csv.reader(io.StringIO(content.decode("utf-8"))))


def test_the_export_streams_every_filtered_row_newest_first_as_csv(
    admin_role_client: Client,
) -> None:
    run_id = uuid.uuid4()
    for n in range(1200):  # more than two batches
        entry("cancel", minutes_ago=n, run_id=run_id, workflow_name="squares", details={"n": n})
    entry("hold", minutes_ago=0.5)

    response = admin_role_client.get("/audit/export/", {"action": "cancel"})

    assert response.status_code == 200 and response.streaming
    assert response["Content-Type"] == "text/csv; charset=utf-8"
    assert response["Content-Disposition"].startswith('attachment; filename="audit-')
    rows = rows_of(b"".join(response.streaming_content))
    assert rows[0] == list(audit_export.COLUMNS)
    assert len(rows) == 1 + 1200
    assert rows[1][2:5] == ["cancel", "ok", str(run_id)]
    assert [row[11] for row in rows[1:4]] == ['{"n": 0}', '{"n": 1}', '{"n": 2}']


def test_the_export_defuses_cells_a_spreadsheet_would_run_as_formulas(
    admin_role_client: Client,
) -> None:
    for target in ('=HYPERLINK("http://evil")', "+1+1", "-2+3", "@SUM(A1)", "\tx", "plain - text"):
        entry("cancel", target=target, actor_name="=cmd|' /C calc'!A0")

    rows = rows_of(
        b"".join(admin_role_client.get("/audit/export/", {"action": "cancel"}).streaming_content)
    )[1:]

    targets = sorted(row[6] for row in rows)
    assert targets == sorted(
        ['\'=HYPERLINK("http://evil")', "'+1+1", "'-2+3", "'@SUM(A1)", "'\tx", "plain - text"]
    )
    assert {row[1] for row in rows} == {"'=cmd|' /C calc'!A0"}


def test_an_export_is_itself_recorded_with_its_filters(admin_role_client: Client) -> None:
    entry("cancel")
    response = admin_role_client.get("/audit/export/", {"action": "cancel", "outcome": "ok"})
    b"".join(response.streaming_content)

    export = AuditEntry.objects.get(action="audit_export")
    assert (export.actor_name, export.outcome) == ("ada", "ok")
    assert export.details == {"filters": {"action": "cancel", "outcome": "ok"}, "format": "csv"}


def test_under_asgi_the_export_is_an_async_stream_read_a_batch_at_a_time(
    admin_role_client: Client,
) -> None:
    # Daphne serves a sync iterator only by reading it whole first (and warning, which the
    # suite makes an error); the view hands ASGI an async one.
    for n in range(3):
        entry("cancel", minutes_ago=n, target=f"run {n}")
    request = AsyncRequestFactory().get("/audit/export/", {"action": "cancel"})
    request.user = admin_role_client.user  # type: ignore[attr-defined]

    response = views_audit.audit_export(request)

    assert response.is_async  # type: ignore[attr-defined]

    async def read() -> bytes:
        return b"".join([chunk async for chunk in response])  # type: ignore[attr-defined]

    rows = rows_of(async_to_sync(read)())
    assert [row[6] for row in rows[1:]] == ["run 0", "run 1", "run 2"]


def test_the_runs_a_row_names_are_kept_after_they_are_deleted(
    admin_role_client: Client, make_run: Callable[..., Any]
) -> None:
    run = make_run()
    entry("start", run_id=run.pk)
    WorkflowRun.objects.filter(pk=run.pk).delete()

    rows = rows_of(b"".join(admin_role_client.get("/audit/export/").streaming_content))

    # The newest row is the export itself: taking the log out is on the record too.
    assert [row[2] for row in rows[1:]] == ["audit_export", "start"]
    assert rows[2][4] == str(run.pk)


def test_the_export_as_json_lines_carries_every_field_and_each_entrys_seal(
    admin_role_client: Client,
) -> None:
    sealed = entry("cancel", target="run 1", details={"reason": "dup"}, workflow_name="refund")
    audit_chain.seal_pending()
    unsealed = entry("retry", target="run 2", workflow_name="refund")

    response = admin_role_client.get("/audit/export/", {"format": "jsonl", "workflow": "refund"})

    assert response["Content-Type"] == "application/jsonl; charset=utf-8"
    assert response["Content-Disposition"].endswith('.jsonl"')
    lines = [json.loads(line) for line in b"".join(response.streaming_content).splitlines()]
    assert [line["id"] for line in lines] == [unsealed.pk, sealed.pk]
    assert lines[0]["seal"] is None
    seal = AuditSeal.objects.get(entry_id=sealed.pk)
    assert lines[1]["seal"] == {"seq": seal.seq, "digest": seal.digest}
    assert lines[1] | {"seal": None, "created_at": None} == {
        "id": sealed.pk,
        "created_at": None,
        "actor": sealed.actor_name,
        "actor_id": sealed.actor_id,
        "action": "cancel",
        "outcome": "ok",
        "run_id": None,
        "workflow": "refund",
        "target": "run 1",
        "checkpoint_before": "",
        "checkpoint_after": "",
        "ip": None,
        "user_agent": "",
        "details": {"reason": "dup"},
        "seal": None,
    }
    export = AuditEntry.objects.get(action="audit_export")
    assert export.details == {"filters": {"workflow": "refund"}, "format": "jsonl"}


def test_the_workflow_filter_narrows_the_page_and_an_unknown_format_is_refused(
    admin_role_client: Client,
) -> None:
    kept = entry("cancel", workflow_name="refund")
    entry("cancel", workflow_name="invoice")
    page = admin_role_client.get("/audit/", {"workflow": "refund"})
    assert listed(page) == [kept.pk]
    assert "format=jsonl" in text(page) and "workflow=refund" in text(page)

    refused = admin_role_client.get("/audit/export/", {"format": "xml"})
    assert refused.status_code == 400 and "Export as csv or jsonl." in text(refused)
    assert not AuditEntry.objects.filter(action="audit_export").exists()
