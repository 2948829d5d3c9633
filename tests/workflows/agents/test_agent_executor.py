"""``AgentExecutor``: MAF agents as workflow nodes, behaving as on Microsoft Agent Framework 1.23.

Most tests run one scenario on both engines (``engine`` is ``"maf"`` or ``"ours"``: the same
names from ``agent_framework`` or from ``workflows``) and assert what both must show; a few
compare the two runs directly. Models are ``ScriptedChatClient``s (MAF's own function-invocation
layer over a scripted reply), so approvals and declaration-only tools go through MAF's code.
"""

from __future__ import annotations

import logging
import types
from pathlib import Path
from typing import Annotated, Any

import agent_framework
import pytest
from agent_framework import (
    Agent,
    AgentResponse,
    AgentResponseUpdate,
    Content,
    FunctionInvocationContext,
    FunctionTool,
    Message,
    tool,
)
from agent_framework.exceptions import WorkflowCheckpointException

import workflows
from workflows import CheckpointDecodeError, InputTypeError
from workflows.agents import AgentExecutorCheckpointState
from workflows.agents.local_chat import ScriptedChatClient, ScriptExhaustedError, ToolCall

ENGINES = ["maf", "ours"]

# MAF's keys for an agent executor's checkpoint state (AgentExecutorCheckpointState).
STATE_KEYS = {
    "cache",
    "full_conversation",
    "agent_session",
    "pending_agent_requests",
    "pending_responses_to_agent",
    "pending_request_order",
}


def api(engine: str) -> types.ModuleType:
    """The workflow names of one engine: MAF's package, or ours."""
    return agent_framework if engine == "maf" else workflows


def agent(name: str, script: list[Any], **options: Any) -> Agent:
    return Agent(client=ScriptedChatClient(script, name=f"{name}-model"), name=name, **options)


def client_of(an_agent: Agent) -> ScriptedChatClient:
    client = an_agent.client
    assert isinstance(client, ScriptedChatClient)
    return client


def texts(messages: list[Message]) -> list[tuple[str, str]]:
    return [(m.role, m.text) for m in messages]


def outputs(result: Any) -> list[Any]:
    return list(result.get_outputs())


# ---------------------------------------------------------------------------- the builder


@pytest.mark.parametrize("engine", ENGINES)
def test_agents_passed_to_the_builder_are_wrapped_once_each_under_their_names(engine: str) -> None:
    e = api(engine)
    start, writer, left, right, last = (
        agent(n, ["x"]) for n in ("start", "writer", "left", "right", "last")
    )
    workflow = (
        e.WorkflowBuilder(start_executor=start, output_from=[last])
        .add_edge(start, writer)
        .add_fan_out_edges(writer, [left, right])
        .add_switch_case_edge_group(
            left, [e.Case(condition=lambda _: True, target=last), e.Default(target=right)]
        )
        .add_edge(right, last)
        .build()
    )

    wrapped = workflow.executors
    assert sorted(wrapped) == ["last", "left", "right", "start", "writer"]
    for name, an_agent in [("start", start), ("writer", writer), ("last", last)]:
        assert isinstance(wrapped[name], e.AgentExecutor)
        assert wrapped[name].agent is an_agent
    assert workflow.get_start_executor().id == "start"


@pytest.mark.parametrize("engine", ENGINES)
async def test_output_from_an_agent_designates_its_wrapper(engine: str) -> None:
    e = api(engine)
    first, second = agent("first", ["draft"]), agent("second", ["final"])
    workflow = (
        e.WorkflowBuilder(start_executor=first, output_from=[second])
        .add_edge(first, second)
        .build()
    )

    result = await workflow.run("Write.")

    assert [o.text for o in outputs(result)] == ["final"]


@pytest.mark.parametrize("engine", ENGINES)
def test_two_agents_of_one_name_are_refused_with_mafs_error(engine: str) -> None:
    e = api(engine)
    one, other = agent("twin", ["x"]), agent("twin", ["y"])

    with pytest.raises(ValueError, match="Duplicate executor ID 'twin' from agent"):
        e.WorkflowBuilder(start_executor=one).add_edge(one, other).build()


@pytest.mark.parametrize("engine", ENGINES)
def test_an_agent_without_a_name_is_wrapped_under_its_id(engine: str) -> None:
    e = api(engine)
    nameless = Agent(client=ScriptedChatClient(["x"]), id="agent-7")

    workflow = e.WorkflowBuilder(start_executor=nameless).build()

    assert list(workflow.executors) == ["agent-7"]


# ------------------------------------------------------------------------- input handlers


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize(
    "given",
    [
        "Hello",
        Message("user", ["Hello"]),
        ["Hello"],
        [Message("system", ["Be brief."]), "Hello"],
    ],
    ids=["str", "message", "list-of-str", "list-of-message-and-str"],
)
async def test_every_plain_input_reaches_the_model_as_messages(engine: str, given: Any) -> None:
    e = api(engine)
    bot = agent("bot", ["Hi."])
    workflow = e.WorkflowBuilder(start_executor=bot).build()

    result = await workflow.run(given)

    assert texts(client_of(bot).calls[0])[-1] == ("user", "Hello")
    [response] = outputs(result)
    assert isinstance(response, AgentResponse)
    assert response.text == "Hi."


