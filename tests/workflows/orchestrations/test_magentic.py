"""Magentic-One on the engine behaves as MAF 1.23's ``MagenticBuilder``.

Most scenarios run twice, once on MAF's own ``agent_framework.orchestrations`` and once on
``workflows.orchestrations``, with the same scripted models, and must agree on the events, the
outputs and every prompt the manager's model received. The rest covers what only our engine
can be asked: checkpoints resumed in a freshly built workflow (counting the model calls so
completed steps are not asked again), the state codec, and the manager on its own.

Every model is a ``ScriptedChatClient`` with an exact list of replies: one reply too few
fails the test, so a resume that asked the model again would be caught.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Sequence
from pathlib import Path
from types import ModuleType, SimpleNamespace
from typing import Any, Never

import agent_framework
import agent_framework.orchestrations as maf_orchestrations
import pytest
from agent_framework import Agent, AgentResponse, AgentResponseUpdate, Content, Message, tool

import workflows
import workflows.orchestrations as our_orchestrations
from workflows import (
    Executor,
    FileCheckpointStorage,
    InMemoryCheckpointStorage,
    WorkflowContext,
    codec,
    handler,
)
from workflows.agents.local_chat import ScriptedChatClient, ToolCall
from workflows.orchestrations import (
    GroupChatParticipantMessage,
    GroupChatRequestMessage,
    GroupChatResponseMessage,
    MagenticBuilder,
    MagenticContext,
    MagenticManagerBase,
    MagenticOrchestratorEvent,
    MagenticOrchestratorEventType,
    MagenticPlanReviewRequest,
    MagenticPlanReviewResponse,
    MagenticProgressLedger,
    MagenticProgressLedgerItem,
    MagenticResetSignal,
    StandardMagenticManager,
    magentic,
)
from workflows.orchestrations.magentic_json import extract_json_object

TASK = "Compare the energy use of ResNet-50 and BERT-base."
FACTS = "1. GIVEN OR VERIFIED FACTS\n- Two models are named."
PLAN = "- ResearcherAgent: find figures.\n- CoderAgent: compute totals."
FINAL = "ResNet-50 uses less energy than BERT-base."

ENGINES = {
    "maf": SimpleNamespace(core=agent_framework, orch=maf_orchestrations),
    "ours": SimpleNamespace(core=workflows, orch=our_orchestrations),
}


def ledger(
    speaker: str,
    instruction: str = "Go on.",
    *,
    done: bool = False,
    progress: bool = True,
    loop: bool = False,
) -> dict[str, Any]:
    """A progress ledger reply, as the manager's model writes it."""
    return {
        "is_request_satisfied": {"reason": "checked", "answer": done},
        "is_in_loop": {"reason": "checked", "answer": loop},
        "is_progress_being_made": {"reason": "checked", "answer": progress},
        "next_speaker": {"reason": "checked", "answer": speaker},
        "instruction_or_question": {"reason": "checked", "answer": instruction},
    }


HAPPY_MANAGER = [
    FACTS,
    PLAN,
    ledger("ResearcherAgent", "Find the figures."),
    ledger("CoderAgent", "Compute the totals."),
    ledger("CoderAgent", done=True),
    FINAL,
]


class Team:
    """Scripted models, their agents and the built workflow of one engine."""

    def __init__(
        self,
        engine: str,
        manager_script: Sequence[Any],
        *,
        researcher: Sequence[Any] = ("Figures: 4 kWh and 9 kWh.",),
        coder: Sequence[Any] = ("Total: 13 kWh.",),
        **builder_options: Any,
    ) -> None:
        self.orch: ModuleType = ENGINES[engine].orch
        self.manager = ScriptedChatClient(list(manager_script), name="manager-model")
        self.researcher = ScriptedChatClient(list(researcher), name="researcher-model")
        self.coder = ScriptedChatClient(list(coder), name="coder-model")
        self.researcher_agent = Agent(
            client=self.researcher, name="ResearcherAgent", description="Finds published facts."
        )
        self.coder_agent = Agent(
            client=self.coder, name="CoderAgent", description="Computes with code."
        )
        self.manager_agent = Agent(client=self.manager, name="MagenticManager")
        self.workflow = self.orch.MagenticBuilder(
            participants=[self.researcher_agent, self.coder_agent],
            manager_agent=self.manager_agent,
            **builder_options,
        ).build()


def label(event: Any) -> tuple[Any, ...]:
    """What must agree about an event between the engines."""
    parts: list[Any] = [event.type]
    if event.type in ("output", "intermediate"):
        parts += [event.executor_id, type(event.data).__name__]
    if event.type == "request_info":
        # MAF leaves a request's executor_id empty; both name its source.
        parts += [event.source_executor_id, type(event.data).__name__]
    if event.type == "magentic_orchestrator":
        parts += [event.executor_id, event.data.event_type.value, type(event.data.content).__name__]
    if event.type == "group_chat":
        parts += [type(event.data).__name__, event.data.participant_name, event.data.round_index]
    return tuple(parts)


