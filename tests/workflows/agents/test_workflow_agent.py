"""``WorkflowAgent`` (``workflow.as_agent()``): a workflow answering as a MAF agent, as on MAF 1.23.

Each test runs one scenario on both engines (``engine`` is ``"maf"`` or ``"ours"``: the same
names from ``agent_framework`` or from ``workflows``) and asserts what both must show.
"""

from __future__ import annotations

import re
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
from agent_framework.exceptions import AgentInvalidRequestException, AgentInvalidResponseException

import workflows
from workflows.agents.local_chat import ScriptedChatClient, ToolCall

ENGINES = ["maf", "ours"]


def api(engine: str) -> types.ModuleType:
    """The workflow names of one engine: MAF's package, or ours."""
    return agent_framework if engine == "maf" else workflows


def scripted(name: str, script: list[Any], **options: Any) -> Agent:
    return Agent(client=ScriptedChatClient(script, name=f"{name}-model"), name=name, **options)


def calls(an_agent: Agent) -> list[list[Message]]:
    client = an_agent.client
    assert isinstance(client, ScriptedChatClient)
    return client.calls


def texts(messages: list[Message]) -> list[tuple[str, str]]:
    return [(m.role, m.text) for m in messages]


def single_agent(engine: str, bot: Agent, **as_agent: Any) -> Any:
    e = api(engine)
    return e.WorkflowBuilder(start_executor=bot).build().as_agent(**as_agent)


# ------------------------------------------------------------------------------ making one


@pytest.mark.parametrize("engine", ENGINES)
def test_as_agent_takes_the_workflows_name_and_description_by_default(engine: str) -> None:
    e = api(engine)
    workflow = e.WorkflowBuilder(
        start_executor=scripted("bot", []), name="triage", description="Sorts mail."
    ).build()

    default, named = workflow.as_agent(), workflow.as_agent("desk", description="The desk.")

    assert (default.name, default.description) == ("triage", "Sorts mail.")
    assert (named.name, named.description) == ("desk", "The desk.")
    assert re.fullmatch(r"WorkflowAgent_[0-9a-f]{8}", default.id)
    assert default.workflow is workflow


@pytest.mark.parametrize("engine", ENGINES)
def test_a_workflow_whose_start_cannot_take_messages_is_no_agent(engine: str) -> None:
    e = api(engine)

    async def count(number: int, ctx: Any) -> None:
        await ctx.yield_output(number)

    count.__annotations__ = {"number": int, "ctx": e.WorkflowContext[Any, int], "return": None}
    workflow = e.WorkflowBuilder(start_executor=e.executor(id="count")(count)).build()

    with pytest.raises(ValueError, match=r"start executor cannot handle list\[Message\]"):
        workflow.as_agent()


# ------------------------------------------------------------------------------ answering


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize(
    "given",
    [
        "Hello",
        Content.from_text("Hello"),
        Message("user", ["Hello"]),
        [Message("system", ["Be brief."]), "Hello"],
    ],
    ids=["str", "content", "message", "list"],
)
async def test_agent_inputs_of_every_form_reach_the_workflow_as_messages(
    engine: str, given: Any
) -> None:
    bot = scripted("bot", ["Hi."])

    response = await single_agent(engine, bot).run(given)

    assert texts(calls(bot)[0])[-1] == ("user", "Hello")
    assert response.text == "Hi."


@pytest.mark.parametrize("engine", ENGINES)
async def test_an_input_item_of_another_kind_is_refused(engine: str) -> None:
    with pytest.raises(TypeError, match="must contain only str, Content, or Message"):
        await single_agent(engine, scripted("bot", [])).run(["Hello", 42])


@pytest.mark.parametrize("engine", ENGINES)
async def test_a_whole_answer_holds_the_outputs_messages(engine: str) -> None:
    e = api(engine)
    first, second = scripted("first", ["Draft."]), scripted("second", ["Final."])
    workflow = e.WorkflowBuilder(start_executor=first).add_edge(first, second).build()

    response = await workflow.as_agent("pair").run("Write.")

    assert isinstance(response, AgentResponse)
    assert [(m.author_name, m.text) for m in response.messages] == [
        ("first", "Draft."),
        ("second", "Final."),
    ]
    assert response.response_id
    assert response.usage_details is not None