@pytest.mark.parametrize("engine", ENGINES)
async def test_a_request_that_should_not_respond_is_kept_for_the_next_one(engine: str) -> None:
    e = api(engine)
    bot = agent("bot", ["Both read."])
    workflow = e.WorkflowBuilder(start_executor=bot).build()

    quiet = await workflow.run(
        e.AgentExecutorRequest(messages=[Message("user", ["First."])], should_respond=False)
    )
    loud = await workflow.run(e.AgentExecutorRequest(messages=[Message("user", ["Second."])]))

    assert outputs(quiet) == []
    assert texts(client_of(bot).calls[0]) == [("user", "First."), ("user", "Second.")]
    assert [o.text for o in outputs(loud)] == ["Both read."]


def chain(engine: str, **second_options: Any) -> tuple[Any, Agent, Agent]:
    e = api(engine)
    first, second = agent("first", ["Draft."]), agent("second", ["Review."])
    workflow = (
        e.WorkflowBuilder(start_executor=first)
        .add_edge(first, e.AgentExecutor(second, **second_options))
        .build()
    )
    return workflow, first, second


@pytest.mark.parametrize("engine", ENGINES)
async def test_a_chained_agent_gets_the_full_conversation_by_default(engine: str) -> None:
    workflow, _, second = chain(engine)

    await workflow.run("Write a slogan.")

    assert texts(client_of(second).calls[0]) == [
        ("user", "Write a slogan."),
        ("assistant", "Draft."),
    ]


@pytest.mark.parametrize("engine", ENGINES)
async def test_last_agent_context_gives_only_the_previous_answer(engine: str) -> None:
    workflow, _, second = chain(engine, context_mode="last_agent")

    await workflow.run("Write a slogan.")

    assert texts(client_of(second).calls[0]) == [("assistant", "Draft.")]


@pytest.mark.parametrize("engine", ENGINES)
async def test_custom_context_gives_what_the_filter_returns(engine: str) -> None:
    def users_only(conversation: list[Message]) -> list[Message]:
        return [m for m in conversation if m.role == "user"]

    workflow, _, second = chain(engine, context_mode="custom", context_filter=users_only)

    await workflow.run("Write a slogan.")

    assert texts(client_of(second).calls[0]) == [("user", "Write a slogan.")]


@pytest.mark.parametrize("engine", ENGINES)
def test_context_modes_are_checked_when_the_executor_is_made(engine: str) -> None:
    e = api(engine)
    bot = agent("bot", [])

    with pytest.raises(ValueError, match="context_mode must be one of"):
        e.AgentExecutor(bot, context_mode="everything")
    with pytest.raises(ValueError, match="context_filter must be provided"):
        e.AgentExecutor(bot, context_mode="custom")


@pytest.mark.parametrize("engine", ENGINES)
async def test_a_trailing_user_turn_is_added_for_the_call_only(engine: str) -> None:
    workflow, _, second = chain(engine, ensure_trailing_user_turn=True)

    result = await workflow.run("Write a slogan.")

    assert texts(client_of(second).calls[0])[-2:] == [
        ("assistant", "Draft."),
        ("user", "please continue."),
    ]
    review = [o for o in outputs(result) if o.text == "Review."]
    assert review, "the second agent answered"
    executor = workflow.executors["second"]
    assert ("user", "please continue.") not in texts(executor._full_conversation)


@pytest.mark.parametrize("engine", ENGINES)
async def test_a_plain_string_from_another_executor_warns_that_context_is_lost(
    engine: str, caplog: pytest.LogCaptureFixture
) -> None:
    e = api(engine)

    async def shout(response: Any, ctx: Any) -> None:
        await ctx.send_message(response.agent_response.text.upper())

    shout.__annotations__ = {
        "response": e.AgentExecutorResponse,
        "ctx": e.WorkflowContext[str],
        "return": None,
    }
    first, second = agent("first", ["draft"]), agent("second", ["ok"])
    workflow = (
        e.WorkflowBuilder(start_executor=first)
        .add_chain([first, e.executor(id="shouter")(shout), second])
        .build()
    )

    with caplog.at_level(logging.WARNING):
        await workflow.run("Write.")

    assert "from_str handler invoked with an empty cache" in caplog.text
    assert texts(client_of(second).calls[0]) == [("user", "DRAFT")]


@pytest.mark.parametrize("engine", ENGINES)
async def test_with_text_keeps_the_conversation_for_the_next_agent(engine: str) -> None:
    e = api(engine)

    async def shout(response: Any, ctx: Any) -> None:
        await ctx.send_message(response.with_text(response.agent_response.text.upper()))

    shout.__annotations__ = {
        "response": e.AgentExecutorResponse,
        "ctx": e.WorkflowContext[e.AgentExecutorResponse],
        "return": None,
    }
    first, second = agent("first", ["draft"]), agent("second", ["ok"])
    workflow = (
        e.WorkflowBuilder(start_executor=first)
        .add_chain([first, e.executor(id="shouter")(shout), second])
        .build()
    )

    await workflow.run("Write.")

    assert texts(client_of(second).calls[0]) == [("user", "Write."), ("assistant", "DRAFT")]


# ------------------------------------------------------------------ streaming or not