def prompts(client: ScriptedChatClient) -> list[list[tuple[str, str | None, str]]]:
    """Every conversation a model was given: role, author and text of each message."""
    return [[(str(m.role), m.author_name, m.text) for m in call] for call in client.calls]


async def collect(workflow: Any, stream: bool, **kwargs: Any) -> list[Any]:
    if stream:
        return [event async for event in workflow.run(stream=True, **kwargs)]
    return list(await workflow.run(**kwargs))


def output_texts(events: list[Any]) -> list[str]:
    return [event.data.text for event in events if event.type == "output"]


def magentic_kinds(events: list[Any]) -> list[str]:
    return [e.data.event_type.value for e in events if e.type == "magentic_orchestrator"]


async def run_on(engine: str, manager_script: Sequence[Any], stream: bool, **options: Any) -> Any:
    team = Team(engine, manager_script, **options)
    events = await collect(team.workflow, stream, message=TASK)
    return SimpleNamespace(team=team, events=events)


# region Same as MAF


@pytest.mark.parametrize("stream", [False, True], ids=["run", "stream"])
async def test_a_run_emits_the_same_events_outputs_and_prompts_as_maf(stream: bool) -> None:
    maf = await run_on("maf", HAPPY_MANAGER, stream)
    ours = await run_on("ours", HAPPY_MANAGER, stream)

    assert [label(e) for e in ours.events] == [label(e) for e in maf.events]
    assert output_texts(ours.events) == output_texts(maf.events) == [FINAL]
    output_type = AgentResponseUpdate if stream else AgentResponse
    assert [type(e.data) for e in ours.events if e.type == "output"] == [output_type]
    for model in ("manager", "researcher", "coder"):
        assert prompts(getattr(ours.team, model)) == prompts(getattr(maf.team, model))
    assert magentic_kinds(ours.events) == [
        "plan_created",
        "progress_ledger_updated",
        "progress_ledger_updated",
        "progress_ledger_updated",
    ]


async def test_the_task_ledger_is_maf_s_full_prompt_filled_in() -> None:
    ours = await run_on("ours", HAPPY_MANAGER, False)
    plan = next(e.data for e in ours.events if e.type == "magentic_orchestrator")
    assert isinstance(plan, MagenticOrchestratorEvent)
    assert plan.event_type is MagenticOrchestratorEventType.PLAN_CREATED
    assert isinstance(plan.content, Message)
    assert plan.content.author_name == magentic.MAGENTIC_MANAGER_NAME == "magentic_manager"
    team = "- ResearcherAgent: Finds published facts.\n- CoderAgent: Computes with code."
    assert plan.content.text == magentic.ORCHESTRATOR_TASK_LEDGER_FULL_PROMPT.format(
        task=TASK, team=team, facts=FACTS, plan=PLAN
    )


@pytest.mark.parametrize("stream", [False, True], ids=["run", "stream"])
async def test_participant_outputs_are_shown_only_where_designated_as_in_maf(stream: bool) -> None:
    options = {"intermediate_output_from": "all", "output_from": []}
    maf = await run_on("maf", HAPPY_MANAGER, stream, **options)
    ours = await run_on("ours", HAPPY_MANAGER, stream, **options)
    assert [label(e) for e in ours.events] == [label(e) for e in maf.events]
    assert {e.executor_id for e in ours.events if e.type == "intermediate"} == {
        "ResearcherAgent",
        "CoderAgent",
    }


def test_every_public_name_of_maf_s_magentic_module_is_importable_from_ours() -> None:
    from agent_framework_orchestrations import _magentic as maf_magentic

    public = {
        name
        for name in dir(maf_magentic)
        if name.startswith(("Magentic", "ORCH", "MAGENTIC", "StandardMagentic"))
    }
    assert public - set(dir(magentic)) == set()
    # What MAF's package exports, ours exports too: the same objects as the module's.
    for name in public & set(dir(maf_orchestrations)):
        assert getattr(our_orchestrations, name) is getattr(magentic, name)


def test_the_prompts_are_maf_s_to_the_character() -> None:
    from agent_framework_orchestrations import _magentic as maf_magentic

    for name in dir(maf_magentic):
        if name.startswith("ORCHESTRATOR_") and name.endswith("_PROMPT"):
            assert getattr(magentic, name) == getattr(maf_magentic, name), name


def test_ledgers_and_context_have_maf_s_dict_shapes() -> None:
    maf = maf_orchestrations
    data = ledger("CoderAgent", "Compute.", done=True)
    assert MagenticProgressLedger.from_dict(data).to_dict() == (
        maf.MagenticProgressLedger.from_dict(data).to_dict()
    )
    odd = {"is_in_loop": {"answer": 3}}
    assert MagenticProgressLedger.from_dict(odd).to_dict() == (
        maf.MagenticProgressLedger.from_dict(odd).to_dict()
    )
    history = [Message("user", [TASK]), Message("assistant", ["ok"], author_name="A")]
    ours = MagenticContext(TASK, history, {"A": "does a"}, 2, 1, 0)
    theirs = maf.MagenticContext(TASK, list(history), {"A": "does a"}, 2, 1, 0)
    assert ours.to_dict() == theirs.to_dict()
    assert MagenticContext.from_dict(ours.to_dict()).to_dict() == ours.to_dict()
    assert MagenticContext.from_json(ours.to_json()).to_dict() == ours.to_dict()
    ours.reset()
    assert (ours.chat_history, ours.stall_count, ours.reset_count, ours.round_count) == (
        [],
        0,
        1,
        2,
    )


