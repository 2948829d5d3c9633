"""The approval inbox: pending requests across runs, the generated response form, decisions,
the "already decided" conflict, overrides of an approval rule, filters, the live partials and
the archive."""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable

import pytest
from django.test import Client
from django.utils import timezone

from dashboard import services
from dashboard.execution import embedded
from dashboard.models import (
    ApprovalRequest,
    ApprovalRule,
    ApprovalStatus,
    AuditEntry,
    RunStatus,
    WorkflowRun,
)

pytestmark = pytest.mark.django_db(transaction=True)

HTMX = {"HX-Request": "true", "HX-Target": "approval-panel"}


@pytest.fixture
def requests(
    client_as: Callable[..., Client], drive: Callable[..., WorkflowRun]
) -> list[ApprovalRequest]:
    """Two return-replace runs waiting at their gate, and a squares run with nothing to ask."""
    operator = client_as("Operator")
    for order in ("ORD-1", "ORD-2"):
        drive(
            services.run_start,
            workflow_name="return-replace",
            input={"order_id": order, "work_ms": 0},
            user=operator.user,
        )  # type: ignore[attr-defined]
    drive(
        services.run_start,
        workflow_name="squares",
        input={"limit": 1, "work_ms": 0},
        user=operator.user,
    )  # type: ignore[attr-defined]
    return list(ApprovalRequest.objects.order_by("created_at"))


def decide_url(approval: ApprovalRequest) -> str:
    return f"/approvals/{approval.request_id}/decide/"


def test_inbox_lists_pending_requests_oldest_first_with_the_oldest_selected(
    approver_client: Client, requests: list[ApprovalRequest]
) -> None:
    response = approver_client.get("/approvals/")
    html = response.content.decode()
    assert [a.request_id for a in response.context["approvals"]] == [r.request_id for r in requests]
    assert response.context["approval"].request_id == requests[0].request_id
    assert "Ship a replacement for KETTLE-2L on order ORD-1?" in html
    assert "KETTLE-2L-V2, KETTLE-1.7L-STEEL, KETTLE-2L-GLASS" in html
    # The form comes from ApprovalDecision: the buttons say "approved", the fields say the rest.
    assert 'name="response-discount_percent"' in html and 'max="100"' in html
    assert 'name="response-note"' in html and 'name="response-approved"' not in html
    assert 'value="approve"' in html and 'value="reject"' in html
    assert f'href="/runs/{requests[0].run_id}/"' in html


def test_approving_with_a_discount_sends_the_run_on(
    approver_client: Client, requests: list[ApprovalRequest]
) -> None:
    first = requests[0]
    response = approver_client.post(
        decide_url(first),
        {
            "decision": "approve",
            "response-discount_percent": "15",
            "response-note": "ok",
            "reason": "policy",
        },
        headers=HTMX,
    )
    html = response.content.decode()
    assert response.status_code == 200 and html.lstrip().startswith('<section id="approval-panel"')
    assert "Approved" in html and "by ann" in html
    assert embedded.wait_for_background_tasks(60)
    run = WorkflowRun.objects.get(pk=first.run_id)
    assert run.status == RunStatus.COMPLETED
    assert run.output["discount_percent"] == 15 and run.output["final_amount"] == round(
        49.9 * 0.85, 2
    )


def test_a_request_someone_else_just_decided_says_who_and_when(
    approver_client: Client, client_as: Callable[..., Client], requests: list[ApprovalRequest]
) -> None:
    first = requests[0]
    other = client_as("Approver", username="bob")
    assert other.post(decide_url(first), {"decision": "approve"}, headers=HTMX).status_code == 200
    late = approver_client.post(
        decide_url(first), {"decision": "reject", "reason": "no"}, headers=HTMX
    )
    html = late.content.decode()
    assert late.status_code == 409
    assert "bob already approved this just now." in html and "Not recorded." in html
    assert 'value="approve"' not in html  # the panel now shows the decision, not the form
    assert ApprovalRequest.objects.get(pk=first.pk).decided_by.username == "bob"  # type: ignore[union-attr]
    plain = approver_client.post(decide_url(first), {"decision": "approve"})
    assert plain.status_code == 409 and "bob already approved this" in plain.content.decode()


