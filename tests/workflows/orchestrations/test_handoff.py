"""``HandoffBuilder`` on the engine behaves as MAF 1.23's.

Each scenario is built twice from one description, with MAF's own
``agent_framework.orchestrations`` and with ``workflows.orchestrations``, every agent on its own
``ScriptedChatClient``. Both runs must emit the same events (type, executor, payload content,
handoffs, requests), in order, and send every model the same conversation with the same tools,
streamed and not; requests are answered alike on both until the run ends. Then what needs a
checkpoint: a tool approval answered, and autonomous turns counted, after resuming in a freshly
built workflow, without the model being asked again for a finished turn.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any

import agent_framework
import agent_framework.orchestrations as maf_orchestrations
import pytest
from agent_framework import (
    Agent,
    AgentResponse,
    AgentResponseUpdate,
    Content,
    ContextProvider,
    Message,
    tool,
)
from agent_framework_orchestrations import _handoff as maf_handoff

import workflows
import workflows.orchestrations as our_orchestrations
from workflows.agents.local_chat import ScriptedChatClient, ScriptEntry, ToolCall
from workflows.exceptions import CheckpointDecodeError
from workflows.orchestrations import handoff as our_handoff


@dataclass(frozen=True)
class Engine:
    name: str
    core: ModuleType
    orchestrations: ModuleType


MAF = Engine("maf", agent_framework, maf_orchestrations)
OURS = Engine("ours", workflows, our_orchestrations)
ENGINES = [MAF, OURS]

# region What a run shows


def describe_data(data: Any) -> Any:
    if isinstance(data, AgentResponse):
        return ("AgentResponse", [_describe_message(m) for m in data.messages])
    if isinstance(data, AgentResponseUpdate):
        return ("AgentResponseUpdate", data.author_name, data.text, _types(data.contents))
    if isinstance(data, Content) and data.function_call is not None:
        return (data.type, data.function_call.name, data.function_call.arguments)
    agent_response = getattr(data, "agent_response", None)
    if isinstance(agent_response, AgentResponse):
        return (type(data).__name__, describe_data(agent_response))
    if type(data).__name__ == "HandoffSentEvent":
        return ("HandoffSentEvent", data.source, data.target)
    return type(data).__name__


def _describe_message(message: Message) -> tuple[Any, ...]:
    return (str(message.role), message.author_name, message.text, _types(message.contents))


def _types(contents: Sequence[Content]) -> list[str]:
    return [content.type for content in contents]


def describe(event: Any, *, statuses: bool) -> tuple[Any, ...] | None:
    """An event as both engines can agree on it (None: left out)."""
    if event.type == "status":
        return ("status", str(event.state)) if statuses else None
    if event.type == "request_info":
        return ("request_info", event.source_executor_id, describe_data(event.data))
    if event.type in ("output", "intermediate", "executor_invoked", "executor_completed"):
        data = describe_data(event.data) if event.type in ("output", "intermediate") else None
        return (event.type, event.executor_id, data)
    if event.type == "handoff_sent":
        return ("handoff_sent", event.executor_id, describe_data(event.data))
    return (event.type,)


def describe_calls(agent: Agent) -> list[tuple[Any, ...]]:
    """What the agent's model was given at each call: the messages and the tools offered."""
    client = agent.client
    assert isinstance(client, ScriptedChatClient)
    return [
        (
            [_describe_message(m) for m in messages],
            [getattr(t, "name", "") for t in options.get("tools") or ()],
        )
        for messages, options in zip(client.calls, client.options_seen, strict=True)
    ]


# endregion

# region Building and answering


def make_agent(name: str, script: Sequence[ScriptEntry], **kwargs: Any) -> Agent:
    return Agent(
        client=ScriptedChatClient(script, name=f"{name}-model"),
        name=name,
        require_per_service_call_history_persistence=True,
        **kwargs,
    )


Answer = Callable[[Any, Engine], Any]


def reply(text: str) -> Answer:
    return lambda request, engine: engine.orchestrations.HandoffAgentUserRequest.create_response(
        text
    )