@pytest.mark.parametrize(
    "data",
    [
        {"participant_descriptions": {"a": "b"}},
        {"task": "t"},
        {"task": "t", "participant_descriptions": {}},
        {"task": "t", "participant_descriptions": {"a": 1}},
    ],
)
def test_a_context_dict_without_task_or_team_is_refused_as_in_maf(data: dict[str, Any]) -> None:
    with pytest.raises(ValueError) as theirs:
        maf_orchestrations.MagenticContext.from_dict(data)
    with pytest.raises(ValueError) as ours:
        MagenticContext.from_dict(data)
    assert str(ours.value) == str(theirs.value)


def test_plan_review_answers_are_built_as_in_maf() -> None:
    assert MagenticPlanReviewResponse.approve().review == []
    revised = MagenticPlanReviewResponse.revise(["more detail", Message("user", ["and sources"])])
    assert [(str(m.role), m.text) for m in revised.review] == [
        ("user", "more detail"),
        ("user", "and sources"),
    ]
    request = MagenticPlanReviewRequest(
        plan=Message("assistant", ["p"]), current_progress=None, is_stalled=False
    )
    assert request.revise("shorter").review[0].text == "shorter"
    assert request.approve().review == []


# endregion

# region Builder input


def _nameless_agent() -> Agent:
    return Agent(client=ScriptedChatClient([]))


def _named(name: str) -> Agent:
    return Agent(client=ScriptedChatClient([]), name=name)


BAD_BUILDS = {
    "no participants": lambda: {"participants": [], "manager_agent": _named("m")},
    "a nameless agent": lambda: {"participants": [_nameless_agent()], "manager_agent": _named("m")},
    "not an agent": lambda: {"participants": [object()], "manager_agent": _named("m")},
    "one name twice": lambda: {
        "participants": [_named("a"), _named("a")],
        "manager_agent": _named("m"),
    },
    "two managers": lambda: {
        "participants": [_named("a")],
        "manager_agent": _named("m"),
        "manager_agent_factory": lambda: _named("m"),
    },
    "an unknown output literal": lambda: {
        "participants": [_named("a")],
        "manager_agent": _named("m"),
        "output_from": "some",
    },
    "all_other as output": lambda: {
        "participants": [_named("a")],
        "manager_agent": _named("m"),
        "output_from": "all_other",
    },
}


@pytest.mark.parametrize("case", sorted(BAD_BUILDS))
def test_bad_builder_input_is_refused_with_maf_s_error(case: str) -> None:
    with pytest.raises((ValueError, TypeError)) as theirs:
        maf_orchestrations.MagenticBuilder(**BAD_BUILDS[case]())
    with pytest.raises((ValueError, TypeError)) as ours:
        MagenticBuilder(**BAD_BUILDS[case]())
    assert type(ours.value) is type(theirs.value)
    assert str(ours.value) == str(theirs.value)


BAD_BUILDS_AT_BUILD = {
    "no manager": lambda: {"participants": [_named("a")]},
    "an unknown output participant": lambda: {
        "participants": [_named("a")],
        "manager_agent": _named("m"),
        "intermediate_output_from": ["b"],
    },
    "a participant both output and intermediate": lambda: {
        "participants": [_named("a")],
        "manager_agent": _named("m"),
        "output_from": ["a"],
        "intermediate_output_from": ["a"],
    },
}


@pytest.mark.parametrize("case", sorted(BAD_BUILDS_AT_BUILD))
def test_bad_configuration_is_refused_at_build_with_maf_s_error(case: str) -> None:
    with pytest.raises(ValueError) as theirs:
        maf_orchestrations.MagenticBuilder(**BAD_BUILDS_AT_BUILD[case]()).build()
    with pytest.raises(ValueError) as ours:
        MagenticBuilder(**BAD_BUILDS_AT_BUILD[case]()).build()
    assert str(ours.value) == str(theirs.value)


def test_options_beside_a_custom_manager_are_ignored_with_maf_s_warning(
    caplog: pytest.LogCaptureFixture,
) -> None:
    manager = StandardMagenticManager(_named("m"), max_round_count=7)
    with caplog.at_level(logging.WARNING):
        workflow = MagenticBuilder(
            participants=[_named("a")], manager=manager, max_round_count=2
        ).build()
    assert "Custom manager provided; all other manager arguments will be ignored." in caplog.text
    orchestrator = workflow.executors["magentic_orchestrator"]
    assert orchestrator._max_rounds == 7


