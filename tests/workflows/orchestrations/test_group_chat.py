"""``GroupChatBuilder`` and its orchestrators against MAF 1.23's ``agent_framework.orchestrations``.

Each scenario is built twice, once with MAF's builder and once with ours, over the same
scripted models; the events (types, executors, payloads), the outputs and what every model was
asked must agree, in streaming and non-streaming runs. Checkpoints are proven on ours: a chat
interrupted mid-way resumes in a freshly built workflow (new agents, new builder) from a
``FileCheckpointStorage`` without asking any model again for a turn that was done.
"""

from __future__ import annotations

import dataclasses
import logging
from collections import Counter, OrderedDict
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType
from typing import Annotated, Any

import agent_framework
import agent_framework.orchestrations as maf_orchestrations
import pytest
from agent_framework import Agent, AgentResponse, AgentResponseUpdate, Content, Message, tool
from agent_framework_orchestrations import _base_group_chat_orchestrator as maf_base

import workflows
import workflows.orchestrations as our_orchestrations
from workflows.agents.local_chat import ScriptedChatClient, ScriptEntry, ToolCall
from workflows.orchestrations import base_group_chat as our_base


@dataclass(frozen=True)
class Engine:
    name: str
    core: ModuleType
    orchestrations: ModuleType
    base: ModuleType


MAF = Engine("maf", agent_framework, maf_orchestrations, maf_base)
OURS = Engine("ours", workflows, our_orchestrations, our_base)
ENGINES = [MAF, OURS]
BOTH = pytest.mark.parametrize("engine", ENGINES, ids=lambda e: e.name)
MODES = pytest.mark.parametrize("stream", [False, True], ids=["run", "stream"])


# region What a run shows


def describe_data(data: Any) -> Any:
    if isinstance(data, AgentResponse):
        return ("AgentResponse", tuple(texts(data.messages)))
    if isinstance(data, AgentResponseUpdate):
        return ("AgentResponseUpdate", str(data.role), data.author_name, data.text)
    if type(data).__name__ == "AgentExecutorResponse":
        return ("AgentExecutorResponse", data.executor_id, data.agent_response.text)
    if isinstance(data, Content):
        call = data.function_call
        return ("Content", data.type, call.name if call is not None else None)
    return type(data).__name__


def describe(event: Any) -> tuple[Any, ...]:
    """An event as both engines can agree on it: type, executor, and its payload's content."""
    if event.type == "group_chat":
        data = event.data
        return (event.type, type(data).__name__, data.round_index, data.participant_name)
    if event.type in ("output", "intermediate"):
        return (event.type, event.executor_id, describe_data(event.data))
    if event.type == "request_info":
        return (event.type, event.source_executor_id, describe_data(event.data))
    return (event.type, getattr(event, "executor_id", None))


def texts(messages: Sequence[Message]) -> list[tuple[str, str | None, str]]:
    return [(str(m.role), m.author_name, m.text) for m in messages]


def carried(described: list[tuple[Any, ...]]) -> list[tuple[Any, ...]]:
    """The events that carry the chat itself: progress, requests and outputs."""
    return [e for e in described if e[0] in ("group_chat", "request_info", "output")]


async def run_events(workflow: Any, task: Any = None, *, stream: bool, **kwargs: Any) -> list[Any]:
    if stream:
        return [event async for event in workflow.run(task, stream=True, **kwargs)]
    return list(await workflow.run(task, **kwargs))


def pending(events: list[Any]) -> dict[str, Any]:
    return {e.request_id: e.data for e in events if e.type == "request_info"}


# endregion

# region Agents, tools and scripts


@tool(approval_mode="never_require")
def lookup(topic: Annotated[str, "What to look up"]) -> str:
    """Look a topic up in the team's notes."""
    return f"Notes on {topic}: it is well documented."


@tool(approval_mode="always_require")
def publish(title: Annotated[str, "The title to publish under"]) -> str:
    """Publish the article. Requires approval."""
    return f"Published '{title}'."