def end(request: Any, engine: Engine) -> Any:
    return engine.orchestrations.HandoffAgentUserRequest.terminate()


def approve(request: Any, engine: Engine) -> Any:
    return request.data.to_function_approval_response(approved=True)


async def run(workflow: Any, *, stream: bool, **kwargs: Any) -> list[Any]:
    if stream:
        return [event async for event in workflow.run(stream=True, **kwargs)]
    return list(await workflow.run(**kwargs))


@dataclass
class Conversation:
    events: list[tuple[Any, ...]]
    calls: dict[str, list[tuple[Any, ...]]]


Scenario = Callable[[Engine], tuple[Any, list[Agent]]]


async def converse(
    engine: Engine,
    scenario: Scenario,
    first: str,
    answers: Sequence[Answer],
    *,
    stream: bool,
) -> Conversation:
    """Run ``scenario`` on ``engine``: the first message, then one answer per pause, answering
    every request of the pause alike; the run must end with the answers."""
    workflow, agents = scenario(engine)
    events = await run(workflow, stream=stream, message=first)
    seen = list(events)
    for answer in answers:
        pending = [e for e in events if e.type == "request_info"]
        assert pending, f"{engine.name}: the run ended before every answer was used"
        responses = {e.request_id: answer(e, engine) for e in pending}
        events = await run(workflow, stream=stream, responses=responses)
        seen.extend(events)
    assert not [e for e in events if e.type == "request_info"], "the run still waits"
    described = [describe(e, statuses=True) for e in seen]
    return Conversation(
        [d for d in described if d is not None], {a.name or "": describe_calls(a) for a in agents}
    )


async def same_on_both(
    scenario: Scenario, first: str, answers: Sequence[Answer], *, stream: bool
) -> Conversation:
    maf = await converse(MAF, scenario, first, answers, stream=stream)
    ours = await converse(OURS, scenario, first, answers, stream=stream)
    assert ours.events == maf.events
    assert ours.calls == maf.calls
    return ours


def welcome_ends(conversation: list[Message]) -> bool:
    return bool(conversation) and "welcome" in conversation[-1].text.lower()


def handoffs(conversation: Conversation) -> list[tuple[str, str]]:
    return [(e[2][1], e[2][2]) for e in conversation.events if e[0] == "handoff_sent"]


# endregion

# region Handoffs and user input


def chain(engine: Engine) -> tuple[Any, list[Agent]]:
    triage = make_agent("triage", [ToolCall("handoff_to_specialist")], description="Triage")
    specialist = make_agent("specialist", [ToolCall("handoff_to_escalation")])
    escalation = make_agent(
        "escalation",
        ["I can open a ticket for the laptop. Shall I?", "You're welcome, ticket 42 is open."],
        description="Escalates hard cases",
    )
    workflow = (
        engine.orchestrations.HandoffBuilder(
            participants=[triage, specialist, escalation], termination_condition=welcome_ends
        )
        .with_start_agent(triage)
        .build()
    )
    return workflow, [triage, specialist, escalation]


@pytest.mark.parametrize("stream", [False, True], ids=["run", "stream"])
async def test_a_chain_of_handoffs_asks_the_last_agent_s_user_as_maf_does(stream: bool) -> None:
    ours = await same_on_both(
        chain, "My laptop will not boot.", [reply("Yes please.")], stream=stream
    )

    assert handoffs(ours) == [("triage", "specialist"), ("specialist", "escalation")]
    requests = [e for e in ours.events if e[0] == "request_info"]
    assert [(e[1], e[2][0]) for e in requests] == [("escalation", "HandoffAgentUserRequest")]
    kinds = {e[2][0] for e in ours.events if e[0] == "output"}
    assert kinds == {"AgentResponseUpdate" if stream else "AgentResponse"}
    # Every agent is offered a handoff tool per other agent, named after it.
    tools = ours.calls["escalation"][0][1]
    assert tools == ["handoff_to_triage", "handoff_to_specialist"]
    # The user's reply reached the escalation agent, which asked.
    assert ours.calls["escalation"][1][0][-1][2] == "Yes please."