def test_the_built_graph_is_a_star_around_the_orchestrator_named_magentic() -> None:
    team = Team("ours", [])
    workflow = team.workflow
    assert workflow.name == "Magentic"
    assert workflow.start_executor.id == "magentic_orchestrator"
    assert sorted(workflow.executors) == ["CoderAgent", "ResearcherAgent", "magentic_orchestrator"]
    assert all(
        isinstance(workflow.executors[name], magentic.MagenticAgentExecutor)
        for name in ("CoderAgent", "ResearcherAgent")
    )
    renamed = MagenticBuilder(
        participants=[_named("a")], manager_agent=_named("m"), name="Research"
    ).build()
    assert renamed.name == "Research"


async def test_each_build_with_a_manager_agent_gets_a_new_standard_manager() -> None:
    builder = MagenticBuilder(participants=[_named("a")], manager_agent=_named("m"))
    first = builder.build().executors["magentic_orchestrator"]
    second = builder.build().executors["magentic_orchestrator"]
    assert first._manager is not second._manager
    assert isinstance(first._manager, StandardMagenticManager)
    made: list[Agent] = []

    def manager_agent_factory() -> Agent:
        made.append(_named("m"))
        return made[-1]

    MagenticBuilder(
        participants=[_named("a")], manager_agent_factory=manager_agent_factory, max_stall_count=5
    ).build()
    assert len(made) == 1


# endregion

# region Task input


@pytest.mark.parametrize(
    "task",
    [
        [Message("user", ["one"]), Message("user", ["two"])],
        Message("user", ["   "]),
    ],
    ids=["two messages", "no text"],
)
async def test_a_task_magentic_cannot_take_fails_the_run_as_in_maf(task: Any) -> None:
    failures = []
    for engine in ("maf", "ours"):
        team = Team(engine, [])
        with pytest.raises(Exception) as raised:
            await team.workflow.run(task)
        failures.append(str(raised.value))
    expected = (
        "Magentic only support a single task message to start the workflow."
        if isinstance(task, list)
        else "Magentic task message must contain non-empty text."
    )
    assert all(expected in failure for failure in failures)


async def test_a_finished_workflow_refuses_a_second_task() -> None:
    team = Team("ours", HAPPY_MANAGER)
    await team.workflow.run(TASK)
    with pytest.raises(Exception, match="already been completed"):
        await team.workflow.run("Another task")


# endregion

# region Plan review


async def test_an_approved_plan_starts_the_rounds_as_in_maf() -> None:
    results = {}
    for engine in ("maf", "ours"):
        team = Team(engine, HAPPY_MANAGER, enable_plan_review=True)
        first = await collect(team.workflow, True, message=TASK)
        request = next(e for e in first if e.type == "request_info")
        assert isinstance(request.data, ENGINES[engine].orch.MagenticPlanReviewRequest)
        assert request.data.current_progress is None and request.data.is_stalled is False
        assert request.data.plan.text.startswith("\nWe are working to address")
        rest = await collect(
            team.workflow, True, responses={request.request_id: request.data.approve()}
        )
        results[engine] = (
            [label(e) for e in first + rest],
            output_texts(rest),
            prompts(team.manager),
        )
    assert results["ours"] == results["maf"]
    assert results["ours"][1] == [FINAL]


REVISED_MANAGER = [
    FACTS,
    PLAN,
    "1. GIVEN OR VERIFIED FACTS\n- Sources must be cited.",
    "- ResearcherAgent: find cited figures.",
    ledger("ResearcherAgent", "Find cited figures."),
    ledger("ResearcherAgent", done=True),
    FINAL,
]


async def test_a_revised_plan_is_replanned_and_reviewed_again_as_in_maf() -> None:
    results = {}
    for engine in ("maf", "ours"):
        team = Team(engine, REVISED_MANAGER, enable_plan_review=True)
        first = await collect(team.workflow, False, message=TASK)
        request = next(e for e in first if e.type == "request_info")
        second = await collect(
            team.workflow,
            False,
            responses={request.request_id: request.data.revise("Cite sources.")},
        )
        again = next(e for e in second if e.type == "request_info")
        assert again.data.plan.text.endswith("- ResearcherAgent: find cited figures.\n")
        assert again.data.is_stalled is False
        third = await collect(
            team.workflow, False, responses={again.request_id: again.data.approve()}
        )
        events = first + second + third
        results[engine] = ([label(e) for e in events], output_texts(third), prompts(team.manager))
    assert results["ours"] == results["maf"]
    assert magentic_kinds(third) == ["progress_ledger_updated", "progress_ledger_updated"]
    feedback_seen = [text for _, _, text in results["ours"][2][2]]
    assert "Cite sources." in feedback_seen


# endregion

# region Stalls, resets and limits

