"""Hostile text and oversize bodies, on every way in: the JSON API's bodies, the pages' forms
and the services behind both (dashboard/services/validation.py, dashboard/api/errors.py,
dashboard/web/forms.py).

A lone surrogate, NUL, NaN, Infinity, -Infinity or 1e309 anywhere in a body is a 400 naming the
field (a form error on the pages), and nothing is written. Before, the database or the encoder
raised on them: 500s, on PostgreSQL above all. Bodies over the API's limit are 413 in the API's
JSON error format, Content-Length or not; pages answer a 413 page instead of Django's generic
400. Every test runs on SQLite and on PostgreSQL.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from typing import Any
from urllib.parse import quote

import pytest
from asgiref.sync import async_to_sync
from asgiref.testing import ApplicationCommunicator
from django.conf import settings
from django.core.handlers.asgi import ASGIHandler
from django.core.signals import request_finished, request_started
from django.db import close_old_connections
from django.test import Client
from django.utils.crypto import get_random_string

from dashboard import services
from dashboard.access.tokens import create_token
from dashboard.api.errors import MAX_BODY_BYTES
from dashboard.execution import worker
from dashboard.models import (
    ApprovalRequest,
    ApprovalStatus,
    AuditEntry,
    Checkpoint,
    RunEvent,
    RunStatus,
    WorkflowRun,
)
from dashboard.services import validation

FAST = {"work_ms": 0}

# JSON text of each hostile value: what a client can send, and Python's parser accepts.
HOSTILE = {
    "lone-surrogate": '"\\ud800"',
    "lone-surrogate-in-text": '"refund \\udfff please"',
    "nul": '"a\\u0000b"',
    "nan": "NaN",
    "infinity": "Infinity",
    "minus-infinity": "-Infinity",
    "overflow": "1e309",
}
# Keys are strings: only the text values apply to them.
HOSTILE_KEYS = {k: v for k, v in HOSTILE.items() if v.startswith('"')}


@pytest.fixture(autouse=True)
def database(services_db: str) -> str:
    return services_db


def execute(run_id: Any) -> WorkflowRun:
    worker.execute(str(run_id))
    return WorkflowRun.objects.get(pk=run_id)


def waiting() -> tuple[WorkflowRun, ApprovalRequest]:
    run = execute(services.run_start(workflow_name="return-replace", input=FAST).pk)
    assert run.status == RunStatus.WAITING
    return run, ApprovalRequest.objects.get(run=run, status=ApprovalStatus.PENDING)


def snapshot() -> dict[str, Any]:
    """Everything a refused request could have half-written."""
    return {
        "runs": sorted(
            WorkflowRun.objects.values_list(
                "pk", "status", "on_hold", "hold_reason", "last_event_seq", "input"
            ),
            key=str,
        ),
        "events": RunEvent.objects.count(),
        "checkpoints": Checkpoint.objects.count(),
        "approvals": sorted(
            ApprovalRequest.objects.values_list("pk", "status", "reason", "response"), key=str
        ),
        "audit": AuditEntry.objects.count(),
    }


def session(user: Any) -> tuple[Client, dict[str, str]]:
    client = Client(enforce_csrf_checks=True)
    client.force_login(user)
    secret = get_random_string(32)
    client.cookies[settings.CSRF_COOKIE_NAME] = secret
    return client, {"X-CSRFToken": secret}


# ----------------------------------------------------------------------------- the JSON API

# (path, body template, field the refusal names); "@" is where the hostile JSON text goes.
API_FIELDS = [
    ("/api/runs/", '{"workflow": @}', "workflow"),
    ("/api/runs/", '{"workflow": "return-replace", "input": @}', "input"),
    ("/api/runs/", '{"workflow": "return-replace", "input": {"order_id": @}}', "input"),
    ("/api/runs/", '{"workflow": "return-replace", "input": {"refund_amount": @}}', "input"),
    (
        "/api/runs/",
        '{"workflow": "squares", "input": {"limit": 2, "extra": [1, {"x": @}]}}',
        "input",
    ),
    ("/api/runs/{run}/resume/", '{"checkpoint_id": @}', "checkpoint_id"),
    ("/api/runs/{run}/fork/", '{"checkpoint_id": "{checkpoint}", "state": {"k": @}}', "state"),
    (
        "/api/runs/{run}/fork/",
        '{"checkpoint_id": "{checkpoint}", "executor_states": {"worker": {"k": @}}}',
        "executor_states",
    ),
    ("/api/runs/{run}/hold/", '{"reason": @}', "reason"),
    ("/api/runs/{run}/hold/", '{"hold": @}', "hold"),
    ("/api/runs/{run}/cancel/", '{"note": @}', "note"),
    ("/api/runs/{run}/retry/", '{"note": @}', "note"),
    ("/api/approvals/{request}/decide/", '{"decision": "approve", "reason": @}', "reason"),
    ("/api/approvals/{request}/decide/", '{"decision": "reject", "reason": @}', "reason"),
    ("/api/approvals/{request}/decide/", '{"decision": "approve", "response": @}', "response"),
    (
        "/api/approvals/{request}/decide/",
        '{"decision": "approve", "response": {"note": @}}',
        "response",
    ),
    (
        "/api/approvals/{request}/decide/",
        '{"decision": "approve", "response": {"discount_percent": @}}',
        "response",
    ),
    ("/api/approvals/{request}/claim/", '{"release": @}', "release"),
    ("/api/retention/prune/", '{"policy": @, "dry_run": true}', "policy"),
    ("/api/retention/prune/", '{"dry_run": @}', "dry_run"),
]


def _target(path: str, run: WorkflowRun, approval: ApprovalRequest) -> str:
    return path.format(run=run.pk, request=quote(approval.request_id, safe=""))


@pytest.mark.parametrize("value", HOSTILE.values(), ids=HOSTILE.keys())
@pytest.mark.parametrize(
    "path, template, field", API_FIELDS, ids=[f"{p}:{t}" for p, t, _ in API_FIELDS]
)
def test_api_refuses_hostile_values_naming_the_field_and_writes_nothing(
    admin_role_user: Any, path: str, template: str, field: str, value: str
) -> None:
    run, approval = waiting()
    latest = Checkpoint.objects.filter(run=run).order_by("-created_at").first()
    assert latest is not None
    client, headers = session(admin_role_user)
    body = template.replace("{checkpoint}", latest.pk).replace("@", value)
    before = snapshot()

    response = client.post(
        _target(path, run, approval), body, content_type="application/json", headers=headers
    )

    assert response.status_code == 400, response.content[:300]
    answer = response.json()
    assert field in answer["errors"], answer
    assert field in answer["error"]
    assert snapshot() == before


@pytest.mark.parametrize("value", HOSTILE_KEYS.values(), ids=HOSTILE_KEYS.keys())
@pytest.mark.parametrize(
    "path, template, field",
    [
        ("/api/runs/", '{"workflow": "squares", "input": {@: 1}}', "input"),
        (
            "/api/approvals/{request}/decide/",
            '{"decision": "approve", "response": {@: 1}}',
            "response",
        ),
        ("/api/runs/{run}/hold/", '{"reason": "fine", "extra": {@: true}}', "extra"),
    ],
)
def test_api_refuses_hostile_keys_naming_the_field(
    admin_role_user: Any, path: str, template: str, field: str, value: str
) -> None:
    run, approval = waiting()
    client, headers = session(admin_role_user)
    before = snapshot()

    response = client.post(
        _target(path, run, approval),
        template.replace("@", value),
        content_type="application/json",
        headers=headers,
    )

    assert response.status_code == 400, response.content[:300]
    assert field in response.json()["errors"]
    assert snapshot() == before


@pytest.mark.parametrize("text", ["NaN", "Infinity", "-inf", "1e309"])
def test_api_refuses_a_float_field_that_coerces_to_a_non_finite_number(
    admin_role_user: Any, text: str
) -> None:
    # Sent as a string the body is clean; the input type turns it into a float no database
    # stores. The service refuses it after coercion, naming the field as type errors do.
    client, headers = session(admin_role_user)
    body = {"workflow": "return-replace", "input": {"refund_amount": text}}

    response = client.post("/api/runs/", body, content_type="application/json", headers=headers)

    assert response.status_code == 400, response.content[:300]
    assert "refund_amount" in response.json()["errors"]
    assert not WorkflowRun.objects.exists()


# ----------------------------------------------------------------------------- the services


@pytest.mark.parametrize(
    "value", ["\ud800", "x\udfffy", "a\x00b", float("nan"), float("inf"), -float("inf")]
)
def test_services_refuse_what_cannot_be_stored_whoever_calls_them(
    admin_role_user: Any, value: Any
) -> None:
    run, approval = waiting()
    before = snapshot()
    calls: list[tuple[Callable[[], Any], str]] = [
        (
            lambda: services.run_start(
                workflow_name="return-replace", input={"order_id": value}, user=admin_role_user
            ),
            "order_id",
        ),
        (lambda: services.run_hold(run.pk, user=admin_role_user, reason=str(value)), "reason"),
        (
            lambda: services.approval_decide(
                approval.request_id, user=admin_role_user, approved=False, reason=str(value)
            ),
            "reason",
        ),
        (
            lambda: services.approval_decide(
                approval.request_id, user=admin_role_user, approved=True, response={"note": value}
            ),
            "response",
        ),
    ]
    for call, field in calls:
        if isinstance(value, float) and field == "reason":
            continue  # str(nan) is harmless text
        with pytest.raises(services.InvalidInput) as refused:
            call()
        assert field in refused.value.errors, refused.value.errors
    assert snapshot() == before


def test_unstorable_names_the_path_and_prints_bad_keys_safely() -> None:
    assert validation.unstorable({"a": [1, {"b": "\ud800"}]}) == (
        "a.1.b",
        "contains a lone surrogate (\\ud800), which is not valid Unicode text",
    )
    path, problem = validation.unstorable({"x\x00": 1}) or ("", "")
    assert path == "x\\u0000" and "key contains a NUL" in problem
    parsed = validation.parse_json('{"n": [1.5, -1e400]}')
    assert validation.unstorable(parsed) == ("n.1", "-1e400 is not a finite JSON number")
    assert validation.unstorable({"ok": ["text", 1, 2.5, None, True]}) is None


# ------------------------------------------------------------------------------- the pages


def _page_client(user: Any) -> Client:
    client = Client()
    client.force_login(user)
    return client


@pytest.mark.parametrize("value", HOSTILE.values(), ids=HOSTILE.keys())
def test_start_form_json_editor_refuses_hostile_values_beside_the_field(
    admin_role_user: Any, value: str
) -> None:
    response = _page_client(admin_role_user).post(
        "/runs/start/",
        {
            "workflow": "return-replace",
            "mode": "json",
            "input-json": '{"order_id": "A", "refund_amount": @}'.replace("@", value),
        },
    )

    html = response.content.decode()
    assert response.status_code == 422
    assert 'id="id_input-json_error"' in html and "refund_amount" in html
    assert not WorkflowRun.objects.exists()


@pytest.mark.parametrize("value", ["NaN", "inf", "1e309", "-Infinity"])
def test_start_form_float_fields_refuse_non_finite_numbers(
    admin_role_user: Any, value: str
) -> None:
    response = _page_client(admin_role_user).post(
        "/runs/start/", {"workflow": "return-replace", "input-refund_amount": value}
    )

    assert response.status_code == 422
    assert 'id="id_input-refund_amount_error"' in response.content.decode()
    assert not WorkflowRun.objects.exists()


@pytest.mark.parametrize("value", HOSTILE.values(), ids=HOSTILE.keys())
def test_decision_form_refuses_hostile_json_responses(admin_role_user: Any, value: str) -> None:
    _, approval = waiting()
    before = snapshot()

    response = _page_client(admin_role_user).post(
        f"/approvals/{approval.request_id}/decide/",
        {
            "decision": "approve",
            "mode": "json",
            "response-json": '{"discount_percent": 5, "note": @}'.replace("@", value),
        },
    )

    assert response.status_code == 422
    assert 'id="id_response-json_error"' in response.content.decode()
    assert snapshot() == before


def test_decision_form_refuses_nul_in_the_reason(admin_role_user: Any) -> None:
    _, approval = waiting()
    before = snapshot()

    response = _page_client(admin_role_user).post(
        f"/approvals/{approval.request_id}/decide/", {"decision": "reject", "reason": "no\x00"}
    )

    assert response.status_code == 422 and "Null characters are not allowed" in (
        response.content.decode()
    )
    assert snapshot() == before


@pytest.mark.parametrize("value", HOSTILE.values(), ids=HOSTILE.keys())
def test_fork_editor_refuses_hostile_state_beside_the_field(
    admin_role_user: Any, value: str
) -> None:
    run, _ = waiting()
    latest = Checkpoint.objects.filter(run=run).order_by("-created_at").first()
    assert latest is not None
    url = f"/runs/{run.pk}/checkpoints/{latest.pk}/"
    client = _page_client(admin_role_user)
    # The parked ReturnState's list of steps is JSON, typed into its own field of the editor.
    steps = re.search(
        r'name="(f\d+)"[^>]*data-fork-field="state\.[^"]+\.completed_steps"',
        client.get(url).content.decode(),
    )
    assert steps is not None
    before = snapshot()

    response = client.post(f"{url}fork/", {steps.group(1): "[@]".replace("@", value)})

    html = response.content.decode()
    assert response.status_code == 422 and f'id="fork-{steps.group(1)}-error"' in html
    assert snapshot() == before


# --------------------------------------------------------------------------- oversize bodies


def _big_json(size: int) -> bytes:
    # A field the input has (unknown fields are refused), holding a legitimately long text.
    padding = size - len(b'{"workflow": "return-replace", "input": {"order_id": ""}}')
    return b'{"workflow": "return-replace", "input": {"order_id": "' + b"x" * padding + b'"}}'


@pytest.mark.parametrize("size", [2 * 1024 * 1024, 10 * 1024 * 1024], ids=["2MiB", "10MiB"])
def test_api_answers_413_json_naming_the_limit_for_oversize_bodies(
    admin_role_user: Any, size: int
) -> None:
    client, headers = session(admin_role_user)
    token = create_token(admin_role_user, name="big")

    for response in (
        client.post(
            "/api/runs/", _big_json(size), content_type="application/json", headers=headers
        ),
        Client().post(
            "/api/runs/",
            _big_json(size),
            content_type="application/json",
            headers={"Authorization": f"Bearer {token}"},
        ),
    ):
        assert response.status_code == 413, response.content[:300]
        assert response["Content-Type"].startswith("application/json")
        assert str(MAX_BODY_BYTES) in response.json()["error"]
        assert "body" in response.json()["errors"]
    assert not WorkflowRun.objects.exists()


def test_api_accepts_a_body_just_under_the_limit(admin_role_user: Any) -> None:
    client, headers = session(admin_role_user)

    response = client.post(
        "/api/runs/", _big_json(MAX_BODY_BYTES), content_type="application/json", headers=headers
    )

    assert response.status_code == 201, response.content[:300]


class _SameThreadASGIHandler(ASGIHandler):
    """Django's ASGI handler without its per-request thread, so the view sees the test's
    uncommitted rows (its token); reading the body is Django's own."""

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        await self.handle(scope, receive, send)