@dataclass
class Team:
    """Agents over scripted models, one client each, made afresh for every build."""

    scripts: dict[str, list[ScriptEntry]]
    descriptions: dict[str, str] = field(default_factory=dict)
    tools: dict[str, list[Any]] = field(default_factory=dict)
    clients: dict[str, ScriptedChatClient] = field(default_factory=dict)

    def agent(self, name: str) -> Agent:
        client = ScriptedChatClient(list(self.scripts[name]), name=f"{name}-model")
        self.clients[name] = client
        return Agent(
            client=client,
            name=name,
            description=self.descriptions.get(name),
            tools=self.tools.get(name),
        )

    def calls(self) -> dict[str, list[list[tuple[str, str | None, str]]]]:
        return {name: [texts(c) for c in client.calls] for name, client in self.clients.items()}


def decision(speaker: str | None, final: str | None = None) -> dict[str, Any]:
    """One structured answer of an orchestrator agent."""
    return {
        "terminate": speaker is None,
        "reason": "scripted",
        "next_speaker": speaker,
        "final_message": final,
    }


def writing_team(**extra_scripts: list[ScriptEntry]) -> Team:
    scripts: dict[str, list[ScriptEntry]] = {
        "researcher": [
            ToolCall("lookup", {"topic": "otters"}),
            "Otters hold hands while sleeping.",
            "They also use stones as tools.",
        ],
        "writer": ["Otters: tiny engineers of the river.", "A second draft."],
    }
    scripts.update(extra_scripts)
    return Team(
        scripts,
        descriptions={"researcher": "Finds facts", "writer": "Writes prose"},
        tools={"researcher": [lookup]},
    )


def round_robin(seen: list[Any]) -> Callable[[Any], str]:
    """A selection function that takes turns and records the states it was shown."""

    def select(state: Any) -> str:
        seen.append(
            (
                state.current_round,
                list(state.participants.items()),
                [
                    (str(m.role), m.author_name, [c.type for c in m.contents])
                    for m in state.conversation
                ],
            )
        )
        names = list(state.participants)
        return names[state.current_round % len(names)]

    return select


# endregion

# region Selection function


@MODES
async def test_a_selection_function_chat_runs_as_on_maf(stream: bool) -> None:
    seen: dict[str, Any] = {}
    for engine in ENGINES:
        team, states = writing_team(), []
        workflow = engine.orchestrations.GroupChatBuilder(
            participants=[team.agent("researcher"), team.agent("writer")],
            selection_func=round_robin(states),
            max_rounds=3,
        ).build()
        events = await run_events(workflow, "Write about otters.", stream=stream)
        seen[engine.name] = ([describe(e) for e in events], states, team.calls())
    assert seen["ours"] == seen["maf"]
    events, states, calls = seen["ours"]
    # Tool traffic stays inside the turn that made it: the orchestrator keeps the text only.
    assert states[1][2] == [("user", None, ["text"]), ("assistant", "researcher", ["text"])]
    assert states[0][1] == [("researcher", "Finds facts"), ("writer", "Writes prose")]
    # The writer was given the task and the researcher's answer, not its tool call.
    assert calls["writer"][0] == [
        ("user", None, "Write about otters."),
        ("assistant", "researcher", "Otters hold hands while sleeping."),
    ]
    (output,) = [e for e in events if e[0] == "output"]
    expected = "The group chat has reached the maximum number of rounds."
    if stream:
        assert output[2] == (
            "AgentResponseUpdate",
            "assistant",
            "group_chat_orchestrator",
            expected,
        )
    else:
        assert output[2] == ("AgentResponse", (("assistant", "group_chat_orchestrator", expected),))


@BOTH
async def test_an_async_selection_function_and_an_orchestrator_name(engine: Engine) -> None:
    async def always_the_writer(state: Any) -> str:
        return "writer"

    team = writing_team()
    workflow = engine.orchestrations.GroupChatBuilder(
        participants=[team.agent("researcher"), team.agent("writer")],
        selection_func=always_the_writer,
        orchestrator_name="Editor",
        max_rounds=1,
    ).build()
    (output,) = (await workflow.run("Write about otters.")).get_outputs()
    assert texts(output.messages) == [
        ("assistant", "Editor", "The group chat has reached the maximum number of rounds.")
    ]
    assert list(team.calls()["researcher"]) == []


