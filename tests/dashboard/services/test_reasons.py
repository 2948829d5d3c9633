"""A person says why where the README promises a reason: cancel, retry, resume, fork, an action
on many runs, a rejection and a decision on many requests; through the services, the JSON API
(a 400 naming ``reason``) and the pages. The system (schedules, sweepers) gives none."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any
from urllib.parse import quote

import pytest
from django.test import Client

from dashboard import services
from dashboard.core.errors import InvalidInput
from dashboard.execution import embedded
from dashboard.models import (
    ApprovalRequest,
    ApprovalStatus,
    BulkAction,
    Checkpoint,
    RunStatus,
    WorkflowRun,
)
from dashboard.services import bulk, validation

pytestmark = pytest.mark.django_db(transaction=True)

WAIT = 30.0


@pytest.fixture
def ops(role_user: Callable[..., Any]) -> Any:
    return role_user("olga", "Operator", "Approver")


def settle() -> None:
    assert embedded.wait_for_background_tasks(WAIT)


def completed() -> tuple[WorkflowRun, str]:
    run = services.run_start(workflow_name="squares", input={"limit": 1, "work_ms": 0})
    settle()
    run.refresh_from_db()
    first = Checkpoint.objects.filter(run=run).order_by("created_at").first()
    assert run.status == RunStatus.COMPLETED and first is not None
    return run, first.checkpoint_id


def waiting() -> tuple[WorkflowRun, ApprovalRequest]:
    run = services.run_start(workflow_name="return-replace", input={"work_ms": 0})
    settle()
    return run, ApprovalRequest.objects.get(run=run, status=ApprovalStatus.PENDING)


def failed() -> WorkflowRun:
    run = services.run_start(
        workflow_name="fail-at-step",
        input={"steps": 2, "fail_at": 1, "outage_seconds": 3600, "work_ms": 0},
    )
    settle()
    run.refresh_from_db()
    assert run.status == RunStatus.FAILED
    return run


# ------------------------------------------------------------------------------ the rule


@pytest.mark.parametrize("given", ["", "   ", "\n"])
def test_reason_for_refuses_an_empty_reason_from_a_person(ops: Any, given: str) -> None:
    with pytest.raises(InvalidInput) as refused:
        validation.reason_for("cancel a run", given, user=ops)

    assert refused.value.errors == {"reason": "required"}
    assert "cancel a run" in refused.value.message


def test_reason_for_lets_the_system_and_optional_reasons_be_empty(ops: Any) -> None:
    assert validation.reason_for("cancel a run", "", user=None) == ""
    assert validation.reason_for("approve", "", user=ops, required=False) == ""
    assert validation.reason_for("cancel a run", "  why  ", user=ops) == "why"


# ------------------------------------------------------------------------------ services


def test_each_run_action_refuses_a_person_without_a_reason_and_changes_nothing(ops: Any) -> None:
    run, checkpoint = completed()
    bad = failed()
    live, _ = waiting()

    for act in (
        lambda: services.run_resume(run.pk, checkpoint_id=checkpoint, user=ops),
        lambda: services.run_fork(run.pk, checkpoint_id=checkpoint, user=ops, reason=" "),
        lambda: services.run_retry(bad.pk, user=ops),
        lambda: services.run_cancel(live.pk, user=ops),
    ):
        with pytest.raises(InvalidInput) as refused:
            act()
        assert "reason" in refused.value.errors

    assert WorkflowRun.objects.filter(pk=run.pk, status=RunStatus.COMPLETED).exists()
    assert WorkflowRun.objects.filter(pk=bad.pk, status=RunStatus.FAILED).exists()
    assert WorkflowRun.objects.filter(pk=live.pk, status=RunStatus.WAITING).exists()
    assert WorkflowRun.objects.count() == 3  # no fork


def test_an_unknown_run_is_still_not_found_and_a_finished_one_a_conflict(ops: Any) -> None:
    run, _ = completed()

    with pytest.raises(services.NotFound):
        services.run_cancel("00000000-0000-4000-8000-000000000000", user=ops)
    with pytest.raises(services.Conflict):
        services.run_cancel(run.pk, user=ops)


def test_a_rejection_needs_a_reason_and_an_approval_does_not(ops: Any) -> None:
    _, first = waiting()
    _, second = waiting()

    with pytest.raises(InvalidInput) as refused:
        services.approval_decide(first.request_id, user=ops, approved=False)
    assert refused.value.errors == {"reason": "required"}
    first.refresh_from_db()
    assert first.status == ApprovalStatus.PENDING

    services.approval_decide(second.request_id, user=ops, approved=True)
    second.refresh_from_db()
    assert second.status == ApprovalStatus.APPROVED
    settle()


def test_decisions_on_many_requests_need_a_reason(ops: Any) -> None:
    _, approval = waiting()

    for approved in (True, False):
        with pytest.raises(InvalidInput) as refused:
            services.approvals_decide_many([approval.request_id], user=ops, approved=approved)
        assert "reason" in refused.value.errors
    approval.refresh_from_db()
    assert approval.status == ApprovalStatus.PENDING


@pytest.mark.parametrize("action", sorted(bulk.BULK_ACTIONS))
def test_an_action_on_many_runs_needs_a_reason(
    make_run: Callable[..., WorkflowRun], role_user: Callable[..., Any], action: str
) -> None:
    admin = role_user("ada", "Admin")
    run = make_run(status="failed")

    with pytest.raises(InvalidInput) as refused:
        bulk.bulk_start(action, [str(run.pk)], user=admin, reason="")

    assert "reason" in refused.value.errors
    assert not BulkAction.objects.exists()


# ------------------------------------------------------------------------------ the API


def api_post(client: Client, path: str, body: Any = None) -> Any:
    return client.post(path, json.dumps(body or {}), content_type="application/json")


def test_the_api_answers_400_naming_the_reason(client_as: Callable[..., Client]) -> None:
    client = client_as("Operator", "Approver", username="olga")
    run, checkpoint = completed()
    bad = failed()
    live, approval = waiting()

    refusals = [
        api_post(client, f"/api/runs/{run.pk}/resume/", {"checkpoint_id": checkpoint}),
        api_post(client, f"/api/runs/{run.pk}/fork/", {"checkpoint_id": checkpoint}),
        api_post(client, f"/api/runs/{bad.pk}/retry/"),
        api_post(client, f"/api/runs/{live.pk}/cancel/", {"reason": ""}),
        api_post(
            client,
            f"/api/approvals/{quote(approval.request_id, safe='')}/decide/",
            {"decision": "reject"},
        ),
    ]

    assert [r.status_code for r in refusals] == [400] * 5
    assert all(r.json()["errors"] == {"reason": "required"} for r in refusals)
    assert all("a reason is required" in r.json()["error"] for r in refusals)
    cancelled = api_post(client, f"/api/runs/{live.pk}/cancel/", {"reason": "a duplicate"})
    assert cancelled.status_code == 200 and cancelled.json()["status"] == "cancelled"


# ------------------------------------------------------------------------------ the pages


def test_the_cancel_dialog_marks_its_reason_required(client_as: Callable[..., Client]) -> None:
    client = client_as("Operator", username="olga")
    live, _ = waiting()

    html = client.get(f"/runs/{live.pk}/").content.decode()

    dialog = html[html.index('id="cancel-dialog"') :]
    dialog = dialog[: dialog.index("</dialog>")]
    assert 'class="required-word">required<' in dialog and "data-required" in dialog
    assert "a reason is required" in dialog


def test_the_run_page_refuses_a_cancel_without_a_reason(client_as: Callable[..., Client]) -> None:
    client = client_as("Operator", username="olga")
    live, _ = waiting()

    response = client.post(f"/runs/{live.pk}/cancel/", {"reason": ""})

    assert response.status_code in (400, 422)
    assert "a reason is required" in response.content.decode()
    live.refresh_from_db()
    assert live.status == RunStatus.WAITING


def test_the_bulk_review_asks_again_for_a_missing_reason(
    client_as: Callable[..., Client], make_run: Callable[..., WorkflowRun]
) -> None:
    client = client_as("Operator", username="olga")
    run = make_run(status="waiting")

    response = client.post(
        "/runs/bulk/", {"action": "cancel", "run": [str(run.pk)], "confirm": "1", "reason": ""}
    )

    html = response.content.decode()
    assert response.status_code == 422
    assert 'id="bulk-confirm-form"' in html and "a reason is required" in html
    assert not BulkAction.objects.exists()