STALLING_MANAGER = [
    FACTS,
    PLAN,
    ledger("ResearcherAgent", "Find the figures.", progress=False),
    ledger("ResearcherAgent", "Find the figures again.", loop=True),
    "1. GIVEN OR VERIFIED FACTS\n- The first source was unreachable.",
    "- CoderAgent: estimate from parameter counts.",
    ledger("CoderAgent", "Estimate from parameter counts."),
    ledger("CoderAgent", done=True),
    FINAL,
]


@pytest.mark.parametrize("stream", [False, True], ids=["run", "stream"])
async def test_a_stall_resets_the_team_and_replans_as_in_maf(stream: bool) -> None:
    options = {"max_stall_count": 1, "researcher": ["No source found."], "coder": ["About 13 kWh."]}
    maf = await run_on("maf", STALLING_MANAGER, stream, **options)
    ours = await run_on("ours", STALLING_MANAGER, stream, **options)

    assert [label(e) for e in ours.events] == [label(e) for e in maf.events]
    assert output_texts(ours.events) == [FINAL]
    assert magentic_kinds(ours.events) == [
        "plan_created",
        "progress_ledger_updated",
        "progress_ledger_updated",
        "replanned",
        "progress_ledger_updated",
        "progress_ledger_updated",
    ]
    for model in ("manager", "researcher", "coder"):
        assert prompts(getattr(ours.team, model)) == prompts(getattr(maf.team, model))
    # After the reset the manager sees only the new ledger, not the stalled attempt.
    after_reset = prompts(ours.team.manager)[6]
    assert [author for _, author, _ in after_reset[:-1]] == ["magentic_manager"]
    assert "estimate from parameter counts" in after_reset[0][2]
    # And the coder, reset too, was given only its instruction (not the researcher's turn).
    assert [text for _, _, text in prompts(ours.team.coder)[0]] == [
        "Estimate from parameter counts."
    ]


async def test_a_stall_with_plan_review_asks_for_review_with_the_stalled_ledger() -> None:
    manager = STALLING_MANAGER
    results = {}
    for engine in ("maf", "ours"):
        team = Team(
            engine, manager, enable_plan_review=True, max_stall_count=1, researcher=["None."]
        )
        first = await collect(team.workflow, True, message=TASK)
        request = next(e for e in first if e.type == "request_info")
        second = await collect(
            team.workflow, True, responses={request.request_id: request.data.approve()}
        )
        stalled = next(e for e in second if e.type == "request_info")
        assert stalled.data.is_stalled is True
        assert stalled.data.current_progress.is_in_loop.answer is True
        third = await collect(
            team.workflow, True, responses={stalled.request_id: stalled.data.approve()}
        )
        results[engine] = [label(e) for e in first + second + third], output_texts(third)
    assert results["ours"] == results["maf"]


async def test_the_reset_limit_ends_the_run_with_maf_s_message() -> None:
    script = STALLING_MANAGER[:6]
    texts = []
    for engine in ("maf", "ours"):
        run = await run_on(
            engine, script, False, max_stall_count=1, max_reset_count=1, researcher=["None."]
        )
        texts.append(output_texts(run.events))
    assert texts[0] == texts[1] == ["Workflow terminated due to reaching maximum reset count."]


async def test_the_round_limit_ends_the_run_with_maf_s_message() -> None:
    script = HAPPY_MANAGER[:3]
    results = []
    for engine in ("maf", "ours"):
        run = await run_on(engine, script, True, max_round_count=1)
        results.append(([label(e) for e in run.events], output_texts(run.events)))
        assert run.team.manager.remaining == 0
    assert results[0] == results[1]
    assert results[1][1] == ["Workflow terminated due to reaching maximum round count."]


async def test_an_unknown_next_speaker_is_asked_again_then_ends_the_run_with_an_answer() -> None:
    script = [FACTS, PLAN, ledger("Nobody"), ledger("Nobody"), FINAL]
    results = []
    for engine in ("maf", "ours"):
        team = Team(engine, script)
        team.workflow.executors["magentic_orchestrator"]._manager.progress_ledger_retry_count = 2
        events = await collect(team.workflow, False, message=TASK)
        results.append(([label(e) for e in events], output_texts(events)))
    assert results[0] == results[1]
    assert results[1][1] == [FINAL]


async def test_a_ledger_that_never_parses_resets_the_team() -> None:
    script = [FACTS, PLAN, "no json here", "still none", "facts again", "plan again"]
    results = []
    for engine in ("maf", "ours"):
        team = Team(engine, script, max_reset_count=1)
        team.workflow.executors["magentic_orchestrator"]._manager.progress_ledger_retry_count = 2
        events = await collect(team.workflow, False, message=TASK)
        results.append(([label(e) for e in events], output_texts(events)))
    assert results[0] == results[1]
    assert results[1][1] == ["Workflow terminated due to reaching maximum reset count."]


# endregion

# region The model's JSON