@BOTH
async def test_a_selection_function_naming_a_stranger_fails_the_run(engine: Engine) -> None:
    team = writing_team()
    workflow = engine.orchestrations.GroupChatBuilder(
        participants=[team.agent("writer")], selection_func=lambda state: "nobody"
    ).build()
    with pytest.raises(RuntimeError, match="Selection function returned unknown participant"):
        await workflow.run("Write about otters.")


@MODES
async def test_a_termination_condition_ends_the_chat_as_on_maf(stream: bool) -> None:
    def after_the_writer(conversation: list[Message]) -> bool:
        return any(m.author_name == "writer" for m in conversation)

    seen = {}
    for engine in ENGINES:
        team = writing_team()
        workflow = (
            engine.orchestrations.GroupChatBuilder(
                participants=[team.agent("researcher"), team.agent("writer")],
                selection_func=round_robin([]),
            )
            .with_termination_condition(after_the_writer)
            .with_max_rounds(10)
            .build()
        )
        events = await run_events(workflow, "Write about otters.", stream=stream)
        seen[engine.name] = ([describe(e) for e in events], team.calls())
    assert seen["ours"] == seen["maf"]
    (output,) = [e for e in seen["ours"][0] if e[0] == "output"]
    assert "The group chat has reached its termination condition." in str(output)


# endregion

# region Agent orchestrator


def agent_chat(engine: Engine, team: Team, **builder: Any) -> Any:
    return engine.orchestrations.GroupChatBuilder(
        participants=[team.agent("researcher"), team.agent("writer")],
        orchestrator_agent=team.agent("Chair"),
        **builder,
    ).build()


@MODES
async def test_an_agent_orchestrated_chat_runs_as_on_maf(stream: bool) -> None:
    seen = {}
    for engine in ENGINES:
        team = writing_team(
            Chair=[decision("researcher"), decision("writer"), decision(None, "Done: otters.")]
        )
        workflow = agent_chat(engine, team, intermediate_output_from="all")
        events = await run_events(workflow, "Write about otters.", stream=stream)
        seen[engine.name] = ([describe(e) for e in events], team.calls())
    assert seen["ours"] == seen["maf"]
    events, calls = seen["ours"]
    # The orchestrator agent keeps its session: each call adds only what it has not seen.
    first, second, _ = calls["Chair"]
    assert first[0] == ("user", None, "Write about otters.")
    assert "researcher: Finds facts\nwriter: Writes prose" in first[1][2]
    assert second[len(first) + 1 :][0] == (
        "assistant",
        "researcher",
        "Otters hold hands while sleeping.",
    )
    (output,) = [e for e in events if e[0] == "output"]
    assert output[1] == "Chair" and "Done: otters." in str(output[2])
    assert {e[1] for e in events if e[0] == "intermediate"} == {"researcher", "writer"}


@BOTH
async def test_an_agent_that_ends_without_a_final_message_uses_the_default(engine: Engine) -> None:
    team = writing_team(Chair=[decision(None)])
    (output,) = (await agent_chat(engine, team).run("Write about otters.")).get_outputs()
    assert texts(output.messages) == [
        ("assistant", "Chair", "The conversation has been terminated by the agent.")
    ]


async def test_an_agent_orchestrator_retries_an_unreadable_decision_as_on_maf() -> None:
    seen = {}
    for engine in ENGINES:
        team = writing_team(Chair=["no json here", decision("writer"), decision(None, "Fine.")])
        researcher, writer = team.agent("researcher"), team.agent("writer")
        registry = engine.base.ParticipantRegistry(
            [engine.core.AgentExecutor(researcher), engine.core.AgentExecutor(writer)]
        )
        orchestrator = engine.orchestrations.AgentBasedGroupChatOrchestrator(
            team.agent("Chair"), registry, retry_attempts=1
        )
        workflow = engine.orchestrations.GroupChatBuilder(
            participants=[researcher, writer], orchestrator=orchestrator
        ).build()
        events = await run_events(workflow, "Write about otters.", stream=False)
        seen[engine.name] = ([describe(e) for e in events], team.calls())
    assert seen["ours"] == seen["maf"]
    retry = seen["ours"][1]["Chair"][1][-1]
    assert retry[0] == "user"
    assert retry[2].startswith("Your input could not be parsed due to an error:")