def billing_desk(engine: Engine) -> tuple[Any, list[Agent]]:
    triage = make_agent("triage", [ToolCall("handoff_to_billing"), ToolCall("handoff_to_billing")])
    billing = make_agent("billing", ["Which invoice is it?", "Invoice 7 is paid."])
    workflow = (
        engine.orchestrations.HandoffBuilder(participants=[triage, billing])
        .with_start_agent(triage)
        .enable_return_to_previous(False)
        .build()
    )
    return workflow, [triage, billing]


@pytest.mark.parametrize("stream", [False, True], ids=["run", "stream"])
async def test_without_return_to_previous_the_start_agent_takes_each_reply(stream: bool) -> None:
    answers = [reply("Invoice 7."), end]
    ours = await same_on_both(billing_desk, "A billing question.", answers, stream=stream)

    assert handoffs(ours) == [("triage", "billing"), ("triage", "billing")]
    assert len(ours.calls["triage"]) == 2


def greeter(engine: Engine) -> tuple[Any, list[Agent]]:
    greeter = make_agent("greeter", ["Hello! How can I help?"])
    other = make_agent("other", [])
    workflow = (
        engine.orchestrations.HandoffBuilder(participants=[greeter, other])
        .with_start_agent(greeter)
        .build()
    )
    return workflow, [greeter, other]


async def test_an_empty_reply_ends_the_conversation() -> None:
    ours = await same_on_both(greeter, "Hi", [end], stream=True)

    assert ours.events[-1] == ("status", "WorkflowRunState.IDLE")
    assert len(ours.calls["greeter"]) == 1 and ours.calls["other"] == []


def test_user_request_helpers_build_user_messages() -> None:
    request_type = our_orchestrations.HandoffAgentUserRequest
    one = request_type.create_response("yes")
    assert [(m.role, m.text) for m in one] == [("user", "yes")]
    mixed = request_type.create_response(["a", Message(role="assistant", contents=["b"])])
    assert [(m.role, m.text) for m in mixed] == [("user", "a"), ("assistant", "b")]
    message = Message(role="user", contents=["c"])
    assert request_type.create_response(message) == [message]
    assert request_type.terminate() == []
    with pytest.raises(TypeError, match="List items must be either str or Message"):
        request_type.create_response(["a", 3])  # type: ignore[list-item]
    with pytest.raises(TypeError, match="Response must be str, list of str, Message"):
        request_type.create_response(3)  # type: ignore[arg-type]


async def test_a_condition_met_by_an_answer_ends_the_run_without_a_request() -> None:
    async def two_messages(conversation: list[Message]) -> bool:
        return len(conversation) >= 2

    def scenario(engine: Engine) -> tuple[Any, list[Agent]]:
        first = make_agent("first", ["Done already."])
        second = make_agent("second", [])
        builder = engine.orchestrations.HandoffBuilder(participants=[first, second])
        workflow = builder.with_start_agent(first).with_termination_condition(two_messages)
        return workflow.build(), [first, second]

    ours = await same_on_both(scenario, "Do it.", [], stream=False)

    assert not [e for e in ours.events if e[0] == "request_info"]


def with_context_provider(engine: Engine) -> tuple[Any, list[Agent]]:
    class Notes(ContextProvider):
        async def before_run(self, **kwargs: Any) -> None:
            kwargs["context"].extend_instructions(self.source_id, "Be brief.")

    triage = make_agent("triage", [ToolCall("handoff_to_notes")], context_providers=[Notes("n")])
    notes = make_agent("notes", ["Noted."], context_providers=[Notes("n")])
    workflow = (
        engine.orchestrations.HandoffBuilder(participants=[triage, notes])
        .with_start_agent(triage)
        .build()
    )
    return workflow, [triage, notes]


async def test_agents_with_context_providers_still_hand_off() -> None:
    ours = await same_on_both(with_context_provider, "Write this down.", [end], stream=False)

    assert handoffs(ours) == [("triage", "notes")]


