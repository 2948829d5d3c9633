"""The orchestrations' own requests in the inbox (web/approvals/message_request.py): a
handoff's reply box, a Magentic plan editable as text, an agent's answer to accept or send
back, each with buttons that say what they do. On the local model."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from django.test import Client

from dashboard import services
from dashboard.execution import embedded
from dashboard.models import ApprovalRequest, ApprovalStatus, RunStatus, WorkflowRun
from dashboard.services.message_answers import MAX_TEXT
from tests.dashboard.services.message_flows import registered_flows  # noqa: F401 - a fixture
from tests.dashboard.web.inbox_pages import decide, panel

pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.usefixtures("registered_flows"),
]


@pytest.fixture
def start(
    client_as: Callable[..., Client], drive: Callable[..., WorkflowRun]
) -> Callable[[str, str], ApprovalRequest]:
    operator = client_as("Operator", username="oscar")

    def waiting(workflow: str, prompt: str) -> ApprovalRequest:
        run = drive(
            services.run_start,
            workflow_name=workflow,
            input=prompt,
            user=operator.user,  # type: ignore[attr-defined]
        )
        assert run.status == RunStatus.WAITING, run.error_message
        return ApprovalRequest.objects.get(run=run, status=ApprovalStatus.PENDING)

    return waiting


def settled(approval: ApprovalRequest) -> WorkflowRun:
    assert embedded.wait_for_background_tasks(60), "the run did not settle in 60 s"
    return WorkflowRun.objects.get(pk=approval.run_id)


def test_a_handoff_shows_the_answer_and_a_reply_box_that_sends_the_users_turn(
    approver_client: Client, start: Callable[[str, str], ApprovalRequest]
) -> None:
    asked = start("handoff-triage", "My invoice shows a double charge")

    html = panel(approver_client, asked)
    assert "triage waits for the user&#x27;s next message" in html
    assert 'id="agent-answer"' in html and 'name="response-text"' in html
    assert "Send the reply" in html and "End the conversation…" in html

    answer = decide(
        approver_client, asked, decision="approve", **{"response-text": "Charged twice"}
    )
    assert answer.status_code == 200, answer.content[:300]
    run = settled(asked)
    assert run.status == RunStatus.WAITING  # the agent answered and waits for the next message
    assert ApprovalRequest.objects.get(pk=asked.pk).status == ApprovalStatus.APPROVED


@pytest.mark.parametrize(
    ("text", "status", "message"),
    [("", 422, "Field required"), ("x" * (MAX_TEXT + 1), 422, "at most")],
)
def test_a_handoff_reply_that_is_empty_or_too_long_decides_nothing(
    approver_client: Client,
    start: Callable[[str, str], ApprovalRequest],
    text: str,
    status: int,
    message: str,
) -> None:
    asked = start("handoff-triage", "My invoice shows a double charge")

    answer = decide(approver_client, asked, decision="approve", **{"response-text": text})

    assert answer.status_code == status
    assert message in answer.content.decode()
    assert ApprovalRequest.objects.get(pk=asked.pk).status == ApprovalStatus.PENDING


def test_a_plan_is_shown_in_an_editable_box_and_an_edit_goes_back_to_the_manager(
    approver_client: Client, start: Callable[[str, str], ApprovalRequest]
) -> None:
    asked = start("signed-off-plan", "Write about kettles")

    html = panel(approver_client, asked)
    assert "magentic_orchestrator asks you to sign off the plan" in html
    assert "researcher: Finds facts." in html.split('name="response-text"', 1)[1]
    assert "Approve the plan" in html and "Ask for a new plan…" in html

    answer = decide(
        approver_client, asked, decision="approve", **{"response-text": "1. Price kettles."}
    )
    assert answer.status_code == 200, answer.content[:300]
    settled(asked)
    review = ApprovalRequest.objects.get(pk=asked.pk).response["v"]["review"]
    assert [m["v"]["contents"][0]["text"] for m in review] == [
        "Use this plan instead:\n1. Price kettles."
    ]


def test_an_agents_answer_under_review_is_accepted_or_sent_back_with_the_reason(
    approver_client: Client, start: Callable[[str, str], ApprovalRequest]
) -> None:
    asked = start("reviewed-answer", "Write about kettles")

    html = panel(approver_client, asked)
    assert "writer asks you to review its answer" in html
    assert "writer: I read: Write about kettles" in html
    assert 'name="response-text"' not in html
    assert "Accept the answer" in html and "Send it back…" in html

    answer = decide(approver_client, asked, decision="reject", reason="Mention the price")
    assert answer.status_code == 200, answer.content[:300]
    again = ApprovalRequest.objects.get(run=settled(asked), status=ApprovalStatus.PENDING)
    assert "writer: I read: Mention the price" in panel(approver_client, again)


@pytest.mark.parametrize(
    ("workflow", "question"),
    [
        ("handoff-triage", "Reply to triage as the user"),
        ("signed-off-plan", "Sign off the plan"),
        ("reviewed-answer", "Review writer&#x27;s answer"),
    ],
)
def test_the_list_row_says_what_the_orchestration_asks(
    approver_client: Client,
    start: Callable[[str, str], ApprovalRequest],
    workflow: str,
    question: str,
) -> None:
    start(workflow, "My invoice shows a double charge")

    html = approver_client.get("/approvals/").content.decode()
    listed = html.split('id="approval-list"', 1)[1].split('id="approval-panel"', 1)[0]

    assert question in listed
    assert "unreadable" not in listed and "$t" not in listed
