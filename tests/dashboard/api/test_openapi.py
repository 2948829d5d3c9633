"""The JSON API's OpenAPI document (dashboard/api/urls.py) and every endpoint held to it.

The document served at /api/openapi.json must be valid OpenAPI, name every route the API
serves, and describe every answer: each call below goes through ``Contract.check``, which fails
on a path or method the document lacks, a status it does not list for that operation, or a body
its schema refuses (``$ref``s resolved; objects may not carry keys the document does not name).
``test_openapi_every_operation_is_exercised`` then proves each documented operation was called,
with a success and a refusal.
"""

from __future__ import annotations

import copy
import json
import re
from collections.abc import Callable, Iterator
from typing import Any
from urllib.parse import quote, urlsplit

import pytest
from django.conf import settings
from django.test import Client
from django.urls import URLPattern, URLResolver
from django.utils.crypto import get_random_string
from jsonschema import Draft202012Validator
from openapi_spec_validator import validate

from dashboard import services
from dashboard.access.tokens import create_token
from dashboard.api import urls as api_urls
from dashboard.execution import worker
from dashboard.models import ApprovalRequest, ApprovalStatus, Checkpoint, RunStatus, WorkflowRun

UNKNOWN = "00000000-0000-4000-8000-000000000000"
FAST = {"work_ms": 0}
METHODS = ("get", "put", "post", "delete", "options", "head", "patch", "trace")


@pytest.fixture(autouse=True)
def database(services_db: str) -> str:
    return services_db


def session(user: Any, *, csrf: bool = True) -> Client:
    """A browser: logged in, CSRF enforced, with the cookie and header a page would send."""
    client = Client(enforce_csrf_checks=True)
    client.force_login(user)
    if csrf:
        secret = get_random_string(32)
        client.cookies[settings.CSRF_COOKIE_NAME] = secret
        client.defaults["HTTP_X_CSRFTOKEN"] = secret
    return client


def fetch_document(client: Client) -> dict[str, Any]:
    response = client.get("/api/openapi.json")
    assert response.status_code == 200, response.content[:300]
    assert response["Content-Type"].startswith("application/json")
    document: dict[str, Any] = response.json()
    return document


# ------------------------------------------------------------------------------ the contract


def _closed(schema: Any) -> Any:
    """The schema with ``additionalProperties: false`` on every object that names its
    properties and says nothing else, so an undocumented key in a response fails."""
    if isinstance(schema, dict):
        closed = {key: _closed(value) for key, value in schema.items()}
        if "properties" in closed and "additionalProperties" not in closed:
            closed["additionalProperties"] = False
        return closed
    if isinstance(schema, list):
        return [_closed(item) for item in schema]
    return schema


class Contract:
    """Checks each API answer against the document, and records which were seen."""

    def __init__(self, document: dict[str, Any]) -> None:
        self.document = document
        self.components = _closed(copy.deepcopy(document.get("components", {})))
        self.templates = [
            (template, re.compile("^" + re.sub(r"\{[^/}]+\}", "[^/]+", template) + "$"))
            for template in document["paths"]
        ]
        self.seen: dict[tuple[str, str], set[int]] = {}

    def operation(self, method: str, url: str) -> tuple[str, dict[str, Any]]:
        path = urlsplit(url).path
        matches = [template for template, pattern in self.templates if pattern.match(path)]
        assert matches, f"{path} is not in the OpenAPI document"
        # A literal segment beats a parameter, as in the URLconf.
        template = min(matches, key=lambda t: t.count("{"))
        operations = self.document["paths"][template]
        assert method.lower() in operations, f"{method} {template} is not in the OpenAPI document"
        return template, operations[method.lower()]

    def check(self, method: str, url: str, response: Any) -> Any:
        template, operation = self.operation(method, url)
        status = str(response.status_code)
        described = operation["responses"]
        assert status in described, (
            f"{method} {template} answered {status}, not in the document ({sorted(described)}): "
            f"{response.content[:300]!r}"
        )
        content = described[status].get("content", {})
        if response.status_code == 204:
            assert not content and response.content == b"", f"{method} {template} 204 has a body"
            self.seen.setdefault((method.lower(), template), set()).add(204)
            return response
        kind = response["Content-Type"].split(";")[0]
        if kind != "application/json" and kind in content:  # a download: its type is documented
            self.seen.setdefault((method.lower(), template), set()).add(response.status_code)
            return response
        assert "application/json" in content, f"{method} {template} {status} has no JSON schema"
        assert response["Content-Type"].startswith("application/json")
        schema = {**_closed(content["application/json"]["schema"]), "components": self.components}
        validator = Draft202012Validator(schema, format_checker=Draft202012Validator.FORMAT_CHECKER)
        errors = sorted(validator.iter_errors(response.json()), key=lambda e: list(e.path))
        assert not errors, f"{method} {template} {status}: " + "; ".join(
            f"{list(e.path)}: {e.message}" for e in errors[:5]
        )
        self.seen.setdefault((method.lower(), template), set()).add(response.status_code)
        return response