@pytest.mark.parametrize("engine", ENGINES)
async def test_a_streaming_run_yields_the_agents_updates_token_by_token(engine: str) -> None:
    e = api(engine)
    bot = agent("bot", ["one two three"])
    workflow = e.WorkflowBuilder(start_executor=bot).build()

    updates = [
        event.data async for event in workflow.run("Count.", stream=True) if event.type == "output"
    ]

    assert all(isinstance(u, AgentResponseUpdate) for u in updates)
    assert [u.text for u in updates] == ["one ", "two ", "three", ""]
    assert {u.author_name for u in updates} == {"bot"}


@pytest.mark.parametrize("engine", ENGINES)
async def test_a_run_that_does_not_stream_yields_one_response(engine: str) -> None:
    e = api(engine)
    bot = agent("bot", ["one two three"])
    workflow = e.WorkflowBuilder(start_executor=bot).build()

    result = await workflow.run("Count.")

    [response] = outputs(result)
    assert isinstance(response, AgentResponse)
    assert response.text == "one two three"


@pytest.mark.parametrize("engine", ENGINES)
async def test_downstream_executors_get_the_whole_response_when_streaming(engine: str) -> None:
    e = api(engine)
    seen: list[Any] = []

    async def collect(response: Any, ctx: Any) -> None:
        seen.append(response)

    collect.__annotations__ = {
        "response": e.AgentExecutorResponse,
        "ctx": e.WorkflowContext,
        "return": None,
    }
    bot = agent("bot", ["one two three"])
    workflow = (
        e.WorkflowBuilder(start_executor=bot)
        .add_edge(bot, e.executor(id="collect")(collect))
        .build()
    )

    async for _ in workflow.run("Count.", stream=True):
        pass

    [response] = seen
    assert response.executor_id == "bot"
    assert response.agent_response.text == "one two three"
    assert texts(response.full_conversation) == [
        ("user", "Count."),
        ("assistant", "one two three"),
    ]


# ------------------------------------------------------------------------- approvals


deleted: list[str] = []


@tool(approval_mode="always_require")
def delete_file(path: Annotated[str, "The file to delete"]) -> str:
    """Delete a file."""
    deleted.append(path)
    return f"deleted {path}"


@pytest.fixture(autouse=True)
def _clear_tool_records() -> None:
    deleted.clear()
    invocations.clear()


def janitor(script: list[Any], *tools: Any) -> Agent:
    return agent("janitor", script, tools=list(tools) or [delete_file])


def approval_workflow(engine: str, bot: Agent, storage: Any = None) -> Any:
    e = api(engine)
    return e.WorkflowBuilder(start_executor=bot, checkpoint_storage=storage).build()


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("stream", [False, True], ids=["whole", "streamed"])
async def test_an_approval_pauses_the_run_and_an_approval_lets_the_tool_run(
    engine: str, stream: bool
) -> None:
    bot = janitor([ToolCall("delete_file", {"path": "a.txt"}), "Deleted a.txt."])
    workflow = approval_workflow(engine, bot)

    paused = await _run(workflow, stream, "Delete a.txt.")
    [request] = paused["requests"]
    assert request.data.type == "function_approval_request"
    assert request.data.function_call.name == "delete_file"
    # The request is the request_info event's, never an output (a stream may still yield the
    # updates around it, such as the usage update closing the turn).
    assert "function_approval_request" not in [
        c.type for o in paused["outputs"] for m in o.messages for c in m.contents
    ]
    assert deleted == []

    answer = request.data.to_function_approval_response(approved=True)
    done = await _run(workflow, stream, responses={request.request_id: answer})

    assert deleted == ["a.txt"]
    assert "Deleted a.txt." in "".join(o.text for o in done["outputs"])
    assert done["requests"] == []
    assert len(client_of(bot).calls) == 2


@pytest.mark.parametrize("engine", ENGINES)
async def test_a_rejected_approval_does_not_run_the_tool_and_the_agent_carries_on(
    engine: str,
) -> None:
    bot = janitor([ToolCall("delete_file", {"path": "a.txt"}), "I left a.txt alone."])
    workflow = approval_workflow(engine, bot)

    paused = await workflow.run("Delete a.txt.")
    [request] = paused.get_request_info_events()
    answer = request.data.to_function_approval_response(approved=False)
    done = await workflow.run(responses={request.request_id: answer})

    assert deleted == []
    assert [o.text for o in outputs(done)] == ["I left a.txt alone."]
    last_call = client_of(bot).calls[-1]
    results = [c for m in last_call for c in m.contents if c.type == "function_result"]
    assert len(results) == 1 and "rejected" in str(results[0].result).lower()


