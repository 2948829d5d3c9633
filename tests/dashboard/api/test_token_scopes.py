"""API tokens held to their scopes and their user's current roles, on every operation.

Every operation the OpenAPI document names says which scope it needs (``x-required-scope``);
a token without that scope is refused it with a 403 naming the scope, even though its user's
roles allow everything, and a token with only ``read`` still reads.
"""

from __future__ import annotations

import json
from typing import Any
from urllib.parse import quote

import pytest
from django.test import Client

from dashboard import services
from dashboard.access.tokens import SCOPES, create_token
from dashboard.execution import worker
from dashboard.models import ApprovalRequest, ApprovalStatus, AuditEntry, WorkflowRun

UNKNOWN = "00000000-0000-4000-8000-000000000000"
FAST = {"work_ms": 0}
SCHEDULE = {"name": "hourly", "workflow": "squares", "input": FAST, "cron": "0 * * * *"}
RULE = {
    "name": "failures",
    "condition": "run_failed",
    "webhook_url": "https://example.com/hook",
    "webhook_secret": "a secret of our own",
}
# A body each operation's schema accepts, so the refusal is the scope's and not the body's.
BODIES: dict[str, Any] = {
    "run_start": {"workflow": "squares", "input": FAST},
    "run_resume": {"checkpoint_id": "abc", "reason": "scopes"},
    "run_fork": {"checkpoint_id": "abc", "reason": "scopes"},
    "run_reveal": {"path": "$.input.email"},
    "runs_migrate": {"run_ids": [UNKNOWN]},
    "approval_decide": {"decision": "approve"},
    "schedule_create": SCHEDULE,
    "schedule_update": SCHEDULE,
    "alert_rule_create": RULE,
    "alert_rule_update": RULE,
}


@pytest.fixture(autouse=True)
def database(services_db: str) -> str:
    return services_db


class Bearer:
    """A script: no session, CSRF enforced (and not applying to a token)."""

    def __init__(self, token: str) -> None:
        self.client = Client(enforce_csrf_checks=True)
        self.headers = {"Authorization": f"Bearer {token}"}

    def call(self, method: str, url: str, body: Any = None) -> Any:
        send = getattr(self.client, method)
        if method in ("get", "delete"):
            return send(url, headers=self.headers)
        data = json.dumps({} if body is None else body)
        return send(url, data, content_type="application/json", headers=self.headers)


@pytest.fixture
def everything(role_user: Any) -> Any:
    return role_user("root", "Admin", "Operator", "Approver")


def _operations(document: dict[str, Any]) -> list[tuple[str, str, str, str]]:
    """(method, path, view name, scope) of every documented operation."""
    found = []
    for path, operations in document["paths"].items():
        for method, operation in operations.items():
            name = operation["operationId"].split("_api_", 1)[1].split("_", 1)[1]
            found.append((method, path, name, operation["x-required-scope"]))
    return found


def test_every_operation_refuses_a_token_without_its_scope(everything: Any) -> None:
    full = Bearer(create_token(everything, "all"))
    schedule = full.call("post", "/api/schedules/", SCHEDULE)
    rule = full.call("post", "/api/alerts/rules/", RULE)
    assert schedule.status_code == 201 and rule.status_code == 201, rule.content
    ids = {
        "run_id": UNKNOWN,
        "checkpoint_id": "abc",
        "request_id": "abc",
        "schedule_id": schedule.json()["id"],
        "rule_id": rule.json()["id"],
    }
    document = full.call("get", "/api/openapi.json").json()
    lacking = {
        scope: Bearer(create_token(everything, scopes=set(SCOPES) - {scope})) for scope in SCOPES
    }

    refused = []
    for method, path, name, scope in _operations(document):
        assert scope in SCOPES, f"{method} {path} names no known scope"
        if scope == "read":  # every token reads
            continue
        response = lacking[scope].call(method, path.format(**ids), BODIES.get(name))
        assert response.status_code == 403, f"{method} {path}: {response.content[:300]!r}"
        assert f"it lacks the '{scope}' scope" in response.json()["error"], (method, path)
        refused.append(name)

    assert len(refused) >= 20
    assert not WorkflowRun.objects.exists()  # nothing was started on the way
    denied = AuditEntry.objects.filter(outcome=AuditEntry.DENIED, actor=everything)
    assert denied.count() >= len(refused)


