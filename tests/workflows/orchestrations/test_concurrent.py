"""``ConcurrentBuilder`` on the engine behaves as MAF 1.23's.

Each scenario is built twice from the same description, once with MAF's own
``agent_framework.orchestrations`` and once with ``workflows.orchestrations``, each agent on its
own ``ScriptedChatClient``; both runs must build the same graph, emit the same events (type,
executor, data type and output text, in order, concurrent participants interleaved alike), and
send every model the same conversation, streamed and not. Requests are answered the same way on
both until the run finishes. Then what only our engine is asked: resuming from a checkpoint in
a freshly built workflow.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Never

import agent_framework as maf
import agent_framework.orchestrations as maf_orchestrations
import pytest
from agent_framework import Agent, AgentResponse, Content, Message, tool

import workflows
import workflows.orchestrations as our_orchestrations
from workflows import AgentExecutorRequest, AgentExecutorResponse, FileCheckpointStorage
from workflows.agents.local_chat import ScriptedChatClient, ToolCall
from workflows.orchestrations import AgentRequestInfoResponse, ConcurrentBuilder

# region Running one scenario on both engines


@dataclass
class Engine:
    name: str
    orchestrations: Any
    core: Any


MAF = Engine("maf", maf_orchestrations, maf)
OURS = Engine("ours", our_orchestrations, workflows)


@dataclass
class Scenario:
    """Agents by name with their scripts, and how the builder is made from them."""

    scripts: dict[str, list[Any]]
    build: Callable[[Engine, dict[str, Agent]], Any]
    tools: dict[str, list[Any]] = field(default_factory=dict)
    # Answers to review requests, in the order they are raised: guidance, or None to approve.
    reviews: list[str | None] = field(default_factory=list)


@dataclass
class Run:
    events: list[str]
    outputs: list[Any]
    calls: dict[str, list[list[str]]]
    topology: dict[str, Any]


def label(event: Any) -> str:
    text = event.type
    if event.type in ("output", "intermediate", "request_info", "executor_invoked"):
        who = getattr(event, "executor_id", None) or getattr(event, "source_executor_id", "")
        text += f":{who}:{type(event.data).__name__}"
    if event.type in ("output", "intermediate"):
        shown = event.data.text if hasattr(event.data, "text") else event.data
        text += f":{shown!r}"
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
    response_type = engine.orchestrations.AgentRequestInfoResponse
    return response_type.approve() if guidance is None else response_type.from_strings([guidance])


async def run_once(workflow: Any, stream: bool, **kwargs: Any) -> list[Any]:
    if stream:
        return [event async for event in workflow.run(stream=True, **kwargs)]
    return list(await workflow.run(**kwargs))


async def drive(engine: Engine, scenario: Scenario, *, stream: bool, prompt: Any) -> Run:
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


async def assert_same_on_both(
    scenario: Scenario, *, stream: bool, prompt: Any = "Launch an eBike."
) -> Run:
    theirs = await drive(MAF, scenario, stream=stream, prompt=prompt)
    ours = await drive(OURS, scenario, stream=stream, prompt=prompt)
    assert ours.topology == theirs.topology
    assert ours.events == theirs.events
    assert ours.calls == theirs.calls
    return ours


THREE = {"researcher": ["Research."], "marketer": ["Slogan."], "legal": ["Disclaimer."]}


def _plain(engine: Engine, agents: dict[str, Agent], **kwargs: Any) -> Any:
    return engine.orchestrations.ConcurrentBuilder(
        participants=list(agents.values()), **kwargs
    ).build()


# endregion

# region Graph and outputs


@pytest.mark.parametrize("stream", [False, True], ids=["run", "stream"])
async def test_every_agent_answers_the_prompt_and_the_aggregator_combines_them(
    stream: bool,
) -> None:
    run = await assert_same_on_both(Scenario(THREE, _plain), stream=stream)

    assert run.topology["executors"] == {
        "dispatcher": "_DispatchToAllParticipants",
        "researcher": "AgentExecutor",
        "marketer": "AgentExecutor",
        "legal": "AgentExecutor",
        "aggregator": "_AggregateAgentConversations",
    }
    assert run.topology["name"] == "Concurrent"
    assert run.topology["outputs"] == ["aggregator"]
    assert all(calls == [["Launch an eBike."]] for calls in run.calls.values())
    [output] = run.outputs
    assert isinstance(output, AgentResponse)
    assert [(m.author_name, m.text) for m in output.messages] == [
        ("researcher", "Research."),
        ("marketer", "Slogan."),
        ("legal", "Disclaimer."),
    ]


@pytest.mark.parametrize("stream", [False, True], ids=["run", "stream"])
@pytest.mark.parametrize(
    "designation",
    [
        {"output_from": "all"},
        {"intermediate_output_from": "all"},
        {"intermediate_output_from": "all_other"},
        {"output_from": ["marketer"], "intermediate_output_from": ["legal"]},
        {"output_from": None},
    ],
    ids=str,
)
async def test_output_designations_show_the_participants_maf_shows(
    stream: bool, designation: dict[str, Any]
) -> None:
    def build(engine: Engine, agents: dict[str, Agent]) -> Any:
        return _plain(engine, agents, **designation)

    await assert_same_on_both(Scenario(THREE, build), stream=stream)


@pytest.mark.parametrize(
    "prompt",
    [
        "Launch an eBike.",
        Message("user", ["Launch an eBike."]),
        ["Launch an eBike.", "Be brief."],
        "request",
    ],
    ids=["str", "message", "list", "request"],
)
async def test_every_input_form_reaches_every_participant(prompt: Any) -> None:
    if prompt == "request":  # each engine's own request type
        runs = [
            await drive(
                engine,
                Scenario(THREE, _plain),
                stream=False,
                prompt=request_type(messages=[Message("user", ["Launch an eBike."])]),
            )
            for engine, request_type in (
                (MAF, maf.AgentExecutorRequest),
                (OURS, AgentExecutorRequest),
            )
        ]
        assert runs[1].events == runs[0].events
        assert runs[1].calls["legal"] == [["Launch an eBike."]]
        return
    run = await assert_same_on_both(Scenario(THREE, _plain), stream=False, prompt=prompt)

    assert run.calls["legal"][0][0] == "Launch an eBike."


def _join(results: list[Any]) -> str:
    return " | ".join(r.agent_response.text for r in results)


async def _join_async(results: list[Any]) -> str:
    return _join(results)


async def _yield_itself(results: list[Any], ctx: Any) -> None:
    await ctx.yield_output(f"{len(results)} answers")


class _AsyncCallable:
    async def __call__(self, results: list[Any]) -> str:
        return _join(results)


@pytest.mark.parametrize("stream", [False, True], ids=["run", "stream"])
@pytest.mark.parametrize(
    ("callback", "expected"),
    [
        (_join, "Research. | Slogan. | Disclaimer."),
        (_join_async, "Research. | Slogan. | Disclaimer."),
        (_yield_itself, "3 answers"),
        (lambda results: len(results), 3),
        (_AsyncCallable(), "Research. | Slogan. | Disclaimer."),
    ],
    ids=["sync", "async", "with-ctx", "lambda", "async-callable"],
)
async def test_a_callback_aggregator_output_is_what_it_returns_or_yields(
    stream: bool, callback: Any, expected: Any
) -> None:
    def build(engine: Engine, agents: dict[str, Agent]) -> Any:
        builder = engine.orchestrations.ConcurrentBuilder(participants=list(agents.values()))
        return builder.with_aggregator(callback).build()

    run = await assert_same_on_both(Scenario(THREE, build), stream=stream)

    assert run.outputs == [expected]


async def test_an_unnamed_callback_aggregator_gets_mafs_id() -> None:
    def build(engine: Engine, agents: dict[str, Agent]) -> Any:
        builder = engine.orchestrations.ConcurrentBuilder(participants=list(agents.values()))
        return builder.with_aggregator(lambda results: None).build()

    run = await assert_same_on_both(Scenario(THREE, build), stream=False)

    assert "_CallbackAggregator_unnamed" in run.topology["executors"]
    assert run.outputs == []


class Counter(workflows.Executor):
    """An aggregator executor: yields how many answers came in."""

    @workflows.handler
    async def count(
        self, results: list[AgentExecutorResponse], ctx: workflows.WorkflowContext[Never, str]
    ) -> None:
        await ctx.yield_output(f"{len(results)} answers")


class Echo(workflows.Executor):
    """A participant that is no agent: answers "echo" as an agent executor would."""

    @workflows.handler
    async def echo(
        self,
        request: AgentExecutorRequest,
        ctx: workflows.WorkflowContext[AgentExecutorResponse],
    ) -> None:
        reply = Message("assistant", ["echo"], author_name=self.id)
        conversation = [*request.messages, reply]
        await ctx.send_message(
            AgentExecutorResponse(self.id, AgentResponse(messages=[reply]), conversation)
        )


def custom_executors(engine: Engine) -> tuple[type, type]:
    """``Counter`` and ``Echo`` on ``engine`` (on MAF, classes of the same names, so the graphs
    compare equal)."""
    if engine is OURS:
        return Counter, Echo

    class MafCounter(maf.Executor):
        @maf.handler
        async def count(
            self, results: list[maf.AgentExecutorResponse], ctx: maf.WorkflowContext[Never, str]
        ) -> None:
            await ctx.yield_output(f"{len(results)} answers")

    class MafEcho(maf.Executor):
        @maf.handler
        async def echo(
            self,
            request: maf.AgentExecutorRequest,
            ctx: maf.WorkflowContext[maf.AgentExecutorResponse],
        ) -> None:
            reply = Message("assistant", ["echo"], author_name=self.id)
            conversation = [*request.messages, reply]
            await ctx.send_message(
                maf.AgentExecutorResponse(self.id, AgentResponse(messages=[reply]), conversation)
            )

    MafCounter.__name__ = "Counter"
    MafEcho.__name__ = "Echo"
    return MafCounter, MafEcho


@pytest.mark.parametrize("stream", [False, True], ids=["run", "stream"])
async def test_custom_executors_can_be_participants_and_the_aggregator(stream: bool) -> None:
    def build(engine: Engine, agents: dict[str, Agent]) -> Any:
        counter, echo = custom_executors(engine)
        return (
            engine.orchestrations.ConcurrentBuilder(
                participants=[agents["marketer"], echo(id="echo")]
            )
            .with_aggregator(counter(id="counter"))
            .build()
        )

    run = await assert_same_on_both(Scenario({"marketer": ["Slogan."]}, build), stream=stream)

    assert run.outputs == ["2 answers"]
    assert run.topology["executors"]["echo"] == "Echo"


async def test_the_default_aggregator_falls_back_to_the_conversation() -> None:
    def build(engine: Engine, agents: dict[str, Agent]) -> Any:
        _, echo = custom_executors(engine)
        return engine.orchestrations.ConcurrentBuilder(
            participants=[agents["marketer"], echo(id="echo")]
        ).build()

    run = await assert_same_on_both(Scenario({"marketer": ["Slogan."]}, build), stream=False)

    assert [m.text for m in run.outputs[0].messages] == ["Slogan.", "echo"]


async def test_a_concurrent_workflow_answers_as_an_agent() -> None:
    answers = []
    for engine in (MAF, OURS):
        agents, _ = make_agents(Scenario(THREE, _plain))
        response = await _plain(engine, agents).as_agent().run("Launch an eBike.")
        answers.append([(m.author_name, m.text) for m in response.messages])

    assert answers[1] == answers[0]
    assert [text for _, text in answers[1]] == ["Research.", "Slogan.", "Disclaimer."]


# endregion

# region Human in the loop


def _reviewed(engine: Engine, participants: dict[str, Agent], **kwargs: Any) -> Any:
    return (
        engine.orchestrations.ConcurrentBuilder(participants=list(participants.values()))
        .with_request_info(**kwargs)
        .build()
    )


@pytest.mark.parametrize("stream", [False, True], ids=["run", "stream"])
async def test_a_reviewed_agent_pauses_iterates_on_guidance_then_joins_the_aggregate(
    stream: bool,
) -> None:
    scripts = {**THREE, "researcher": ["Research.", "Deeper research."]}

    def build(engine: Engine, agents: dict[str, Agent]) -> Any:
        return _reviewed(engine, agents, agents=["researcher"])

    run = await assert_same_on_both(
        Scenario(scripts, build, reviews=["Cite sources.", None]), stream=stream
    )

    assert run.topology["executors"]["researcher"] == "AgentApprovalExecutor"
    assert run.calls["researcher"][1] == ["Launch an eBike.", "Research.", "Cite sources."]
    [output] = run.outputs
    assert [m.text for m in output.messages] == ["Deeper research.", "Slogan.", "Disclaimer."]


@pytest.mark.parametrize("stream", [False, True], ids=["run", "stream"])
async def test_reviewing_every_agent_pauses_for_each_and_aggregates_once_all_approve(
    stream: bool,
) -> None:
    scripts = {"researcher": ["R1.", "R2."], "marketer": ["M1."], "legal": ["L1."]}

    def build(engine: Engine, agents: dict[str, Agent]) -> Any:
        return _reviewed(engine, agents)

    run = await assert_same_on_both(
        Scenario(scripts, build, reviews=["Again.", None, None, None]), stream=stream
    )

    assert run.events.count("request_info:researcher:AgentExecutorResponse") == 2
    assert [m.text for m in run.outputs[0].messages] == ["R2.", "M1.", "L1."]


# Async on purpose: MAF runs a sync tool in a worker thread, and two agents' threads finish in
# an order the OS picks, so their events could not be compared in order.
@tool(approval_mode="always_require")
async def trade(symbol: str) -> str:
    """Buy the stock."""
    return f"bought {symbol}"


@pytest.mark.parametrize("stream", [False, True], ids=["run", "stream"])
@pytest.mark.parametrize("reviewed", [False, True], ids=["plain", "reviewed"])
async def test_tool_approvals_inside_concurrent_participants_pause_and_resume(
    stream: bool, reviewed: bool
) -> None:
    scripts = {
        "msft": [ToolCall("trade", {"symbol": "MSFT"}), "Bought MSFT."],
        "goog": [ToolCall("trade", {"symbol": "GOOG"}), "Bought GOOG."],
        "legal": ["Fine."],
    }

    def build(engine: Engine, agents: dict[str, Agent]) -> Any:
        if reviewed:
            return _reviewed(engine, agents, agents=["msft"])
        return _plain(engine, agents)

    run = await assert_same_on_both(
        Scenario(
            scripts,
            build,
            tools={"msft": [trade], "goog": [trade]},
            reviews=[None] if reviewed else [],
        ),
        stream=stream,
    )

    assert run.events.count("request_info:msft:Content") == 1
    assert [m.text for m in run.outputs[0].messages] == ["Bought MSFT.", "Bought GOOG.", "Fine."]


# endregion

# region Checkpoints


def _checkpointed(
    tmp_path: Path, scripts: dict[str, list[Any]], **tools: list[Any]
) -> tuple[Any, dict[str, ScriptedChatClient]]:
    clients = {n: ScriptedChatClient(s, name=f"{n}-model") for n, s in scripts.items()}
    agents = [Agent(client=c, name=n, tools=tools.get(n)) for n, c in clients.items()]
    builder = ConcurrentBuilder(
        participants=agents, checkpoint_storage=FileCheckpointStorage(tmp_path)
    )
    return builder.with_request_info(agents=["researcher"]).build(), clients


async def test_a_paused_review_resumes_in_a_fresh_workflow_without_asking_done_turns_again(
    tmp_path: Path,
) -> None:
    first, _ = _checkpointed(tmp_path, {**THREE, "researcher": ["Research."]})
    [request] = (await first.run("Launch an eBike.")).get_request_info_events()
    paused = await FileCheckpointStorage(tmp_path).get_latest(workflow_name=first.name)
    assert paused is not None and paused.pending_request_info_events

    # A new process: new agents, new builder; only the researcher has a turn left.
    fresh, clients = _checkpointed(
        tmp_path, {"researcher": ["Deeper research."], "marketer": [], "legal": []}
    )
    guided = await fresh.run(
        checkpoint_id=paused.checkpoint_id,
        responses={request.request_id: AgentRequestInfoResponse.from_strings(["Cite sources."])},
    )
    [again] = guided.get_request_info_events()
    done = await fresh.run(responses={again.request_id: AgentRequestInfoResponse.approve()})

    [output] = done.get_outputs()
    assert [m.text for m in output.messages] == ["Deeper research.", "Slogan.", "Disclaimer."]
    assert [len(c.calls) for c in clients.values()] == [1, 0, 0]
    assert [m.text for m in clients["researcher"].calls[0]] == [
        "Launch an eBike.",
        "Research.",
        "Cite sources.",
    ]


async def test_a_paused_tool_approval_resumes_in_a_fresh_workflow(tmp_path: Path) -> None:
    scripts = {"researcher": ["Research."], "marketer": [ToolCall("trade", {"symbol": "X"})]}
    first, _ = _checkpointed(tmp_path, {**scripts, "legal": ["Disclaimer."]}, marketer=[trade])
    result = await first.run("Launch an eBike.")
    asked = sorted(type(r.data).__name__ for r in result.get_request_info_events())
    assert asked == ["AgentExecutorResponse", "Content"]
    paused = await FileCheckpointStorage(tmp_path).get_latest(workflow_name=first.name)
    assert paused is not None

    fresh, clients = _checkpointed(
        tmp_path, {"researcher": [], "marketer": ["Traded."], "legal": []}, marketer=[trade]
    )
    answers: dict[str, Any] = {}
    for request in result.get_request_info_events():
        if isinstance(request.data, Content):
            answers[request.request_id] = request.data.to_function_approval_response(approved=True)
        else:
            answers[request.request_id] = AgentRequestInfoResponse.approve()
    done = await fresh.run(checkpoint_id=paused.checkpoint_id, responses=answers)

    [output] = done.get_outputs()
    assert [m.text for m in output.messages] == ["Research.", "Traded.", "Disclaimer."]
    assert [len(c.calls) for c in clients.values()] == [0, 1, 0]


# endregion

# region Bad input


def _three() -> list[Agent]:
    return [Agent(client=ScriptedChatClient(["x"]), name=n) for n in ("a", "b", "c")]


def _maf_and_ours_raise(error: type[Exception], make: Callable[[Any, list[Any]], Any]) -> None:
    """``make(orchestrations, participants)`` raises ``error`` on both engines."""
    for orchestrations in (maf_orchestrations, our_orchestrations):
        with pytest.raises(error):
            make(orchestrations, _three())


def test_no_participants_is_refused() -> None:
    _maf_and_ours_raise(ValueError, lambda o, p: o.ConcurrentBuilder(participants=[]))


def test_the_same_agent_twice_is_refused() -> None:
    _maf_and_ours_raise(ValueError, lambda o, p: o.ConcurrentBuilder(participants=[p[0], p[0]]))


def test_a_participant_that_is_no_agent_is_refused_at_once() -> None:
    _maf_and_ours_raise(TypeError, lambda o, p: o.ConcurrentBuilder(participants=[*p, "agent"]))


def test_one_participant_is_refused_when_built() -> None:
    _maf_and_ours_raise(ValueError, lambda o, p: o.ConcurrentBuilder(participants=p[:1]).build())


def test_a_second_aggregator_is_refused() -> None:
    _maf_and_ours_raise(
        ValueError,
        lambda o, p: (
            o.ConcurrentBuilder(participants=p).with_aggregator(_join).with_aggregator(_join)
        ),
    )


def test_an_aggregator_that_is_neither_executor_nor_callable_is_refused() -> None:
    _maf_and_ours_raise(
        TypeError, lambda o, p: o.ConcurrentBuilder(participants=p).with_aggregator("sum")
    )


def test_an_aggregator_executor_that_takes_no_results_is_refused_when_built() -> None:
    class TakesText(workflows.Executor):
        @workflows.handler
        async def take(self, text: str, ctx: workflows.WorkflowContext[Never, str]) -> None:
            await ctx.yield_output(text)

    with pytest.raises(workflows.TypeCompatibilityError):
        ConcurrentBuilder(participants=_three()).with_aggregator(TakesText(id="t")).build()


@pytest.mark.parametrize(
    "make",
    [
        lambda o, p: o.ConcurrentBuilder(participants=p, output_from="all_other"),
        lambda o, p: o.ConcurrentBuilder(participants=p, output_from=["ghost"]).build(),
        lambda o, p: o.ConcurrentBuilder(
            participants=p, output_from=["a"], intermediate_output_from=["a"]
        ).build(),
        lambda o, p: (
            o.ConcurrentBuilder(participants=p).with_request_info(agents=["ghost"]).build()
        ),
    ],
    ids=["all_other-output", "unknown-output", "overlap", "unknown-review"],
)
def test_bad_designations_and_review_filters_are_refused(make: Any) -> None:
    _maf_and_ours_raise(ValueError, make)


def test_reviewing_something_that_is_no_agent_is_refused_at_once() -> None:
    _maf_and_ours_raise(
        TypeError, lambda o, p: o.ConcurrentBuilder(participants=p).with_request_info(agents=[1])
    )


# endregion