@pytest.mark.parametrize("engine", ENGINES)
async def test_an_approval_answered_from_a_checkpoint_in_a_fresh_workflow_finishes_the_turn(
    engine: str, tmp_path: Path
) -> None:
    e = api(engine)
    storage = e.FileCheckpointStorage(tmp_path)
    first = janitor([ToolCall("delete_file", {"path": "a.txt"})])
    workflow = approval_workflow(engine, first, storage)
    paused = await workflow.run("Delete a.txt.")
    [request] = paused.get_request_info_events()
    checkpoint = await storage.get_latest(workflow_name=workflow.name)
    assert request.request_id in checkpoint.pending_request_info_events

    # Another process: a new agent whose model can only give the last reply.
    again = janitor(["Deleted a.txt."])
    fresh = approval_workflow(engine, again, storage)
    answer = request.data.to_function_approval_response(approved=True)
    done = await fresh.run(
        checkpoint_id=checkpoint.checkpoint_id, responses={request.request_id: answer}
    )

    assert deleted == ["a.txt"]
    assert [o.text for o in outputs(done)] == ["Deleted a.txt."]
    [call] = client_of(again).calls
    assert [c.type for m in call for c in m.contents] == [
        "text",
        "function_call",
        "function_result",
    ]


@pytest.mark.parametrize("engine", ENGINES)
async def test_an_approval_restored_without_an_answer_is_asked_again(
    engine: str, tmp_path: Path
) -> None:
    e = api(engine)
    storage = e.FileCheckpointStorage(tmp_path)
    first = janitor([ToolCall("delete_file", {"path": "a.txt"})])
    workflow = approval_workflow(engine, first, storage)
    paused = await workflow.run("Delete a.txt.")
    [request] = paused.get_request_info_events()
    checkpoint = await storage.get_latest(workflow_name=workflow.name)

    fresh = approval_workflow(engine, janitor(["Deleted a.txt."]), storage)
    restored = await fresh.run(checkpoint_id=checkpoint.checkpoint_id)
    [asked] = restored.get_request_info_events()
    done = await fresh.run(
        responses={asked.request_id: asked.data.to_function_approval_response(approved=True)}
    )

    assert asked.request_id == request.request_id
    assert [o.text for o in outputs(done)] == ["Deleted a.txt."]


@pytest.mark.parametrize("engine", ENGINES)
async def test_approvals_of_one_turn_answered_out_of_order_go_back_in_request_order(
    engine: str,
) -> None:
    bot = janitor(
        [
            [
                ToolCall("delete_file", {"path": "a.txt"}),
                ToolCall("delete_file", {"path": "b.txt"}),
            ],
            "Deleted b.txt only.",
        ]
    )
    workflow = approval_workflow(engine, bot)

    paused = await workflow.run("Delete a.txt and b.txt.")
    first, second = paused.get_request_info_events()
    half = await workflow.run(
        responses={second.request_id: second.data.to_function_approval_response(approved=True)}
    )
    assert outputs(half) == [] and len(client_of(bot).calls) == 1
    done = await workflow.run(
        responses={first.request_id: first.data.to_function_approval_response(approved=False)}
    )

    assert deleted == ["b.txt"]
    assert [o.text for o in outputs(done)] == ["Deleted b.txt only."]
    last_call = client_of(bot).calls[-1]
    results = [c for m in last_call for c in m.contents if c.type == "function_result"]
    assert [r.call_id for r in results] == [
        first.data.function_call.call_id,
        second.data.function_call.call_id,
    ]


@pytest.mark.parametrize("engine", ENGINES)
async def test_a_half_answered_batch_is_finished_from_a_checkpoint_in_a_fresh_workflow(
    engine: str, tmp_path: Path
) -> None:
    e = api(engine)
    storage = e.FileCheckpointStorage(tmp_path)
    pair = [ToolCall("delete_file", {"path": "a.txt"}), ToolCall("delete_file", {"path": "b.txt"})]
    workflow = approval_workflow(engine, janitor([pair]), storage)
    paused = await workflow.run("Delete a.txt and b.txt.")
    first, second = paused.get_request_info_events()
    await workflow.run(
        responses={second.request_id: second.data.to_function_approval_response(approved=True)}
    )
    half = await storage.get_latest(workflow_name=workflow.name)
    assert list(half.pending_request_info_events) == [first.request_id]

    again = janitor(["Deleted both."])
    fresh = approval_workflow(engine, again, storage)
    done = await fresh.run(
        checkpoint_id=half.checkpoint_id,
        responses={first.request_id: first.data.to_function_approval_response(approved=True)},
    )

    assert [o.text for o in outputs(done)] == ["Deleted both."]
    assert sorted(deleted) == ["a.txt", "b.txt"]
    [call] = client_of(again).calls
    results = [c for m in call for c in m.contents if c.type == "function_result"]
    assert [r.call_id for r in results] == [
        first.data.function_call.call_id,
        second.data.function_call.call_id,
    ]


@pytest.mark.parametrize("engine", ENGINES)
async def test_an_answer_to_no_pending_request_of_the_agent_is_refused(engine: str) -> None:
    bot = janitor([ToolCall("delete_file", {"path": "a.txt"})])
    workflow = approval_workflow(engine, bot)
    await workflow.run("Delete a.txt.")
    executor = workflow.executors["janitor"]
    stray = Content.from_function_approval_request(
        id="nobody", function_call=Content.from_function_call(call_id="c", name="delete_file")
    )

    with pytest.raises(Exception, match="must match a pending user input request ID"):
        await executor.handle_user_input_response(
            stray, stray.to_function_approval_response(approved=True), None
        )


# ------------------------------------------------------------------ declaration-only tools


locate = FunctionTool(
    name="get_user_location",
    func=None,
    description="The user's city; only the caller can tell.",
    input_model={"type": "object", "properties": {"reason": {"type": "string"}}},
)