def test_a_read_token_reads_every_read_operation(everything: Any) -> None:
    read = Bearer(create_token(everything, scopes=["read"]))
    document = Bearer(create_token(everything)).call("get", "/api/openapi.json").json()
    ids = {"run_id": UNKNOWN, "checkpoint_id": "abc", "request_id": "abc", "schedule_id": 1}

    reads = [op for op in _operations(document) if op[3] == "read"]
    for method, path, _, _ in reads:
        response = read.call(method, path.format(**ids))
        assert response.status_code in (200, 404), f"{method} {path}: {response.content[:200]!r}"
    assert len(reads) >= 8


def _waiting_request(everything: Any) -> str:
    run = services.run_start(workflow_name="return-replace", input=FAST, user=everything)
    worker.execute(str(run.pk))
    request = ApprovalRequest.objects.get(run=run, status=ApprovalStatus.PENDING)
    return quote(request.request_id, safe="")


def test_a_read_token_may_not_start_cancel_or_decide(everything: Any) -> None:
    read = Bearer(create_token(everything, "reader", scopes=["read"]))
    request_id = _waiting_request(everything)
    run = WorkflowRun.objects.get()

    assert read.call("get", "/api/runs/").status_code == 200
    start = read.call("post", "/api/runs/", BODIES["run_start"])
    cancel = read.call("post", f"/api/runs/{run.pk}/cancel/", {"reason": "no"})
    decide = read.call("post", f"/api/approvals/{request_id}/decide/", {"decision": "approve"})

    assert start.status_code == 403
    assert start.json()["error"] == "this API token may not start: it lacks the 'operate' scope"
    assert cancel.status_code == 403 and "'operate' scope" in cancel.json()["error"]
    assert decide.status_code == 403
    assert decide.json()["error"] == "this API token may not approve: it lacks the 'decide' scope"
    assert WorkflowRun.objects.count() == 1


def test_an_operate_token_starts_but_does_not_decide(everything: Any) -> None:
    operate = Bearer(create_token(everything, "ops", scopes=["read", "operate"]))
    request_id = _waiting_request(everything)

    assert operate.call("post", "/api/runs/", BODIES["run_start"]).status_code == 201
    decide = operate.call("post", f"/api/approvals/{request_id}/decide/", {"decision": "approve"})
    assert decide.status_code == 403 and "'decide' scope" in decide.json()["error"]

    decider = Bearer(create_token(everything, "decider", scopes=["read", "decide"]))
    approved = decider.call("post", f"/api/approvals/{request_id}/decide/", {"decision": "approve"})
    assert approved.status_code == 200, approved.content


def test_a_token_never_exceeds_its_users_current_roles(role_user: Any) -> None:
    olga = role_user("olga", "Operator")
    token = Bearer(create_token(olga, scopes=list(SCOPES)))
    assert token.call("post", "/api/runs/", BODIES["run_start"]).status_code == 201

    olga.groups.clear()
    olga.groups.add(role_user.group("Viewer"))

    refused = token.call("post", "/api/runs/", BODIES["run_start"])
    assert refused.status_code == 403 and "role required" in refused.json()["error"]
    # Every scope, and still not an Admin's work: the roles decide that.
    prune = token.call("post", "/api/retention/prune/", {})
    assert prune.status_code == 403 and "role required" in prune.json()["error"]


def test_the_openapi_document_describes_the_scopes(everything: Any) -> None:
    document = Bearer(create_token(everything)).call("get", "/api/openapi.json").json()

    bearer = next(
        s for s in document["components"]["securitySchemes"].values() if s["type"] == "http"
    )
    for scope in SCOPES:
        assert f"`{scope}`" in bearer["description"]
    start = document["paths"]["/api/runs/"]["post"]
    assert start["x-required-scope"] == "operate"
    assert "needs the `operate` scope" in start["description"]
    decide = document["paths"]["/api/approvals/{request_id}/decide/"]["post"]
    assert decide["x-required-scope"] == "decide"