def test_invalid_responses_are_shown_beside_the_field(
    approver_client: Client, requests: list[ApprovalRequest]
) -> None:
    first = requests[0]
    too_big = approver_client.post(
        decide_url(first), {"decision": "approve", "response-discount_percent": "150"}, headers=HTMX
    )
    html = too_big.content.decode()
    assert too_big.status_code == 422
    assert 'id="id_response-discount_percent_error"' in html and "less than or equal to 100" in html
    as_json = approver_client.post(
        decide_url(first),
        {"decision": "approve", "mode": "json", "response-json": '{"discount_percent": "lots"}'},
        headers=HTMX,
    )
    html = as_json.content.decode()
    assert (
        as_json.status_code == 422 and "discount_percent: Input should be a valid integer" in html
    )
    assert ApprovalRequest.objects.get(pk=first.pk).status == ApprovalStatus.PENDING


def test_reject_with_a_reason_lands_in_the_archive(
    approver_client: Client, requests: list[ApprovalRequest]
) -> None:
    second = requests[1]
    response = approver_client.post(
        decide_url(second), {"decision": "reject", "reason": "out of stock"}
    )
    assert (
        response.status_code == 302
        and response["Location"] == f"/approvals/?request={second.request_id}"
    )
    archive = approver_client.get("/approvals/archive/").content.decode()
    assert "status-rejected" in archive and "out of stock" in archive and ">ann<" in archive
    inbox = approver_client.get("/approvals/")
    assert [a.request_id for a in inbox.context["approvals"]] == [requests[0].request_id]


def test_filters_by_workflow_and_age(
    approver_client: Client, requests: list[ApprovalRequest]
) -> None:
    ApprovalRequest.objects.filter(pk=requests[0].pk).update(
        created_at=timezone.now() - dt.timedelta(hours=2)
    )
    older = approver_client.get("/approvals/?age=1h").context["approvals"]
    assert [a.pk for a in older] == [requests[0].pk]
    assert list(approver_client.get("/approvals/?workflow=squares").context["approvals"]) == []
    assert (
        "Nothing to decide" in approver_client.get("/approvals/?workflow=squares").content.decode()
    )


def test_live_partials_list_and_status(
    approver_client: Client, requests: list[ApprovalRequest]
) -> None:
    listing = approver_client.get(
        "/approvals/?workflow=return-replace",
        headers={"HX-Request": "true", "HX-Target": "approval-list"},
    )
    html = listing.content.decode()
    assert html.lstrip().startswith('<section id="approval-list"')
    assert '<input type="hidden" name="workflow" value="return-replace">' in html
    status = approver_client.get(f"/approvals/{requests[0].request_id}/status/").content.decode()
    assert status.lstrip().startswith('<div id="approval-status"') and "Pending" in status
    assert approver_client.get("/approvals/nope/status/").status_code == 404


def test_a_viewer_may_read_the_inbox_but_not_decide(
    client_as: Callable[..., Client], requests: list[ApprovalRequest]
) -> None:
    viewer = client_as("Viewer")
    page = viewer.get("/approvals/").content.decode()
    assert "may read requests but not decide them" in page and 'value="approve"' not in page
    refused = viewer.post(decide_url(requests[0]), {"decision": "approve"}, headers=HTMX)
    assert refused.status_code == 403 and "may not approve" in refused.content.decode()


def test_yes_no_requests_need_no_response_fields(
    approver_client: Client, requests: list[ApprovalRequest]
) -> None:
    ApprovalRequest.objects.filter(pk=requests[0].pk).update(
        response_schema={"type": "boolean"}, response_type="bool"
    )
    html = approver_client.get(f"/approvals/?request={requests[0].request_id}").content.decode()
    assert "response-" not in html and 'value="approve"' in html