class Caller:
    """A client whose every API answer is checked against the document."""

    def __init__(self, contract: Contract, client: Client, headers: dict[str, str] | None = None):
        self.contract, self.client, self.headers = contract, client, headers or {}

    def get(self, url: str, **params: str) -> Any:
        return self.contract.check("GET", url, self.client.get(url, params, headers=self.headers))

    def post(self, url: str, body: Any = None, *, raw: bytes | None = None) -> Any:
        data = raw if raw is not None else json.dumps({} if body is None else body)
        response = self.client.post(
            url, data, content_type="application/json", headers=self.headers
        )
        return self.contract.check("POST", url, response)

    def put(self, url: str, body: Any) -> Any:
        response = self.client.put(
            url, json.dumps(body), content_type="application/json", headers=self.headers
        )
        return self.contract.check("PUT", url, response)

    def delete(self, url: str) -> Any:
        return self.contract.check("DELETE", url, self.client.delete(url, headers=self.headers))


# ------------------------------------------------------------------------------ the document


def test_openapi_document_is_valid_openapi(operator_approver_user: Any) -> None:
    document = fetch_document(session(operator_approver_user))

    validate(document)
    assert document["openapi"].startswith("3.")
    schemes = document["components"]["securitySchemes"]
    assert {s["type"] for s in schemes.values()} == {"http", "apiKey"}


def test_openapi_document_needs_the_api_authentication(operator_approver_user: Any) -> None:
    anonymous = Client().get("/api/openapi.json")
    assert anonymous.status_code == 401 and "authentication required" in anonymous.json()["error"]

    token = create_token(operator_approver_user, name="docs")
    by_token = Client().get("/api/openapi.json", headers={"Authorization": f"Bearer {token}"})
    assert by_token.status_code == 200 and "paths" in by_token.json()
    refused = Client().get("/api/openapi.json", headers={"Authorization": "Bearer sst_wrong"})
    assert refused.status_code == 401
    posted = session(operator_approver_user).post("/api/openapi.json")
    assert posted.status_code == 405


def _api_routes(patterns: list[URLPattern | URLResolver], prefix: str) -> Iterator[str]:
    for pattern in patterns:
        route = prefix + str(pattern.pattern)
        if isinstance(pattern, URLResolver):
            yield from _api_routes(pattern.url_patterns, route)
        else:
            yield route


def test_openapi_document_names_every_route_the_api_serves(operator_approver_user: Any) -> None:
    document = fetch_document(session(operator_approver_user))

    routes = {
        "/api/" + re.sub(r"<(?:\w+:)?(\w+)>", r"{\1}", route)
        for route in _api_routes(api_urls.urlpatterns, "")
    }
    served = routes - {"/api/", "/api/openapi.json"}

    assert len(served) >= 13
    assert served == set(document["paths"])


def test_contract_refuses_what_the_document_does_not_describe(operator_approver_user: Any) -> None:
    """The checker itself: an undocumented path, status or key fails."""
    contract = Contract(fetch_document(session(operator_approver_user)))

    class Fake:
        def __init__(self, status: int, body: Any) -> None:
            self.status_code, self.body = status, body
            self.content = json.dumps(body).encode()

        def __getitem__(self, header: str) -> str:
            return "application/json"

        def json(self) -> Any:
            return self.body

    with pytest.raises(AssertionError, match="not in the OpenAPI document"):
        contract.check("GET", "/api/nothing/", Fake(200, {}))
    with pytest.raises(AssertionError, match="not in the OpenAPI document"):
        contract.check("DELETE", "/api/runs/", Fake(200, {}))
    with pytest.raises(AssertionError, match="not in the document"):
        contract.check("GET", "/api/workflows/", Fake(418, {"error": "teapot"}))
    with pytest.raises(AssertionError, match="Additional properties"):
        contract.check("GET", "/api/workflows/", Fake(401, {"error": "x", "extra": 1}))
    with pytest.raises(AssertionError, match="'runs' is a required property"):
        contract.check("GET", "/api/runs/", Fake(200, {}))
    contract.check("GET", "/api/workflows/", Fake(401, {"error": "x"}))