def with_intermediate_specialist(engine: Engine) -> tuple[Any, list[Agent]]:
    triage = make_agent("triage", [ToolCall("handoff_to_specialist")])
    specialist = make_agent("specialist", ["Fixed."])
    workflow = (
        engine.orchestrations.HandoffBuilder(
            participants=[triage, specialist], intermediate_output_from=[specialist]
        )
        .with_start_agent(triage)
        .build()
    )
    return workflow, [triage, specialist]


async def test_intermediate_output_from_makes_an_agent_s_answers_intermediate() -> None:
    ours = await same_on_both(with_intermediate_specialist, "Fix it.", [end], stream=True)

    shown = {(e[0], e[1]) for e in ours.events if e[0] in ("output", "intermediate")}
    assert shown == {("output", "triage"), ("intermediate", "specialist")}


# endregion

# region Autonomous mode


def researchers(turn_limit: int) -> Scenario:
    def scenario(engine: Engine) -> tuple[Any, list[Agent]]:
        lead = make_agent("lead", [ToolCall("handoff_to_worker")])
        worker = make_agent("worker", ["step 1", "step 2", "step 3", "done: step 4"])
        workflow = (
            engine.orchestrations.HandoffBuilder(
                participants=[lead, worker],
                termination_condition=lambda c: bool(c) and c[-1].text.startswith("done"),
            )
            .with_start_agent(lead)
            .with_autonomous_mode(
                agents=[worker],
                prompts={"worker": "Keep going."},
                turn_limits={"worker": turn_limit},
            )
            .build()
        )
        return workflow, [lead, worker]

    return scenario


@pytest.mark.parametrize("stream", [False, True], ids=["run", "stream"])
async def test_autonomous_mode_goes_on_until_the_turn_limit_then_asks(stream: bool) -> None:
    ours = await same_on_both(researchers(2), "Research.", [reply("Finish.")], stream=stream)

    worker_calls = ours.calls["worker"]
    # Two turns on its own (each prompted), then the user, then it finishes.
    assert [call[0][-1][2] for call in worker_calls] == [
        "Research.",
        "Keep going.",
        "Keep going.",
        "Finish.",
    ]
    requests = [e for e in ours.events if e[0] == "request_info"]
    assert len(requests) == 1 and requests[0][2][1][1][0][2] == "step 3"


async def test_a_turn_limit_of_zero_asks_the_user_at_once() -> None:
    answers = [reply("Go on."), reply("More."), reply("Last.")]
    ours = await same_on_both(researchers(0), "Research.", answers, stream=False)

    assert len([e for e in ours.events if e[0] == "request_info"]) == 3


# endregion

# region Checkpoints: approvals and autonomous turns after a resume

submitted: list[str] = []


@tool(approval_mode="always_require")
def submit_refund(order_id: str) -> str:
    """Record a refund for manual review."""
    submitted.append(order_id)
    return f"refund recorded for order {order_id}"


def refund_desk(
    engine: Engine, storage: Any, triage_script: list[Any], refund_script: list[Any]
) -> tuple[Any, list[Agent]]:
    triage = make_agent("triage", triage_script)
    refund = make_agent("refund", refund_script, tools=[submit_refund])
    workflow = (
        engine.orchestrations.HandoffBuilder(
            name="refund_desk",
            participants=[triage, refund],
            checkpoint_storage=storage,
            termination_condition=welcome_ends,
        )
        .with_start_agent(triage)
        .build()
    )
    return workflow, [triage, refund]


def file_storage(engine: Engine, path: Path) -> Any:
    # MAF 1.23 refuses to restore a pending HandoffAgentUserRequest's list[Message] response
    # type unless the storage allows it; ours stores annotations natively and accepts the name.
    return engine.core.FileCheckpointStorage(
        path / engine.name, allowed_checkpoint_types=["types:GenericAlias"]
    )


async def resume(
    engine: Engine, storage: Any, workflow: Any, answer: Answer, pending: list[Any]
) -> list[Any]:
    latest = await storage.get_latest(workflow_name=workflow.name)
    responses = {e.request_id: answer(e, engine) for e in pending}
    return await run(workflow, stream=True, checkpoint_id=latest.checkpoint_id, responses=responses)


