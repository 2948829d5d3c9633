"""Tool approvals decided through the service (dashboard/services/tool_calls.py): the agent
runs the tool as asked, with an approver's edited arguments when the workflow marks the tool
editable (and the audit keeps both), or reads a rejection's reason; a bad edit decides
nothing. The demo's support-refund agent on the local model, through the embedded worker."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from dashboard import services
from dashboard.catalog.tools import EDITABLE_ARGUMENTS
from dashboard.demo import agents
from dashboard.execution import embedded
from dashboard.models import (
    ApprovalRequest,
    ApprovalStatus,
    AuditEntry,
    RunStatus,
    WorkflowRun,
)

pytestmark = pytest.mark.django_db(transaction=True)

Drive = Callable[..., WorkflowRun]
PROMPT = "Please refund order A-17, it arrived broken"


@pytest.fixture(autouse=True)
def fast_model(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(agents, "_WORD_DELAY", 0.0)


def waiting_refund(drive: Drive, operator_user: Any, prompt: str = PROMPT) -> ApprovalRequest:
    run = drive(
        services.run_start, workflow_name="support-refund", input=prompt, user=operator_user
    )
    assert run.status == RunStatus.WAITING, run.error_message
    return ApprovalRequest.objects.get(run=run)


def reply(run: WorkflowRun) -> str:
    """The agent's last answer: the run's output, MAF's AgentResponse as typed JSON."""
    messages = run.output["v"]["messages"]
    return "".join(c.get("text", "") for m in messages for c in m["contents"])


def test_a_tool_call_request_names_the_agent_function_description_and_schema(
    drive: Drive, operator_user: Any
) -> None:
    approval = waiting_refund(drive, operator_user)

    call = services.tool_call_of(approval)

    assert call is not None
    assert (call.executor_id, call.agent_name, call.name) == ("support", "support", "refund_order")
    assert call.description == agents.refund_order.description
    assert call.schema["properties"]["amount"]["type"] == "number"
    assert call.arguments == {"order": PROMPT, "amount": 1}
    assert call.editable


def test_an_approved_call_runs_the_tool_with_the_arguments_the_agent_asked_for(
    drive: Drive, operator_user: Any, approver_user: Any
) -> None:
    approval = waiting_refund(drive, operator_user)

    run = drive(services.approval_decide, approval.request_id, user=approver_user, approved=True)

    assert run.status == RunStatus.COMPLETED, run.error_message
    assert reply(run) == f"Based on refund_order: refunded 1.00 EUR on order {PROMPT}"


def test_edited_arguments_are_the_ones_the_tool_runs_with_and_the_audit_keeps_both(
    drive: Drive, operator_user: Any, approver_user: Any
) -> None:
    approval = waiting_refund(drive, operator_user)
    edited = {"order": "A-17", "amount": 42.5}

    run = drive(
        services.approval_decide,
        approval.request_id,
        user=approver_user,
        approved=True,
        response={"arguments": edited},
    )

    assert run.status == RunStatus.COMPLETED, run.error_message
    assert reply(run) == "Based on refund_order: refunded 42.50 EUR on order A-17"
    entry = AuditEntry.objects.get(action="approve", target=f"request {approval.request_id}")
    assert entry.details["arguments"] == {
        "original": {"order": PROMPT, "amount": 1},
        "edited": edited,
    }