@pytest.mark.parametrize("engine", ENGINES)
async def test_a_declaration_only_tool_pauses_for_the_caller_to_supply_its_result(
    engine: str,
) -> None:
    bot = agent(
        "weather", [ToolCall("get_user_location", {"reason": "forecast"}), "Sunny in Oslo."]
    )
    bot.default_options["tools"] = [locate]
    workflow = approval_workflow(engine, bot)

    paused = await workflow.run("Weather?")
    [request] = paused.get_request_info_events()
    assert request.data.type == "function_call"
    assert request.data.name == "get_user_location"
    result = Content.from_function_result(call_id=request.data.call_id, result="Oslo")
    done = await workflow.run(responses={request.request_id: result})

    assert [o.text for o in outputs(done)] == ["Sunny in Oslo."]
    last_call = client_of(bot).calls[-1]
    assert [c.result for m in last_call for c in m.contents if c.type == "function_result"] == [
        "Oslo"
    ]


# ------------------------------------------------------------------------- checkpoints


async def test_the_checkpoint_state_has_mafs_keys_and_survives_a_file_round_trip(
    tmp_path: Path,
) -> None:
    storage = workflows.FileCheckpointStorage(tmp_path)
    bot = janitor([ToolCall("delete_file", {"path": "a.txt"})])
    workflow = approval_workflow("ours", bot, storage)
    await workflow.run("Delete a.txt.")

    reloaded = workflows.FileCheckpointStorage(tmp_path)
    [summary] = [
        c
        for c in await reloaded.list_checkpoints(workflow_name=workflow.name)
        if c.pending_request_info_events
    ]
    state = (await reloaded.load(summary.checkpoint_id)).executor_states["janitor"]

    assert set(state) == STATE_KEYS == set(AgentExecutorCheckpointState.__annotations__)
    assert set(state) == set(agent_framework.AgentExecutorCheckpointState.__annotations__)
    assert texts(state["full_conversation"]) == [("user", "Delete a.txt.")]
    [(request_id, request)] = state["pending_agent_requests"].items()
    assert isinstance(request, Content) and request.type == "function_approval_request"
    assert state["pending_request_order"] == [request_id]
    assert state["pending_responses_to_agent"] == []
    assert isinstance(state["agent_session"]["session_id"], str)


async def test_the_state_saved_at_a_pause_is_mafs_value_for_value() -> None:
    saved = {}
    for engine in ENGINES:
        bot = janitor([ToolCall("delete_file", {"path": "a.txt"})])
        workflow = approval_workflow(engine, bot)
        await workflow.run("Delete a.txt.")
        saved[engine] = await workflow.executors["janitor"].on_checkpoint_save()

    def shape(state: dict[str, Any]) -> dict[str, Any]:
        return {
            "cache": texts(state["cache"]),
            "full_conversation": texts(state["full_conversation"]),
            "requests": {k: v.type for k, v in state["pending_agent_requests"].items()},
            "responses": state["pending_responses_to_agent"],
            "order": state["pending_request_order"],
            "session": sorted(state["agent_session"]),
        }

    assert set(saved["ours"]) == set(saved["maf"])
    assert shape(saved["ours"]) == shape(saved["maf"])


async def test_save_then_restore_gives_back_the_same_state() -> None:
    bot = janitor([ToolCall("delete_file", {"path": "a.txt"})])
    workflow = approval_workflow("ours", bot)
    await workflow.run("Delete a.txt.")
    saved = await workflow.executors["janitor"].on_checkpoint_save()

    twin = workflows.AgentExecutor(janitor([]))
    await twin.on_checkpoint_restore(saved)

    again = await twin.on_checkpoint_save()
    assert again["agent_session"]["session_id"] == saved["agent_session"]["session_id"]
    assert again["pending_request_order"] == saved["pending_request_order"]
    assert list(again["pending_agent_requests"]) == list(saved["pending_agent_requests"])


async def test_a_partial_state_restores_with_empty_defaults() -> None:
    executor = workflows.AgentExecutor(janitor([]))

    await executor.on_checkpoint_restore({"cache": [Message("user", ["Hi."])], "extra": 1})

    state = await executor.on_checkpoint_save()
    assert texts(state["cache"]) == [("user", "Hi.")]
    assert state["full_conversation"] == [] and state["pending_agent_requests"] == {}


def _request(request_id: str) -> Content:
    call = Content.from_function_call(call_id=f"call-{request_id}", name="delete_file")
    return Content.from_function_approval_request(id=request_id, function_call=call)