def test_a_vote_of_several_says_more_approvals_are_needed(
    approver_client: Client, client_as: Callable[..., Client], requests: list[ApprovalRequest]
) -> None:
    first = requests[0]
    ApprovalRequest.objects.filter(pk=first.pk).update(required_approvals=2)
    response = approver_client.post(decide_url(first), {"decision": "approve"}, headers=HTMX)
    html = response.content.decode()
    assert response.status_code == 200 and 'id="decide-notice"' in html
    assert "this request needs 2 approvals before the run continues" in html
    assert 'value="approve"' in html  # still pending: the next approver decides here too
    second = client_as("Approver", username="carl").post(
        decide_url(first), {"decision": "approve"}, headers=HTMX
    )
    assert "Request approved for run" in second.content.decode()
    assert ApprovalRequest.objects.get(pk=first.pk).status == ApprovalStatus.APPROVED


# -------------------------------------------------------------------- rules and their override


@pytest.fixture
def own_run(
    client_as: Callable[..., Client], drive: Callable[..., WorkflowRun]
) -> Callable[..., tuple[Client, ApprovalRequest]]:
    """``own_run("Admin")``: a client whose user started a return-replace run, now waiting at
    its gate, under a rule that forbids deciding one's own runs."""
    ApprovalRule.objects.create(workflow_name="return-replace", forbid_self_approval=True)

    def start(*roles: str) -> tuple[Client, ApprovalRequest]:
        client = client_as("Operator", *roles, username="sam")
        drive(
            services.run_start,
            workflow_name="return-replace",
            input={"order_id": "ORD-9", "work_ms": 0},
            user=client.user,  # type: ignore[attr-defined]
        )
        return client, ApprovalRequest.objects.get(status=ApprovalStatus.PENDING)

    return start


def test_the_inbox_offers_an_override_to_an_administrator_a_rule_refuses(
    own_run: Callable[..., tuple[Client, ApprovalRequest]],
) -> None:
    admin, request = own_run("Admin")

    page = admin.get(f"/approvals/?request={request.request_id}").content.decode()
    missing = admin.post(
        decide_url(request), {"decision": "approve", "override": "1"}, headers=HTMX
    )
    done = admin.post(
        decide_url(request),
        {"decision": "approve", "override": "1", "reason": "night shift"},
        headers=HTMX,
    )

    assert 'id="override-notice"' in page and 'name="override" value="1"' in page
    assert "forbid deciding a run you started" in page and "Override and approve" in page
    assert "/claim/" not in page  # no claiming what one may decide only by override
    html = missing.content.decode()
    assert missing.status_code == 422 and "an override needs a reason" in html
    assert 'id="id_reason_error"' in html and "required for an override" in html
    assert done.status_code == 200 and "by sam" in done.content.decode()
    (override,) = AuditEntry.objects.filter(action="override", outcome="ok")
    assert (override.actor_name, override.details["reason"]) == ("sam", "night shift")
    assert embedded.wait_for_background_tasks(60)
    assert WorkflowRun.objects.get(pk=request.run_id).status == RunStatus.COMPLETED


def test_the_inbox_shows_the_refusal_instead_of_a_form_to_an_approver_a_rule_refuses(
    own_run: Callable[..., tuple[Client, ApprovalRequest]],
) -> None:
    approver, request = own_run("Approver")

    page = approver.get(f"/approvals/?request={request.request_id}").content.decode()
    forced = approver.post(
        decide_url(request), {"decision": "approve", "override": "1", "reason": "x"}, headers=HTMX
    )

    assert "You may not decide this request: the rules of this workflow forbid" in page
    assert 'class="form-stack decision-form"' not in page and "/claim/" not in page
    assert 'name="override"' not in page and 'id="override-notice"' not in page
    assert forced.status_code == 403 and "sam may not override" in forced.content.decode()
    assert ApprovalRequest.objects.get(pk=request.pk).status == ApprovalStatus.PENDING


def test_the_inbox_offers_no_override_where_no_rule_refuses(
    client_as: Callable[..., Client], requests: list[ApprovalRequest]
) -> None:
    admin = client_as("Admin", username="ada")

    page = admin.get(f"/approvals/?request={requests[0].request_id}").content.decode()

    assert 'class="form-stack decision-form"' in page and 'name="override"' not in page
    assert ">Approve</button>" in page and "/claim/" in page
