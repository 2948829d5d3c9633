"""Roles (dashboard/migrations/0003 + access/authz.py) enforced everywhere: the JSON API, the
pages, the websockets and the admin, with every decision and every refusal in the audit log,
and an audit log nobody can rewrite (reliability.md R19).

The matrix: every action × anonymous, a user without a role, Viewer, Operator, Approver and
Admin. Each cell prepares its target with real runs (the embedded worker), makes one attempt
and counts the audit entries that attempt wrote:

* allowed: the success status and exactly one ``ok`` entry for the action (reads write none);
* refused by role: 403 and exactly one ``denied`` entry for the action;
* no role at all: 403 and one ``denied`` ``view`` entry (the API refuses before the action);
* anonymous: 401 (API) / login redirect (pages) / close 4401 (websocket) and *no* entry:
  unauthenticated traffic is not an operator action, and logging it would let anyone grow an
  append-only table.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable
from typing import Any

import pytest
from asgiref.sync import sync_to_async
from channels.testing import WebsocketCommunicator
from django.contrib.auth.models import AnonymousUser, User
from django.db import connections, transaction
from django.db.utils import DatabaseError
from django.test import Client

from dashboard import services
from dashboard.config.asgi import application
from dashboard.execution import embedded
from dashboard.models import (
    ApprovalRequest,
    ApprovalStatus,
    AuditEntry,
    AuditLogIsAppendOnly,
    RetentionPolicy,
    RunStatus,
    WorkflowRun,
)

RoleUser = Callable[..., Any]

ROLES = ["anonymous", "no-role", "Viewer", "Operator", "Approver", "Admin"]
READERS = {"Viewer", "Operator", "Approver", "Admin"}
ALLOWED: dict[str, set[str]] = {
    "view": READERS,
    "start": {"Operator", "Admin"},
    "resume": {"Operator", "Admin"},
    "fork": {"Operator", "Admin"},
    "cancel": {"Operator", "Admin"},
    "retry": {"Operator", "Admin"},
    "approve": {"Approver", "Admin"},
    "reject": {"Approver", "Admin"},
    "claim": {"Approver", "Admin"},
    "hold": {"Admin"},
    "prune": {"Admin"},
    "policy_change": {"Admin"},
}


def test_the_matrix_matches_the_role_permissions_services_check(
    role_user: RoleUser, db: None
) -> None:
    users = {role: role_user(role.lower(), role) for role in READERS}
    for action, allowed in ALLOWED.items():
        assert {role for role, user in users.items() if services.can(user, action)} == allowed, (
            action
        )
    assert not any(services.can(AnonymousUser(), action) for action in ALLOWED)
    nobody = role_user("nobody")
    assert not any(services.can(nobody, action) for action in ALLOWED)


# ------------------------------------------------------------------------ targets to act on


def settle() -> None:
    assert embedded.wait_for_background_tasks(60), "background work did not finish within 60 s"


def start(name: str, **data: Any) -> WorkflowRun:
    run = services.run_start(workflow_name=name, input={**data, "work_ms": 0})  # as the system
    settle()
    run.refresh_from_db()
    return run


def paused() -> WorkflowRun:
    run = start("return-replace")
    assert run.status == RunStatus.WAITING
    return run


def completed() -> WorkflowRun:
    run = start("squares", limit=2)
    assert run.status == RunStatus.COMPLETED
    return run


def failed() -> WorkflowRun:
    run = start("fail-at-step", steps=3, fail_at=2, outage_seconds=3600)
    assert run.status == RunStatus.FAILED
    return run


def pending(run: WorkflowRun) -> str:
    return ApprovalRequest.objects.get(run=run, status=ApprovalStatus.PENDING).request_id


@dataclasses.dataclass(frozen=True)
class Attempt:
    method: str
    url: str
    body: dict[str, Any] | None = None


# Each action a person takes says why (the services refuse these without a reason).
WHY = {"reason": "checking the roles"}

API: dict[str, tuple[Callable[[], Attempt], int]] = {
    "view": (lambda: Attempt("get", "/api/runs/"), 200),
    "start": (
        lambda: Attempt(
            "post", "/api/runs/", {"workflow": "squares", "input": {"limit": 2, "work_ms": 0}}
        ),
        201,
    ),
    "resume": (
        lambda: (
            (r := completed())
            and Attempt(
                "post",
                f"/api/runs/{r.pk}/resume/",
                {"checkpoint_id": r.latest_checkpoint_id, **WHY},
            )
        ),
        202,
    ),
    "fork": (
        lambda: (
            (r := completed())
            and Attempt(
                "post", f"/api/runs/{r.pk}/fork/", {"checkpoint_id": r.latest_checkpoint_id, **WHY}
            )
        ),
        201,
    ),
    "cancel": (lambda: Attempt("post", f"/api/runs/{paused().pk}/cancel/", WHY), 200),
    "retry": (lambda: Attempt("post", f"/api/runs/{failed().pk}/retry/", WHY), 202),
    "approve": (
        lambda: Attempt(
            "post",
            f"/api/approvals/{pending(paused())}/decide/",
            {"decision": "approve", "response": {"discount_percent": 5}},
        ),
        200,
    ),
    "reject": (
        lambda: Attempt(
            "post",
            f"/api/approvals/{pending(paused())}/decide/",
            {"decision": "reject", **WHY},
        ),
        200,
    ),
    "claim": (lambda: Attempt("post", f"/api/approvals/{pending(paused())}/claim/", {}), 200),
    "hold": (
        lambda: Attempt(
            "post", f"/api/runs/{completed().pk}/hold/", {"hold": True, "reason": "audit"}
        ),
        200,
    ),
    "prune": (
        lambda: (
            RetentionPolicy.objects.create(
                name="keep-one", status="completed", keep_last_checkpoints=1
            )
            and Attempt("post", "/api/retention/prune/", {"dry_run": False})
        ),
        200,
    ),
}


def client_for(role: str, role_user: RoleUser, *, is_staff: bool = False) -> Client:
    client = Client()
    if role == "anonymous":
        return client
    user = role_user("someone", *([] if role == "no-role" else [role]), is_staff=is_staff)
    client.force_login(user)
    return client


def send(client: Client, attempt: Attempt) -> Any:
    if attempt.method == "get":
        return client.get(attempt.url)
    return client.post(attempt.url, data=json.dumps(attempt.body), content_type="application/json")


def entries_written(since: int) -> list[tuple[str, str]]:
    return [(e.action, e.outcome) for e in AuditEntry.objects.filter(id__gt=since).order_by("id")]


def last_entry_id() -> int:
    return AuditEntry.objects.order_by("-id").values_list("id", flat=True).first() or 0


def expected_entries(action: str, role: str) -> list[tuple[str, str]]:
    if role == "anonymous":
        return []
    if role == "no-role":
        return [("view", "denied")]
    if role in ALLOWED[action]:
        return [] if action == "view" else [(action, "ok")]
    return [(action, "denied")]


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("role", ROLES)
@pytest.mark.parametrize("action", list(API))
def test_api_action_by_role(action: str, role: str, role_user: RoleUser) -> None:
    prepare, ok_status = API[action]
    attempt = prepare()
    client = client_for(role, role_user)
    since = last_entry_id()

    response = send(client, attempt)
    settle()

    if role == "anonymous":
        expected_status = 401
    elif role in ALLOWED[action]:
        expected_status = ok_status
    else:
        expected_status = 403
    assert response.status_code == expected_status, response.content[:300]
    assert entries_written(since) == expected_entries(action, role)
    if expected_status == 403:
        assert "may not" in response.json()["error"]


@pytest.mark.django_db(transaction=True)
def test_an_audit_entry_says_who_did_what_to_which_checkpoints(role_user: RoleUser) -> None:
    run = completed()
    operator = client_for("Operator", role_user)
    first = run.checkpoints.order_by("created_at").first()
    assert first is not None

    send(
        operator,
        Attempt(
            "post", f"/api/runs/{run.pk}/resume/", {"checkpoint_id": first.checkpoint_id, **WHY}
        ),
    )
    settle()

    entry = AuditEntry.objects.get(action="resume")
    assert (entry.actor_name, entry.outcome, entry.run_id) == ("someone", "ok", run.pk)
    assert (entry.checkpoint_before, entry.checkpoint_after) == (
        run.latest_checkpoint_id,
        first.checkpoint_id,
    )
    assert entry.ip == "127.0.0.1"
    assert entry.workflow_name == "squares"


@pytest.mark.django_db(transaction=True)
def test_refused_transitions_answer_409_and_change_nothing(role_user: RoleUser) -> None:
    run = completed()
    waiting = paused()
    admin = client_for("Admin", role_user)
    send(
        admin,
        Attempt(
            "post", f"/api/approvals/{pending(waiting)}/decide/", {"decision": "reject", **WHY}
        ),
    )
    settle()
    decided = ApprovalRequest.objects.get(run=waiting).request_id
    since = last_entry_id()

    answers = [
        send(admin, Attempt("post", f"/api/runs/{run.pk}/cancel/", {})),
        send(admin, Attempt("post", f"/api/runs/{run.pk}/retry/", {})),
        send(admin, Attempt("post", f"/api/approvals/{decided}/decide/", {"decision": "approve"})),
        send(admin, Attempt("post", f"/api/approvals/{decided}/claim/", {})),
    ]
    services.run_hold(run.pk, user=None)
    answers.append(send(admin, Attempt("post", f"/api/runs/{run.pk}/hold/", {"hold": True})))

    assert [a.status_code for a in answers] == [409] * 5
    assert "already rejected by someone" in answers[2].json()["error"]
    assert [e for e in entries_written(since) if e[0] != "hold"] == []


# ------------------------------------------------------------------------------------ pages


PAGES: dict[str, tuple[Callable[[], Attempt], int]] = {
    "view": (lambda: Attempt("get", "/"), 200),
    "start": (
        lambda: Attempt(
            "post",
            "/runs/start/",
            {
                "workflow": "squares",
                "mode": "json",
                "input-json": json.dumps({"limit": 2, "work_ms": 0}),
            },
        ),
        302,
    ),
    "resume": (
        lambda: (
            (r := completed())
            and Attempt("post", f"/runs/{r.pk}/checkpoints/{r.latest_checkpoint_id}/resume/", WHY)
        ),
        302,
    ),
    "fork": (
        lambda: (
            (r := completed())
            and Attempt("post", f"/runs/{r.pk}/checkpoints/{r.latest_checkpoint_id}/fork/", WHY)
        ),
        302,
    ),
    "cancel": (lambda: Attempt("post", f"/runs/{paused().pk}/cancel/", WHY), 302),
    "retry": (lambda: Attempt("post", f"/runs/{failed().pk}/retry/", WHY), 302),
    "approve": (
        lambda: Attempt(
            "post",
            f"/approvals/{pending(paused())}/decide/",
            {
                "decision": "approve",
                "mode": "json",
                "response-json": json.dumps({"discount_percent": 5}),
            },
        ),
        302,
    ),
    "reject": (
        lambda: Attempt(
            "post",
            f"/approvals/{pending(paused())}/decide/",
            {"decision": "reject", "mode": "json", "response-json": "{}", **WHY},
        ),
        302,
    ),
}


def _page_cell(action: str, role: str) -> Any:
    # Pages refuse a user without a role through services.require, so it is audited too.
    return pytest.param(action, role)


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize(("action", "role"), [_page_cell(a, r) for a in PAGES for r in ROLES])
def test_page_action_by_role(action: str, role: str, role_user: RoleUser) -> None:
    prepare, ok_status = PAGES[action]
    attempt = prepare()
    client = client_for(role, role_user)
    since = last_entry_id()

    response = (
        client.get(attempt.url)
        if attempt.method == "get"
        else client.post(attempt.url, attempt.body)
    )
    settle()

    if role in ("anonymous", "no-role"):
        assert response.status_code == 302 and response["Location"].startswith("/login/?next=")
    elif role in ALLOWED[action]:
        assert response.status_code == ok_status, response.content[:500]
    else:
        assert response.status_code == 403
    expected = expected_entries(action, role)
    assert entries_written(since) == expected


# ------------------------------------------------------------------------------- websockets


def socket_headers(role: str, role_user: RoleUser) -> list[tuple[bytes, bytes]]:
    """An allowed Origin, and the session cookie of a user with that role."""
    headers = [(b"origin", b"http://testserver"), (b"host", b"testserver")]
    client = client_for(role, role_user)
    if role != "anonymous":
        headers.append((b"cookie", f"sessionid={client.cookies['sessionid'].value}".encode()))
    return headers


@pytest.fixture
def finished_run(transactional_db: None) -> WorkflowRun:
    # Built here, not in the async test: the worker's own sync_to_async calls need the thread
    # an async test would block while waiting for them.
    return completed()


WEBSOCKETS = ["/ws/runs/", "/ws/runs/{run}/", "/ws/approvals/"]


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("role", ROLES)
@pytest.mark.parametrize("path", WEBSOCKETS)
async def test_websocket_by_role(
    path: str, role: str, role_user: RoleUser, finished_run: WorkflowRun
) -> None:
    headers = await sync_to_async(socket_headers)(role, role_user)
    since = await sync_to_async(last_entry_id)()
    socket = WebsocketCommunicator(application, path.format(run=finished_run.pk), headers=headers)

    connected, code = await socket.connect(timeout=5)
    first = None
    if connected:
        if path != "/ws/runs/":  # a run's socket replays its events; the inbox's sends its count
            first = await socket.receive_json_from(timeout=5)
        await socket.disconnect()
    written = await sync_to_async(entries_written)(since)

    if role == "anonymous":
        assert (connected, code, written) == (False, 4401, [])
    elif role == "no-role":
        assert (connected, code, written) == (False, 4403, [("view", "denied")])
    else:
        assert connected and written == []
        if path == "/ws/approvals/":
            assert first == {"type": "approvals_changed", "pending": 0}
        elif first is not None:
            assert (first["run_id"], first["seq"]) == (str(finished_run.pk), 1)


@pytest.mark.django_db(transaction=True)
async def test_a_websocket_from_a_foreign_origin_is_refused(role_user: RoleUser) -> None:
    headers = [
        (name, value)
        for name, value in await sync_to_async(socket_headers)("Admin", role_user)
        if name != b"origin"
    ] + [(b"origin", b"https://evil.example")]
    socket = WebsocketCommunicator(application, "/ws/runs/", headers=headers)

    connected, _ = await socket.connect(timeout=5)

    assert not connected


# ------------------------------------------------------------------------------------ admin


POLICY_FORM = {
    "name": "keep-three",
    "enabled": "on",
    "workflow_pattern": "*",
    "status": "completed",
    "keep_last_checkpoints": "3",
    "created_at_0": "2026-01-01",
    "created_at_1": "00:00:00",
}


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("role", ROLES)
def test_changing_a_retention_policy_in_the_admin_needs_the_admin_role(
    role: str, role_user: RoleUser
) -> None:
    client = client_for(role, role_user, is_staff=True)
    since = last_entry_id()

    added = client.post("/admin/dashboard/retentionpolicy/add/", POLICY_FORM)

    if role == "anonymous":
        assert added.status_code == 302 and added["Location"].startswith("/admin/login/")
        assert entries_written(since) == []
    elif role == "Admin":
        assert added.status_code == 302 and added["Location"] == "/admin/dashboard/retentionpolicy/"
        assert RetentionPolicy.objects.get().keep_last_checkpoints == 3
        assert entries_written(since) == [("policy_change", "ok")]
    else:
        assert added.status_code == 403
        assert not RetentionPolicy.objects.exists()
        assert entries_written(since) == [("policy_change", "denied")]


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("role", ["Viewer", "Operator", "Approver"])
def test_editing_or_deleting_a_policy_in_the_admin_is_refused_and_audited_for_other_roles(
    role: str, role_user: RoleUser
) -> None:
    policy = RetentionPolicy.objects.create(
        name="keep-one", status="completed", keep_last_checkpoints=1
    )
    client = client_for(role, role_user, is_staff=True)
    since = last_entry_id()

    changed = client.post(
        f"/admin/dashboard/retentionpolicy/{policy.pk}/change/", {**POLICY_FORM, "name": "x"}
    )
    deleted = client.post(f"/admin/dashboard/retentionpolicy/{policy.pk}/delete/", {"post": "yes"})

    assert (changed.status_code, deleted.status_code) == (403, 403)
    assert RetentionPolicy.objects.get().name == "keep-one"
    assert entries_written(since) == [("policy_change", "denied")] * 2


@pytest.mark.django_db(transaction=True)
def test_an_admin_edit_and_delete_of_a_policy_are_audited(role_user: RoleUser) -> None:
    policy = RetentionPolicy.objects.create(
        name="keep-one", status="completed", keep_last_checkpoints=1
    )
    client = client_for("Admin", role_user, is_staff=True)
    since = last_entry_id()

    changed = client.post(
        f"/admin/dashboard/retentionpolicy/{policy.pk}/change/", {**POLICY_FORM, "name": "x"}
    )
    deleted = client.post(f"/admin/dashboard/retentionpolicy/{policy.pk}/delete/", {"post": "yes"})

    assert (changed.status_code, deleted.status_code) == (302, 302)
    assert not RetentionPolicy.objects.exists()
    assert entries_written(since) == [("policy_change", "ok")] * 2
    assert AuditEntry.objects.filter(action="policy_change").first().details == {
        "deleted": True
    }  # newest first


@pytest.mark.django_db(transaction=True)
def test_deleting_policies_with_the_admins_bulk_action_is_audited(role_user: RoleUser) -> None:
    policies = [
        RetentionPolicy.objects.create(name=f"p{i}", status="completed", keep_last_checkpoints=1)
        for i in range(2)
    ]
    client = client_for("Admin", role_user, is_staff=True)
    since = last_entry_id()

    client.post(
        "/admin/dashboard/retentionpolicy/",
        {"action": "delete_selected", "_selected_action": [p.pk for p in policies], "post": "yes"},
    )

    assert not RetentionPolicy.objects.exists()
    assert entries_written(since) == [("policy_change", "ok")] * 2


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("role", ["Viewer", "Admin"])
def test_holding_a_run_from_the_admin_goes_through_the_service(
    role: str, role_user: RoleUser
) -> None:
    run = completed()
    client = client_for(role, role_user, is_staff=True)
    since = last_entry_id()

    client.post(
        "/admin/dashboard/workflowrun/", {"action": "put_on_hold", "_selected_action": [run.pk]}
    )

    run.refresh_from_db()
    assert run.on_hold is (role == "Admin")
    assert entries_written(since) == [("hold", "ok" if role == "Admin" else "denied")]


# ------------------------------------------------------------------------ append-only audit


@pytest.fixture
def entry(db: None) -> AuditEntry:
    return services.audit.record(
        None, "prune", target="policy keep-one", details={"checkpoints": 4}
    )


def test_an_audit_entry_cannot_be_changed_or_deleted_through_the_model(entry: AuditEntry) -> None:
    entry.target = "policy something-else"
    with pytest.raises(AuditLogIsAppendOnly):
        entry.save()
    with pytest.raises(AuditLogIsAppendOnly):
        entry.delete()
    assert AuditEntry.objects.get().target == "policy keep-one"


def test_audit_entries_cannot_be_changed_or_deleted_through_querysets(entry: AuditEntry) -> None:
    entry.target = "rewritten"
    attempts = [
        lambda: AuditEntry.objects.filter(pk=entry.pk).update(target="rewritten"),
        lambda: AuditEntry.objects.all().delete(),
        lambda: AuditEntry.objects.bulk_update([entry], ["target"]),
    ]
    for attempt in attempts:
        with pytest.raises(AuditLogIsAppendOnly), transaction.atomic():
            attempt()
    assert AuditEntry.objects.get().target == "policy keep-one"


def test_the_admin_shows_the_audit_log_but_offers_no_change_or_delete(
    entry: AuditEntry, role_user: RoleUser
) -> None:
    client = Client()
    client.force_login(role_user("ada", "Admin", is_staff=True))
    superuser = Client()
    superuser.force_login(User.objects.create_superuser("root", password="root"))

    listing = client.get("/admin/dashboard/auditentry/")
    for c in (client, superuser):
        assert (
            c.get(f"/admin/dashboard/auditentry/{entry.pk}/change/").status_code == 200
        )  # read-only view
        assert (
            c.post(f"/admin/dashboard/auditentry/{entry.pk}/change/", {"target": "x"}).status_code
            == 403
        )
        assert (
            c.post(f"/admin/dashboard/auditentry/{entry.pk}/delete/", {"post": "yes"}).status_code
            == 403
        )
        assert c.get("/admin/dashboard/auditentry/add/").status_code == 403
        bulk = c.post(
            "/admin/dashboard/auditentry/",
            {"action": "delete_selected", "_selected_action": [entry.pk]},
        )
        assert bulk.status_code in (200, 302)

    assert listing.status_code == 200 and b"policy keep-one" in listing.content
    assert b'name="action"' not in listing.content  # no bulk actions at all
    assert AuditEntry.objects.get().target == "policy keep-one"


@pytest.mark.postgres
@pytest.mark.django_db(databases=["pg"])
def test_postgres_refuses_raw_sql_that_rewrites_or_deletes_audit_entries() -> None:
    AuditEntry.objects.using("pg").create(action="approve", actor_name="abe", target="request r1")

    for sql in (
        "UPDATE dashboard_auditentry SET actor_name = 'mallory'",
        "DELETE FROM dashboard_auditentry",
    ):
        with (
            pytest.raises(DatabaseError, match="append-only"),
            transaction.atomic(using="pg"),
            connections["pg"].cursor() as cursor,
        ):
            cursor.execute(sql)

    assert AuditEntry.objects.using("pg").get().actor_name == "abe"
