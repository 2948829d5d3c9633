"""Tool approvals answered with other arguments or with a reason (workflows/agents/edited_calls.py).

MAF 1.23 runs the call it recorded in the session whatever arguments the answer's
``function_call`` carries (checked on MAF itself below); our ``AgentExecutor`` runs the tool
with the answer's arguments, and a rejection's reason reaches the model right after MAF's
rejection result. The local model is the one the demo uses, so its reply depends on both.
"""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Annotated, Any

import agent_framework
import pytest
from agent_framework import Agent, Content, tool

import workflows
from workflows.agents.local_chat import LocalChatClient, ScriptedChatClient, ToolCall

paid: list[tuple[str, float]] = []
ASKED = ToolCall("refund", {"order": "A-17", "amount": 5})


@tool(approval_mode="always_require")
def refund(order: Annotated[str, "order id"], amount: Annotated[float, "euros"]) -> str:
    """Refund an order."""
    paid.append((order, amount))
    return f"refunded {amount:.2f} EUR on {order}"


@pytest.fixture(autouse=True)
def _clear() -> None:
    paid.clear()


def support(client: Any, engine: Any, storage: Any) -> Any:
    bot = Agent(client=client, name="support", tools=[refund])
    builder = engine.WorkflowBuilder(start_executor=bot, checkpoint_storage=storage, name="support")
    return builder.build()


def answer(request: Content, *, approved: bool, **changes: Any) -> Content:
    call = copy.deepcopy(request.function_call)
    assert call is not None
    call.arguments = {**call.parse_arguments(), **changes.pop("arguments", {})}  # type: ignore[dict-item]
    return Content.from_function_approval_response(
        approved=approved, id=request.id, function_call=call, **changes
    )


async def paused(engine: Any, tmp_path: Path, client: Any) -> tuple[Any, Any, Any]:
    storage = engine.FileCheckpointStorage(tmp_path)
    first = await support(client, engine, storage).run("Refund order A-17, it broke")
    [request] = first.get_request_info_events()
    latest = await storage.get_latest(workflow_name=support(client, engine, storage).name)
    return storage, request, latest


def replies(result: Any) -> list[str]:
    return [output.text for output in result.get_outputs()]


async def test_an_approval_with_edited_arguments_runs_the_tool_with_them(tmp_path: Path) -> None:
    storage, request, latest = await paused(workflows, tmp_path, LocalChatClient())
    edited = answer(request.data, approved=True, arguments={"order": "A-99", "amount": 42.5})

    # A fresh workflow (another process) answers from the checkpoint.
    workflow = support(LocalChatClient(), workflows, storage)
    done = await workflow.run(
        checkpoint_id=latest.checkpoint_id, responses={request.request_id: edited}
    )

    assert paid == [("A-99", 42.5)]
    assert replies(done) == ["Based on refund: refunded 42.50 EUR on A-99"]
    # The session's history holds the call as it ran, so the model reads what happened.
    history = workflow.executors["support"]._session.state["in_memory"]["messages"]
    calls = [c for m in history for c in m.contents if c.type == "function_call"]
    assert [c.parse_arguments() for c in calls] == [{"order": "A-99", "amount": 42.5}]


async def test_maf_itself_runs_the_recorded_call_whatever_the_answer_carries(
    tmp_path: Path,
) -> None:
    storage, request, latest = await paused(agent_framework, tmp_path, LocalChatClient())
    edited = answer(request.data, approved=True, arguments={"order": "A-99", "amount": 42.5})

    workflow = support(LocalChatClient(), agent_framework, storage)
    await workflow.run(checkpoint_id=latest.checkpoint_id, responses={request.request_id: edited})

    assert paid == [("Refund order A-17, it broke", 1)]  # the difference the README names


async def test_an_unchanged_approval_runs_the_call_as_asked(tmp_path: Path) -> None:
    storage, request, latest = await paused(workflows, tmp_path, LocalChatClient())

    workflow = support(LocalChatClient(), workflows, storage)
    await workflow.run(
        checkpoint_id=latest.checkpoint_id,
        responses={request.request_id: request.data.to_function_approval_response(True)},
    )

    assert paid == [("Refund order A-17, it broke", 1)]


async def test_a_rejections_reason_comes_to_the_model_right_after_the_rejection(
    tmp_path: Path,
) -> None:
    storage, request, latest = await paused(
        workflows,
        tmp_path,
        ScriptedChatClient([ToolCall("refund", {"order": "A-17", "amount": 5})]),
    )
    rejected = answer(request.data, approved=False, additional_properties={"reason": "never paid"})
    model = ScriptedChatClient(["I will not refund it."])

    done = await support(model, workflows, storage).run(
        checkpoint_id=latest.checkpoint_id, responses={request.request_id: rejected}
    )

    assert paid == [] and replies(done) == ["I will not refund it."]
    [seen] = model.calls
    roles = [(m.role, [c.type for c in m.contents]) for m in seen]
    # The tool's result follows its call (as providers require), then the reason.
    assert roles[-3:] == [
        ("assistant", ["function_call"]),
        ("tool", ["function_result"]),
        ("user", ["text"]),
    ]
    assert "rejected by user" in str(seen[-2].contents[0].result)
    assert seen[-1].text == "The call to refund was rejected: never paid"


async def test_a_rejection_without_a_reason_is_maf_s_rejection_alone(tmp_path: Path) -> None:
    storage, request, latest = await paused(
        workflows,
        tmp_path,
        ScriptedChatClient([ToolCall("refund", {"order": "A-17", "amount": 5})]),
    )
    model = ScriptedChatClient(["Fine."])

    await support(model, workflows, storage).run(
        checkpoint_id=latest.checkpoint_id,
        responses={request.request_id: request.data.to_function_approval_response(False)},
    )

    [seen] = model.calls
    assert seen[-1].role == "tool"
    assert [m.text for m in seen if m.role == "user"] == ["Refund order A-17, it broke"]