@pytest.mark.parametrize(
    ("reply", "expected"),
    [
        ('{"a": 1}', {"a": 1}),
        ('Sure:\n```json\n{"a": true}\n```\nDone.', {"a": True}),
        ('{"a": True, "b": None}', {"a": True, "b": None}),
        ("{'a': 'single quotes'}", {"a": "single quotes"}),
        (
            'Prefix {"code": "if x { y }", "n": {"m": 2}} suffix {"x": 3}',
            {"code": "if x { y }", "n": {"m": 2}},
        ),
    ],
)
def test_the_progress_ledger_is_read_from_what_models_really_write(
    reply: str, expected: dict[str, Any]
) -> None:
    from agent_framework_orchestrations._magentic import _extract_json

    assert extract_json_object(reply) == _extract_json(reply) == expected


@pytest.mark.parametrize("reply", ["no braces", '{"a": 1', "{not json at all}"])
def test_a_reply_without_a_json_object_is_refused(reply: str) -> None:
    with pytest.raises(ValueError):
        extract_json_object(reply)


# endregion

# region Checkpoints and resume


def _messages_from(checkpoint: Any, source: str) -> list[Any]:
    return [m.data for m in checkpoint.messages.get(source, [])]


async def test_a_run_resumes_mid_way_in_a_fresh_workflow_without_asking_for_done_steps(
    tmp_path: Path,
) -> None:
    storage = FileCheckpointStorage(tmp_path)
    first = Team("ours", HAPPY_MANAGER, checkpoint_storage=storage)
    await first.workflow.run(TASK)
    checkpoints = await storage.list_checkpoints(workflow_name="Magentic")
    # The checkpoint where the researcher's answer is on its way to the orchestrator.
    mid = next(
        cp
        for cp in checkpoints
        if any(
            type(data).__name__ == "AgentExecutorResponse"
            for data in _messages_from(cp, "ResearcherAgent")
        )
    )
    assert mid.executor_states["magentic_orchestrator"]["terminated"] is False

    # A new process: new models holding only what is left (two ledgers and the answer).
    resumed = Team("ours", HAPPY_MANAGER[3:], researcher=[], checkpoint_storage=storage)
    events = await collect(resumed.workflow, True, checkpoint_id=mid.checkpoint_id)

    assert output_texts(events) == [FINAL]
    assert len(resumed.manager.calls) == 3 and resumed.manager.remaining == 0
    assert resumed.researcher.calls == []
    assert len(resumed.coder.calls) == 1
    # The restored context is the one the first run had: the manager sees the same prompts.
    assert prompts(resumed.manager) == prompts(first.manager)[3:]


async def test_a_run_paused_at_plan_review_resumes_in_a_fresh_workflow(tmp_path: Path) -> None:
    storage = FileCheckpointStorage(tmp_path)
    first = Team("ours", HAPPY_MANAGER[:2], enable_plan_review=True, checkpoint_storage=storage)
    events = await collect(first.workflow, True, message=TASK)
    asked = next(e for e in events if e.type == "request_info")
    latest = await storage.get_latest(workflow_name="Magentic")
    assert latest is not None and asked.request_id in latest.pending_request_info_events

    resumed = Team("ours", HAPPY_MANAGER[2:], enable_plan_review=True, checkpoint_storage=storage)
    again = await collect(resumed.workflow, True, checkpoint_id=latest.checkpoint_id)
    request = next(e for e in again if e.type == "request_info")
    assert request.request_id == asked.request_id
    assert isinstance(request.data, MagenticPlanReviewRequest)
    assert request.data.plan.text == asked.data.plan.text
    rest = await collect(
        resumed.workflow, True, responses={request.request_id: request.data.approve()}
    )

    assert output_texts(rest) == [FINAL]
    assert resumed.manager.remaining == 0
    # No fact sheet or plan was asked for again: the first call is a progress ledger.
    assert "Please output an answer in pure JSON" in prompts(resumed.manager)[0][-1][2]


async def test_a_revision_after_resume_replans_from_the_restored_task_ledger(
    tmp_path: Path,
) -> None:
    storage = FileCheckpointStorage(tmp_path)
    first = Team("ours", REVISED_MANAGER[:2], enable_plan_review=True, checkpoint_storage=storage)
    await collect(first.workflow, False, message=TASK)
    latest = await storage.get_latest(workflow_name="Magentic")
    assert latest is not None
    manager_state = latest.executor_states["magentic_orchestrator"]["manager_state"]
    assert manager_state["task_ledger"]["facts"].text == FACTS

    resumed = Team("ours", REVISED_MANAGER[2:], enable_plan_review=True, checkpoint_storage=storage)
    again = await collect(resumed.workflow, False, checkpoint_id=latest.checkpoint_id)
    request = next(e for e in again if e.type == "request_info")
    await collect(
        resumed.workflow,
        False,
        responses={request.request_id: request.data.revise("Cite sources.")},
    )
    # The facts update quotes the old fact sheet, which only the checkpoint could have kept.
    assert FACTS in prompts(resumed.manager)[0][-1][2]