async def approve_after_restarts(engine: Engine, path: Path) -> tuple[list[Any], list[int]]:
    """A refund approved, then the user's thanks, each in a freshly built workflow; returns the
    events and how many model calls each fresh workflow's agents made."""
    submitted.clear()
    storage = file_storage(engine, path)
    first_script = [ToolCall("handoff_to_refund")]
    refund_script = [ToolCall("submit_refund", {"order_id": "12345"}, call_id="call-refund")]
    workflow, _ = refund_desk(engine, storage, first_script, refund_script)
    events = await run(workflow, stream=True, message="Refund order 12345, please.")
    seen = list(events)
    calls: list[int] = []
    later = [["Your refund for order 12345 is recorded."], ["You're welcome!"]]
    for answer, script in zip([approve, reply("Thanks.")], later, strict=True):
        pending = [e for e in events if e.type == "request_info"]
        workflow, agents = refund_desk(engine, storage, [], script)
        events = await resume(engine, storage, workflow, answer, pending)
        seen.extend(events)
        calls.append(sum(len(describe_calls(agent)) for agent in agents))
        assert [len(describe_calls(a)) for a in agents] == [0, 1]
    assert not [e for e in events if e.type == "request_info"]
    return seen, calls


async def test_a_tool_approval_is_answered_in_a_fresh_workflow_without_asking_again(
    tmp_path: Path,
) -> None:
    maf_events, maf_calls = await approve_after_restarts(MAF, tmp_path)
    events, calls = await approve_after_restarts(OURS, tmp_path)

    # MAF announces pending requests as a checkpoint is restored, the engine with the next
    # request: statuses aside, the runs agree.
    def described(seen: list[Any]) -> list[Any]:
        return [d for e in seen if (d := describe(e, statuses=False)) is not None]

    assert described(events) == described(maf_events)
    # Each resumed workflow asked the model once (the refund agent's next turn), nothing done
    # before it again, and the approved tool ran once.
    assert calls == maf_calls == [1, 1]
    assert submitted == ["12345"]
    requests = [describe_data(e.data) for e in events if e.type == "request_info"]
    assert requests[0] == ("function_approval_request", "submit_refund", {"order_id": "12345"})
    assert requests[1][0] == "HandoffAgentUserRequest"


def autonomous_with_approval(
    engine: Engine, storage: Any, worker_script: list[Any]
) -> tuple[Any, list[Agent]]:
    lead = make_agent("lead", [ToolCall("handoff_to_worker")])
    worker = make_agent("worker", worker_script, tools=[submit_refund])
    workflow = (
        engine.orchestrations.HandoffBuilder(
            name="autonomous_desk", participants=[lead, worker], checkpoint_storage=storage
        )
        .with_start_agent(lead)
        .with_autonomous_mode(agents=["worker"], turn_limits={"worker": 2})
        .build()
    )
    return workflow, [lead, worker]


async def autonomous_turns_across_a_restart(
    engine: Engine, path: Path
) -> tuple[Any, Agent, list[Any]]:
    storage = file_storage(engine, path)
    first = ["Looking into it.", ToolCall("submit_refund", {"order_id": "9"}, call_id="c9")]
    workflow, _ = autonomous_with_approval(engine, storage, first)
    events = await run(workflow, stream=False, message="Refund order 9.")
    pending = [e for e in events if e.type == "request_info"]
    latest = await storage.get_latest(workflow_name=workflow.name)
    workflow, agents = autonomous_with_approval(engine, storage, ["Refunded.", "All done."])
    events = await resume(engine, storage, workflow, approve, pending)
    return latest, agents[1], [e for e in events if e.type == "request_info"]


