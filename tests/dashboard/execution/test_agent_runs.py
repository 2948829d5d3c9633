"""Agent runs through the worker: one event per reply, one per model call, tokens and cost
added to the run as its supersteps commit, whatever the length of the replies."""

from __future__ import annotations

from collections.abc import Callable
from decimal import Decimal
from typing import Any

import pytest

from dashboard import services
from dashboard.demo import agents
from dashboard.instruments.metrics import INSTRUMENTS
from dashboard.models import ModelPrice, RunEvent, RunStatus, WorkflowRun

pytestmark = pytest.mark.django_db(transaction=True)

Drive = Callable[..., WorkflowRun]
LONG = " ".join(f"point{n}" for n in range(40))


@pytest.fixture(autouse=True)
def fast_model(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(agents, "_WORD_DELAY", 0.0)


@pytest.fixture
def operator(role_user: Callable[..., Any]) -> Any:
    return role_user("olga", "Operator", "Approver")


def events_of(run: WorkflowRun, kind: str) -> list[dict[str, Any]]:
    return [event.data for event in RunEvent.objects.filter(run=run, type=kind).order_by("seq")]


def report(drive: Drive, operator: Any, prompt: str) -> WorkflowRun:
    run = drive(services.run_start, workflow_name="research-report", input=prompt, user=operator)
    assert run.status == RunStatus.COMPLETED, run.error_message
    return run


def test_each_agent_reply_is_one_model_call_with_the_tokens_its_model_reported(
    drive: Drive, operator: Any
) -> None:
    run = report(drive, operator, "Write about durable workflows")

    calls = events_of(run, "model_call")
    assert [call["executor_id"] for call in calls] == ["researcher", "writer", "editor"]
    assert {call["model"] for call in calls} == {agents.LOCAL_MODEL}
    assert all(call["input_tokens"] > 0 and call["output_tokens"] > 0 for call in calls)
    assert run.input_tokens == sum(call["input_tokens"] for call in calls)
    assert run.output_tokens == sum(call["output_tokens"] for call in calls)
    assert run.cost == 0  # no price for the model: tokens are counted, cost is not
    assert all(call["cost"] is None for call in calls)


def test_a_streamed_reply_is_stored_as_one_output_event_holding_all_of_it(
    drive: Drive, operator: Any
) -> None:
    run = report(drive, operator, LONG)

    [output] = events_of(run, "output")  # the editor's reply, streamed word by word
    assert output["executor_id"] == "editor"
    reply_text = "".join(
        content.get("text", "")
        for message in output["data"]["v"]["messages"]  # MAF's AgentResponse, as typed JSON
        for content in message["contents"]
    )
    assert reply_text.startswith("editor: ") and "point9" in reply_text
    assert run.output == output["data"]  # the run's output is the whole reply, not a chunk


def test_rows_per_run_do_not_depend_on_the_length_of_the_replies(
    drive: Drive, operator: Any
) -> None:
    short = report(drive, operator, "Brief")
    long = report(drive, operator, LONG)

    assert long.output_tokens > 5 * short.output_tokens
    assert RunEvent.objects.filter(run=long).count() == RunEvent.objects.filter(run=short).count()
    assert long.current_superstep == short.current_superstep


def test_a_priced_model_costs_its_tokens_at_the_table_price(drive: Drive, operator: Any) -> None:
    ModelPrice.objects.create(
        model=agents.LOCAL_MODEL, input_per_million=Decimal(3), output_per_million=Decimal(15)
    )
    before = INSTRUMENTS.get_sample_value(
        "superstep_model_tokens_total",
        {"workflow": "research-report", "model": agents.LOCAL_MODEL, "direction": "output"},
    )

    run = report(drive, operator, "Write about durable workflows")

    calls = events_of(run, "model_call")
    expected = [
        (Decimal(3) * call["input_tokens"] + Decimal(15) * call["output_tokens"])
        / Decimal(1_000_000)
        for call in calls
    ]
    assert [Decimal(call["cost"]) for call in calls] == [
        e.quantize(Decimal("0.000001")) for e in expected
    ]
    assert run.cost == sum(Decimal(call["cost"]) for call in calls)
    after = INSTRUMENTS.get_sample_value(
        "superstep_model_tokens_total",
        {"workflow": "research-report", "model": agents.LOCAL_MODEL, "direction": "output"},
    )
    assert (after or 0) - (before or 0) == run.output_tokens


def test_a_tool_that_needs_approval_pauses_the_run_after_counting_the_call(
    drive: Drive, operator: Any
) -> None:
    run = drive(
        services.run_start,
        workflow_name="support-refund",
        input="Please refund order A-17, it arrived broken",
        user=operator,
    )

    assert run.status == RunStatus.WAITING
    [call] = events_of(run, "model_call")
    assert call["executor_id"] == "support" and run.output_tokens == call["output_tokens"]
