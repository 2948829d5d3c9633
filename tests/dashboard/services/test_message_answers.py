"""The orchestrations' own requests decided through the service (services/message_answers.py):
a handoff's next user message, an agent's answer under review, a Magentic plan signed off,
revised or edited, each run going on as the orchestration does. On the local model."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from dashboard import selectors, services
from dashboard.models import ApprovalRequest, ApprovalStatus, RunStatus, WorkflowRun
from dashboard.renderers import conversation
from dashboard.services.message_answers import EDITED_PLAN
from tests.dashboard.services.message_flows import registered_flows  # noqa: F401 - a fixture

pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.usefixtures("registered_flows"),
]

Drive = Callable[..., WorkflowRun]


def waiting(drive: Drive, operator_user: Any, workflow: str, prompt: str) -> ApprovalRequest:
    run = drive(services.run_start, workflow_name=workflow, input=prompt, user=operator_user)
    assert run.status == RunStatus.WAITING, run.error_message
    return ApprovalRequest.objects.get(run=run, status=ApprovalStatus.PENDING)


def next_request(approval: ApprovalRequest) -> ApprovalRequest:
    run = WorkflowRun.objects.get(pk=approval.run_id)
    assert run.status == RunStatus.WAITING, (run.status, run.error_message)
    return ApprovalRequest.objects.get(run=run, status=ApprovalStatus.PENDING)


def test_a_handoff_reply_is_the_users_next_message(
    drive: Drive, operator_user: Any, approver_user: Any
) -> None:
    asked = waiting(drive, operator_user, "handoff-triage", "My invoice shows a double charge")
    request = services.message_request_of(asked)
    assert request is not None and request.kind == "handoff" and request.text

    drive(
        services.approval_decide,
        asked.request_id,
        user=approver_user,
        approved=True,
        response={"text": "It was charged twice on May 3"},
    )

    # The agent answered again (and waits for the user's next message), the reply among the
    # messages of its conversation.
    following = next_request(asked)
    assert services.message_request_of(following).kind == "handoff"  # type: ignore[union-attr]
    document = selectors.checkpoint_document(following.checkpoint)
    said = conversation.conversations_of(document["executor_states"])
    texts = [
        p.text for chat in said for turn in chat.turns if turn.role == "user" for p in turn.parts
    ]
    assert "It was charged twice on May 3" in texts


def test_rejecting_a_handoff_ends_the_conversation(
    drive: Drive, operator_user: Any, approver_user: Any
) -> None:
    asked = waiting(drive, operator_user, "handoff-triage", "My invoice shows a double charge")

    run = drive(
        services.approval_decide,
        asked.request_id,
        user=approver_user,
        approved=False,
        reason="done",
    )

    assert run.status == RunStatus.COMPLETED, run.error_message
    assert ApprovalRequest.objects.get(pk=asked.pk).response == []


@pytest.mark.parametrize(
    ("response", "field"),
    [(None, "text"), ({"text": "   "}, "text"), ({"text": 5}, "text"), ({"txt": "hi"}, "txt")],
)
def test_a_handoff_approved_without_a_message_decides_nothing(
    drive: Drive, operator_user: Any, approver_user: Any, response: Any, field: str
) -> None:
    asked = waiting(drive, operator_user, "handoff-triage", "My invoice shows a double charge")

    with pytest.raises(services.InvalidInput) as refused:
        services.approval_decide(
            asked.request_id, user=approver_user, approved=True, response=response
        )

    assert field in refused.value.errors
    assert ApprovalRequest.objects.get(pk=asked.pk).status == ApprovalStatus.PENDING


def test_an_agents_answer_accepted_under_review_finishes_the_run(
    drive: Drive, operator_user: Any, approver_user: Any
) -> None:
    asked = waiting(drive, operator_user, "reviewed-answer", "Write about kettles")
    request = services.message_request_of(asked)
    assert request == services.MessageRequest(
        "agent_review", "writer", "writer: I read: Write about kettles"
    )

    run = drive(services.approval_decide, asked.request_id, user=approver_user, approved=True)

    assert run.status == RunStatus.COMPLETED, run.error_message


def test_a_rejected_answer_sends_the_reason_to_the_agent_which_answers_again(
    drive: Drive, operator_user: Any, approver_user: Any
) -> None:
    asked = waiting(drive, operator_user, "reviewed-answer", "Write about kettles")

    drive(
        services.approval_decide,
        asked.request_id,
        user=approver_user,
        approved=False,
        reason="Mention the price",
    )

    again = services.message_request_of(next_request(asked))
    assert again is not None and again.text == "writer: I read: Mention the price"


def test_a_signed_off_plan_lets_the_team_work(
    drive: Drive, operator_user: Any, approver_user: Any
) -> None:
    asked = waiting(drive, operator_user, "signed-off-plan", "Write about kettles")
    request = services.message_request_of(asked)
    assert request is not None and request.kind == "plan_review"
    assert "researcher: Finds facts." in request.text

    drive(services.approval_decide, asked.request_id, user=approver_user, approved=True)

    assert ApprovalRequest.objects.get(pk=asked.pk).response["v"] == {"review": []}
    # The team worked on the plan; the local model writes no progress ledger, so the manager
    # resets and asks again, saying the team stalled (MAF's Magentic does the same).
    again = services.message_request_of(next_request(asked))
    assert again is not None and again.kind == "plan_review" and again.stalled


def test_a_plan_approved_as_a_browser_posts_it_is_signed_off_not_edited(
    drive: Drive, operator_user: Any, approver_user: Any
) -> None:
    asked = waiting(drive, operator_user, "signed-off-plan", "Write about kettles")
    request = services.message_request_of(asked)
    assert request is not None and "\n" in request.text.strip()

    drive(
        services.approval_decide,
        asked.request_id,
        user=approver_user,
        approved=True,
        response={"text": request.text.replace("\n", "\r\n")},  # a textarea's line ends
    )

    assert ApprovalRequest.objects.get(pk=asked.pk).response["v"] == {"review": []}


@pytest.mark.parametrize("approved", [True, False])
def test_an_edited_or_rejected_plan_goes_back_for_a_new_plan(
    drive: Drive, operator_user: Any, approver_user: Any, approved: bool
) -> None:
    asked = waiting(drive, operator_user, "signed-off-plan", "Write about kettles")

    drive(
        services.approval_decide,
        asked.request_id,
        user=approver_user,
        approved=approved,
        reason="" if approved else "Too long",
        response={"text": "1. Ask the researcher for kettle prices."},
    )

    review = ApprovalRequest.objects.get(pk=asked.pk).response["v"]["review"]
    said = [m["v"]["contents"][0]["text"] for m in review]
    edited = EDITED_PLAN + "1. Ask the researcher for kettle prices."
    assert said == ([edited] if approved else ["Too long", edited])
    replanned = services.message_request_of(next_request(asked))
    assert replanned is not None and replanned.kind == "plan_review"


def test_a_bulk_approval_skips_a_handoff_that_needs_its_words_and_decides_a_review(
    drive: Drive, operator_user: Any, approver_user: Any
) -> None:
    handoff = waiting(drive, operator_user, "handoff-triage", "My invoice shows a double charge")
    review = waiting(drive, operator_user, "reviewed-answer", "Write about kettles")

    outcomes = services.approvals_decide_many(
        [handoff.request_id, review.request_id], user=approver_user, approved=True, reason="ok"
    )

    assert [(o.decided, o.reason) for o in outcomes] == [
        (False, "its response has fields to fill in: decide it on its own"),
        (True, ""),
    ]