async def test_autonomous_turns_taken_before_a_pause_count_after_a_resume(tmp_path: Path) -> None:
    maf_checkpoint, maf_worker, maf_requests = await autonomous_turns_across_a_restart(
        MAF, tmp_path
    )
    checkpoint, worker, requests = await autonomous_turns_across_a_restart(OURS, tmp_path)

    # One turn on its own was taken when the approval paused the run...
    assert checkpoint.executor_states["worker"]["_autonomous_mode_turns"] == 1
    assert maf_checkpoint.state["_executor_state"]["worker"]["_autonomous_mode_turns"] == 1
    # ...so after the resume the limit of two allows one more before the user is asked.
    assert describe_calls(worker) == describe_calls(maf_worker)
    assert [call[0][-1][2] for call in describe_calls(worker)] == [
        "",
        "User did not respond. Continue assisting autonomously.",
    ]
    assert [describe_data(e.data) for e in requests] == [
        describe_data(e.data) for e in maf_requests
    ]
    assert describe_data(requests[0].data)[1][1][0][2] == "All done."


async def test_a_checkpoint_with_a_bad_turn_count_is_refused() -> None:
    lead, worker = make_agent("lead", []), make_agent("worker", [])
    executor = our_orchestrations.HandoffAgentExecutor(
        worker, [our_orchestrations.HandoffConfiguration(target=lead)]
    )
    state = await executor.on_checkpoint_save()
    assert state["_autonomous_mode_turns"] == 0
    with pytest.raises(CheckpointDecodeError, match="_autonomous_mode_turns"):
        await executor.on_checkpoint_restore({**state, "_autonomous_mode_turns": "3"})


# endregion

# region The agents the workflow runs


def test_each_agent_runs_as_a_copy_with_its_handoff_tools() -> None:
    def executors(engine: Engine) -> tuple[Agent, dict[str, Any]]:
        triage = make_agent("triage", [], tools=[submit_refund])
        billing = make_agent("billing", [], description="Billing questions")
        support = make_agent("support", [])
        workflow = (
            engine.orchestrations.HandoffBuilder(participants=[triage, billing, support])
            .add_handoff(triage, [billing, support])
            .add_handoff(billing, [triage], description="Back to triage")
            .with_start_agent(triage)
            .build()
        )
        return triage, {e.id: e for e in workflow.get_executors_list()}

    def tools_of(executor: Any) -> list[tuple[str, str]]:
        tools = executor.agent.default_options["tools"]
        return [(t.name, t.description) for t in tools]

    _, maf_executors = executors(MAF)
    triage, ours = executors(OURS)
    # MAF keeps a source's routes in a set, so its tool order varies between processes; ours
    # keeps the order they were declared in.
    for executor_id in ("triage", "billing", "support"):
        assert sorted(tools_of(ours[executor_id])) == sorted(tools_of(maf_executors[executor_id]))
    assert tools_of(ours["triage"]) == [
        ("submit_refund", "Record a refund for manual review."),
        ("handoff_to_billing", "Billing questions"),
        ("handoff_to_support", "Handoff to the support agent."),
    ]
    assert tools_of(ours["billing"]) == [("handoff_to_triage", "Back to triage")]
    assert ours["triage"].agent is not triage
    assert [t.name for t in triage.default_options["tools"]] == ["submit_refund"]
    assert ours["triage"].agent.default_options["allow_multiple_tool_calls"] is False
    assert isinstance(ours["triage"], our_orchestrations.HandoffAgentExecutor)


@pytest.mark.parametrize("target", ["billing", "my agent.v2", "x" * 80])
def test_handoff_tool_names_are_those_maf_gives(target: str) -> None:
    assert our_handoff.get_handoff_tool_name(target) == maf_handoff.get_handoff_tool_name(target)


def test_handoff_configurations_are_equal_by_target() -> None:
    config = our_orchestrations.HandoffConfiguration
    billing = make_agent("billing", [])
    assert config(target=billing) == config(target="billing", description="other")
    assert len({config(target="a"), config(target="a", description="d")}) == 1
    assert config(target="a").target_id == "a"


def test_declaring_a_route_twice_warns_and_keeps_the_last(caplog: pytest.LogCaptureFixture) -> None:
    triage, billing = make_agent("triage", []), make_agent("billing", [])
    builder = our_orchestrations.HandoffBuilder(participants=[triage, billing])
    with caplog.at_level(logging.WARNING):
        builder.add_handoff(triage, [billing], description="first")
        builder.add_handoff(triage, [billing], description="second")
        workflow = builder.with_start_agent(triage).build()
    assert "Handoff from 'triage' to 'billing' is already configured; overwriting." in caplog.text
    assert "No handoff configuration found for agent 'billing'" in caplog.text
    triage_executor = workflow.executors["triage"]
    assert [t.description for t in triage_executor.agent.default_options["tools"]] == ["second"]