@BOTH
async def test_an_unreadable_decision_without_retries_fails_the_run(engine: Engine) -> None:
    team = writing_team(Chair=["no json here"])
    with pytest.raises(ValueError, match="Failed to parse agent orchestration output."):
        await agent_chat(engine, team).run("Write about otters.")


@BOTH
async def test_an_agent_naming_a_stranger_fails_the_run(engine: Engine) -> None:
    team = writing_team(Chair=[decision("nobody")])
    with pytest.raises(ValueError) as failed:
        await agent_chat(engine, team).run("Write about otters.")
    assert str(failed.value) == (
        "Orchestrator agent selected unknown participant 'nobody'. "
        "Valid participants: researcher, writer."
    )


@BOTH
def test_a_decision_is_read_from_fenced_or_concatenated_json(engine: Engine) -> None:
    parse = engine.orchestrations.AgentBasedGroupChatOrchestrator._parse_agent_output
    fenced = 'Here you go:\n```json\n{"terminate": false, "reason": "r", "next_speaker": "w"}\n```'
    twice = '{"terminate": true, "reason": "a"}{"terminate": false, "reason": "b"}'
    readings = [
        parse(AgentResponse(messages=[Message(role="assistant", contents=[text])]))
        for text in (fenced, twice)
    ]
    assert [(r.terminate, r.reason, r.next_speaker) for r in readings] == [
        (False, "r", "w"),
        (False, "b", None),
    ]


def test_the_orchestration_output_schema_requires_every_field() -> None:
    ours = our_orchestrations.AgentOrchestrationOutput.model_json_schema()
    theirs = maf_orchestrations.AgentOrchestrationOutput.model_json_schema()
    assert ours == theirs
    assert ours["required"] == ["terminate", "reason", "next_speaker", "final_message"]


# endregion

# region Builder options


async def test_participant_outputs_follow_output_from_as_on_maf() -> None:
    seen = {}
    for engine in ENGINES:
        team = writing_team()
        researcher, writer = team.agent("researcher"), team.agent("writer")
        workflow = engine.orchestrations.GroupChatBuilder(
            participants=[researcher, writer],
            selection_func=round_robin([]),
            max_rounds=2,
            output_from=[writer],
            intermediate_output_from="all_other",
        ).build()
        events = await run_events(workflow, "Write about otters.", stream=False)
        seen[engine.name] = [describe(e) for e in events]
    assert seen["ours"] == seen["maf"]
    shown = [(e[0], e[1]) for e in seen["ours"] if e[0] in ("output", "intermediate")]
    assert shown == [
        ("intermediate", "researcher"),
        ("output", "writer"),
        ("output", "group_chat_orchestrator"),
    ]


@BOTH
async def test_factories_make_the_participants_and_the_orchestrator(engine: Engine) -> None:
    team = writing_team(Chair=[decision("writer"), decision(None, "Thanks.")])
    workflow = engine.orchestrations.GroupChatBuilder(
        participant_factories=[lambda: team.agent("researcher"), lambda: team.agent("writer")],
        orchestrator_agent=lambda: team.agent("Chair"),
    ).build()
    (output,) = (await workflow.run("Write about otters.")).get_outputs()
    assert output.text == "Thanks."
    assert len(team.calls()["writer"]) == 1


@BOTH
def test_the_workflow_is_named_group_chat_unless_named(engine: Engine) -> None:
    team = writing_team()
    builder = engine.orchestrations.GroupChatBuilder
    assert builder(participants=[team.agent("writer")], selection_func=str).build().name == (
        "GroupChat"
    )
    named = builder(name="Otters", participants=[team.agent("writer")], selection_func=str)
    assert named.build().name == "Otters"


