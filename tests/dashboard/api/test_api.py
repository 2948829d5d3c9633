"""dashboard/api/ (views, auth, errors): every endpoint, both ways in (session with CSRF
enforced, bearer token; tokens nowhere else), the error contract (400 naming the field, 401,
403, 404, 405, 409) and never a 500. test_openapi.py holds every answer to the OpenAPI document.

Every test runs on SQLite and on PostgreSQL (``services_db``). Runs execute *inline*: the tests
call the worker (``dashboard.execution.worker.execute``) on their own thread, inside the test's
transaction, and nothing runs in the background (``on_commit`` callbacks never fire in these
rolled-back tests, so nothing is enqueued). The Hypothesis fuzzers send a few hundred random
bodies, byte strings, paths and parameters per endpoint, most of them on PostgreSQL.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any
from urllib.parse import quote

import pytest
from django.conf import settings
from django.test import Client
from django.utils import timezone
from django.utils.crypto import get_random_string
from hypothesis import HealthCheck, given
from hypothesis import settings as hypothesis_settings
from hypothesis import strategies as st

from dashboard import catalog, services
from dashboard.access.tokens import create_token
from dashboard.execution import worker
from dashboard.models import (
    ApiToken,
    ApprovalRequest,
    ApprovalStatus,
    Checkpoint,
    RunStatus,
    WorkflowRun,
)


@pytest.fixture(autouse=True)
def database(services_db: str) -> str:
    """Every test runs on SQLite and on PostgreSQL (``default`` answers with each in turn)."""
    return services_db


UNKNOWN = "00000000-0000-4000-8000-000000000000"
FAST = {"work_ms": 0}


# ------------------------------------------------------------------------------ clients


class Api:
    """A JSON client: a session with CSRF enforced (as a browser), or a bearer token."""

    def __init__(self, client: Client, headers: dict[str, str] | None = None) -> None:
        self.client = client
        self.headers = headers or {}

    def get(self, path: str, **params: Any) -> Any:
        return self.client.get(path, params, headers=self.headers)

    def post(self, path: str, body: Any = None, *, raw: bytes | None = None, **headers: str) -> Any:
        data = raw if raw is not None else json.dumps({} if body is None else body)
        return self.client.post(
            path, data, content_type="application/json", headers={**self.headers, **headers}
        )


def session_api(user: Any) -> Api:
    """Logged in, with the CSRF cookie a page would have set and the header htmx sends."""
    client = Client(enforce_csrf_checks=True)
    client.force_login(user)
    secret = get_random_string(32)
    client.cookies[settings.CSRF_COOKIE_NAME] = secret
    return Api(client, {"X-CSRFToken": secret})


@pytest.fixture
def api(operator_approver_user: Any) -> Api:
    return session_api(operator_approver_user)


@pytest.fixture
def anonymous() -> Api:
    """Logged out, with a CSRF cookie and header (as a browser tab whose session expired)."""
    client = Client(enforce_csrf_checks=True)
    secret = get_random_string(32)
    client.cookies[settings.CSRF_COOKIE_NAME] = secret
    return Api(client, {"X-CSRFToken": secret})


@pytest.fixture
def admin_api(role_user: Callable[..., Any]) -> Api:
    return session_api(role_user("ada", "Admin"))


def execute(run_id: Any) -> WorkflowRun:
    worker.execute(str(run_id))
    return WorkflowRun.objects.get(pk=run_id)


def started(workflow: str, input: Any) -> WorkflowRun:
    run = services.run_start(workflow_name=workflow, input=input)
    return execute(run.pk)


def waiting() -> tuple[WorkflowRun, ApprovalRequest]:
    run = started("return-replace", FAST)
    assert run.status == RunStatus.WAITING
    return run, ApprovalRequest.objects.get(run=run, status=ApprovalStatus.PENDING)


def decide_path(request_id: str) -> str:
    return f"/api/approvals/{quote(request_id, safe='')}/decide/"


def checkpoint_ids(run: WorkflowRun) -> list[str]:
    return list(
        Checkpoint.objects.filter(run=run).order_by("created_at").values_list("pk", flat=True)
    )


# ------------------------------------------------------------------------------ the happy path


def test_api_lists_the_registered_workflows_with_input_schemas(api: Api) -> None:
    response = api.get("/api/workflows/")

    assert response.status_code == 200
    by_name = {w["name"]: w for w in response.json()["workflows"]}
    assert set(by_name) == set(catalog.names())
    assert "limit" in by_name["squares"]["input_schema"]["properties"]


def test_api_start_then_get_a_run(api: Api, operator_approver_user: Any) -> None:
    response = api.post("/api/runs/", {"workflow": "squares", "input": {"limit": 3, **FAST}})

    assert response.status_code == 201
    body = response.json()
    assert body["status"] == "queued" and body["workflow"] == "squares"
    assert body["created_by"] == operator_approver_user.username and body["input"] == {
        "limit": 3,
        "work_ms": 0,
    }
    execute(body["id"])
    detail = api.get(f"/api/runs/{body['id']}/").json()
    assert detail["status"] == "completed" and detail["error"] is None
    assert detail["current_superstep"] == 4 and detail["latest_checkpoint_id"]


def test_api_lists_runs_filtered_by_status_and_workflow(api: Api) -> None:
    done = started("squares", {"limit": 1, **FAST})
    failed = started("fail-at-step", {"steps": 2, "fail_at": 1, "outage_seconds": 3600, **FAST})
    waiting()

    def ids(**params: Any) -> list[str]:
        response = api.get("/api/runs/", **params)
        assert response.status_code == 200
        return [r["id"] for r in response.json()["runs"]]

    assert len(ids()) == 3
    assert ids(status="completed") == [str(done.pk)]
    assert ids(status="failed", workflow="fail-at-step") == [str(failed.pk)]
    assert ids(status="failed", workflow="squares") == []
    assert ids(workflow="nope") == []
    assert len(ids(limit=1)) == 1
    failed_json = api.get(f"/api/runs/{failed.pk}/").json()
    assert "simulated outage at step 1" in failed_json["error"]["message"]


def test_api_lists_runs_with_their_tokens_and_cost_filtered_by_them(api: Api) -> None:
    from decimal import Decimal

    cheap = started("squares", {"limit": 1, **FAST})
    dear = started("squares", {"limit": 1, **FAST})
    WorkflowRun.objects.filter(pk=cheap.pk).update(input_tokens=10, output_tokens=5, cost="0.01")
    WorkflowRun.objects.filter(pk=dear.pk).update(
        input_tokens=9000, output_tokens=1000, cost=Decimal("4.2")
    )

    def ids(**params: Any) -> list[str]:
        response = api.get("/api/runs/", **params)
        assert response.status_code == 200, response.json()
        return [r["id"] for r in response.json()["runs"]]

    [listed] = [r for r in api.get("/api/runs/").json()["runs"] if r["id"] == str(dear.pk)]
    assert (listed["input_tokens"], listed["output_tokens"], listed["cost"]) == (
        9000,
        1000,
        "4.200000",
    )
    assert ids(cost_min="1") == [str(dear.pk)]
    assert ids(cost_max="0.01") == [str(cheap.pk)]
    assert ids(tokens_min="16") == [str(dear.pk)]
    assert ids(cost_min="0.01", cost_max="5", tokens_min="15") == [str(dear.pk), str(cheap.pk)]
    for field, value in [
        ("cost_min", "NaN"),
        ("cost_max", "-1"),
        ("cost_min", "1e400"),
        ("tokens_min", "many"),
        ("tokens_min", "-3"),
    ]:
        refused = api.get("/api/runs/", **{field: value})
        assert refused.status_code == 400, (field, value)
        assert field in refused.json()["errors"]


def test_api_lists_checkpoints_and_shows_one_decoded(api: Api) -> None:
    run = started("squares", {"limit": 2, **FAST})

    listed = api.get(f"/api/runs/{run.pk}/checkpoints/").json()["checkpoints"]
    assert [c["superstep"] for c in listed] == [0, 1, 2, 3]
    assert [c["previous_checkpoint_id"] for c in listed[1:]] == [c["id"] for c in listed[:-1]]
    detail = api.get(f"/api/runs/{run.pk}/checkpoints/{listed[-1]['id']}/").json()
    assert detail["id"] == listed[-1]["id"]
    assert detail["document"]["executor_states"]["worker"]["results"]  # decoded, blobs joined


def test_api_lists_events_after_a_seq(api: Api) -> None:
    run = started("squares", {"limit": 2, **FAST})

    everything = api.get(f"/api/runs/{run.pk}/events/").json()
    later = api.get(f"/api/runs/{run.pk}/events/", after=3, limit=2).json()

    seqs = [e["seq"] for e in everything["events"]]
    assert seqs == list(range(1, everything["last_seq"] + 1))
    assert [e["seq"] for e in later["events"]] == [4, 5]


def test_api_approves_a_request_and_the_run_completes(
    api: Api, operator_approver_user: Any
) -> None:
    run, approval = waiting()

    pending = api.get("/api/approvals/").json()["approvals"]
    assert [a["request_id"] for a in pending] == [approval.request_id]
    assert pending[0]["response_schema"]["properties"]["discount_percent"]["maximum"] == 100
    response = api.post(
        decide_path(approval.request_id),
        {
            "decision": "approve",
            "response": {"discount_percent": 20, "note": "ok"},
            "reason": "fine",
        },
    )

    assert response.status_code == 200
    body = response.json()
    assert body["status"] == "approved" and body["decided_by"] == operator_approver_user.username
    assert body["response"] == {"approved": True, "discount_percent": 20, "note": "ok"}
    assert execute(run.pk).output["final_amount"] == 39.92
    assert api.get("/api/approvals/").json()["approvals"] == []
    decided = api.get("/api/approvals/", status="approved").json()["approvals"]
    assert [a["request_id"] for a in decided] == [approval.request_id]


def test_api_rejects_a_request(api: Api) -> None:
    run, approval = waiting()

    response = api.post(
        decide_path(approval.request_id), {"decision": "reject", "reason": "no stock"}
    )

    assert response.status_code == 200 and response.json()["status"] == "rejected"
    assert execute(run.pk).output["outcome"] == "replacement rejected; refund only"


def test_api_resumes_forks_cancels_and_retries(api: Api) -> None:
    run = started("squares", {"limit": 2, **FAST})
    first, *_ = checkpoint_ids(run)

    resumed = api.post(f"/api/runs/{run.pk}/resume/", {"checkpoint_id": first, "reason": "again"})
    assert resumed.status_code == 202 and resumed.json()["status"] == "queued"
    assert execute(run.pk).status == RunStatus.COMPLETED

    fork = api.post(f"/api/runs/{run.pk}/fork/", {"checkpoint_id": first, "reason": "try"})
    assert fork.status_code == 201
    assert fork.json()["parent_run_id"] == str(run.pk)
    assert fork.json()["origin_checkpoint_id"] == first

    cancelled = api.post(f"/api/runs/{fork.json()['id']}/cancel/", {"reason": "not needed"})
    assert cancelled.status_code == 200 and cancelled.json()["status"] == "cancelled"

    failed = started("fail-at-step", {"steps": 2, "fail_at": 1, "outage_seconds": 60, **FAST})
    retried = api.post(f"/api/runs/{failed.pk}/retry/", {"reason": "outage over"})
    assert retried.status_code == 202 and retried.json()["status"] == "queued"


def test_api_claims_a_request_and_holds_a_run(admin_api: Api) -> None:
    admin = admin_api
    run, approval = waiting()

    claimed = admin.post(f"/api/approvals/{approval.request_id}/claim/", {})
    assert claimed.status_code == 200 and claimed.json()["claimed_by"] == "ada"
    held = admin.post(f"/api/runs/{run.pk}/hold/", {"reason": "legal"})
    assert held.status_code == 200 and held.json()["on_hold"] is True
    again = admin.post(f"/api/runs/{run.pk}/hold/", {"hold": True})
    assert again.status_code == 409
    pruned = admin.post("/api/retention/prune/", {"dry_run": True})
    assert pruned.status_code == 200 and isinstance(pruned.json()["reports"], list)


# ------------------------------------------------------------------------------ authentication


ENDPOINTS = [
    ("GET", "/api/workflows/"),
    ("GET", "/api/runs/"),
    ("POST", "/api/runs/"),
    ("GET", f"/api/runs/{UNKNOWN}/"),
    ("GET", f"/api/runs/{UNKNOWN}/checkpoints/"),
    ("GET", f"/api/runs/{UNKNOWN}/checkpoints/abc/"),
    ("GET", f"/api/runs/{UNKNOWN}/events/"),
    ("POST", f"/api/runs/{UNKNOWN}/resume/"),
    ("POST", f"/api/runs/{UNKNOWN}/fork/"),
    ("POST", f"/api/runs/{UNKNOWN}/cancel/"),
    ("POST", f"/api/runs/{UNKNOWN}/retry/"),
    ("POST", f"/api/runs/{UNKNOWN}/hold/"),
    ("GET", "/api/approvals/"),
    ("POST", "/api/approvals/abc/decide/"),
    ("POST", "/api/approvals/abc/claim/"),
    ("POST", "/api/retention/prune/"),
]


def call(api: Api, method: str, path: str, body: Any = None) -> Any:
    return api.get(path) if method == "GET" else api.post(path, body or {})


@pytest.mark.parametrize("method, path", ENDPOINTS)
def test_api_refuses_anonymous_requests_with_401(anonymous: Api, method: str, path: str) -> None:
    response = call(anonymous, method, path)

    assert response.status_code == 401
    assert "authentication required" in response.json()["error"]


def test_api_anonymous_post_without_a_csrf_token_is_told_to_authenticate(anonymous: Api) -> None:
    client = Client(enforce_csrf_checks=True)

    response = client.post("/api/runs/", "{}", content_type="application/json")

    # The CSRF check fails first; the API says what is really missing, in JSON.
    assert response.status_code == 401
    assert "authentication required" in response.json()["error"]


@pytest.mark.parametrize("method, path", [e for e in ENDPOINTS if e[0] == "POST"])
def test_api_session_posts_without_the_csrf_token_are_refused(
    operator_approver_user: Any, method: str, path: str
) -> None:
    client = Client(enforce_csrf_checks=True)
    client.force_login(operator_approver_user)

    response = client.post(path, "{}", content_type="application/json")

    assert response.status_code == 403
    assert not WorkflowRun.objects.exists()


def test_api_session_post_with_a_wrong_csrf_token_is_refused(operator_approver_user: Any) -> None:
    api = session_api(operator_approver_user)
    api.headers["X-CSRFToken"] = get_random_string(32)

    response = api.post("/api/runs/", {"workflow": "squares", "input": FAST})

    assert response.status_code == 403 and not WorkflowRun.objects.exists()


@pytest.fixture
def token(operator_approver_user: Any) -> str:
    return create_token(operator_approver_user, name="ci")


def token_api(token: str) -> Api:
    # No session, no CSRF cookie: a script. CSRF still enforced, and must not apply.
    return Api(Client(enforce_csrf_checks=True), {"Authorization": f"Bearer {token}"})


def test_api_token_authenticates_reads_and_writes_without_csrf(
    token: str, operator_approver_user: Any
) -> None:
    api = token_api(token)

    assert api.get("/api/runs/").status_code == 200
    response = api.post("/api/runs/", {"workflow": "squares", "input": FAST})
    assert (
        response.status_code == 201
        and response.json()["created_by"] == operator_approver_user.username
    )
    assert ApiToken.objects.get().last_used_at is not None


@pytest.mark.parametrize(
    "header",
    ["Bearer sst_not-a-real-token", "Bearer ", "Bearer", "Basic b2xnYTpwdw==", "bearer {token}"],
)
def test_api_refuses_invalid_tokens_with_401(token: str, header: str) -> None:
    client = Client(enforce_csrf_checks=True)

    response = client.get("/api/runs/", headers={"Authorization": header.format(token=token)})

    assert response.status_code == 401


def test_api_refuses_a_revoked_token_with_401(token: str) -> None:
    ApiToken.objects.update(revoked_at=timezone.now())

    assert token_api(token).get("/api/runs/").status_code == 401
    assert token_api(token).post("/api/runs/", {"workflow": "squares"}).status_code == 401


def test_api_refuses_the_token_of_a_deactivated_user_with_401(
    token: str, operator_approver_user: Any
) -> None:
    operator_approver_user.is_active = False
    operator_approver_user.save()

    assert token_api(token).get("/api/runs/").status_code == 401


def test_api_a_bad_token_is_refused_even_with_a_valid_session(operator_approver_user: Any) -> None:
    api = session_api(operator_approver_user)
    api.headers["Authorization"] = "Bearer sst_wrong"

    assert api.get("/api/runs/").status_code == 401


@pytest.mark.parametrize("path", ["/", "/approvals/", "/admin/"])
def test_api_token_opens_nothing_outside_the_api(token: str, path: str) -> None:
    client = Client(enforce_csrf_checks=True)

    response = client.get(path, headers={"Authorization": f"Bearer {token}"})

    # Pages and the admin see no user: they send the caller to log in.
    assert response.status_code == 302 and "login" in response["Location"]


def test_api_a_bearer_header_does_not_disturb_a_page_session(operator_approver_user: Any) -> None:
    client = Client()
    client.force_login(operator_approver_user)

    assert client.get("/", headers={"Authorization": "Bearer sst_wrong"}).status_code == 200


def test_api_refuses_users_without_a_role_with_403(role_user: Callable[..., Any]) -> None:
    nobody = session_api(role_user("nobody"))

    assert nobody.get("/api/runs/").status_code == 403


def test_api_viewer_reads_but_may_not_act(role_user: Callable[..., Any]) -> None:
    viewer = session_api(role_user("vic", "Viewer"))
    run, approval = waiting()

    assert viewer.get(f"/api/runs/{run.pk}/").status_code == 200
    assert viewer.post("/api/runs/", {"workflow": "squares"}).status_code == 403
    assert viewer.post(f"/api/runs/{run.pk}/cancel/").status_code == 403
    assert viewer.post(decide_path(approval.request_id), {"decision": "approve"}).status_code == 403
    approval.refresh_from_db()
    assert approval.status == ApprovalStatus.PENDING


# ------------------------------------------------------------------------------ bad input: 400


@pytest.mark.parametrize(
    "body, field",
    [
        ({}, "workflow"),
        ({"workflow": 3}, "workflow"),
        ({"workflow": None}, "workflow"),
        ({"workflow": "no-such-flow"}, "workflow"),
        ({"workflow": "squares", "input": {"limit": "ten"}}, "limit"),
        ({"workflow": "squares", "input": {"limit": 2, "work_ms": [1]}}, "work_ms"),
        ({"workflow": "squares", "input": "not an object"}, None),
    ],
)
def test_api_start_refuses_bad_input_naming_the_field(
    api: Api, body: Any, field: str | None
) -> None:
    response = api.post("/api/runs/", body)

    assert response.status_code == 400
    errors = response.json()["errors"]
    assert field in errors if field else errors
    assert not WorkflowRun.objects.exists()


@pytest.mark.parametrize(
    "raw, field",
    [
        (b"{not json", "body"),
        (b"\xff\xfe", "body"),
        (b"[1, 2]", "body"),
        (b'"text"', "body"),
        (b"null", "body"),
        (b"NaN", "body"),
    ],
)
def test_api_refuses_a_body_that_is_not_a_json_object(api: Api, raw: bytes, field: str) -> None:
    response = api.post("/api/runs/", raw=raw)

    assert response.status_code == 400 and field in response.json()["errors"]


@pytest.mark.parametrize(
    "params, field",
    [({"status": "sleeping"}, "status"), ({"limit": "many"}, "limit")],
)
def test_api_run_list_refuses_bad_filters(api: Api, params: dict[str, str], field: str) -> None:
    response = api.get("/api/runs/", **params)

    assert response.status_code == 400 and field in response.json()["errors"]


def test_api_events_refuse_a_bad_after_or_limit(api: Api) -> None:
    run = started("squares", {"limit": 1, **FAST})

    assert "after" in api.get(f"/api/runs/{run.pk}/events/", after="x").json()["errors"]
    assert "limit" in api.get(f"/api/runs/{run.pk}/events/", limit="x").json()["errors"]


def test_api_approvals_refuse_an_unknown_status(api: Api) -> None:
    response = api.get("/api/approvals/", status="maybe")

    assert response.status_code == 400 and "status" in response.json()["errors"]


@pytest.mark.parametrize(
    "body, field",
    [
        ({}, "checkpoint_id"),
        ({"checkpoint_id": 5}, "checkpoint_id"),
        ({"checkpoint_id": ["a"]}, "checkpoint_id"),
    ],
)
def test_api_resume_and_fork_need_a_checkpoint_id(api: Api, body: Any, field: str) -> None:
    run = started("squares", {"limit": 1, **FAST})

    for action in ("resume", "fork"):
        response = api.post(f"/api/runs/{run.pk}/{action}/", body)
        assert response.status_code == 400 and field in response.json()["errors"], action


@pytest.mark.parametrize(
    "edit, field",
    [
        ({"state": [1]}, "state"),
        ({"state": {"x": {"$t": "datetime", "v": "yesterday"}}}, "state"),
        ({"executor_states": {"worker": 3}}, "executor_states"),
        ({"executor_states": {"ghost": {}}}, "executor_states"),
        ({"executor_states": "x"}, "executor_states"),
    ],
)
def test_api_fork_refuses_edited_state_it_cannot_restore(api: Api, edit: Any, field: str) -> None:
    run = started("squares", {"limit": 1, **FAST})
    runs_before = WorkflowRun.objects.count()

    response = api.post(
        f"/api/runs/{run.pk}/fork/", {"checkpoint_id": checkpoint_ids(run)[0], **edit}
    )

    # Errors name the edited value's path ("state.x"), as the fork editor shows them.
    errors = response.json()["errors"]
    assert response.status_code == 400 and any(
        p == field or p.startswith(f"{field}.") for p in errors
    )
    assert WorkflowRun.objects.count() == runs_before


@pytest.mark.parametrize(
    "body, field",
    [
        ({}, "decision"),
        ({"decision": "maybe"}, "decision"),
        ({"decision": True}, "decision"),
        ({"decision": "approve", "reason": 5}, "reason"),
        ({"decision": "approve", "response": {"discount_percent": 101}}, "discount_percent"),
        ({"decision": "approve", "response": {"note": "x" * 501}}, "note"),
        ({"decision": "approve", "response": [1]}, None),
    ],
)
def test_api_decide_refuses_bad_input_naming_the_field(
    api: Api, body: Any, field: str | None
) -> None:
    _, approval = waiting()

    response = api.post(decide_path(approval.request_id), body)

    assert response.status_code == 400
    errors = response.json()["errors"]
    assert field in errors if field else errors
    approval.refresh_from_db()
    assert approval.status == ApprovalStatus.PENDING


@pytest.mark.parametrize(
    "path, body, field",
    [
        ("/api/runs/", {"workflow": "return-replace", "input": {"order_id": "A\x00B"}}, "input"),
        ("/api/runs/", {"workflow": "squares\x00"}, "workflow"),
        ("/api/runs/{run}/resume/", {"checkpoint_id": "a\x00b"}, "checkpoint_id"),
        ("/api/runs/{run}/fork/", {"checkpoint_id": "a\x00b"}, "checkpoint_id"),
        ("/api/runs/{run}/hold/", {"reason": "\x00"}, "reason"),
        ("/api/approvals/{request}/decide/", {"decision": "approve", "reason": "a\x00"}, "reason"),
        (
            "/api/approvals/{request}/decide/",
            {"decision": "approve", "response": {"note": "\x00"}},
            "response",
        ),
        (
            "/api/approvals/{request}/decide/",
            {"decision": "approve", "response": {"\x00": 1}},
            "response",
        ),
        ("/api/retention/prune/", {"policy": "a\x00b"}, "policy"),
    ],
)
def test_api_refuses_nul_characters_in_a_body_naming_the_field(
    admin_api: Api, path: str, body: Any, field: str
) -> None:
    # PostgreSQL's text and jsonb cannot store NUL: without this check these were 500s there.
    run, approval = waiting()
    target = path.format(run=run.pk, request=quote(approval.request_id, safe=""))

    response = admin_api.post(target, body)

    assert response.status_code == 400, response.content
    assert field in response.json()["errors"]


@pytest.mark.parametrize(
    "path, status",
    [
        ("/api/runs/{run}/checkpoints/a%00b/", 404),
        ("/api/approvals/a%00b/decide/", 404),
        ("/api/runs/?workflow=a%00b", 400),
        ("/api/runs/{run}/events/?after=1%00", 400),
    ],
)
def test_api_refuses_nul_characters_in_paths_and_parameters(
    admin_api: Api, path: str, status: int
) -> None:
    run = started("squares", {"limit": 1, **FAST})
    target = path.format(run=run.pk)

    response = admin_api.client.get(target, headers=admin_api.headers)
    assert response.status_code == status, response.content
    if "decide" in target:
        assert admin_api.post(target, {"decision": "approve"}).status_code == status


@pytest.mark.parametrize("depth", [100, 5_000, 100_000])
def test_api_refuses_json_nested_too_deeply(api: Api, depth: int) -> None:
    raw = b'{"workflow": "squares", "input": ' + b"[" * depth + b"]" * depth + b"}"

    response = api.post("/api/runs/", raw=raw)

    assert response.status_code == 400


@pytest.mark.parametrize(
    "raw, field",
    [
        (b'{"workflow": "return-replace", "input": {"refund_amount": NaN}}', "input"),
        (b'{"workflow": "return-replace", "input": {"refund_amount": 1e309}}', "input"),
        (b'{"workflow": "return-replace", "input": {"order_id": "\\ud800"}}', "input"),
        (b'{"workflow": "squares", "input": {"limit": 2}, "x": -Infinity}', "x"),
    ],
)
def test_api_refuses_what_json_allows_but_no_database_stores(
    api: Api, raw: bytes, field: str
) -> None:
    # Python's parser accepts NaN, Infinity and lone surrogates; jsonb and UTF-8 do not.
    # More, on every endpoint and field: test_hostile_input.py.
    response = api.post("/api/runs/", raw=raw)

    assert response.status_code == 400, response.content
    assert field in response.json()["errors"]
    assert not WorkflowRun.objects.exists()


def test_api_documents_413_on_every_operation_that_reads_a_body() -> None:
    from dashboard.api.urls import api as ninja_api

    paths = ninja_api.get_openapi_schema()["paths"]
    posts = {path: item["post"] for path, item in paths.items() if "post" in item}

    assert posts and all(413 in map(int, op["responses"]) for op in posts.values()), posts.keys()


# ------------------------------------------------------------------------------ unknown ids: 404


@pytest.mark.parametrize("method, path", [e for e in ENDPOINTS if UNKNOWN in e[1] or "abc" in e[1]])
def test_api_answers_404_for_unknown_ids(admin_api: Api, method: str, path: str) -> None:
    response = call(admin_api, method, path, {"checkpoint_id": "abc", "decision": "approve"})

    assert response.status_code == 404
    assert response.json()["error"]


def test_api_answers_404_for_a_checkpoint_of_another_run(api: Api) -> None:
    mine = started("squares", {"limit": 1, **FAST})
    other = started("squares", {"limit": 1, **FAST})
    theirs = checkpoint_ids(other)[0]

    assert api.get(f"/api/runs/{mine.pk}/checkpoints/{theirs}/").status_code == 404
    assert api.post(f"/api/runs/{mine.pk}/resume/", {"checkpoint_id": theirs}).status_code == 404
    assert api.post(f"/api/runs/{mine.pk}/fork/", {"checkpoint_id": theirs}).status_code == 404


@pytest.mark.parametrize("path", ["/api/runs/not-a-uuid/", "/api/nothing/", "/api/runs/1/events/"])
def test_api_answers_404_for_paths_that_name_nothing(api: Api, path: str) -> None:
    assert api.get(path).status_code == 404


@pytest.mark.parametrize(
    "method, path",
    [
        ("POST", "/api/workflows/"),
        ("PUT", "/api/runs/"),
        ("DELETE", f"/api/runs/{UNKNOWN}/"),
        ("GET", f"/api/runs/{UNKNOWN}/cancel/"),
        ("GET", "/api/approvals/abc/decide/"),
    ],
)
def test_api_answers_405_for_the_wrong_method(api: Api, method: str, path: str) -> None:
    response = api.client.generic(
        method, path, "{}", content_type="application/json", headers=api.headers
    )

    assert response.status_code == 405
    assert f"method {method} not allowed" in response.json()["error"] and response["Allow"]


# ------------------------------------------------------------------------ illegal transitions: 409


def test_api_answers_409_for_illegal_transitions(api: Api) -> None:
    done = started("squares", {"limit": 1, **FAST})
    queued = services.run_start(workflow_name="squares", input={"limit": 1})
    cid = checkpoint_ids(done)[0]

    assert api.post(f"/api/runs/{done.pk}/cancel/").status_code == 409
    assert api.post(f"/api/runs/{done.pk}/retry/").status_code == 409
    Checkpoint.objects.filter(pk=cid).update(run=queued)
    conflict = api.post(f"/api/runs/{queued.pk}/resume/", {"checkpoint_id": cid})
    assert conflict.status_code == 409 and "queued" in conflict.json()["error"]


def test_api_answers_409_for_a_second_decision_naming_who_decided(
    api: Api, role_user: Callable[..., Any]
) -> None:
    _, approval = waiting()
    assert api.post(decide_path(approval.request_id), {"decision": "approve"}).status_code == 200

    second = session_api(role_user("bea", "Approver")).post(
        decide_path(approval.request_id), {"decision": "reject"}
    )

    assert second.status_code == 409
    assert "already approved by olga" in second.json()["error"]


def test_api_answers_409_for_a_request_cancelled_by_a_resume(api: Api) -> None:
    run, approval = waiting()
    before_gate = checkpoint_ids(run)[3]
    resumed = api.post(f"/api/runs/{run.pk}/resume/", {"checkpoint_id": before_gate, "reason": "r"})
    assert resumed.status_code == 202

    response = api.post(decide_path(approval.request_id), {"decision": "approve"})

    assert response.status_code == 409 and "cancelled" in response.json()["error"]


# ------------------------------------------------------------------------------ fuzzing: no 500

# Text that PostgreSQL cannot store (NUL) shows up often on purpose: it found real 500s there.
texts = st.text(max_size=20) | st.text(max_size=6).map(lambda t: t + "\x00")
json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | texts,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(texts, inner, max_size=4),
    max_leaves=12,
)
KEYS = [
    "workflow",
    "input",
    "checkpoint_id",
    "state",
    "executor_states",
    "decision",
    "response",
    "reason",
    "release",
    "hold",
    "policy",
    "dry_run",
]
# "@checkpoint" becomes a real checkpoint id of the run under test, so fuzzing gets past lookups.
MEANINGFUL = st.sampled_from(
    [
        "squares",
        "return-replace",
        "approve",
        "reject",
        True,
        False,
        "@checkpoint",
        {"limit": 2},
        {"discount_percent": 10},
        {"worker": {"results": {}}},
    ]
)
bodies = st.one_of(
    st.dictionaries(st.sampled_from(KEYS), json_values | MEANINGFUL, max_size=5),
    json_values,
)
raw_bodies = st.binary(max_size=64) | st.integers(1, 3_000).map(lambda n: b"[" * n + b"]" * n)
# Examples per endpoint: most on PostgreSQL, where the real 500s were (NUL, row locks).
EXAMPLES = {"pg": 150, "default": 50}


def fuzz(database: str, share: float = 1.0) -> Any:
    return hypothesis_settings(
        max_examples=max(10, int(EXAMPLES[database] * share)),
        deadline=None,
        derandomize=True,
        database=None,
        suppress_health_check=[HealthCheck.too_slow],
    )


@pytest.fixture
def world(admin_api: Api) -> dict[str, str]:
    """Ids for the fuzzers to aim at: a finished run, a waiting one and its request."""
    done = started("squares", {"limit": 2, **FAST})
    run, approval = waiting()
    return {
        "done": str(done.pk),
        "waiting": str(run.pk),
        "checkpoint:done": checkpoint_ids(done)[0],
        "checkpoint:waiting": checkpoint_ids(run)[-1],
        "checkpoint:unknown": "abc",
        "request": approval.request_id,
        "unknown": UNKNOWN,
    }


def aimed(value: Any, checkpoint: str) -> Any:
    if value == "@checkpoint":
        return checkpoint
    if isinstance(value, dict):
        return {k: aimed(v, checkpoint) for k, v in value.items()}
    return value


POST_PATHS = [
    "/api/runs/",
    "/api/runs/{run}/resume/",
    "/api/runs/{run}/fork/",
    "/api/runs/{run}/cancel/",
    "/api/runs/{run}/retry/",
    "/api/runs/{run}/hold/",
    "/api/approvals/{request}/decide/",
    "/api/approvals/{request}/claim/",
    "/api/retention/prune/",
]


@pytest.mark.parametrize("path", POST_PATHS)
def test_api_never_answers_500_to_random_json_bodies(
    admin_api: Api, world: dict[str, str], database: str, path: str
) -> None:
    @given(run=st.sampled_from(["done", "waiting", "unknown"]), body=bodies)
    @fuzz(database)
    def post(run: str, body: Any) -> None:
        target = path.format(run=world[run], request=quote(world["request"], safe=""))
        body = aimed(body, world[f"checkpoint:{run}"])

        response = admin_api.post(target, body)

        assert response.status_code < 500, (target, body, response.content[:300])
        assert response["Content-Type"].startswith("application/json")

    post()


@pytest.mark.parametrize("path", POST_PATHS)
def test_api_never_answers_500_to_random_bytes(
    admin_api: Api, world: dict[str, str], database: str, path: str
) -> None:
    target = path.format(run=world["waiting"], request=quote(world["request"], safe=""))

    @given(raw=raw_bodies)
    @fuzz(database, share=0.3)
    def post(raw: bytes) -> None:
        response = admin_api.post(target, raw=raw)

        assert response.status_code < 500, (target, raw, response.content[:300])

    post()


path_parts = st.sampled_from(["@checkpoint", "@request"]) | (texts.filter(bool)).map(
    lambda s: quote(s, safe="")
)
GET_PATHS = [
    "/api/workflows/",
    "/api/runs/",
    "/api/approvals/",
    "/api/runs/{run}/",
    "/api/runs/{run}/checkpoints/",
    "/api/runs/{run}/checkpoints/{part}/",
    "/api/runs/{run}/events/",
    "/api/runs/{part}/",
    "/api/approvals/{part}/decide/",
    "/api/runs/{run}/{part}/",
]
PARAMS = ["status", "workflow", "limit", "after", "x"]


@pytest.mark.parametrize("path", GET_PATHS)
def test_api_never_answers_500_to_random_paths_and_parameters(
    admin_api: Api, world: dict[str, str], database: str, path: str
) -> None:
    @given(
        run=st.sampled_from(["done", "waiting", "unknown"]),
        part=path_parts,
        params=st.dictionaries(
            st.sampled_from(PARAMS), texts | st.sampled_from(["1", "-1", "completed"]), max_size=3
        ),
        method=st.sampled_from(["GET", "GET", "POST"]),
    )
    @fuzz(database, share=0.6)
    def request(run: str, part: str, params: dict[str, str], method: str) -> None:
        if part == "@checkpoint":
            part = world[f"checkpoint:{run}"]
        elif part == "@request":
            part = quote(world["request"], safe="")
        target = path.format(run=world[run], part=part)

        if method == "GET":
            response = admin_api.client.get(target, params, headers=admin_api.headers)
        else:
            response = admin_api.post(target, params)

        assert response.status_code < 500, (method, target, params, response.content[:300])

    request()