# ------------------------------------------------------------------------------ every endpoint


def execute(run_id: Any) -> WorkflowRun:
    worker.execute(str(run_id))
    return WorkflowRun.objects.get(pk=run_id)


def started(workflow: str, input: Any) -> WorkflowRun:
    return execute(services.run_start(workflow_name=workflow, input=input).pk)


def first_checkpoint(run: WorkflowRun) -> str:
    checkpoint_id: str = (
        Checkpoint.objects.filter(run=run).order_by("created_at").values_list("pk", flat=True)[0]
    )
    return checkpoint_id


def pending(run: WorkflowRun) -> ApprovalRequest:
    return ApprovalRequest.objects.get(run=run, status=ApprovalStatus.PENDING)


def exercise(
    contract: Contract, operator_approver_user: Any, role_user: Callable[..., Any]
) -> None:
    api = Caller(contract, session(operator_approver_user))
    admin = Caller(contract, session(role_user("ada", "Admin")))
    token = Caller(
        contract,
        Client(enforce_csrf_checks=True),
        {"Authorization": f"Bearer {create_token(operator_approver_user)}"},
    )
    viewer = Caller(contract, session(role_user("vic", "Viewer")))
    nobody = Caller(contract, session(role_user("nobody")))
    anonymous = Caller(contract, Client(enforce_csrf_checks=True))
    no_csrf = Caller(contract, session(operator_approver_user, csrf=False))
    bad_token = Caller(contract, Client(), {"Authorization": "Bearer sst_wrong"})

    # workflows
    assert api.get("/api/workflows/").status_code == 200
    assert anonymous.get("/api/workflows/").status_code == 401
    assert bad_token.get("/api/workflows/").status_code == 401
    assert nobody.get("/api/workflows/").status_code == 403
    assert api.get("/api/workflows/", x="a\x00").status_code == 400

    # runs: start, list, one run, its checkpoints and events
    assert (
        token.post("/api/runs/", {"workflow": "squares", "input": {"limit": 2, **FAST}}).status_code
        == 201
    )
    created = api.post("/api/runs/", {"workflow": "squares", "input": {"limit": 2, **FAST}})
    assert created.status_code == 201
    assert api.post("/api/runs/", {}).status_code == 400
    assert (
        api.post("/api/runs/", {"workflow": "squares", "input": {"limit": "ten"}}).status_code
        == 400
    )
    assert api.post("/api/runs/", raw=b"[1]").status_code == 400
    assert api.post("/api/runs/", raw=b"").status_code == 400
    assert viewer.post("/api/runs/", {"workflow": "squares"}).status_code == 403
    assert no_csrf.post("/api/runs/", {"workflow": "squares"}).status_code == 403
    assert anonymous.post("/api/runs/", {"workflow": "squares"}).status_code == 401
    done = execute(created.json()["id"])
    failed = started("fail-at-step", {"steps": 2, "fail_at": 1, "outage_seconds": 3600, **FAST})
    assert failed.status == RunStatus.FAILED
    assert api.get("/api/runs/").status_code == 200
    assert api.get("/api/runs/", status="failed", workflow="squares", limit="1").status_code == 200
    assert api.get("/api/runs/", status="sleeping").status_code == 400
    assert api.get("/api/runs/", limit="many").status_code == 400
    assert api.get(f"/api/runs/{done.pk}/").status_code == 200
    assert api.get(f"/api/runs/{failed.pk}/").json()["error"]["message"]
    assert api.get(f"/api/runs/{UNKNOWN}/").status_code == 404
    assert api.get(f"/api/runs/{done.pk}/checkpoints/").status_code == 200
    assert api.get(f"/api/runs/{UNKNOWN}/checkpoints/").status_code == 404
    checkpoint = first_checkpoint(done)
    assert api.get(f"/api/runs/{done.pk}/checkpoints/{checkpoint}/").status_code == 200
    assert api.get(f"/api/runs/{done.pk}/checkpoints/nope/").status_code == 404
    assert api.get(f"/api/runs/{done.pk}/checkpoints/a%00b/").status_code == 404
    assert api.get(f"/api/runs/{done.pk}/events/", after="2", limit="3").status_code == 200
    assert api.get(f"/api/runs/{done.pk}/events/", after="x").status_code == 400
    assert api.get(f"/api/runs/{UNKNOWN}/events/").status_code == 404

    # runs: reveal a masked field (Admins and the Sensitive data role; audited)
    dispute = started("card-dispute", {"email": "ida@example.org", "customer": "Ida"})
    field = {"path": "$.input.email"}
    assert admin.post(f"/api/runs/{dispute.pk}/reveal/", field).json()["value"] == "ida@example.org"
    assert api.post(f"/api/runs/{dispute.pk}/reveal/", field).status_code == 403
    assert admin.post(f"/api/runs/{UNKNOWN}/reveal/", field).status_code == 404
    assert admin.post(f"/api/runs/{dispute.pk}/reveal/", {}).status_code == 400

    # runs: resume, fork, cancel, retry, hold (each of the first four with a reason)
    WHY = {"reason": "checking the API"}
    assert api.post(f"/api/runs/{done.pk}/resume/", {}).status_code == 400
    assert api.post(f"/api/runs/{UNKNOWN}/resume/", {"checkpoint_id": "abc"}).status_code == 404
    assert (
        api.post(f"/api/runs/{done.pk}/resume/", {"checkpoint_id": checkpoint}).status_code == 400
    )  # a person says why
    resumed = api.post(f"/api/runs/{done.pk}/resume/", {"checkpoint_id": checkpoint, **WHY})
    assert resumed.status_code == 202
    assert (
        api.post(f"/api/runs/{done.pk}/resume/", {"checkpoint_id": checkpoint}).status_code == 409
    )
    execute(done.pk)
    fork = api.post(f"/api/runs/{done.pk}/fork/", {"checkpoint_id": checkpoint, **WHY})
    assert fork.status_code == 201
    assert (
        api.post(
            f"/api/runs/{done.pk}/fork/", {"checkpoint_id": checkpoint, "state": [1]}
        ).status_code
        == 400
    )
    # Messages in flight are edited in the document's own form; one nothing would take is refused.
    document = api.get(f"/api/runs/{done.pk}/checkpoints/{checkpoint}/").json()["document"]
    in_flight = document["messages"]
    assert (
        api.post(
            f"/api/runs/{done.pk}/fork/",
            {"checkpoint_id": checkpoint, "messages": in_flight, **WHY},
        ).status_code
        == 201
    )
    lost = [{**in_flight[0], "data": "not the start executor's input"}]
    refused = api.post(
        f"/api/runs/{done.pk}/fork/", {"checkpoint_id": checkpoint, "messages": lost}
    )
    assert refused.status_code == 400 and "messages.0.data" in refused.json()["errors"]
    assert (
        api.post(
            f"/api/runs/{done.pk}/fork/", {"checkpoint_id": checkpoint, "messages": {}}
        ).status_code
        == 400
    )
    assert api.post(f"/api/runs/{UNKNOWN}/fork/", {"checkpoint_id": "abc"}).status_code == 404
    assert api.post(f"/api/runs/{fork.json()['id']}/cancel/").status_code == 400
    assert api.post(f"/api/runs/{fork.json()['id']}/cancel/", WHY).status_code == 200
    assert api.post(f"/api/runs/{fork.json()['id']}/cancel/").status_code == 409
    assert api.post(f"/api/runs/{UNKNOWN}/cancel/").status_code == 404
    assert api.post(f"/api/runs/{done.pk}/cancel/", raw=b"{bad").status_code == 400
    assert api.post(f"/api/runs/{failed.pk}/retry/", {"reason": " "}).status_code == 400
    assert api.post(f"/api/runs/{failed.pk}/retry/", WHY).status_code == 202
    assert api.post(f"/api/runs/{failed.pk}/retry/").status_code == 409
    assert api.post(f"/api/runs/{UNKNOWN}/retry/").status_code == 404
    assert admin.post(f"/api/runs/{done.pk}/hold/", {"reason": "legal"}).status_code == 200
    assert admin.post(f"/api/runs/{done.pk}/hold/", {"hold": True}).status_code == 409
    assert admin.post(f"/api/runs/{done.pk}/hold/", {"hold": "yes"}).status_code == 400
    assert admin.post(f"/api/runs/{UNKNOWN}/hold/").status_code == 404
    assert admin.post(f"/api/runs/{done.pk}/hold/", {"hold": False}).status_code == 200
    # migrate: a run already on the deployed version has nothing to move to
    assert api.post(f"/api/runs/{failed.pk}/migrate/").status_code == 409
    assert api.post(f"/api/runs/{UNKNOWN}/migrate/", {"checkpoint_id": "abc"}).status_code == 404
    assert (
        api.post(f"/api/runs/{failed.pk}/migrate/", {"discard_unmatched": "yes"}).status_code == 400
    )
    # A run left on a version this deployment no longer has moves to the current one.
    stranded = started("fail-at-step", {"steps": 2, "fail_at": 1, "outage_seconds": 3600, **FAST})
    WorkflowRun.objects.filter(pk=stranded.pk).update(graph_version="0" * 64)
    assert api.post(f"/api/runs/{stranded.pk}/migrate/").status_code == 202
    bulk = api.post("/api/runs/migrate/", {"run_ids": [str(failed.pk)]})
    assert bulk.status_code == 200 and str(failed.pk) in bulk.json()["skipped"]
    assert api.post("/api/runs/migrate/", {"run_ids": []}).status_code == 400

    # approvals: list, claim, decide
    waiting = started("return-replace", FAST)
    request_id = quote(pending(waiting).request_id, safe="")
    assert api.get("/api/approvals/").status_code == 200
    assert api.get("/api/approvals/", status="maybe").status_code == 400
    assert admin.post(f"/api/approvals/{request_id}/claim/", {"release": 1}).status_code == 400
    assert admin.post("/api/approvals/abc/claim/").status_code == 404
    assert admin.post(f"/api/approvals/{request_id}/claim/").status_code == 200
    assert admin.post(f"/api/approvals/{request_id}/claim/", {"release": True}).status_code == 200
    assert (
        api.post(f"/api/approvals/{request_id}/decide/", {"decision": "maybe"}).status_code == 400
    )
    assert api.post("/api/approvals/abc/decide/", {"decision": "approve"}).status_code == 404
    assert (
        viewer.post(f"/api/approvals/{request_id}/decide/", {"decision": "approve"}).status_code
        == 403
    )
    approved = api.post(
        f"/api/approvals/{request_id}/decide/",
        {
            "decision": "approve",
            "response": {"discount_percent": 20, "note": "ok"},
            "reason": "fine",
        },
    )
    assert approved.status_code == 200
    assert (
        api.post(f"/api/approvals/{request_id}/decide/", {"decision": "reject"}).status_code == 409
    )
    assert admin.post(f"/api/approvals/{request_id}/claim/").status_code == 409
    assert api.get("/api/approvals/", status="approved").status_code == 200

    # retention
    assert admin.post("/api/retention/prune/", {"dry_run": True}).status_code == 200
    assert admin.post("/api/retention/prune/").status_code == 200
    assert admin.post("/api/retention/prune/", {"policy": "nope"}).status_code == 404
    assert admin.post("/api/retention/prune/", {"dry_run": "no"}).status_code == 400
    assert api.post("/api/retention/prune/", {"dry_run": True}).status_code == 403

    # schedules: create, list, pause, resume, trigger (a second trigger is skipped: 409)
    schedule = api.post(
        "/api/schedules/", {"name": "n", "workflow": "squares", "input": FAST, "cron": "0 * * * *"}
    )
    assert schedule.status_code == 201
    assert (
        api.post(
            "/api/schedules/", {"name": "m", "workflow": "squares", "cron": "0 99 * * *"}
        ).status_code
        == 400
    )
    assert (
        viewer.post(
            "/api/schedules/", {"name": "v", "workflow": "squares", "cron": "* * * * *"}
        ).status_code
        == 403
    )
    assert api.get("/api/schedules/").status_code == 200
    assert nobody.get("/api/schedules/").status_code == 403
    schedule_path = f"/api/schedules/{schedule.json()['id']}"
    assert api.post(f"{schedule_path}/pause/").status_code == 200
    assert api.post(f"{schedule_path}/pause/").status_code == 409
    assert api.post(f"{schedule_path}/resume/").status_code == 200
    assert api.post(f"{schedule_path}/resume/").status_code == 409
    assert api.post(f"{schedule_path}/trigger/").status_code == 201
    assert api.post(f"{schedule_path}/trigger/").status_code == 409
    assert viewer.post(f"{schedule_path}/trigger/").status_code == 403
    # read, change and delete one
    assert api.get(f"{schedule_path}/").json()["last_tick"]["outcome"] == "skipped"
    assert api.get("/api/schedules/999999/").status_code == 404
    hourly = {"name": "n2", "workflow": "squares", "input": FAST, "interval_seconds": 3600}
    changed = api.put(f"{schedule_path}/", hourly)
    assert changed.status_code == 200 and changed.json()["kind"] == "interval"
    assert api.put(f"{schedule_path}/", {**hourly, "cron": "0 * * * *"}).status_code == 400
    assert api.put("/api/schedules/999999/", hourly).status_code == 404
    assert viewer.put(f"{schedule_path}/", hourly).status_code == 403
    assert viewer.delete(f"{schedule_path}/").status_code == 403
    assert api.delete(f"{schedule_path}/").status_code == 204
    assert api.delete(f"{schedule_path}/").status_code == 404
    beyond = "/api/schedules/99999999999999999999/"  # no database compares a key this large
    assert api.get(beyond).status_code == 404
    assert api.put(beyond, hourly).status_code == 404
    assert api.delete(beyond).status_code == 404
    assert api.post(f"{beyond}pause/").status_code == 404

    # alert rules (Admins): create, list, read, change, delete
    rule_body = {
        "name": "failures",
        "condition": "run_failed",
        "webhook_url": "https://example.com/hook",
        "webhook_secret": "a secret of our own",
    }
    rule = admin.post("/api/alerts/rules/", rule_body)
    assert rule.status_code == 201 and rule.json()["webhook_signed"] is True
    assert (
        admin.post("/api/alerts/rules/", {**rule_body, "condition": "sometimes"}).status_code == 400
    )
    assert api.post("/api/alerts/rules/", {**rule_body, "name": "op"}).status_code == 403
    assert admin.get("/api/alerts/rules/").status_code == 200
    assert api.get("/api/alerts/rules/").status_code == 403
    rule_path = f"/api/alerts/rules/{rule.json()['id']}/"
    assert admin.get(rule_path).json()["name"] == "failures"
    assert admin.get("/api/alerts/rules/999999/").status_code == 404
    assert api.get(rule_path).status_code == 403
    slow = {
        "name": "slow",
        "condition": "run_slow",
        "threshold_minutes": 30,
        "webhook_url": "https://example.com/hook",
    }
    assert admin.put(rule_path, slow).json()["webhook_signed"] is True  # left out: kept
    assert admin.put(rule_path, {**slow, "threshold_minutes": None}).status_code == 400
    assert admin.put("/api/alerts/rules/999999/", slow).status_code == 404
    assert api.put(rule_path, slow).status_code == 403
    assert api.delete(rule_path).status_code == 403
    assert admin.delete(rule_path).status_code == 204
    assert admin.delete(rule_path).status_code == 404

    assert admin.get("/api/audit/export", action="cancel").status_code == 200
    assert admin.get("/api/audit/export", format="csv").status_code == 200
    assert admin.get("/api/audit/export", format="xml").status_code == 400
    assert api.get("/api/audit/export").status_code == 403


def test_openapi_every_endpoint_answers_as_documented(
    operator_approver_user: Any, role_user: Callable[..., Any]
) -> None:
    contract = Contract(fetch_document(session(operator_approver_user)))

    exercise(contract, operator_approver_user, role_user)

    documented = {
        (method, template)
        for template, operations in contract.document["paths"].items()
        for method in operations
        if method in METHODS
    }
    assert set(contract.seen) == documented, "operations not exercised: " + ", ".join(
        f"{m.upper()} {t}" for m, t in sorted(documented - set(contract.seen))
    )
    for (method, template), statuses in sorted(contract.seen.items()):
        assert any(s < 300 for s in statuses), f"{method} {template}: no success exercised"
        assert any(400 <= s < 500 for s in statuses), f"{method} {template}: no refusal exercised"
