"""A tool call in the inbox (web/approvals/tool_call.py): the agent, the function and its
description, the arguments as fields typed from the tool's schema, the conversation so far;
an edit that fits the schema runs the tool with it, one that does not is a 422 naming the
field and decides nothing. The demo's support-refund agent on the local model."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from django.test import Client

from dashboard import services
from dashboard.catalog.tools import EDITABLE_ARGUMENTS
from dashboard.demo import agents
from dashboard.execution import embedded
from dashboard.models import ApprovalRequest, ApprovalStatus, RunStatus, WorkflowRun
from dashboard.web.approvals.tool_call import ToolArgumentsForm
from tests.dashboard.web.inbox_pages import decide, panel

pytestmark = pytest.mark.django_db(transaction=True)

PROMPT = "Please refund order A-17, it arrived broken"


@pytest.fixture(autouse=True)
def fast_model(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(agents, "_WORD_DELAY", 0.0)


@pytest.fixture
def refund(client_as: Callable[..., Client], drive: Callable[..., WorkflowRun]) -> ApprovalRequest:
    operator = client_as("Operator", username="oscar")
    run = drive(
        services.run_start,
        workflow_name="support-refund",
        input=PROMPT,
        user=operator.user,  # type: ignore[attr-defined]
    )
    assert run.status == RunStatus.WAITING, run.error_message
    return ApprovalRequest.objects.get(run=run)


def output_text(approval: ApprovalRequest) -> str:
    assert embedded.wait_for_background_tasks(60), "the run did not settle in 60 s"
    run = WorkflowRun.objects.get(pk=approval.run_id)
    assert run.status == RunStatus.COMPLETED, run.error_message
    return "".join(c.get("text", "") for m in run.output["v"]["messages"] for c in m["contents"])


def test_the_panel_shows_the_agent_function_description_fields_and_conversation(
    approver_client: Client, refund: ApprovalRequest
) -> None:
    html = panel(approver_client, refund)

    assert "support asks to call refund_order" in html
    assert agents.refund_order.description in html
    # One field per argument, typed from the tool's schema, prefilled with the agent's values.
    assert 'name="arguments-order"' in html and f'value="{PROMPT}"' in html
    assert 'type="number" name="arguments-amount"' in html and 'value="1"' in html
    assert 'id="tool-editable"' in html
    # The conversation so far: the customer's words and the call waiting for approval.
    assert 'class="card conversation"' in html and PROMPT in html
    assert "asks approval for refund_order" in html
    assert "$t" not in html.split('class="request-raw"', 1)[0]


def test_the_list_row_names_the_call_and_its_arguments(
    approver_client: Client, refund: ApprovalRequest
) -> None:
    html = approver_client.get("/approvals/").content.decode()
    listed = html.split('id="approval-list"', 1)[1].split('id="approval-panel"', 1)[0]

    assert "Call refund_order" in listed
    assert '<span class="muted">amount</span> 1' in listed


def test_an_approval_with_edited_fields_runs_the_tool_with_them(
    approver_client: Client, refund: ApprovalRequest
) -> None:
    answer = decide(
        approver_client,
        refund,
        decision="approve",
        **{"arguments-order": "A-17", "arguments-amount": "19.99"},
    )

    assert answer.status_code == 200, answer.content[:500]
    assert output_text(refund) == "Based on refund_order: refunded 19.99 EUR on order A-17"
    html = panel(approver_client, refund)
    assert "with edited arguments" not in html  # decided: the panel shows the decision


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"arguments-amount": "lots"}, "Input should be a valid number"),
        ({"arguments-amount": "NaN"}, "Input should be a valid number"),
        ({"arguments-amount": "1e999"}, "Input should be a valid number"),
        ({"arguments-amount": ""}, "Field required"),
    ],
)
def test_an_edit_that_does_not_fit_is_a_422_beside_the_field_and_decides_nothing(
    approver_client: Client, refund: ApprovalRequest, fields: dict[str, str], message: str
) -> None:
    given = {"arguments-order": "A-17", "arguments-amount": "5", **fields}

    answer = decide(approver_client, refund, decision="approve", **given)

    assert answer.status_code == 422, answer.content[:500]
    assert message in answer.content.decode()
    refund.refresh_from_db()
    assert refund.status == ApprovalStatus.PENDING


@pytest.mark.parametrize(
    ("arguments", "named"),
    [
        ('{"order": "A-\\udc00", "amount": 2}', "order"),
        ('{"order": "A-17", "amount": NaN}', "amount"),
        ('{"order": "A-17", "amount": Infinity}', "amount"),
        ('{"order": "A-17", "amount": 2, "colour": "red"}', "arguments.colour"),
        ('{"order": "A-17", "amount": "2"}', "arguments.amount"),
    ],
)
def test_the_api_refuses_hostile_arguments_naming_the_field(
    approver_client: Client, refund: ApprovalRequest, arguments: str, named: str
) -> None:
    body = f'{{"decision": "approve", "response": {{"arguments": {arguments}}}}}'

    answer = approver_client.post(
        f"/api/approvals/{refund.request_id}/decide/", body, content_type="application/json"
    )

    assert answer.status_code in (400, 422), answer.content[:500]
    assert named in answer.content.decode()
    refund.refresh_from_db()
    assert refund.status == ApprovalStatus.PENDING


def test_unknown_fields_in_the_post_are_not_arguments(
    approver_client: Client, refund: ApprovalRequest
) -> None:
    answer = decide(
        approver_client,
        refund,
        decision="approve",
        **{"arguments-order": "A-1", "arguments-amount": "2", "arguments-colour": "red"},
    )

    assert answer.status_code == 200
    assert output_text(refund) == "Based on refund_order: refunded 2.00 EUR on order A-1"


def test_a_huge_argument_is_refused_as_too_large(
    approver_client: Client, refund: ApprovalRequest
) -> None:
    answer = decide(
        approver_client,
        refund,
        decision="approve",
        **{"arguments-order": "A" * 3_000_000, "arguments-amount": "2"},
    )

    assert answer.status_code == 413
    refund.refresh_from_db()
    assert refund.status == ApprovalStatus.PENDING


def test_a_tool_the_workflow_does_not_mark_editable_shows_its_arguments_read_only(
    approver_client: Client, refund: ApprovalRequest, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delitem(agents.refund_order.additional_properties, EDITABLE_ARGUMENTS)

    html = panel(approver_client, refund)
    assert 'name="arguments-amount"' not in html and 'id="tool-not-editable"' in html

    # Fields posted anyway change nothing: the call runs as the agent asked.
    answer = decide(approver_client, refund, decision="approve", **{"arguments-amount": "900"})
    assert answer.status_code == 200
    assert output_text(refund) == f"Based on refund_order: refunded 1.00 EUR on order {PROMPT}"


def test_a_call_to_a_tool_the_agent_does_not_have_says_its_description_is_not_found(
    approver_client: Client, refund: ApprovalRequest
) -> None:
    data = refund.request_data
    data["v"]["function_call"]["name"] = "wire_money"
    ApprovalRequest.objects.filter(pk=refund.pk).update(request_data=data)

    html = panel(approver_client, refund)

    assert "support asks to call wire_money" in html
    assert "Not found: the workflow's agent has no tool named wire_money" in html
    assert 'name="arguments-amount"' not in html


def test_a_rejection_with_a_reason_is_shown_in_the_runs_conversation(
    approver_client: Client, operator_client: Client, refund: ApprovalRequest
) -> None:
    answer = decide(approver_client, refund, decision="reject", reason="not paid yet")

    assert answer.status_code == 200
    assert output_text(refund).endswith("rejected: not paid yet")
    page = operator_client.get(f"/runs/{refund.run_id}/").content.decode()
    assert "refund_order rejected" in page and "not paid yet" in page


@pytest.mark.parametrize(
    ("schema", "inputs"),
    [
        ({"type": "string"}, 'type="text"'),
        ({"type": "number"}, 'type="number"'),
        ({"type": "integer"}, 'type="number"'),
        ({"type": "boolean"}, 'type="checkbox"'),
        ({"enum": ["small", "large"], "type": "string"}, "<select"),
        ({"type": "array", "items": {"type": "string"}}, "<textarea"),
        ({"type": "object"}, "<textarea"),
    ],
)
def test_each_property_type_gets_its_own_input(schema: dict[str, Any], inputs: str) -> None:
    form = ToolArgumentsForm(
        {"type": "object", "properties": {"x": schema}, "required": ["x"]},
        prefix="arguments",
        asked={},
    )

    assert inputs in str(form["x"])


def test_arguments_posted_back_untouched_are_the_agents_own() -> None:
    schema = {
        "type": "object",
        "properties": {
            "body": {"type": "string"},
            "amount": {"type": "number"},
            "notify": {"type": "boolean"},
        },
        "required": ["body", "amount"],
    }
    asked = {"body": "Hello,\nyour refund is on its way.\nBest", "amount": 1}
    shown = ToolArgumentsForm(schema, prefix="arguments", asked=asked)
    assert "<textarea" in str(shown["body"])  # a line break survives the browser

    # What a browser posts for the form as shown: CRLF line ends, the number as text, the
    # box the agent left out unticked.
    posted = {"arguments-body": asked["body"].replace("\n", "\r\n"), "arguments-amount": "1"}
    form = ToolArgumentsForm(schema, posted, prefix="arguments", asked=asked)

    assert form.is_valid(), form.errors
    assert form.value() == {"arguments": asked}
    assert type(form.value()["arguments"]["amount"]) is int


def test_the_bulk_review_and_the_archive_read_a_tool_calls_answer(
    approver_client: Client, refund: ApprovalRequest
) -> None:
    review = approver_client.post(
        "/approvals/decide/",
        {"decision": "reject", "request": [refund.request_id], "reason": "paused"},
    )
    assert review.status_code == 200
    html = review.content.decode()
    assert "function: &quot;refund_order&quot;" in html and "approved: false" in html
    assert "unreadable" not in html

    approver_client.post(
        "/approvals/decide/",
        {"decision": "reject", "request": [refund.request_id], "reason": "paused", "confirm": "1"},
    )
    output_text(refund)
    archive = approver_client.get("/approvals/archive/").content.decode()
    assert "function: &quot;refund_order&quot;" in archive
    assert "reason: &quot;paused&quot;" in archive


def test_the_api_gives_the_schema_of_the_arguments_it_takes(
    approver_client: Client, refund: ApprovalRequest
) -> None:
    [shown] = approver_client.get("/api/approvals/?status=pending").json()["approvals"]

    schema = shown["response_schema"]
    assert schema["properties"]["arguments"] == agents.refund_order.parameters()
    assert schema["additionalProperties"] is False
