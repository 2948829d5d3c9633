"""``SequentialBuilder`` on the engine behaves as MAF 1.23's.

Each scenario is built twice from the same description, once with MAF's own
``agent_framework.orchestrations`` and once with ``workflows.orchestrations``, each agent on its
own ``ScriptedChatClient``; both runs must build the same graph, emit the same events (type,
executor, data type and output text, in order), and send every model the same conversation,
streamed and not. Requests are answered the same way on both until the run finishes. The rest
is what only our engine is asked: resuming from a checkpoint in a fresh process-like setting.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Never

import agent_framework as maf
import agent_framework.orchestrations as maf_orchestrations
import pytest
from agent_framework import Agent, AgentResponse, Content, Message, tool

import workflows
import workflows.orchestrations as our_orchestrations
from workflows import FileCheckpointStorage
from workflows.agents.local_chat import ScriptedChatClient, ToolCall
from workflows.orchestrations import AgentRequestInfoResponse, SequentialBuilder

# region Running one scenario on both engines


@dataclass
class Engine:
    """What a scenario needs from one engine."""

    name: str
    orchestrations: Any
    core: Any

    @property
    def response_type(self) -> Any:
        return self.orchestrations.AgentRequestInfoResponse


MAF = Engine("maf", maf_orchestrations, maf)
OURS = Engine("ours", our_orchestrations, workflows)


@dataclass
class Scenario:
    """Agents by name with their scripts, and how the builder is made from them."""

    scripts: dict[str, list[Any]]
    build: Callable[[Engine, dict[str, Agent]], Any]
    tools: dict[str, list[Any]] = field(default_factory=dict)
    # Answers to review requests, in order: guidance text, or None to approve.
    reviews: list[str | None] = field(default_factory=list)


@dataclass
class Run:
    events: list[str]
    outputs: list[Any]
    calls: dict[str, list[list[str]]]
    topology: dict[str, Any]


def label(event: Any) -> str:
    """An event as the comparison sees it: type, executor, data type and output text."""
    text = event.type
    if event.type in ("output", "intermediate", "request_info", "executor_invoked"):
        who = getattr(event, "executor_id", None) or getattr(event, "source_executor_id", "")
        text += f":{who}:{type(event.data).__name__}"
    if event.type in ("output", "intermediate") and hasattr(event.data, "text"):
        text += f":{event.data.text!r}"
    return text


def topology(workflow: Any) -> dict[str, Any]:
    data = workflow.to_dict()
    edges = sorted(
        (group["type"], tuple((e["source_id"], e["target_id"]) for e in group["edges"]))
        for group in data["edge_groups"]
        if group["type"] != "InternalEdgeGroup"
    )
    return {
        "name": data["name"],
        "start": data["start_executor_id"],
        "executors": {eid: e["type"] for eid, e in data["executors"].items()},
        "edges": edges,
        "outputs": sorted(data["output_executors"]),
        "intermediates": sorted(data["intermediate_executors"]),
    }


def make_agents(scenario: Scenario) -> tuple[dict[str, Agent], dict[str, ScriptedChatClient]]:
    clients = {n: ScriptedChatClient(s, name=f"{n}-model") for n, s in scenario.scripts.items()}
    agents = {
        n: Agent(client=clients[n], name=n, tools=scenario.tools.get(n)) for n in scenario.scripts
    }
    return agents, clients


def answer(engine: Engine, request: Any, reviews: list[str | None]) -> Any:
    if isinstance(request.data, Content):
        return request.data.to_function_approval_response(approved=True)
    guidance = reviews.pop(0)
    if guidance is None:
        return engine.response_type.approve()
    return engine.response_type.from_strings([guidance])


async def run_once(workflow: Any, stream: bool, **kwargs: Any) -> list[Any]:
    if stream:
        return [event async for event in workflow.run(stream=True, **kwargs)]
    return list(await workflow.run(**kwargs))


async def drive(
    engine: Engine, scenario: Scenario, *, stream: bool, prompt: Any = "Write a tagline."
) -> Run:
    agents, clients = make_agents(scenario)
    workflow = scenario.build(engine, agents)
    reviews = list(scenario.reviews)
    events = await run_once(workflow, stream, message=prompt)
    labels = [label(e) for e in events]
    outputs = [e.data for e in events if e.type == "output"]
    while requests := [e for e in events if e.type == "request_info"]:
        responses = {r.request_id: answer(engine, r, reviews) for r in requests}
        events = await run_once(workflow, stream, responses=responses)
        labels += ["--answered--", *(label(e) for e in events)]
        outputs += [e.data for e in events if e.type == "output"]
    assert not reviews, "a scripted review was never asked for"
    calls = {n: [[m.text for m in call] for call in c.calls] for n, c in clients.items()}
    return Run(labels, outputs, calls, topology(workflow))


async def assert_same_on_both(scenario: Scenario, *, stream: bool, **kwargs: Any) -> Run:
    theirs = await drive(MAF, scenario, stream=stream, **kwargs)
    ours = await drive(OURS, scenario, stream=stream, **kwargs)
    assert ours.topology == theirs.topology
    assert ours.events == theirs.events
    assert ours.calls == theirs.calls
    return ours


def texts(outputs: Sequence[Any]) -> list[str]:
    return [o.text for o in outputs]


# endregion

# region Graph and outputs


def _two(engine: Engine, agents: dict[str, Agent], **kwargs: Any) -> Any:
    return engine.orchestrations.SequentialBuilder(
        participants=[agents["writer"], agents["reviewer"]], **kwargs
    ).build()


WRITER_REVIEWER = {"writer": ["Ride more, pay less."], "reviewer": ["Punchy; keep it."]}


@pytest.mark.parametrize("stream", [False, True], ids=["run", "stream"])
async def test_agents_run_in_order_and_the_last_answer_is_the_output(stream: bool) -> None:
    run = await assert_same_on_both(Scenario(WRITER_REVIEWER, _two), stream=stream)

    assert run.topology["executors"] == {
        "input-conversation": "_InputToConversation",
        "writer": "AgentExecutor",
        "reviewer": "AgentExecutor",
    }
    assert run.topology["name"] == "Sequential"
    assert run.topology["outputs"] == ["reviewer"]
    # The reviewer read the whole conversation, the writer's answer included.
    assert run.calls["reviewer"] == [["Write a tagline.", "Ride more, pay less."]]
    if stream:
        assert "".join(texts(run.outputs)) == "Punchy; keep it."
    else:
        assert [type(o) for o in run.outputs] == [AgentResponse]
        assert texts(run.outputs) == ["Punchy; keep it."]


@pytest.mark.parametrize("stream", [False, True], ids=["run", "stream"])
@pytest.mark.parametrize(
    "designation",
    [
        {"output_from": "all"},
        {"intermediate_output_from": "all_other"},
        {"intermediate_output_from": "all"},
        {"output_from": ["writer"], "intermediate_output_from": ["reviewer"]},
        {"intermediate_output_from": ["writer"]},
        {"output_from": None},
    ],
    ids=str,
)
async def test_output_designations_show_the_participants_maf_shows(
    stream: bool, designation: dict[str, Any]
) -> None:
    def build(engine: Engine, agents: dict[str, Agent]) -> Any:
        return _two(engine, agents, **designation)

    await assert_same_on_both(Scenario(WRITER_REVIEWER, build), stream=stream)


async def test_designating_participants_by_agent_or_executor_is_the_same_as_by_name() -> None:
    def build(engine: Engine, agents: dict[str, Agent]) -> Any:
        return _two(engine, agents, intermediate_output_from=[agents["writer"]])

    run = await assert_same_on_both(Scenario(WRITER_REVIEWER, build), stream=False)

    assert run.topology["intermediates"] == ["writer"]
    assert run.topology["outputs"] == ["reviewer"]


@pytest.mark.parametrize("stream", [False, True], ids=["run", "stream"])
async def test_chaining_only_agent_responses_hides_earlier_turns(stream: bool) -> None:
    scripts = {"writer": ["Ride more."], "translator": ["Roulez plus."], "reviewer": ["Bien."]}

    def build(engine: Engine, agents: dict[str, Agent]) -> Any:
        return engine.orchestrations.SequentialBuilder(
            participants=list(agents.values()), chain_only_agent_responses=True
        ).build()

    run = await assert_same_on_both(Scenario(scripts, build), stream=stream)

    assert run.calls["translator"] == [["Ride more."]]
    assert run.calls["reviewer"] == [["Roulez plus."]]


async def test_a_trailing_user_turn_is_added_when_asked() -> None:
    def build(engine: Engine, agents: dict[str, Agent]) -> Any:
        return _two(engine, agents, ensure_trailing_user_turn=True)

    run = await assert_same_on_both(Scenario(WRITER_REVIEWER, build), stream=False)

    assert run.calls["reviewer"] == [
        ["Write a tagline.", "Ride more, pay less.", "please continue."]
    ]


@pytest.mark.parametrize(
    "prompt",
    ["Write a tagline.", Message("user", ["Write a tagline."]), ["Write a tagline.", "Short."]],
    ids=["str", "message", "list"],
)
async def test_every_input_form_starts_the_conversation(prompt: Any) -> None:
    run = await assert_same_on_both(Scenario(WRITER_REVIEWER, _two), stream=False, prompt=prompt)

    assert run.calls["writer"][0][0] == "Write a tagline."


class Summarizer(workflows.Executor):
    @workflows.handler
    async def summarize(
        self,
        response: workflows.AgentExecutorResponse,
        ctx: workflows.WorkflowContext[Never, AgentResponse],
    ) -> None:
        count = len(response.full_conversation)
        await ctx.yield_output(AgentResponse(messages=[Message("assistant", [f"{count} msgs"])]))


class Shouter(workflows.Executor):
    @workflows.handler
    async def shout(
        self, conversation: list[Message], ctx: workflows.WorkflowContext[list[Message]]
    ) -> None:
        await ctx.send_message([Message("user", [m.text.upper()]) for m in conversation])


def maf_custom_executors() -> tuple[type, type]:
    """The same two executors on MAF (same class names, so the graphs compare equal)."""

    class Shouter(maf.Executor):
        @maf.handler
        async def shout(
            self, conversation: list[Message], ctx: maf.WorkflowContext[list[Message]]
        ) -> None:
            await ctx.send_message([Message("user", [m.text.upper()]) for m in conversation])

    class Summarizer(maf.Executor):
        @maf.handler
        async def summarize(
            self,
            response: maf.AgentExecutorResponse,
            ctx: maf.WorkflowContext[Never, AgentResponse],
        ) -> None:
            count = len(response.full_conversation)
            reply = Message("assistant", [f"{count} msgs"])
            await ctx.yield_output(AgentResponse(messages=[reply]))

    return Shouter, Summarizer


@pytest.mark.parametrize("stream", [False, True], ids=["run", "stream"])
async def test_custom_executors_transform_and_terminate_the_chain(stream: bool) -> None:
    def build(engine: Engine, agents: dict[str, Agent]) -> Any:
        shouter_class, summarizer_class = (
            maf_custom_executors() if engine is MAF else (Shouter, Summarizer)
        )
        shouter, summarizer = shouter_class(id="shouter"), summarizer_class(id="summarizer")
        return engine.orchestrations.SequentialBuilder(
            participants=[shouter, agents["writer"], summarizer]
        ).build()

    run = await assert_same_on_both(Scenario({"writer": ["ok"]}, build), stream=stream)

    assert run.calls["writer"] == [["WRITE A TAGLINE."]]
    assert texts(run.outputs) == ["2 msgs"]
    assert run.topology["outputs"] == ["summarizer"]


async def test_a_sequential_workflow_answers_as_an_agent() -> None:
    answers = []
    for engine in (MAF, OURS):
        agents, _ = make_agents(Scenario(WRITER_REVIEWER, _two))
        response = await _two(engine, agents).as_agent().run("Write a tagline.")
        answers.append([(m.author_name, m.text) for m in response.messages])

    assert answers[1] == answers[0] == [("reviewer", "Punchy; keep it.")]


# endregion

# region Human in the loop


def _reviewed(engine: Engine, participants: dict[str, Agent], **kwargs: Any) -> Any:
    return (
        engine.orchestrations.SequentialBuilder(participants=list(participants.values()))
        .with_request_info(**kwargs)
        .build()
    )


@pytest.mark.parametrize("stream", [False, True], ids=["run", "stream"])
async def test_a_reviewed_agent_pauses_then_iterates_on_guidance_then_goes_on(
    stream: bool,
) -> None:
    scripts = {"drafter": ["Draft."], "editor": ["Edit 1.", "Edit 2."], "finalizer": ["Final."]}

    def build(engine: Engine, agents: dict[str, Agent]) -> Any:
        return _reviewed(engine, agents, agents=["editor"])

    run = await assert_same_on_both(
        Scenario(scripts, build, reviews=["Mention price.", None]), stream=stream
    )

    assert run.topology["executors"]["editor"] == "AgentApprovalExecutor"
    assert run.topology["executors"]["drafter"] == "AgentExecutor"
    assert [e for e in run.events if e.startswith("request_info")] == [
        "request_info:editor:AgentExecutorResponse"
    ] * 2
    assert run.calls["editor"] == [
        ["Write a tagline.", "Draft."],
        ["Write a tagline.", "Draft.", "Edit 1.", "Mention price."],
    ]
    # As in MAF, the editor's session remembers the whole exchange, but what it hands on is the
    # conversation of its last turn: the guidance and its new answer.
    assert run.calls["finalizer"] == [["Mention price.", "Edit 2."]]


@pytest.mark.parametrize("stream", [False, True], ids=["run", "stream"])
async def test_reviewing_every_agent_makes_the_approved_last_answer_the_output(
    stream: bool,
) -> None:
    def build(engine: Engine, agents: dict[str, Agent]) -> Any:
        return _reviewed(engine, agents)

    run = await assert_same_on_both(
        Scenario(WRITER_REVIEWER, build, reviews=[None, None]), stream=stream
    )

    assert [type(o) for o in run.outputs] == [AgentResponse]
    assert texts(run.outputs) == ["Punchy; keep it."]


@pytest.mark.parametrize(
    "designation", [{"output_from": "all"}, {"intermediate_output_from": "all_other"}], ids=str
)
async def test_reviewed_agents_can_be_designated_like_any_participant(
    designation: dict[str, Any],
) -> None:
    def build(engine: Engine, agents: dict[str, Agent]) -> Any:
        return (
            engine.orchestrations.SequentialBuilder(
                participants=list(agents.values()), **designation
            )
            .with_request_info()
            .build()
        )

    await assert_same_on_both(Scenario(WRITER_REVIEWER, build, reviews=[None, None]), stream=True)


@tool(approval_mode="always_require")
def publish(text: str) -> str:
    """Publish the tagline."""
    return f"published {text}"


@pytest.mark.parametrize("stream", [False, True], ids=["run", "stream"])
@pytest.mark.parametrize("reviewed", [False, True], ids=["plain", "reviewed"])
async def test_a_tool_approval_inside_a_participant_pauses_and_resumes(
    stream: bool, reviewed: bool
) -> None:
    scripts = {"writer": [ToolCall("publish", {"text": "Ride"}), "Published."], "reviewer": ["ok"]}

    def build(engine: Engine, agents: dict[str, Agent]) -> Any:
        builder = engine.orchestrations.SequentialBuilder(participants=list(agents.values()))
        return (builder.with_request_info(agents=["writer"]) if reviewed else builder).build()

    run = await assert_same_on_both(
        Scenario(scripts, build, tools={"writer": [publish]}, reviews=[None] if reviewed else []),
        stream=stream,
    )

    assert "request_info:writer:Content" in run.events
    assert run.calls["reviewer"][0][-1] == "Published."


# endregion

# region Checkpoints


async def test_a_paused_review_resumes_in_a_fresh_workflow_without_asking_done_turns_again(
    tmp_path: Path,
) -> None:
    def build(scripts: dict[str, list[Any]]) -> tuple[Any, dict[str, ScriptedChatClient]]:
        clients = {n: ScriptedChatClient(s, name=f"{n}-model") for n, s in scripts.items()}
        agents = [Agent(client=c, name=n) for n, c in clients.items()]
        workflow = (
            SequentialBuilder(
                participants=agents, checkpoint_storage=FileCheckpointStorage(tmp_path)
            )
            .with_request_info(agents=["editor"])
            .build()
        )
        return workflow, clients

    first, _ = build({"drafter": ["Draft."], "editor": ["Edit 1."], "finalizer": []})
    [request] = (await first.run("Write a tagline.")).get_request_info_events()
    assert request.data.agent_response.text == "Edit 1."
    paused = await FileCheckpointStorage(tmp_path).get_latest(workflow_name=first.name)
    assert paused is not None and paused.pending_request_info_events

    # A new process: new agents, new builder, only the turns still to come are scripted.
    fresh, clients = build({"drafter": [], "editor": ["Edit 2."], "finalizer": ["Final."]})
    guided = await fresh.run(
        checkpoint_id=paused.checkpoint_id,
        responses={request.request_id: AgentRequestInfoResponse.from_strings(["Shorter."])},
    )
    [again] = guided.get_request_info_events()
    assert again.data.agent_response.text == "Edit 2."
    done = await fresh.run(responses={again.request_id: AgentRequestInfoResponse.approve()})

    assert texts(done.get_outputs()) == ["Final."]
    assert [len(c.calls) for c in clients.values()] == [0, 1, 1]
    assert [m.text for m in clients["editor"].calls[0]] == [
        "Write a tagline.",
        "Draft.",
        "Edit 1.",
        "Shorter.",
    ]


async def test_a_paused_tool_approval_resumes_in_a_fresh_workflow(tmp_path: Path) -> None:
    def build(writer_script: list[Any], reviewer_script: list[Any]) -> tuple[Any, Any, Any]:
        writer_client = ScriptedChatClient(writer_script, name="w")
        reviewer_client = ScriptedChatClient(reviewer_script, name="r")
        workflow = SequentialBuilder(
            participants=[
                Agent(client=writer_client, name="writer", tools=[publish]),
                Agent(client=reviewer_client, name="reviewer"),
            ],
            checkpoint_storage=FileCheckpointStorage(tmp_path),
        ).build()
        return workflow, writer_client, reviewer_client

    first, _, _ = build([ToolCall("publish", {"text": "Ride"})], [])
    [request] = (await first.run("Write a tagline.")).get_request_info_events()
    paused = await FileCheckpointStorage(tmp_path).get_latest(workflow_name=first.name)
    assert paused is not None

    fresh, writer_client, reviewer_client = build(["Published."], ["Nice."])
    done = await fresh.run(
        checkpoint_id=paused.checkpoint_id,
        responses={request.request_id: request.data.to_function_approval_response(approved=True)},
    )

    assert texts(done.get_outputs()) == ["Nice."]
    assert (len(writer_client.calls), len(reviewer_client.calls)) == (1, 1)


# endregion

# region Bad input


def _maf_and_ours_raise(
    error: type[Exception], make: Callable[[Any, list[Any]], Any], participants: Callable[[], Any]
) -> None:
    """``make(orchestrations, participants)`` raises ``error`` on both engines."""
    for orchestrations in (maf_orchestrations, our_orchestrations):
        with pytest.raises(error):
            make(orchestrations, participants())


def _pair() -> list[Agent]:
    return [_one("writer"), _one("reviewer")]


def _one(name: str) -> Agent:
    return Agent(client=ScriptedChatClient(["x"]), name=name)


def test_no_participants_is_refused() -> None:
    _maf_and_ours_raise(ValueError, lambda o, p: o.SequentialBuilder(participants=p), list)


def test_the_same_agent_twice_is_refused() -> None:
    agent = _one("writer")
    _maf_and_ours_raise(
        ValueError, lambda o, p: o.SequentialBuilder(participants=p), lambda: [agent, agent]
    )


def test_two_executors_with_one_id_are_refused() -> None:
    with pytest.raises(ValueError, match="Duplicate executor participant"):
        SequentialBuilder(participants=[Shouter(id="s"), Shouter(id="s")])
    with pytest.raises(ValueError, match="Duplicate executor participant"):
        maf_shouter = maf_custom_executors()[0]
        maf_orchestrations.SequentialBuilder(
            participants=[maf_shouter(id="s"), maf_shouter(id="s")]
        )


def test_a_participant_that_is_no_agent_is_refused_when_built() -> None:
    for orchestrations in (maf_orchestrations, our_orchestrations):
        builder = orchestrations.SequentialBuilder(participants=[object()])
        with pytest.raises(TypeError, match="SupportsAgentRun or Executor"):
            builder.build()


@pytest.mark.parametrize(
    "kwargs",
    [
        {"output_from": "all_other"},
        {"output_from": "everyone"},
        {"intermediate_output_from": "others"},
    ],
    ids=str,
)
def test_unknown_output_literals_are_refused_at_once(kwargs: dict[str, Any]) -> None:
    _maf_and_ours_raise(
        ValueError, lambda o, p: o.SequentialBuilder(participants=p, **kwargs), _pair
    )


@pytest.mark.parametrize(
    "kwargs",
    [
        {"output_from": ["ghost"]},
        {"output_from": [], "intermediate_output_from": []},
        {"output_from": ["writer"], "intermediate_output_from": ["writer"]},
        {"intermediate_output_from": ["reviewer", "reviewer"]},
    ],
    ids=str,
)
def test_bad_output_designations_are_refused_when_built(kwargs: dict[str, Any]) -> None:
    _maf_and_ours_raise(
        ValueError, lambda o, p: o.SequentialBuilder(participants=p, **kwargs).build(), _pair
    )


def test_reviewing_an_unknown_agent_is_refused_when_built() -> None:
    _maf_and_ours_raise(
        ValueError,
        lambda o, p: (
            o.SequentialBuilder(participants=p).with_request_info(agents=["ghost"]).build()
        ),
        _pair,
    )
    with pytest.raises(ValueError, match="'ghost'"):
        SequentialBuilder(participants=_pair()).with_request_info(agents=["ghost"]).build()


def test_reviewing_something_that_is_no_agent_is_refused_at_once() -> None:
    _maf_and_ours_raise(
        TypeError,
        lambda o, p: o.SequentialBuilder(participants=p).with_request_info(agents=[3]),
        _pair,
    )


def test_a_custom_executor_that_takes_nothing_offered_is_refused_when_built() -> None:
    class TakesNumbers(workflows.Executor):
        @workflows.handler
        async def take(self, number: int, ctx: workflows.WorkflowContext) -> None:
            del number, ctx

    with pytest.raises(workflows.TypeCompatibilityError):
        SequentialBuilder(participants=[TakesNumbers(id="numbers")]).build()


# endregion