# endregion

# region Builder errors


def _agents() -> dict[str, Agent]:
    return {name: make_agent(name, []) for name in ("triage", "billing")}


def _no_persistence_flag() -> Agent:
    return Agent(client=ScriptedChatClient([]), name="loose")


def _with_conflicting_tool() -> Agent:
    @tool(name="handoff_to_billing")
    def clash() -> str:
        """Already named like a handoff tool."""
        return ""

    return make_agent("triage", [], tools=[clash])


BAD_BUILDS: dict[str, Callable[[Any, dict[str, Agent]], Any]] = {
    "no participants": lambda h, a: h.HandoffBuilder().build(),
    "no start agent": lambda h, a: h.HandoffBuilder(participants=list(a.values())).build(),
    "participants twice": lambda h, a: h.HandoffBuilder(participants=[a["triage"]]).participants(
        [a["billing"]]
    ),
    "empty participants": lambda h, a: h.HandoffBuilder().participants([]),
    "not an Agent": lambda h, a: h.HandoffBuilder(participants=[object()]),
    "duplicate names": lambda h, a: h.HandoffBuilder(
        participants=[a["triage"], make_agent("triage", [])]
    ),
    "add_handoff first": lambda h, a: h.HandoffBuilder().add_handoff(a["triage"], [a["billing"]]),
    "unknown source": lambda h, a: h.HandoffBuilder(participants=[a["triage"]]).add_handoff(
        "nobody", ["triage"]
    ),
    "unknown target": lambda h, a: h.HandoffBuilder(participants=[a["triage"]]).add_handoff(
        "triage", ["nobody"]
    ),
    "start before participants": lambda h, a: h.HandoffBuilder().with_start_agent(a["triage"]),
    "unknown start": lambda h, a: h.HandoffBuilder(participants=[a["triage"]]).with_start_agent(
        "nobody"
    ),
    "start of a bad kind": lambda h, a: h.HandoffBuilder(
        participants=[a["triage"]]
    ).with_start_agent(3),
    "missing persistence flag": lambda h, a: (
        h.HandoffBuilder(participants=[a["triage"], _no_persistence_flag()])
        .with_start_agent(a["triage"])
        .build()
    ),
    "tool name conflict": lambda h, a: (
        h.HandoffBuilder(participants=[_with_conflicting_tool(), a["billing"]])
        .with_start_agent("triage")
        .build()
    ),
    "output_from all_other": lambda h, a: h.HandoffBuilder(output_from="all_other"),
    "output_from bad literal": lambda h, a: h.HandoffBuilder(output_from="every"),
    "intermediate bad literal": lambda h, a: h.HandoffBuilder(intermediate_output_from="every"),
    "unknown output participant": lambda h, a: (
        h.HandoffBuilder(participants=list(a.values()), output_from=["nobody"])
        .with_start_agent("triage")
        .build()
    ),
    "output and intermediate": lambda h, a: (
        h.HandoffBuilder(
            participants=list(a.values()),
            output_from=["triage"],
            intermediate_output_from=["triage"],
        )
        .with_start_agent("triage")
        .build()
    ),
    "both designations empty": lambda h, a: (
        h.HandoffBuilder(participants=list(a.values()), output_from=[], intermediate_output_from=[])
        .with_start_agent("triage")
        .build()
    ),
}


@pytest.mark.parametrize("case", list(BAD_BUILDS))
def test_bad_builder_input_raises_maf_s_error(case: str) -> None:
    build = BAD_BUILDS[case]
    with pytest.raises(Exception) as maf_error:
        build(maf_orchestrations, _agents())
    with pytest.raises(type(maf_error.value)) as our_error:
        build(our_orchestrations, _agents())
    assert str(our_error.value) == str(maf_error.value)


# endregion