async def test_a_run_paused_at_a_stalled_review_resumes_with_the_ledger_that_stalled(
    tmp_path: Path,
) -> None:
    storage = FileCheckpointStorage(tmp_path)
    options: dict[str, Any] = {"enable_plan_review": True, "max_stall_count": 1}
    first = Team(
        "ours", STALLING_MANAGER[:6], researcher=["None."], checkpoint_storage=storage, **options
    )
    events = await collect(first.workflow, False, message=TASK)
    review = next(e for e in events if e.type == "request_info")
    await collect(first.workflow, False, responses={review.request_id: review.data.approve()})
    latest = await storage.get_latest(workflow_name="Magentic")
    assert latest is not None

    resumed = Team("ours", STALLING_MANAGER[6:], checkpoint_storage=storage, **options)
    again = await collect(resumed.workflow, False, checkpoint_id=latest.checkpoint_id)
    stalled = next(e for e in again if e.type == "request_info")
    assert stalled.data.is_stalled is True
    assert stalled.data.current_progress.is_in_loop.answer is True
    rest = await collect(
        resumed.workflow, False, responses={stalled.request_id: stalled.data.approve()}
    )
    assert output_texts(rest) == [FINAL]
    assert resumed.manager.remaining == 0 and resumed.researcher.calls == []


async def test_magentic_events_cross_the_wire_as_json() -> None:
    ours = await run_on("ours", HAPPY_MANAGER, True)
    for event in ours.events:
        if event.type in ("magentic_orchestrator", "group_chat", "output"):
            wire = json.loads(json.dumps(event.to_dict()))
            data = codec.decode(wire["data"])
            assert type(data) is type(event.data)
            if event.type == "magentic_orchestrator":
                assert data.event_type is event.data.event_type


async def test_the_orchestrator_state_survives_the_checkpoint_codec() -> None:
    team = Team("ours", HAPPY_MANAGER, checkpoint_storage=InMemoryCheckpointStorage())
    events = await collect(team.workflow, False, message=TASK)
    assert output_texts(events) == [FINAL]
    orchestrator = team.workflow.executors["magentic_orchestrator"]
    saved = codec.decode(codec.encode(await orchestrator.on_checkpoint_save()))

    fresh = Team("ours", []).workflow.executors["magentic_orchestrator"]
    await fresh.on_checkpoint_restore(saved)
    assert fresh._terminated is True
    assert fresh._magentic_context.to_dict() == orchestrator._magentic_context.to_dict()
    assert fresh._progress_ledger == orchestrator._progress_ledger
    assert fresh._task_ledger.text == orchestrator._task_ledger.text
    assert fresh._round_index == orchestrator._round_index == 3
    assert fresh._manager.task_ledger.plan.text == PLAN


async def test_a_restored_state_in_maf_s_dict_forms_is_read_too() -> None:
    team = Team("ours", HAPPY_MANAGER)
    await team.workflow.run(TASK)
    orchestrator = team.workflow.executors["magentic_orchestrator"]
    state = await orchestrator.on_checkpoint_save()
    state["magentic_context"] = state["magentic_context"].to_dict()
    state["task_ledger"] = state["task_ledger"].to_dict()
    state["progress_ledger"] = state["progress_ledger"].to_dict()
    ledger_state = state["manager_state"]["task_ledger"]
    state["manager_state"] = {"task_ledger": {k: v.to_dict() for k, v in ledger_state.items()}}
    fresh = Team("ours", []).workflow.executors["magentic_orchestrator"]
    await fresh.on_checkpoint_restore(state)
    assert fresh._magentic_context.to_dict() == orchestrator._magentic_context.to_dict()
    assert fresh._manager.task_ledger.facts.text == FACTS


# endregion

# region Participants


@tool(approval_mode="always_require")
def lookup(topic: str) -> str:
    """Look a topic up."""
    return f"facts about {topic}"


async def test_a_participant_s_tool_approval_pauses_the_team_as_in_maf() -> None:
    manager_script = [*HAPPY_MANAGER[:3], ledger("ResearcherAgent", done=True), FINAL]
    results = {}
    for engine in ("maf", "ours"):
        manager = ScriptedChatClient(manager_script, name="manager-model")
        model = ScriptedChatClient(
            [ToolCall("lookup", {"topic": "ResNet"}), "Found: facts about ResNet"], name="r"
        )
        researcher = Agent(client=model, name="ResearcherAgent", tools=[lookup])
        workflow = (
            ENGINES[engine]
            .orch.MagenticBuilder(
                participants=[researcher], manager_agent=Agent(client=manager, name="M")
            )
            .build()
        )
        first = await collect(workflow, True, message=TASK)
        asked = next(e for e in first if e.type == "request_info")
        assert asked.data.type == "function_approval_request"
        answer = asked.data.to_function_approval_response(approved=True)
        rest = await collect(workflow, True, responses={asked.request_id: answer})
        events = first + rest
        results[engine] = (
            [label(e) for e in events],
            output_texts(rest),
            prompts(manager),
            prompts(model),
        )
    assert results["ours"] == results["maf"]
    assert results["ours"][1] == [FINAL]