@BOTH
def test_limits_set_after_a_ready_orchestrator_warn_that_they_do_nothing(
    engine: Engine, caplog: pytest.LogCaptureFixture
) -> None:
    team = writing_team()
    writer = team.agent("writer")
    registry = engine.base.ParticipantRegistry([engine.core.AgentExecutor(writer)])
    orchestrator = engine.orchestrations.GroupChatOrchestrator("mine", registry, str)
    builder = engine.orchestrations.GroupChatBuilder(
        participants=[writer], orchestrator=orchestrator
    )
    with caplog.at_level(logging.WARNING):
        builder.with_max_rounds(2).with_termination_condition(lambda conversation: True)
    assert "setting max rounds on builder has no effect" in caplog.text
    assert "setting termination condition on builder has no effect" in caplog.text


def test_the_selection_state_is_immutable() -> None:
    state = our_orchestrations.GroupChatState(
        current_round=0, participants=OrderedDict(), conversation=[]
    )
    with pytest.raises(dataclasses.FrozenInstanceError):
        state.current_round = 1


# Each case builds (or configures) a group chat wrongly; both engines must refuse it alike.
BAD_BUILDS: dict[str, Callable[[Engine, Team], Any]] = {
    "nothing": lambda e, t: e.orchestrations.GroupChatBuilder(),
    "no participants": lambda e, t: e.orchestrations.GroupChatBuilder(participants=[]),
    "no factories": lambda e, t: e.orchestrations.GroupChatBuilder(participant_factories=[]),
    "both kinds": lambda e, t: e.orchestrations.GroupChatBuilder(
        participants=[t.agent("writer")], participant_factories=[lambda: t.agent("writer")]
    ),
    "twice the same name": lambda e, t: e.orchestrations.GroupChatBuilder(
        participants=[t.agent("writer"), t.agent("writer")]
    ),
    "not a participant": lambda e, t: e.orchestrations.GroupChatBuilder(participants=["writer"]),
    "a nameless agent": lambda e, t: e.orchestrations.GroupChatBuilder(
        participants=[Agent(client=ScriptedChatClient([]))]
    ),
    "two orchestrators": lambda e, t: e.orchestrations.GroupChatBuilder(
        participants=[t.agent("writer")], selection_func=str, orchestrator_agent=t.agent("Chair")
    ),
    "no orchestrator": lambda e, t: e.orchestrations.GroupChatBuilder(
        participants=[t.agent("writer")]
    ).build(),
    "a factory of nonsense": lambda e, t: e.orchestrations.GroupChatBuilder(
        participants=[t.agent("writer")], orchestrator=lambda: "nonsense"
    ).build(),
    "a participant factory of nonsense": lambda e, t: e.orchestrations.GroupChatBuilder(
        participant_factories=[lambda: "nonsense"], selection_func=str
    ).build(),
    "output_from all_other": lambda e, t: e.orchestrations.GroupChatBuilder(
        participants=[t.agent("writer")], output_from="all_other"
    ),
    "output_from unknown literal": lambda e, t: e.orchestrations.GroupChatBuilder(
        participants=[t.agent("writer")], output_from="some"
    ),
    "intermediate unknown literal": lambda e, t: e.orchestrations.GroupChatBuilder(
        participants=[t.agent("writer")], intermediate_output_from="some"
    ),
    "output_from a stranger": lambda e, t: e.orchestrations.GroupChatBuilder(
        participants=[t.agent("writer")], selection_func=str, output_from=["ghost"]
    ).build(),
    "output and intermediate": lambda e, t: e.orchestrations.GroupChatBuilder(
        participants=[t.agent("writer")],
        selection_func=str,
        output_from=["writer"],
        intermediate_output_from=["writer"],
    ).build(),
    "both selections empty": lambda e, t: e.orchestrations.GroupChatBuilder(
        participants=[t.agent("writer")],
        selection_func=str,
        output_from=[],
        intermediate_output_from=[],
    ).build(),
    "review of a stranger": lambda e, t: (
        e.orchestrations.GroupChatBuilder(participants=[t.agent("writer")], selection_func=str)
        .with_request_info(agents=["ghost"])
        .build()
    ),
    "review of a number": lambda e, t: e.orchestrations.GroupChatBuilder(
        participants=[t.agent("writer")], selection_func=str
    ).with_request_info(agents=[42]),
}