@pytest.mark.parametrize("engine", ENGINES)
async def test_a_streamed_answer_passes_the_agents_updates_on(engine: str) -> None:
    bot = scripted("bot", ["one two"])

    stream = single_agent(engine, bot).run("Count.", stream=True)
    updates = [update async for update in stream]
    final = await stream.get_final_response()

    assert all(isinstance(u, AgentResponseUpdate) for u in updates)
    assert [u.text for u in updates] == ["one ", "two", ""]
    assert {u.author_name for u in updates} == {"bot"}
    assert final.text == "one two"


@pytest.mark.parametrize("engine", ENGINES)
async def test_outputs_that_are_not_agent_types_become_assistant_text(engine: str) -> None:
    e = api(engine)

    async def shout(messages: list[Message], ctx: Any) -> None:
        await ctx.yield_output(messages[-1].text.upper())

    shout.__annotations__ = {
        "messages": list[Message],
        "ctx": e.WorkflowContext[Any, str],
        "return": None,
    }
    agent = e.WorkflowBuilder(start_executor=e.executor(id="shout")(shout)).build().as_agent()

    response = await agent.run("hello")

    [message] = response.messages
    assert (message.role, message.author_name, message.text) == ("assistant", "shout", "HELLO")


# ----------------------------------------------------------------------------- requests


def asking_workflow(engine: str) -> Any:
    """A start executor that asks the caller for a name, then greets with it."""
    e = api(engine)

    async def start(self: Any, messages: Any, ctx: Any) -> None:
        await ctx.request_info(request_data="Your name?", response_type=str)

    async def answered(self: Any, question: Any, name: Any, ctx: Any) -> None:
        await ctx.yield_output(f"Hello, {name}.")

    # Hints as objects, not the strings this module's annotations are: both engines read them.
    start.__annotations__ = {"messages": list[Message], "ctx": e.WorkflowContext, "return": None}
    answered.__annotations__ = {
        "question": str,
        "name": str,
        "ctx": e.WorkflowContext[Any, str],
        "return": None,
    }
    greeter = type(
        "Greeter",
        (e.Executor,),
        {"start": e.handler(start), "answered": e.response_handler(answered)},
    )
    return e.WorkflowBuilder(start_executor=greeter(id="greeter")).build()


@pytest.mark.parametrize("engine", ENGINES)
async def test_a_workflow_request_is_a_request_info_function_call_answered_by_its_result(
    engine: str,
) -> None:
    e = api(engine)
    agent = asking_workflow(engine).as_agent("greeter-agent")

    asked = await agent.run("Hi.")
    [message] = asked.messages
    [call] = message.contents
    assert (message.role, message.author_name) == ("assistant", "greeter")
    assert call.type == "function_call"
    assert call.name == e.WorkflowAgent.REQUEST_INFO_FUNCTION_NAME == "request_info"
    arguments = e.WorkflowAgent.RequestInfoFunctionArgs.from_dict(call.arguments)
    assert arguments.request_id == call.call_id
    assert arguments.request_event.data == "Your name?"

    answer = Content.from_function_result(call_id=call.call_id, result="Ada")
    done = await agent.run(Message("tool", [answer]))

    assert done.text == "Hello, Ada."


@pytest.mark.parametrize("engine", ENGINES)
async def test_a_streamed_request_comes_under_the_agents_name(engine: str) -> None:
    agent = asking_workflow(engine).as_agent("greeter-agent")

    updates = [u async for u in agent.run("Hi.", stream=True)]

    [request] = [u for u in updates if u.contents and u.contents[0].type == "function_call"]
    assert request.author_name == "greeter-agent"
    assert request.contents[0].name == "request_info"


@pytest.mark.parametrize("engine", ENGINES)
async def test_while_a_request_waits_anything_but_an_answer_is_refused(engine: str) -> None:
    agent = asking_workflow(engine).as_agent()
    await agent.run("Hi.")

    with pytest.raises(AgentInvalidResponseException, match="Unexpected content type"):
        await agent.run("Never mind.")


deleted: list[str] = []


@tool(approval_mode="always_require")
def delete_file(path: Annotated[str, "The file to delete"]) -> str:
    """Delete a file."""
    deleted.append(path)
    return f"deleted {path}"


