"""Per-workflow access: a role granted for named workflows only. Pat operates ``squares`` and
approves ``return-replace``; everything else does not exist for Pat — in the pages, the API,
the websockets, the search, the nav badge and the decisions made several at once."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest
from asgiref.sync import sync_to_async
from channels.layers import get_channel_layer
from channels.testing import WebsocketCommunicator
from django.contrib.auth.models import Group, User
from django.test import Client

from dashboard import broadcast, services
from dashboard.access.tokens import create_token
from dashboard.config.asgi import application
from dashboard.models import ApprovalRequest, ApprovalStatus, AuditEntry, WorkflowGrant, WorkflowRun

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def pat(role_user: Callable[..., Any]) -> User:
    user: User = role_user("pat")  # no role held as a group: nothing, anywhere
    role_user.group("Viewer")  # type: ignore[attr-defined]
    WorkflowGrant.objects.create(
        user=user, role=role_user.group("Operator"), workflow_name="squares"
    )  # type: ignore[attr-defined]
    WorkflowGrant.objects.create(
        user=user, role=role_user.group("Approver"), workflow_name="return-replace"
    )  # type: ignore[attr-defined]
    return user


@pytest.fixture
def pat_client(pat: User) -> Client:
    client = Client()
    client.force_login(pat)
    return client


@pytest.fixture
def runs(make_run: Callable[..., WorkflowRun]) -> dict[str, WorkflowRun]:
    return {
        "squares": make_run(workflow_name="squares", input={"limit": 3, "note": "sq-visible"}),
        "return-replace": make_run(
            workflow_name="return-replace", status="failed", input={"order_id": "ORD-SECRET"}
        ),
        "fail-at-step": make_run(
            workflow_name="fail-at-step", status="failed", input={"steps": 3, "note": "hidden-text"}
        ),
    }


def test_the_runs_list_search_and_filters_show_only_granted_workflows(
    pat_client: Client, runs: dict[str, WorkflowRun]
) -> None:
    page = pat_client.get("/")
    listed = {row[0].workflow_name for row in page.context["rows"]}
    assert listed == {"squares", "return-replace"}  # Approver of return-replace may view it
    assert f"/runs/{runs['fail-at-step'].pk}/" not in page.content.decode()
    assert pat_client.get("/", {"q": "hidden-text"}).context["rows"] == []
    assert [r[0].pk for r in pat_client.get("/", {"q": "sq-visible"}).context["rows"]] == [
        runs["squares"].pk
    ]
    options = page.context["form"].fields["workflow"].choices
    assert "fail-at-step" not in {value for value, _ in options}


def test_a_run_of_another_workflow_is_not_found_anywhere(
    pat_client: Client, pat: User, runs: dict[str, WorkflowRun]
) -> None:
    hidden = runs["fail-at-step"]
    for path in (
        f"/runs/{hidden.pk}/",
        f"/runs/{hidden.pk}/events/",
        f"/runs/{hidden.pk}/actions/",
    ):
        assert pat_client.get(path).status_code == 404, path
    assert pat_client.get(f"/runs/{runs['squares'].pk}/").status_code == 200

    token = create_token(pat, "cli")
    api = Client(HTTP_AUTHORIZATION=f"Bearer {token}")
    assert api.get(f"/api/runs/{hidden.pk}/").status_code == 404
    assert {r["workflow"] for r in api.get("/api/runs/").json()["runs"]} == {
        "squares",
        "return-replace",
    }
    assert {w["name"] for w in api.get("/api/workflows/").json()["workflows"]} == {
        "squares",
        "return-replace",
    }

    with pytest.raises(services.NotFound):
        services.run_retry(hidden.pk, user=pat)
    assert AuditEntry.objects.filter(actor=pat, action="retry", outcome=AuditEntry.DENIED).exists()
    assert WorkflowRun.objects.get(pk=hidden.pk).status == "failed"


def test_the_role_counts_only_on_its_workflow(pat: User, runs: dict[str, WorkflowRun]) -> None:
    with pytest.raises(services.Forbidden, match="may not start runs of workflow 'return-replace'"):
        services.run_start(workflow_name="return-replace", input={"order_id": "X"}, user=pat)
    # Approver there, not Operator: the run is visible, retrying it is not Pat's to do.
    with pytest.raises(services.Forbidden, match="may not retry runs of workflow 'return-replace'"):
        services.run_retry(runs["return-replace"].pk, user=pat)
    started = services.run_start(workflow_name="squares", input={"limit": 1}, user=pat)
    assert started.workflow_name == "squares"
    assert services.can(pat, "start") and services.can(pat, "start", "squares")
    assert not services.can(pat, "start", "return-replace")


def test_a_role_held_as_a_group_still_counts_everywhere(
    role_user: Callable[..., Any], runs: dict[str, WorkflowRun]
) -> None:
    ops = role_user("ops", "Operator")
    WorkflowGrant.objects.create(
        user=ops, role=role_user.group("Approver"), workflow_name="squares"
    )  # type: ignore[attr-defined]

    assert services.visible_workflows(ops) is None
    assert services.can(ops, "retry", "fail-at-step")


@pytest.fixture
def requests(
    role_user: Callable[..., Any], drive: Callable[..., WorkflowRun]
) -> list[ApprovalRequest]:
    """A request of return-replace (Pat may decide it) and one of a copy Pat cannot see."""
    starter = role_user("starter", "Operator")
    drive(
        services.run_start,
        workflow_name="return-replace",
        input={"order_id": "ORD-PAT", "work_ms": 0},
        user=starter,
    )
    return list(ApprovalRequest.objects.order_by("created_at"))


def test_requests_of_granted_workflows_only_reach_the_inbox_and_badge(
    pat_client: Client, pat: User, requests: list[ApprovalRequest], role_user: Callable[..., Any]
) -> None:
    (request,) = requests
    inbox = pat_client.get("/approvals/")
    assert [a.request_id for a in inbox.context["approvals"]] == [request.request_id]
    assert inbox.context["pending_approval_count"] == 1

    # Take return-replace away: the request is gone from everything Pat sees.
    WorkflowGrant.objects.filter(user=pat, workflow_name="return-replace").delete()
    fresh = Client()
    fresh.force_login(User.objects.get(pk=pat.pk))
    inbox = fresh.get("/approvals/")
    assert list(inbox.context["approvals"]) == []
    assert inbox.context["pending_approval_count"] == 0
    assert fresh.get(f"/approvals/?request={request.request_id}").context["approval"] is None
    answer = fresh.post(
        "/approvals/decide/",
        {"request": [request.request_id], "decision": "approve", "reason": "r", "confirm": "1"},
    )
    assert answer.status_code == 302
    with pytest.raises(services.NotFound):
        services.approval_decide(
            request.request_id, user=User.objects.get(pk=pat.pk), approved=True
        )
    request.refresh_from_db()
    assert request.status == ApprovalStatus.PENDING


def test_an_approver_of_one_workflow_decides_its_requests(
    pat: User, requests: list[ApprovalRequest]
) -> None:
    (request,) = requests
    decided = services.approval_decide(
        request.request_id, user=pat, approved=False, reason="no stock"
    )
    assert decided.status == ApprovalStatus.REJECTED


def _cookie(user: User) -> bytes:
    client = Client()
    client.force_login(user)
    return f"sessionid={client.cookies['sessionid'].value}".encode()


async def test_websockets_of_other_workflows_are_not_found(
    pat: User, runs: dict[str, WorkflowRun]
) -> None:
    cookie = await sync_to_async(_cookie)(pat)
    headers = [(b"origin", b"http://testserver"), (b"cookie", cookie)]

    hidden = WebsocketCommunicator(
        application, f"/ws/runs/{runs['fail-at-step'].pk}/", headers=headers
    )
    connected, code = await hidden.connect(timeout=5)
    assert not connected and code == 4404

    listing = WebsocketCommunicator(application, "/ws/runs/", headers=headers)
    assert (await listing.connect(timeout=5))[0]
    layer = get_channel_layer()
    for run in (runs["fail-at-step"], runs["squares"]):
        await layer.group_send(
            broadcast.RUNS_GROUP, {"type": "runs.changed", "run_id": str(run.pk)}
        )
    told = json.loads(await listing.receive_from(5))
    assert told == {"type": "run_changed", "run_id": str(runs["squares"].pk)}
    assert await listing.receive_nothing(0.3)
    await listing.disconnect()


def test_grants_are_given_from_the_user_page_and_audited(
    role_user: Callable[..., Any], pat: User
) -> None:
    admin = User.objects.create_superuser("root", password="root-pass-123")
    client = Client()
    client.force_login(admin)
    operator = Group.objects.get(name="Operator")
    page = client.get(f"/admin/auth/user/{pat.pk}/change/")
    assert page.status_code == 200 and "Roles for named workflows only" in page.content.decode()

    answer = client.post(
        "/admin/dashboard/workflowgrant/add/",
        {
            "user": pat.pk,
            "role": operator.pk,
            "workflow_name": "fail-at-step",
        },
    )
    assert answer.status_code == 302
    assert WorkflowGrant.objects.filter(user=pat, workflow_name="fail-at-step").exists()
    assert AuditEntry.objects.filter(
        action="grant", actor=admin, details__workflow="fail-at-step"
    ).exists()
    refused = client.post(
        "/admin/dashboard/workflowgrant/add/",
        {
            "user": pat.pk,
            "role": operator.pk,
            "workflow_name": "no-such-flow",
        },
    )
    assert refused.status_code == 200 and "Select a valid choice" in refused.content.decode()


def test_the_storage_page_shows_a_scoped_user_only_their_workflows(
    pat_client: Client, runs: dict[str, WorkflowRun]
) -> None:
    from dashboard.models import Checkpoint
    from dashboard.web.operations import storage as views_storage

    for n, run in enumerate(runs.values()):
        Checkpoint.objects.create(
            checkpoint_id=f"cp-{n}",
            run=run,
            engine_run_id=run.engine_run_id,
            superstep=1,
            workflow_name=run.workflow_name,
            graph_signature_hash="h",
            document={},
            size_bytes=100 + n,
        )
    with views_storage._kept_lock:
        views_storage._kept.clear()
    page = pat_client.get("/storage/")

    assert page.status_code == 200
    assert {r["workflow_name"] for r in page.context["by_workflow"]} == {
        "squares",
        "return-replace",
    }
    assert {r["run"].workflow_name for r in page.context["largest"]} == {
        "squares",
        "return-replace",
    }
    assert "fail-at-step" not in page.content.decode()


def test_a_grant_for_some_workflows_opens_no_admin_page_even_to_staff(
    pat: User, role_user: Callable[..., Any], runs: dict[str, WorkflowRun]
) -> None:
    # The admin lists every workflow's rows, so it is for roles held for every workflow: a
    # grant's permissions count on its workflow's runs only, never on a whole admin list.
    WorkflowGrant.objects.create(user=pat, role=role_user.group("Admin"), workflow_name="squares")  # type: ignore[attr-defined]
    pat.is_staff = True
    pat.save()
    client = Client()
    client.force_login(pat)
    for path in (
        "/admin/dashboard/workflowrun/",
        "/admin/dashboard/checkpoint/",
        "/admin/dashboard/approvalrequest/",
        "/admin/dashboard/runevent/",
        "/admin/dashboard/retentionpolicy/",
        "/admin/dashboard/auditentry/",
    ):
        assert client.get(path).status_code == 403, path
    assert str(runs["squares"].pk) not in client.get("/admin/").content.decode()