MALFORMED = {
    "not-a-mapping": ["cache"],
    "cache-not-a-list": {"cache": "Hello"},
    "cache-item-not-a-message": {"cache": ["Hello"]},
    "conversation-item": {"full_conversation": [Message("user", ["a"]), 3]},
    "responses-not-a-list": {"pending_responses_to_agent": {}},
    "response-not-content": {"pending_responses_to_agent": ["yes"]},
    "requests-not-a-dict": {"pending_agent_requests": []},
    "request-key-not-text": {"pending_agent_requests": {1: _request("r")}},
    "request-not-content": {"pending_agent_requests": {"r": "approve?"}},
    "order-not-a-list": {"pending_request_order": "r"},
    "order-item-not-text": {"pending_request_order": [1]},
    "order-duplicates": {"pending_request_order": ["r", "r"]},
    "order-missing-a-request": {
        "pending_agent_requests": {"r": _request("r")},
        "pending_request_order": ["s"],
    },
    "partial-batch-without-order": {
        "pending_agent_requests": {"r": _request("r")},
        "pending_responses_to_agent": [_request("s").to_function_approval_response(True)],
    },
    "session-not-a-dict": {"agent_session": "s"},
    "session-id-not-text": {"agent_session": {"session_id": 5}},
    "session-state-not-a-dict": {"agent_session": {"session_id": "s", "state": []}},
    "session-service-id": {"agent_session": {"session_id": "s", "service_session_id": 5}},
    "session-type": {"agent_session": {"session_id": "s", "type": 5}},
}


@pytest.mark.parametrize("state", list(MALFORMED.values()), ids=list(MALFORMED))
async def test_a_malformed_state_is_refused_with_mafs_error(state: Any) -> None:
    ours = workflows.AgentExecutor(janitor([]))
    theirs = agent_framework.AgentExecutor(janitor([]))

    with pytest.raises(WorkflowCheckpointException) as maf_error:
        await theirs.on_checkpoint_restore(state)
    with pytest.raises(CheckpointDecodeError) as our_error:
        await ours.on_checkpoint_restore(state)

    assert isinstance(our_error.value, workflows.WorkflowCheckpointException)
    assert str(our_error.value) == str(maf_error.value)


# ------------------------------------------------------------------------ run arguments


invocations: list[tuple[str, dict[str, Any]]] = []


@tool(approval_mode="never_require")
def whoami(ctx: FunctionInvocationContext) -> str:
    """Say who is asking."""
    invocations.append(("whoami", {k: v for k, v in ctx.kwargs.items() if k != "session"}))
    return "someone"


@tool(approval_mode="always_require")
def guarded(ctx: FunctionInvocationContext) -> str:
    """A tool that needs approval and reads the run's arguments."""
    invocations.append(("guarded", {k: v for k, v in ctx.kwargs.items() if k != "session"}))
    return "done"


class RecordingClient(ScriptedChatClient):
    """Records the keyword arguments each model call receives beside its options."""

    def __init__(self, script: list[Any], name: str) -> None:
        super().__init__(script, name=name)
        self.client_kwargs: list[dict[str, Any]] = []

    def _inner_get_response(self, *, messages: Any, stream: bool, options: Any, **kwargs: Any):  # type: ignore[no-untyped-def]
        self.client_kwargs.append({k: v for k, v in kwargs.items() if k in ("store", "tenant")})
        return super()._inner_get_response(
            messages=messages, stream=stream, options=options, **kwargs
        )


def kwargs_workflow(engine: str, script: list[Any], storage: Any = None) -> tuple[Any, Agent]:
    e = api(engine)
    bot = Agent(client=RecordingClient(script, name="helper-model"), name="helper", tools=[whoami])
    other = Agent(
        client=RecordingClient([ToolCall("whoami"), "Other."], name="other-model"),
        name="other",
        tools=[whoami],
    )
    workflow = (
        e.WorkflowBuilder(start_executor=bot, checkpoint_storage=storage)
        .add_edge(bot, other)
        .build()
    )
    return workflow, bot


@pytest.mark.parametrize("engine", ENGINES)
async def test_global_run_arguments_reach_every_agents_tools_and_client(engine: str) -> None:
    workflow, bot = kwargs_workflow(engine, [ToolCall("whoami"), "Helper."])

    await workflow.run(
        "Who?", function_invocation_kwargs={"user": "bob"}, client_kwargs={"store": False}
    )

    assert invocations == [("whoami", {"user": "bob"}), ("whoami", {"user": "bob"})]
    assert client_of(bot).client_kwargs == [{"store": False}, {"store": False}]


@pytest.mark.parametrize("engine", ENGINES)
async def test_run_arguments_keyed_by_executor_id_reach_only_that_agent(engine: str) -> None:
    workflow, bot = kwargs_workflow(engine, [ToolCall("whoami"), "Helper."])

    await workflow.run(
        "Who?",
        function_invocation_kwargs={"helper": {"user": "h"}, "other": {"user": "o"}},
        client_kwargs={"other": {"store": True}},
    )

    assert invocations == [("whoami", {"user": "h"}), ("whoami", {"user": "o"})]
    assert client_of(bot).client_kwargs == [{}, {}]


@pytest.mark.parametrize("engine", ENGINES)
async def test_invocation_kwargs_merge_global_values_under_each_executors_own(
    engine: str,
) -> None:
    e = api(engine)
    workflow, _ = kwargs_workflow(engine, [ToolCall("whoami"), "Helper."])

    await workflow.run(
        "Who?",
        function_invocation_kwargs=e.WorkflowInvocationKwargs(
            global_kwargs={"tenant": "t", "user": "anyone"},
            executor_kwargs={"other": {"user": "o"}},
        ),
    )

    assert invocations == [
        ("whoami", {"tenant": "t", "user": "anyone"}),
        ("whoami", {"tenant": "t", "user": "o"}),
    ]


