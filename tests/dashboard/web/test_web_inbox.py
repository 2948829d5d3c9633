"""The inbox as an approver's work list: each request's question and key fields in the list,
several alike decided at once with one reason, and a request assigned from the page."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from django.contrib.auth.models import Group, User
from django.contrib.messages import get_messages
from django.test import Client

from dashboard import services
from dashboard.models import ApprovalRequest, ApprovalStatus, AuditEntry, RunStatus, WorkflowRun

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def requests(
    client_as: Callable[..., Client], drive: Callable[..., WorkflowRun]
) -> list[ApprovalRequest]:
    """Three return-replace runs waiting at their gate."""
    operator = client_as("Operator")
    for order in ("ORD-1", "ORD-2", "ORD-3"):
        drive(
            services.run_start,
            workflow_name="return-replace",
            input={"order_id": order, "work_ms": 0},
            user=operator.user,  # type: ignore[attr-defined]
        )
    return list(ApprovalRequest.objects.order_by("created_at"))


def said(response: object) -> list[str]:
    """The messages a post left, read (and so used up) by loading the page it redirected to."""
    assert response.status_code == 302, response.status_code  # type: ignore[attr-defined]
    page = response.client.get(response["Location"])  # type: ignore[attr-defined,index]
    return [str(m) for m in get_messages(page.wsgi_request)]


def test_the_list_shows_each_request_question_and_key_fields(
    approver_client: Client, requests: list[ApprovalRequest]
) -> None:
    html = approver_client.get("/approvals/").content.decode()
    listed = html.split('id="approval-list"', 1)[1].split('id="approval-panel"', 1)[0]

    for order in ("ORD-1", "ORD-2", "ORD-3"):
        assert f"Ship a replacement for KETTLE-2L on order {order}?" in listed
    assert listed.count('class="request-field"') >= 3
    assert "$t" not in listed and "$keys" not in listed
    assert listed.count('class="request-pick"') == 3


def test_several_requests_are_approved_at_once_with_one_reason(
    approver_client: Client, requests: list[ApprovalRequest]
) -> None:
    picked = requests[:2]

    answer = approver_client.post(
        "/approvals/decide/",
        {
            "request": [r.request_id for r in picked],
            "decision": "approve",
            "reason": "batch of kettles",
            "confirm": "1",
        },
    )

    assert answer.status_code == 302
    assert said(answer) == ["Approved 2 of 2 requests."]
    for approval in picked:
        approval.refresh_from_db()
        assert approval.status == ApprovalStatus.APPROVED and approval.reason == "batch of kettles"
        assert approval.decided_by.get_username() == "ann"  # type: ignore[union-attr]
        assert WorkflowRun.objects.get(pk=approval.run_id).status != RunStatus.WAITING
    requests[2].refresh_from_db()
    assert requests[2].status == ApprovalStatus.PENDING
    assert AuditEntry.objects.filter(action="approve", actor_name="ann").count() == 2


def test_a_request_decided_meanwhile_is_skipped_with_the_reason_and_the_rest_decided(
    approver_client: Client, client_as: Callable[..., Client], requests: list[ApprovalRequest]
) -> None:
    bob = client_as("Approver", username="bob")
    services.approval_decide(requests[0].request_id, user=bob.user, approved=False, reason="no")  # type: ignore[attr-defined]

    answer = approver_client.post(
        "/approvals/decide/",
        {
            "request": [r.request_id for r in requests],
            "decision": "reject",
            "reason": "out of stock",
            "confirm": "1",
        },
    )

    messages = said(answer)
    assert messages[0] == "Rejected 2 of 3 requests."
    assert "already rejected by bob" in messages[1]
    assert {r.status for r in ApprovalRequest.objects.all()} == {ApprovalStatus.REJECTED}


def test_deciding_nothing_or_with_a_role_that_may_not_decides_nothing(
    client_as: Callable[..., Client], approver_client: Client, requests: list[ApprovalRequest]
) -> None:
    viewer = client_as("Viewer")

    empty = approver_client.post("/approvals/decide/", {"decision": "approve"})
    assert "Nothing was decided: pick the requests to decide." in said(empty)
    refused = viewer.post(
        "/approvals/decide/",
        {"request": [requests[0].request_id], "decision": "approve", "reason": "r", "confirm": "1"},
    )
    assert refused.status_code == 302 and said(refused)[0].startswith("Nothing was decided:")
    nonsense = approver_client.post(
        "/approvals/decide/",
        f"request=%ED%A0%80&request={'x' * 5000}&decision=approve&reason=checking&confirm=1",
        content_type="application/x-www-form-urlencoded",
    )
    skipped = said(nonsense)
    assert len(skipped) == 2 and all(
        "Skipped" in m and "no approval request with id" in m for m in skipped
    )
    no_decision = approver_client.post(
        "/approvals/decide/", {"request": [requests[0].request_id], "decision": "maybe"}
    )
    assert said(no_decision) == ["Choose Approve or Reject for the picked requests."]
    assert set(ApprovalRequest.objects.values_list("status", flat=True)) == {ApprovalStatus.PENDING}


def test_a_request_is_assigned_to_a_person_or_a_group_from_the_panel(
    approver_client: Client, client_as: Callable[..., Client], requests: list[ApprovalRequest]
) -> None:
    client_as("Approver", username="carla")
    carla = User.objects.get(username="carla")
    first = requests[0]

    page = approver_client.get(f"/approvals/?request={first.request_id}").content.decode()
    assert f'value="user:{carla.pk}"' in page and 'id="assignee"' in page

    answer = approver_client.post(
        f"/approvals/{first.request_id}/assign/", {"assignee": f"user:{carla.pk}"}
    )
    assert said(answer) == ["Assigned to carla."]
    first.refresh_from_db()
    assert first.assigned_user == carla
    listed = approver_client.get("/approvals/").content.decode()
    assert "assigned to carla" in listed
    assert AuditEntry.objects.filter(action="assign", actor_name="ann").exists()

    group = Group.objects.get(name="Approver")
    approver_client.post(
        f"/approvals/{first.request_id}/assign/", {"assignee": f"group:{group.pk}"}
    )
    first.refresh_from_db()
    assert first.assigned_user is None and first.assigned_group == group

    approver_client.post(f"/approvals/{first.request_id}/assign/", {"assignee": ""})
    first.refresh_from_db()
    assert first.assigned_user is None and first.assigned_group is None


@pytest.mark.parametrize(
    "assignee", ["user:abc", "robot:1", "user:999999", "group:999999", "%ED%A0%80"]
)
def test_assigning_to_nobody_real_is_refused_with_a_message(
    approver_client: Client, requests: list[ApprovalRequest], assignee: str
) -> None:
    answer = approver_client.post(
        f"/approvals/{requests[0].request_id}/assign/",
        f"assignee={assignee}",
        content_type="application/x-www-form-urlencoded",
    )

    assert answer.status_code == 302
    assert said(answer)[0].startswith(("Pick a person", "That person"))
    requests[0].refresh_from_db()
    assert requests[0].assigned_user is None and requests[0].assigned_group is None


def test_someone_who_cannot_decide_is_not_offered_nor_accepted(
    approver_client: Client, client_as: Callable[..., Client], requests: list[ApprovalRequest]
) -> None:
    client_as("Viewer", username="vic")
    vic = User.objects.get(username="vic")

    page = approver_client.get(f"/approvals/?request={requests[0].request_id}").content.decode()
    answer = approver_client.post(
        f"/approvals/{requests[0].request_id}/assign/", {"assignee": f"user:{vic.pk}"}
    )

    assert f'value="user:{vic.pk}"' not in page
    assert said(answer) == ["That person or group cannot decide requests."]


def test_deciding_several_requests_shows_each_answer_first_and_needs_a_reason(
    approver_client: Client, client_as: Callable[..., Client], requests: list[ApprovalRequest]
) -> None:
    bob = client_as("Approver", username="bob")
    services.approval_claim(requests[2].request_id, user=bob.user)  # type: ignore[attr-defined]
    picked = {"request": [r.request_id for r in requests], "decision": "approve"}

    review = approver_client.post("/approvals/decide/", {**picked, "reason": "kettles"})
    unreasoned = approver_client.post(
        "/approvals/decide/", {**picked, "confirm": "1", "reason": " "}
    )

    page = review.content.decode()
    assert review.status_code == 200 and "Approve 2 of 3 requests" in page
    assert page.count("approved</strong> · <code") == 2 and "discount_percent: 0" in page
    assert "skipped</span> claimed by bob" in page
    assert str(requests[0].run_id)[:8] in page and "return-replace" in page
    assert 'name="confirm" value="1"' in page and ">kettles</textarea>" in page
    assert "different workflows" not in page  # they all come from one
    assert unreasoned.status_code == 422
    assert "Give the reason: it is recorded with every decision." in unreasoned.content.decode()
    assert set(ApprovalRequest.objects.values_list("status", flat=True)) == {ApprovalStatus.PENDING}
