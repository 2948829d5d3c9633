"""A run whose workflow is no longer registered (a deploy removed it): its pages and API
answers still render and say so; actions that need the graph refuse with a message (4xx),
never a 500.

The fixture renames the run's workflow to one the registry does not know and, as in a fresh
process that never loaded the removed workflow, unregisters the demo's checkpoint types.
"""

from __future__ import annotations

import html
import json
from collections.abc import Callable

import pytest
from django.test import Client
from django.utils import timezone

from dashboard import catalog, services
from dashboard.execution import worker
from dashboard.models import ApprovalRequest, ApprovalStatus, Checkpoint, RunStatus, WorkflowRun
from workflows.registry import default_registry

pytestmark = pytest.mark.django_db(transaction=True)

Drive = Callable[..., WorkflowRun]
GONE = "retired-workflow"
MESSAGE = f"The workflow {GONE} is not registered any more."


@pytest.fixture
def orphan(
    operator_approver_client: Client, drive: Drive, monkeypatch: pytest.MonkeyPatch
) -> WorkflowRun:
    """A return-replace run at its approval gate, whose workflow a later deploy removed."""
    run = drive(
        services.run_start,
        workflow_name="return-replace",
        input={"order_id": "ORD-9", "work_ms": 0},
        user=operator_approver_client.user,  # type: ignore[attr-defined]
    )
    assert run.status == RunStatus.WAITING
    WorkflowRun.objects.filter(pk=run.pk).update(workflow_name=GONE)
    Checkpoint.objects.filter(run=run).update(workflow_name=GONE)
    known = {
        k: v for k, v in default_registry._by_name.items() if not k.startswith("dashboard.demo")
    }
    monkeypatch.setattr(default_registry, "_by_name", known)
    assert GONE not in catalog.names()
    run.refresh_from_db()
    return run


def latest(run: WorkflowRun) -> Checkpoint:
    found = Checkpoint.objects.filter(run=run).order_by("-superstep", "-created_at").first()
    assert found is not None
    return found


def get(client: Client, path: str, **headers: str) -> str:
    response = client.get(path, headers=headers)
    assert response.status_code == 200, (path, response.status_code)
    return response.content.decode()


def test_checkpoint_page_of_a_removed_workflow_renders_with_a_message(
    operator_approver_client: Client, orphan: WorkflowRun
) -> None:
    cp = latest(orphan)
    first = Checkpoint.objects.filter(run=orphan).order_by("superstep", "created_at").first()
    assert first is not None
    base = f"/runs/{orphan.pk}/checkpoints/{cp.checkpoint_id}/"

    shown = get(operator_approver_client, base)

    assert MESSAGE in shown
    assert "ORD-9" in shown  # the stored state still shows, undecoded
    get(
        operator_approver_client,
        f"{base}?compare={first.checkpoint_id}",
        **{"HX-Request": "true", "HX-Target": "checkpoint-diff"},
    )
    assert (
        json.loads(get(operator_approver_client, f"{base}download/"))["checkpoint_id"]
        == cp.checkpoint_id
    )


def test_run_pages_of_a_removed_workflow_render_with_a_message(
    operator_approver_client: Client, orphan: WorkflowRun
) -> None:
    assert MESSAGE in get(operator_approver_client, f"/runs/{orphan.pk}/")
    get(operator_approver_client, f"/runs/{orphan.pk}/actions/")
    get(operator_approver_client, f"/runs/{orphan.pk}/events/")
    assert operator_approver_client.get(f"/runs/{orphan.pk}/subworkflow/?sub=x").status_code == 404
    assert str(orphan.pk)[:8] in get(operator_approver_client, "/")
    get(operator_approver_client, "/approvals/")


@pytest.mark.parametrize("action", ["resume/", "fork/"])
def test_resume_or_fork_of_a_removed_workflow_is_refused_with_a_message(
    operator_approver_client: Client, orphan: WorkflowRun, action: str
) -> None:
    url = f"/runs/{orphan.pk}/checkpoints/{latest(orphan).checkpoint_id}/{action}"

    response = operator_approver_client.post(url)

    assert response.status_code == 409
    assert f"workflow {GONE!r} is not registered any more" in html.unescape(
        response.content.decode()
    )
    assert WorkflowRun.objects.filter(parent_run=orphan).count() == 0


def test_retry_of_a_removed_workflow_is_refused_with_a_message(
    operator_approver_client: Client, orphan: WorkflowRun
) -> None:
    WorkflowRun.objects.filter(pk=orphan.pk).update(
        status=RunStatus.FAILED, error_message="boom", finished_at=timezone.now()
    )

    response = operator_approver_client.post(f"/runs/{orphan.pk}/retry/")

    assert response.status_code == 409
    assert f"workflow {GONE!r} is not registered any more" in html.unescape(
        response.content.decode()
    )
    orphan.refresh_from_db()
    assert orphan.status == RunStatus.FAILED


def test_api_answers_about_a_removed_workflow(
    operator_approver_client: Client, orphan: WorkflowRun
) -> None:
    base = f"/api/runs/{orphan.pk}"
    for path in (f"{base}/", f"{base}/checkpoints/", f"{base}/events/"):
        assert operator_approver_client.get(path).status_code == 200, path

    detail = operator_approver_client.get(f"{base}/checkpoints/{latest(orphan).checkpoint_id}/")

    assert detail.status_code == 409
    assert f"workflow {GONE!r} is not registered any more" in detail.json()["error"]


def test_cancelling_a_run_of_a_removed_workflow_still_works(
    operator_approver_client: Client, orphan: WorkflowRun
) -> None:
    answer = operator_approver_client.post(f"/runs/{orphan.pk}/cancel/", {"reason": "gone"})
    assert answer.status_code == 302
    orphan.refresh_from_db()
    assert orphan.status == RunStatus.CANCELLED
    assert not ApprovalRequest.objects.filter(run=orphan, status=ApprovalStatus.PENDING).exists()


def test_deciding_a_request_of_a_removed_workflow_is_refused_with_a_message(
    operator_approver_client: Client, orphan: WorkflowRun
) -> None:
    approval = ApprovalRequest.objects.get(run=orphan, status=ApprovalStatus.PENDING)

    response = operator_approver_client.post(
        f"/approvals/{approval.request_id}/decide/", {"decision": "approve"}
    )

    assert response.status_code == 409
    assert f"workflow {GONE!r} is not registered any more" in html.unescape(
        response.content.decode()
    )
    approval.refresh_from_db()
    assert approval.status == ApprovalStatus.PENDING
    assert (
        operator_approver_client.get(f"/approvals/?request={approval.request_id}").status_code
        == 200
    )


def test_a_queued_run_of_a_removed_workflow_fails_saying_so(
    make_run: Callable[..., WorkflowRun],
) -> None:
    run = make_run(status=RunStatus.QUEUED, workflow_name=GONE)

    worker.execute(str(run.pk))

    run.refresh_from_db()
    assert run.status == RunStatus.FAILED and run.lease_owner == ""
    assert run.error_type == "UnknownWorkflowError" and GONE in run.error_message