async def _post_chunked(
    path: str, body: bytes, token: str
) -> tuple[int, dict[bytes, bytes], bytes]:
    """POST through Django's ASGI handler with no Content-Length (as chunked transfer)."""
    scope = {
        "type": "http",
        "asgi": {"version": "3.0"},
        "http_version": "1.1",
        "method": "POST",
        "scheme": "http",
        "path": path,
        "raw_path": path.encode(),
        "query_string": b"",
        "root_path": "",
        "server": ("testserver", 80),
        "client": ("127.0.0.1", 5000),
        "headers": [
            (b"host", b"testserver"),
            (b"content-type", b"application/json"),
            (b"authorization", f"Bearer {token}".encode()),
        ],
    }
    app = ApplicationCommunicator(_SameThreadASGIHandler(), scope)
    chunk = 256 * 1024
    for start in range(0, len(body), chunk):
        more = start + chunk < len(body)
        await app.send_input(
            {"type": "http.request", "body": body[start : start + chunk], "more_body": more}
        )
    head = await app.receive_output(30)
    content = b""
    while True:
        message = await app.receive_output(30)
        content += message.get("body", b"")
        if not message.get("more_body"):
            break
    return head["status"], {k.lower(): v for k, v in head["headers"]}, content


@pytest.mark.parametrize("size", [2 * 1024 * 1024, 10 * 1024 * 1024], ids=["2MiB", "10MiB"])
def test_api_answers_413_to_oversize_bodies_without_a_content_length(
    admin_role_user: Any, size: int
) -> None:
    token = create_token(admin_role_user, name="chunked")
    # As Django's test client does: the request must not close the test's connection.
    request_started.disconnect(close_old_connections)
    request_finished.disconnect(close_old_connections)
    try:
        status, headers, content = async_to_sync(_post_chunked)(
            "/api/runs/", _big_json(size), token
        )
    finally:
        request_started.connect(close_old_connections)
        request_finished.connect(close_old_connections)

    assert status == 413, content[:300]
    assert headers[b"content-type"].startswith(b"application/json")
    assert str(MAX_BODY_BYTES) in json.loads(content)["error"]
    assert not WorkflowRun.objects.exists()


@pytest.mark.parametrize("enforce_csrf", [False, True], ids=["view-reads", "csrf-reads"])
def test_pages_answer_a_readable_413_page_for_oversize_forms(
    admin_role_user: Any, enforce_csrf: bool
) -> None:
    client = Client(enforce_csrf_checks=enforce_csrf)
    client.force_login(admin_role_user)
    client.cookies[settings.CSRF_COOKIE_NAME] = get_random_string(32)
    size = settings.DATA_UPLOAD_MAX_MEMORY_SIZE + 1024

    response = client.post(
        "/runs/start/", {"workflow": "squares", "mode": "json", "input-json": "x" * size}
    )

    html = response.content.decode()
    assert response.status_code == 413
    assert response["Content-Type"].startswith("text/html")
    assert "Request too large" in html and "2.5" in html
    assert "Bad Request (400)" not in html
    assert not WorkflowRun.objects.exists()