@pytest.mark.parametrize("case", list(BAD_BUILDS))
def test_bad_builder_input_is_refused_with_mafs_errors(case: str) -> None:
    refusals = []
    for engine in ENGINES:
        with pytest.raises((ValueError, TypeError)) as refused:
            BAD_BUILDS[case](engine, writing_team(Chair=[]))
        refusals.append((type(refused.value).__name__, str(refused.value)))
    assert refusals[1] == refusals[0]


# endregion

# region People in the loop


def reviewed_chat(engine: Engine, team: Team, storage: Any = None) -> Any:
    return (
        engine.orchestrations.GroupChatBuilder(
            participants=[team.agent("researcher"), team.agent("writer")],
            selection_func=round_robin([]),
            max_rounds=2,
            checkpoint_storage=storage,
        )
        .with_request_info(agents=["writer"])
        .build()
    )


@MODES
async def test_a_reviewed_agent_pauses_takes_feedback_and_finishes_as_on_maf(
    stream: bool,
) -> None:
    seen = {}
    for engine in ENGINES:
        team = writing_team()
        workflow = reviewed_chat(engine, team)
        response = engine.orchestrations.AgentRequestInfoResponse
        events = await run_events(workflow, "Write about otters.", stream=stream)
        (first,) = pending(events)
        feedback = {first: response.from_strings(["Make it shorter."])}
        events += await run_events(workflow, stream=stream, responses=feedback)
        (second,) = [rid for rid in pending(events) if rid != first]
        events += await run_events(workflow, stream=stream, responses={second: response.approve()})
        seen[engine.name] = ([describe(e) for e in events], team.calls())
    (maf_events, maf_calls), (our_events, our_calls) = seen["maf"], seen["ours"]
    # The reviewed agent runs as a sub-workflow beside the other participants; MAF's yields to
    # the event loop where ours does not, so sibling executor events may interleave otherwise.
    assert carried(our_events) == carried(maf_events)
    assert Counter(our_events) == Counter(maf_events)
    assert our_calls == maf_calls
    requests = [e for e in our_events if e[0] == "request_info"]
    assert requests == [
        ("request_info", "writer", ("AgentExecutorResponse", "writer", text))
        for text in ("Otters: tiny engineers of the river.", "A second draft.")
    ]
    assert our_calls["writer"][1][-1] == ("user", None, "Make it shorter.")
    assert carried(our_events)[-1][0] == "output"


@MODES
async def test_a_tool_approval_inside_a_participant_pauses_the_chat_as_on_maf(
    stream: bool,
) -> None:
    seen = {}
    for engine in ENGINES:
        team = writing_team(
            writer=[ToolCall("publish", {"title": "Otters"}), "Published, as approved."]
        )
        team.tools["writer"] = [publish]
        workflow = engine.orchestrations.GroupChatBuilder(
            participants=[team.agent("researcher"), team.agent("writer")],
            selection_func=round_robin([]),
            max_rounds=2,
        ).build()
        events = await run_events(workflow, "Write about otters.", stream=stream)
        answers = {
            rid: request.to_function_approval_response(approved=True)
            for rid, request in pending(events).items()
        }
        events += await run_events(workflow, stream=stream, responses=answers)
        seen[engine.name] = ([describe(e) for e in events], team.calls())
    assert seen["ours"] == seen["maf"]
    events = seen["ours"][0]
    assert [e for e in events if e[0] == "request_info"] == [
        ("request_info", "writer", ("Content", "function_approval_request", "publish"))
    ]
    assert "maximum number of rounds" in str(carried(events)[-1])


# endregion

# region Checkpoints


async def checkpoint_after(storage: Any, workflow: Any, source: str, iteration: int) -> Any:
    """The checkpoint taken after ``iteration`` supersteps, ``source``'s message in flight."""
    checkpoints = await storage.list_checkpoints(workflow_name=workflow.name)
    return next(
        cp for cp in checkpoints if cp.iteration_count == iteration and cp.messages.get(source)
    )