@pytest.fixture(autouse=True)
def _clear_tool_records() -> None:
    deleted.clear()
    seen_kwargs.clear()


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("stream", [False, True], ids=["whole", "streamed"])
async def test_a_tool_approval_surfaces_as_the_agents_own_approval_request(
    engine: str, stream: bool
) -> None:
    bot = scripted(
        "janitor",
        [ToolCall("delete_file", {"path": "a.txt"}), "Deleted a.txt."],
        tools=[delete_file],
    )
    agent = single_agent(engine, bot)

    asked = await _answer(agent, stream, "Delete a.txt.")
    [request] = [c for m in asked.messages for c in m.contents if c.user_input_request]
    assert request.type == "function_approval_request"
    assert request.function_call.name == "delete_file"

    reply = Message("user", [request.to_function_approval_response(approved=True)])
    done = await _answer(agent, stream, reply)

    assert deleted == ["a.txt"]
    assert done.text.endswith("Deleted a.txt.")


locate = FunctionTool(
    name="get_user_location",
    func=None,
    description="The user's city; only the caller can tell.",
    input_model={"type": "object", "properties": {"reason": {"type": "string"}}},
)


@pytest.mark.parametrize("engine", ENGINES)
async def test_a_declaration_only_call_surfaces_as_is_and_takes_a_function_result(
    engine: str,
) -> None:
    bot = scripted(
        "weather", [ToolCall("get_user_location", {"reason": "forecast"}), "Sunny in Oslo."]
    )
    bot.default_options["tools"] = [locate]
    agent = single_agent(engine, bot)

    asked = await agent.run("Weather?")
    [call] = [c for m in asked.messages for c in m.contents]
    assert (call.type, call.name) == ("function_call", "get_user_location")

    result = Content.from_function_result(call_id=call.call_id, result="Oslo")
    done = await agent.run(Message("tool", [result]))

    assert done.text == "Sunny in Oslo."


# ------------------------------------------------------------------- sessions, checkpoints


def recording_agent(engine: str) -> tuple[Any, list[list[Message]]]:
    """A workflow agent whose start executor records the messages each call hands it."""
    e = api(engine)
    received: list[list[Message]] = []

    async def record(messages: Any, ctx: Any) -> None:
        received.append(list(messages))
        await ctx.yield_output(f"Heard {len(messages)}.")

    record.__annotations__ = {
        "messages": list[Message],
        "ctx": e.WorkflowContext[Any, str],
        "return": None,
    }
    workflow = e.WorkflowBuilder(start_executor=e.executor(id="record")(record)).build()
    return workflow.as_agent(), received


@pytest.mark.parametrize("engine", ENGINES)
async def test_a_session_hands_the_workflow_the_history_then_the_new_message(
    engine: str,
) -> None:
    agent, received = recording_agent(engine)
    session = agent.create_session()

    await agent.run("I am Alex.", session=session)
    await agent.run("Who am I?", session=session)

    assert texts(received[1]) == [
        ("user", "I am Alex."),
        ("assistant", "Heard 1."),
        ("user", "Who am I?"),
    ]
    history = session.state["in_memory"]["messages"]
    assert texts(history) == [*texts(received[1]), ("assistant", "Heard 3.")]


@pytest.mark.parametrize("engine", ENGINES)
async def test_calls_without_a_session_hand_the_workflow_only_their_messages(
    engine: str,
) -> None:
    agent, received = recording_agent(engine)

    await agent.run("First.")
    await agent.run("Second.")

    assert texts(received[1]) == [("user", "Second.")]