def test_an_edit_of_a_tool_the_workflow_does_not_mark_editable_is_refused(
    drive: Drive, operator_user: Any, approver_user: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delitem(agents.refund_order.additional_properties, EDITABLE_ARGUMENTS)
    approval = waiting_refund(drive, operator_user)
    assert not services.tool_call_of(approval).editable  # type: ignore[union-attr]

    with pytest.raises(services.InvalidInput, match="does not let approvers edit") as refused:
        services.approval_decide(
            approval.request_id,
            user=approver_user,
            approved=True,
            response={"arguments": {"order": "A-17", "amount": 500}},
        )

    assert refused.value.errors == {"arguments": "not editable"}
    approval.refresh_from_db()
    assert approval.status == ApprovalStatus.PENDING
    # The call as asked is still approvable.
    services.approval_decide(approval.request_id, user=approver_user, approved=True)


@pytest.mark.parametrize(
    ("response", "field"),
    [
        ({"arguments": {"order": "A-17", "amount": "lots"}}, "arguments.amount"),
        ({"arguments": {"order": "A-17", "amount": float("nan")}}, "arguments.amount"),
        ({"arguments": {"order": "A-17", "amount": float("inf")}}, "arguments.amount"),
        ({"arguments": {"order": "A-\ud800", "amount": 3}}, "arguments.order"),
        ({"arguments": {"order": "A-17", "amount": True}}, "arguments.amount"),
        ({"arguments": {"order": 17, "amount": 3}}, "arguments.order"),
        ({"arguments": {"order": "A-17", "amount": 3, "colour": "red"}}, "arguments.colour"),
        ({"arguments": {"order": "A-17"}}, "arguments.amount"),
        ({"arguments": ["A-17", 3]}, "arguments"),
        ({"argumentz": {"order": "A-17", "amount": 3}}, "argumentz"),
        ("refund it all", "response"),
    ],
)
def test_arguments_that_do_not_fit_the_tools_schema_decide_nothing_and_name_the_field(
    drive: Drive, operator_user: Any, approver_user: Any, response: Any, field: str
) -> None:
    approval = waiting_refund(drive, operator_user)

    with pytest.raises(services.InvalidInput) as refused:
        services.approval_decide(
            approval.request_id, user=approver_user, approved=True, response=response
        )

    # The field is named: as the error's key, or (text a database cannot store, refused
    # before anything is looked up) as the path in the message of the whole response.
    named = [
        k for k, message in refused.value.errors.items() if field in (k, message.split(":")[0])
    ]
    assert named, refused.value.errors
    approval.refresh_from_db()
    assert approval.status == ApprovalStatus.PENDING
    assert not AuditEntry.objects.filter(action="approve").exists()


def test_a_rejected_call_with_edited_arguments_is_refused(
    drive: Drive, operator_user: Any, approver_user: Any
) -> None:
    approval = waiting_refund(drive, operator_user)

    with pytest.raises(services.InvalidInput, match="with an approval"):
        services.approval_decide(
            approval.request_id,
            user=approver_user,
            approved=False,
            reason="no",
            response={"arguments": {"order": "A-17", "amount": 2}},
        )


def test_a_rejections_reason_reaches_the_agent_and_the_run_goes_on(
    drive: Drive, operator_user: Any, approver_user: Any
) -> None:
    approval = waiting_refund(drive, operator_user)

    run = drive(
        services.approval_decide,
        approval.request_id,
        user=approver_user,
        approved=False,
        reason="the order was never paid",
    )

    assert run.status == RunStatus.COMPLETED, run.error_message
    assert reply(run) == (
        "Based on refund_order: Error: Tool call invocation was rejected by user.; "
        "noted: The call to refund_order was rejected: the order was never paid"
    )
    approval.refresh_from_db()
    assert approval.response["v"]["additional_properties"]["reason"] == "the order was never paid"


def test_several_tool_calls_are_rejected_at_once_and_each_run_reads_the_reason(
    drive: Drive, operator_user: Any, approver_user: Any
) -> None:
    approvals = [
        waiting_refund(drive, operator_user, f"Refund order B-{n}, it broke") for n in (1, 2, 3)
    ]

    outcomes = services.approvals_decide_many(
        [a.request_id for a in approvals],
        user=approver_user,
        approved=False,
        reason="refunds are paused today",
    )

    assert all(o.decided for o in outcomes), outcomes
    assert embedded.wait_for_background_tasks(60), "the runs did not settle in 60 s"
    for approval in approvals:
        run = WorkflowRun.objects.get(pk=approval.run_id)
        assert run.status == RunStatus.COMPLETED, run.error_message
        assert reply(run).endswith("rejected: refunds are paused today")