@pytest.mark.parametrize("engine", ENGINES)
async def test_invocation_kwargs_may_name_an_agent_whose_executor_has_another_id(
    engine: str,
) -> None:
    e = api(engine)
    bot = Agent(
        client=ScriptedChatClient([ToolCall("whoami"), "Done."]), name="helper", tools=[whoami]
    )
    workflow = e.WorkflowBuilder(start_executor=e.AgentExecutor(bot, id="desk")).build()

    await workflow.run(
        "Who?",
        function_invocation_kwargs=e.WorkflowInvocationKwargs(
            executor_kwargs={"helper": {"user": "h"}}
        ),
    )

    assert invocations == [("whoami", {"user": "h"})]


@pytest.mark.parametrize("engine", ENGINES)
async def test_a_plain_mapping_keyed_by_an_agent_name_is_global(engine: str) -> None:
    e = api(engine)
    bot = Agent(
        client=ScriptedChatClient([ToolCall("whoami"), "Done."]), name="helper", tools=[whoami]
    )
    workflow = e.WorkflowBuilder(start_executor=e.AgentExecutor(bot, id="desk")).build()

    await workflow.run("Who?", function_invocation_kwargs={"helper": {"user": "h"}})

    assert invocations == [("whoami", {"helper": {"user": "h"}})]


@pytest.mark.parametrize("engine", ENGINES)
async def test_run_arguments_are_kept_when_answering_in_the_same_instance(engine: str) -> None:
    e = api(engine)
    bot = Agent(
        client=ScriptedChatClient([ToolCall("guarded"), "Done."], name="m"),
        name="solo",
        tools=[guarded],
    )
    workflow = e.WorkflowBuilder(start_executor=bot).build()
    paused = await workflow.run("Go.", function_invocation_kwargs={"user": "bob"})
    [request] = paused.get_request_info_events()

    await workflow.run(
        responses={request.request_id: request.data.to_function_approval_response(True)}
    )

    assert invocations == [("guarded", {"user": "bob"})]


@pytest.mark.parametrize("engine", ENGINES)
async def test_run_arguments_are_kept_across_a_checkpoint_resume(
    engine: str, tmp_path: Path
) -> None:
    e = api(engine)
    storage = e.FileCheckpointStorage(tmp_path)
    bot = Agent(
        client=ScriptedChatClient([ToolCall("guarded")], name="m"), name="solo", tools=[guarded]
    )
    workflow = e.WorkflowBuilder(start_executor=bot, checkpoint_storage=storage).build()
    paused = await workflow.run("Go.", function_invocation_kwargs={"user": "bob"})
    [request] = paused.get_request_info_events()
    checkpoint = await storage.get_latest(workflow_name=workflow.name)

    again = Agent(client=ScriptedChatClient(["Done."], name="m"), name="solo", tools=[guarded])
    fresh = e.WorkflowBuilder(start_executor=again, checkpoint_storage=storage).build()
    await fresh.run(
        checkpoint_id=checkpoint.checkpoint_id,
        responses={request.request_id: request.data.to_function_approval_response(True)},
    )

    assert invocations == [("guarded", {"user": "bob"})]


@pytest.mark.parametrize("engine", ENGINES)
async def test_a_fresh_message_run_starts_without_the_previous_runs_arguments(
    engine: str,
) -> None:
    e = api(engine)
    bot = Agent(
        client=ScriptedChatClient([ToolCall("whoami"), "One.", ToolCall("whoami"), "Two."]),
        name="solo",
        tools=[whoami],
    )
    workflow = e.WorkflowBuilder(start_executor=bot).build()

    await workflow.run("First.", function_invocation_kwargs={"user": "bob"})
    await workflow.run("Second.")

    assert invocations == [("whoami", {"user": "bob"}), ("whoami", {})]


@pytest.mark.parametrize("engine", ENGINES)
async def test_run_tools_are_offered_to_the_agents_of_that_run(engine: str) -> None:
    e = api(engine)
    bot = agent("bot", [ToolCall("whoami"), "It is someone."])
    workflow = e.WorkflowBuilder(start_executor=bot).build()

    result = await workflow.run("Who am I?", tools=[whoami])

    assert invocations == [("whoami", {})]
    assert [o.text for o in outputs(result)] == ["It is someone."]
    offered = client_of(bot).options_seen[0]["tools"]
    assert [t.name for t in offered] == ["whoami"]


@pytest.mark.parametrize("engine", ENGINES)
async def test_a_model_asked_more_than_scripted_fails_the_run(engine: str) -> None:
    e = api(engine)
    workflow = e.WorkflowBuilder(start_executor=agent("bot", [])).build()

    with pytest.raises(ScriptExhaustedError):
        await workflow.run("Hello.")


# ------------------------------------------------------------------------ run input


@pytest.mark.parametrize("engine", ENGINES)
async def test_a_workflow_message_is_unwrapped_to_its_data(engine: str) -> None:
    e = api(engine)
    bot = agent("bot", ["Hi."])
    workflow = e.WorkflowBuilder(start_executor=bot).build()

    await workflow.run(e.WorkflowMessage(data="Hello", source_id="caller"))

    assert texts(client_of(bot).calls[0]) == [("user", "Hello")]


