"""The button decides: a response whose ``approved`` says the other thing is refused with a
message (service, page and API), never overwritten in silence; one that agrees, or leaves the
field out, is taken."""

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
from dashboard.models import ApprovalRequest, ApprovalStatus

pytestmark = pytest.mark.django_db(transaction=True)

WAIT = 30.0


@pytest.fixture
def waiting() -> ApprovalRequest:
    services.run_start(workflow_name="return-replace", input={"work_ms": 0})
    assert embedded.wait_for_background_tasks(WAIT)
    return ApprovalRequest.objects.get(status=ApprovalStatus.PENDING)


@pytest.fixture
def approver(role_user: Callable[..., Any]) -> Any:
    return role_user("ann", "Approver")


@pytest.mark.parametrize(
    "approved, said", [(False, True), (True, False), (False, "yes"), (True, "nope")]
)
def test_approval_decide_refuses_an_answer_contradicting_the_button(
    waiting: ApprovalRequest, approver: Any, approved: bool, said: Any
) -> None:
    with pytest.raises(InvalidInput) as refused:
        services.approval_decide(
            waiting.request_id,
            user=approver,
            approved=approved,
            response={"approved": said},
            reason="checking",
        )

    button = "Approve" if approved else "Reject"
    assert refused.value.errors == {"approved": f"contradicts {button}"}
    assert f"the button pressed was {button}" in refused.value.message
    waiting.refresh_from_db()
    assert waiting.status == ApprovalStatus.PENDING


@pytest.mark.parametrize("response", [{"approved": False}, {"approved": "false"}, {}])
def test_approval_decide_takes_an_answer_that_agrees_or_says_nothing(
    waiting: ApprovalRequest, approver: Any, response: dict[str, Any]
) -> None:
    services.approval_decide(
        waiting.request_id, user=approver, approved=False, response=response, reason="no stock"
    )

    waiting.refresh_from_db()
    assert waiting.status == ApprovalStatus.REJECTED and waiting.response["approved"] is False
    assert embedded.wait_for_background_tasks(WAIT)


def test_api_answers_400_to_a_contradicting_answer(
    waiting: ApprovalRequest, client_as: Callable[..., Client]
) -> None:
    client = client_as("Approver", username="ann")

    response = client.post(
        f"/api/approvals/{quote(waiting.request_id, safe='')}/decide/",
        json.dumps({"decision": "reject", "response": {"approved": True}, "reason": "x"}),
        content_type="application/json",
    )

    assert response.status_code == 400
    assert response.json()["errors"] == {"approved": "contradicts Reject"}
    waiting.refresh_from_db()
    assert waiting.status == ApprovalStatus.PENDING


def test_decide_page_says_the_answer_contradicts_the_button(
    waiting: ApprovalRequest, client_as: Callable[..., Client]
) -> None:
    client = client_as("Approver", username="ann")

    response = client.post(
        f"/approvals/{quote(waiting.request_id, safe='')}/decide/",
        {
            "decision": "reject",
            "mode": "json",
            "response-json": '{"approved": true}',
            "reason": "no stock",
        },
    )

    html = response.content.decode()
    assert response.status_code == 422
    assert "the button pressed was Reject" in html and "contradicts Reject" in html
    waiting.refresh_from_db()
    assert waiting.status == ApprovalStatus.PENDING