def selection_chat(team: Team, storage: Any) -> Any:
    return our_orchestrations.GroupChatBuilder(
        participants=[team.agent("researcher"), team.agent("writer")],
        selection_func=round_robin([]),
        max_rounds=3,
        checkpoint_storage=storage,
    ).build()


async def test_group_chat_resumes_from_a_checkpoint_in_a_fresh_workflow(tmp_path: Path) -> None:
    storage = workflows.FileCheckpointStorage(tmp_path)
    original = writing_team()
    whole = await selection_chat(original, storage).run("Write about otters.")
    workflow = selection_chat(writing_team(), storage)
    checkpoint = await checkpoint_after(storage, workflow, "writer", 4)
    state = checkpoint.executor_states["group_chat_orchestrator"]
    assert (state["round_index"], state["orchestrator_name"]) == (2, "group_chat_orchestrator")
    # The orchestrator has the researcher's turn; the writer's is the message in flight.
    assert texts(state["conversation"])[-1] == (
        "assistant",
        "researcher",
        "Otters hold hands while sleeping.",
    )

    # Only the turn still to come is scripted: a model asked again for a done turn would fail.
    rest = Team(
        {"researcher": ["They also use stones as tools."], "writer": []},
        descriptions=original.descriptions,
    )
    resumed = await selection_chat(rest, storage).run(checkpoint_id=checkpoint.checkpoint_id)
    assert texts(resumed.get_outputs()[0].messages) == texts(whole.get_outputs()[0].messages)
    assert rest.calls() == {"researcher": [original.calls()["researcher"][2]], "writer": []}


async def test_an_agent_orchestrator_resumes_with_its_session_and_cache(tmp_path: Path) -> None:
    storage = workflows.FileCheckpointStorage(tmp_path)
    decisions = [decision("researcher"), decision("writer"), decision(None, "Done.")]
    original = writing_team(Chair=decisions)
    whole = await agent_chat(OURS, original, checkpoint_storage=storage).run("Write about otters.")
    # The researcher's answer is in flight: the Chair has decided once.
    checkpoint = await checkpoint_after(
        storage, agent_chat(OURS, writing_team(Chair=[])), "researcher", 2
    )
    state = checkpoint.executor_states["Chair"]
    assert state["cache"] == []
    assert state["session"]["state"]  # the Chair's history so far

    rest = Team(
        {"researcher": [], "writer": [original.scripts["writer"][0]], "Chair": decisions[1:]},
        descriptions=original.descriptions,
    )
    workflow = agent_chat(OURS, rest, checkpoint_storage=storage)
    resumed = await workflow.run(checkpoint_id=checkpoint.checkpoint_id)
    assert resumed.get_outputs()[0].text == whole.get_outputs()[0].text == "Done."
    # The restored session gives the Chair exactly what it saw in the uninterrupted run.
    assert rest.calls()["Chair"] == original.calls()["Chair"][1:]
    assert rest.calls()["writer"] == original.calls()["writer"]
    assert rest.calls()["researcher"] == []


async def test_a_pending_review_is_answered_after_a_resume_in_a_fresh_workflow(
    tmp_path: Path,
) -> None:
    storage = workflows.FileCheckpointStorage(tmp_path)
    original = writing_team()
    first = reviewed_chat(OURS, original, storage)
    events = await run_events(first, "Write about otters.", stream=False)
    (request_id,) = pending(events)
    latest = await storage.get_latest(workflow_name=first.name)
    assert latest is not None and request_id in latest.pending_request_info_events

    rest = Team({"researcher": [], "writer": []}, descriptions=original.descriptions)
    fresh = reviewed_chat(OURS, rest, storage)
    approve = our_orchestrations.AgentRequestInfoResponse.approve()
    resumed = await fresh.run(checkpoint_id=latest.checkpoint_id, responses={request_id: approve})
    (output,) = resumed.get_outputs()
    assert output.text == "The group chat has reached the maximum number of rounds."
    assert rest.calls() == {"researcher": [], "writer": []}


# endregion