@pytest.mark.parametrize("engine", ENGINES)
async def test_an_agent_inside_keeps_its_own_session_from_call_to_call(engine: str) -> None:
    # As in MAF: the agent's executor holds one AgentSession for the workflow's lifetime, so
    # the agent remembers its turns even when the caller passes no session.
    bot = scripted("bot", ["One.", "Two."])
    agent = single_agent(engine, bot)

    await agent.run("First.")
    await agent.run("Second.")

    assert texts(calls(bot)[1]) == [
        ("user", "First."),
        ("assistant", "One."),
        ("user", "Second."),
    ]


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("stream", [False, True], ids=["whole", "streamed"])
async def test_a_paused_call_resumes_from_its_checkpoint_in_a_fresh_workflow_agent(
    engine: str, stream: bool, tmp_path: Path
) -> None:
    e = api(engine)
    storage = e.FileCheckpointStorage(tmp_path)
    first = scripted("janitor", [ToolCall("delete_file", {"path": "a.txt"})], tools=[delete_file])
    workflow = e.WorkflowBuilder(start_executor=first).build()
    asked = await workflow.as_agent().run("Delete a.txt.", checkpoint_storage=storage)
    [request] = [c for m in asked.messages for c in m.contents]
    checkpoint = await storage.get_latest(workflow_name=workflow.name)

    again = scripted("janitor", ["Deleted a.txt."], tools=[delete_file])
    fresh = e.WorkflowBuilder(start_executor=again).build().as_agent()
    done = await _answer(
        fresh,
        stream,
        Message("user", [request.to_function_approval_response(approved=True)]),
        checkpoint_id=checkpoint.checkpoint_id,
        checkpoint_storage=storage,
    )

    assert deleted == ["a.txt"]
    assert done.text.endswith("Deleted a.txt.")
    assert len(calls(again)) == 1


@pytest.mark.parametrize("engine", ENGINES)
async def test_a_restore_without_messages_only_brings_the_run_back(
    engine: str, tmp_path: Path
) -> None:
    e = api(engine)
    storage = e.InMemoryCheckpointStorage()
    first = scripted("janitor", [ToolCall("delete_file", {"path": "a.txt"})], tools=[delete_file])
    workflow = e.WorkflowBuilder(start_executor=first).build()
    asked = await workflow.as_agent().run("Delete a.txt.", checkpoint_storage=storage)
    [request] = [c for m in asked.messages for c in m.contents]
    checkpoint = await storage.get_latest(workflow_name=workflow.name)

    fresh = e.WorkflowBuilder(
        start_executor=scripted("janitor", ["Deleted."], tools=[delete_file])
    ).build()
    restored = await fresh.as_agent().run(
        checkpoint_id=checkpoint.checkpoint_id, checkpoint_storage=storage
    )
    assert restored.messages == []
    done = await fresh.as_agent().run(
        Message("user", [request.to_function_approval_response(approved=True)])
    )

    assert done.text == "Deleted."


@pytest.mark.parametrize("engine", ENGINES)
async def test_a_checkpoint_id_needs_a_checkpoint_storage(engine: str) -> None:
    agent = single_agent(engine, scripted("bot", []))

    with pytest.raises(AgentInvalidRequestException, match="checkpoint_storage must be provided"):
        await agent.run("Hi.", checkpoint_id="some-checkpoint")


# ----------------------------------------------------------------------- run arguments


seen_kwargs: list[dict[str, Any]] = []


@tool(approval_mode="never_require")
def whoami(ctx: FunctionInvocationContext) -> str:
    """Say who is asking."""
    seen_kwargs.append({k: v for k, v in ctx.kwargs.items() if k != "session"})
    return "someone"


@pytest.mark.parametrize("engine", ENGINES)
async def test_the_agents_run_arguments_reach_the_tools_inside(engine: str) -> None:
    bot = scripted("bot", [ToolCall("whoami"), "You are bob."], tools=[whoami])

    response = await single_agent(engine, bot).run(
        "Who am I?", function_invocation_kwargs={"user": "bob"}
    )

    assert seen_kwargs == [{"user": "bob"}]
    assert response.text.endswith("You are bob.")


@pytest.mark.parametrize("engine", ENGINES)
async def test_the_agents_run_tools_are_offered_inside(engine: str) -> None:
    bot = scripted("bot", [ToolCall("whoami"), "You are someone."])

    response = await single_agent(engine, bot).run("Who am I?", tools=[whoami])

    assert seen_kwargs == [{}]
    assert response.text.endswith("You are someone.")


async def _answer(agent: Any, stream: bool, messages: Any, **kwargs: Any) -> AgentResponse:
    if not stream:
        response: AgentResponse = await agent.run(messages, **kwargs)
        return response
    updates = [update async for update in agent.run(messages, stream=True, **kwargs)]
    return AgentResponse.from_updates(updates)