@pytest.mark.parametrize("engine", ENGINES)
async def test_a_start_input_of_a_wrong_type_raises_a_runtime_error(engine: str) -> None:
    e = api(engine)
    workflow = e.WorkflowBuilder(start_executor=agent("bot", ["Hi."])).build()

    with pytest.raises(RuntimeError, match="cannot handle"):
        await workflow.run(42)


async def test_our_wrong_input_error_is_an_input_type_error() -> None:
    workflow = workflows.WorkflowBuilder(start_executor=agent("bot", ["Hi."])).build()

    with pytest.raises(InputTypeError):
        await workflow.run(42)


async def _run(workflow: Any, stream: bool, message: Any = None, **kwargs: Any) -> dict[str, Any]:
    """Outputs and requests of one run, streamed or not; streamed updates joined per run."""
    if not stream:
        result = await workflow.run(message, **kwargs)
        return {"outputs": outputs(result), "requests": result.get_request_info_events()}
    updates: list[AgentResponseUpdate] = []
    requests: list[Any] = []
    async for event in workflow.run(message, stream=True, **kwargs):
        if event.type == "output":
            updates.append(event.data)
        elif event.type == "request_info":
            requests.append(event)
    joined = [AgentResponse.from_updates(updates)] if updates else []
    return {"outputs": joined, "requests": requests}


# ---------------------------------------------------------------------- computer calls


class Operator:
    """A minimal agent (MAF's ``SupportsAgentRun`` shape) that asks for a computer action, then
    answers; in its first turn it may also have run a local tool."""

    def __init__(self, with_local_result: bool = False) -> None:
        self.id, self.name, self.description = "operator-id", "operator", None
        self.with_local_result = with_local_result
        self.calls: list[list[Message]] = []

    def create_session(self, **_: Any) -> agent_framework.AgentSession:
        return agent_framework.AgentSession()

    def get_session(self, *_: Any, **__: Any) -> agent_framework.AgentSession:
        return agent_framework.AgentSession()

    def _turn(self) -> list[Content]:
        if len(self.calls) > 1:
            return [Content.from_text("Clicked.")]
        click = Content.from_computer_tool_call(
            id="cu-1", call_id="call-1", actions=[{"type": "click", "x": 1, "y": 2}]
        )
        if not self.with_local_result:
            return [click]
        call = Content.from_function_call(call_id="f-1", name="lookup", id="fc-1")
        return [call, Content.from_function_result(call_id="f-1", result="42"), click]

    def run(self, messages: Any = None, *, stream: bool = False, **_: Any) -> Any:
        self.calls.append(list(messages or []))
        contents = self._turn()
        if not stream:
            return self._whole(contents)
        return self._streamed(contents)

    async def _whole(self, contents: list[Content]) -> AgentResponse:
        return AgentResponse(messages=[Message("assistant", contents)])

    async def _streamed(self, contents: list[Content]) -> Any:
        for content in contents:
            yield AgentResponseUpdate(contents=[content], role="assistant", message_id="m")


@pytest.mark.filterwarnings("ignore::agent_framework._feature_stage.ExperimentalWarning")
@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("stream", [False, True], ids=["whole", "streamed"])
async def test_a_computer_call_is_answered_by_its_result(engine: str, stream: bool) -> None:
    e = api(engine)
    operator = Operator()
    workflow = e.WorkflowBuilder(start_executor=e.AgentExecutor(operator)).build()

    paused = await _run(workflow, stream, "Click it.")
    [request] = paused["requests"]
    assert (request.data.type, request.data.call_id) == ("computer_tool_call", "call-1")
    assert "computer_tool_call" not in [
        c.type for o in paused["outputs"] for m in o.messages for c in m.contents
    ]
    wrong = Content.from_computer_tool_result(call_id="call-9")
    with pytest.raises(Exception, match="Computer result must match its pending computer call"):
        await workflow.run(responses={request.request_id: wrong})

    result = Content.from_computer_tool_result(call_id="call-1")
    done = await _run(workflow, stream, responses={request.request_id: result})

    assert "Clicked." in "".join(o.text for o in done["outputs"])
    [answer] = operator.calls[-1]
    assert answer.role == "tool"
    assert [(c.type, c.call_id) for c in answer.contents] == [("computer_tool_result", "call-1")]


@pytest.mark.filterwarnings("ignore::agent_framework._feature_stage.ExperimentalWarning")
@pytest.mark.parametrize("engine", ENGINES)
async def test_local_results_of_a_computer_turn_go_back_with_the_computer_result(
    engine: str,
) -> None:
    e = api(engine)
    operator = Operator(with_local_result=True)
    workflow = e.WorkflowBuilder(start_executor=e.AgentExecutor(operator)).build()

    paused = await workflow.run("Look it up, then click.")
    [request] = paused.get_request_info_events()
    state = await workflow.executors["operator"].on_checkpoint_save()
    assert state["pending_request_order"] == ["fc-1", "cu-1"]
    await workflow.run(
        responses={request.request_id: Content.from_computer_tool_result(call_id="call-1")}
    )

    [answer] = operator.calls[-1]
    assert [(c.type, c.call_id) for c in answer.contents] == [
        ("function_result", "f-1"),
        ("computer_tool_result", "call-1"),
    ]