async def test_a_reset_makes_an_agent_participant_forget_its_attempt() -> None:
    agent = Agent(client=ScriptedChatClient([]), name="ResearcherAgent")
    executor = magentic.MagenticAgentExecutor(agent)
    old_session = executor._session
    executor._cache.append(Message("user", ["old instruction"]))
    executor._full_conversation.append(Message("assistant", ["old answer"]))
    executor._pending_agent_requests["r1"] = Content.from_text("waiting")
    executor._pending_request_order.append("r1")
    workflow = MagenticBuilder(participants=[executor], manager=ScriptedManager([])).build()
    assert workflow.executors["ResearcherAgent"] is executor
    await executor.handle_magentic_reset(MagenticResetSignal(), None)  # type: ignore[arg-type]
    assert executor._cache == [] and executor._full_conversation == []
    assert executor._pending_agent_requests == {} and executor._pending_request_order == []
    assert executor._session is not old_session


# endregion

# region Custom managers and participants


class ScriptedManager(MagenticManagerBase):
    """A manager without a model: one round for each name, then done."""

    def __init__(self, order: list[str]) -> None:
        super().__init__(max_round_count=5)
        self.order = list(order)
        self.turns = 0

    async def plan(self, magentic_context: MagenticContext) -> Message:
        return Message("assistant", [f"Plan: {', '.join(self.order)}"], author_name="planner")

    async def replan(self, magentic_context: MagenticContext) -> Message:
        return await self.plan(magentic_context)

    async def create_progress_ledger(
        self, magentic_context: MagenticContext
    ) -> MagenticProgressLedger:
        done = self.turns >= len(self.order)
        speaker = self.order[min(self.turns, len(self.order) - 1)]
        self.turns += 1
        item = MagenticProgressLedgerItem
        return MagenticProgressLedger(
            is_request_satisfied=item("", done),
            is_in_loop=item("", False),
            is_progress_being_made=item("", True),
            next_speaker=item("", speaker),
            instruction_or_question=item("", f"Your turn, {speaker}."),
        )

    async def prepare_final_answer(self, magentic_context: MagenticContext) -> Message:
        said = [m.text for m in magentic_context.chat_history if m.author_name == "echo"]
        return Message("assistant", [" | ".join(said)], author_name="planner")

    def on_checkpoint_save(self) -> dict[str, Any]:
        return {"turns": self.turns}

    def on_checkpoint_restore(self, state: dict[str, Any]) -> None:
        self.turns = state["turns"]


class Echo(Executor):
    """A participant that is not an agent: it answers each request with its instruction."""

    def __init__(self) -> None:
        super().__init__("echo")
        self.seen: list[str] = []

    @handler
    async def take_turn(
        self, request: GroupChatRequestMessage, ctx: WorkflowContext[GroupChatResponseMessage]
    ) -> None:
        text = f"echo: {request.additional_instruction}"
        await ctx.send_message(
            GroupChatResponseMessage(Message("assistant", [text], author_name="echo"))
        )

    @handler
    async def follow(
        self, update: GroupChatParticipantMessage | MagenticResetSignal, ctx: WorkflowContext[Never]
    ) -> None:
        self.seen.append(type(update).__name__)


async def test_a_custom_manager_drives_an_executor_participant(tmp_path: Path) -> None:
    storage = FileCheckpointStorage(tmp_path)
    researcher = Agent(client=ScriptedChatClient(["Facts found."]), name="ResearcherAgent")
    workflow = MagenticBuilder(
        participants=[Echo(), researcher],
        manager=ScriptedManager(["echo", "ResearcherAgent", "echo"]),
        checkpoint_storage=storage,
    ).build()
    result = await workflow.run(TASK)
    answer = result.get_outputs()[0]
    assert answer.text == "echo: Your turn, echo. | echo: Your turn, echo."
    latest = await storage.get_latest(workflow_name="Magentic")
    assert latest is not None
    assert latest.executor_states["magentic_orchestrator"]["manager_state"] == {"turns": 4}


async def test_the_standard_manager_warns_of_a_reply_with_several_messages(
    caplog: pytest.LogCaptureFixture,
) -> None:
    class TwoMessages:
        """An agent-shaped stub whose answer holds two messages."""

        name = "two"
        id = "two"
        description = None

        def create_session(self) -> Any:
            return agent_framework.AgentSession()

        async def run(self, messages: Any, **_: Any) -> AgentResponse:
            return AgentResponse(
                messages=[Message("assistant", ["draft"]), Message("assistant", ["final"])]
            )

    manager = StandardMagenticManager(TwoMessages())  # type: ignore[arg-type]
    context = MagenticContext(TASK, [], {"a": "b"})
    with caplog.at_level(logging.WARNING):
        answer = await manager.prepare_final_answer(context)
    assert answer.text == "final"
    assert "Agent returned multiple messages; using the last one." in caplog.text
    with pytest.raises(RuntimeError, match="replan\\(\\) called before plan\\(\\)"):
        await StandardMagenticManager(TwoMessages()).replan(context)  # type: ignore[arg-type]


# endregion
