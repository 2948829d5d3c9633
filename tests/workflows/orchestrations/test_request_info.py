"""The pieces every orchestration shares behave as MAF 1.23's: review after an agent's turn
(``AgentRequestInfoResponse``, ``AgentApprovalExecutor`` and the review filter), the
participant output designation, ``OrchestrationState`` and the conversation helpers.

Where MAF has the same function, both are called with the same input and must agree, errors
included; the approval executor runs in a small workflow on both engines and again from a
checkpoint in a freshly built one.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import agent_framework as maf
import agent_framework.orchestrations as maf_orchestrations
import pytest
from agent_framework import Agent, AgentResponse, Content, Message
from agent_framework_orchestrations import _orchestration_request_info as maf_request_info
from agent_framework_orchestrations import _orchestrator_helpers as maf_helpers
from agent_framework_orchestrations import _participant_output_config as maf_output

import workflows
from workflows import FileCheckpointStorage, WorkflowBuilder, codec
from workflows.agents.local_chat import ScriptedChatClient
from workflows.orchestrations import (
    AgentRequestInfoResponse,
    OrchestrationState,
    clean_conversation_for_handoff,
    create_completion_message,
)
from workflows.orchestrations.helpers import extract_markdown_fence_bodies
from workflows.orchestrations.participant_output import (
    UNSET,
    coalesce_output_from,
    coerce_intermediate_output_from,
    resolve_participant_output_config,
)
from workflows.orchestrations.request_info import (
    REQUEST_INFO_EXECUTOR_ID,
    AgentApprovalExecutor,
    resolve_request_info_filter,
    validate_request_info_filter,
)

# region AgentRequestInfoResponse and the review filter


def test_request_info_responses_are_built_as_in_maf() -> None:
    pairs = [
        (AgentRequestInfoResponse.approve(), maf_orchestrations.AgentRequestInfoResponse.approve()),
        (
            AgentRequestInfoResponse.from_strings(["shorter", "warmer"]),
            maf_orchestrations.AgentRequestInfoResponse.from_strings(["shorter", "warmer"]),
        ),
    ]
    for ours, theirs in pairs:
        assert [(m.role, m.text) for m in ours.messages] == [
            (m.role, m.text) for m in theirs.messages
        ]
    given = [Message("user", ["keep it"])]
    assert AgentRequestInfoResponse.from_messages(given).messages is given


def test_a_request_info_response_survives_the_checkpoint_codec() -> None:
    response = AgentRequestInfoResponse.from_strings(["more detail"])

    restored = codec.decode(json.loads(json.dumps(codec.encode(response))))

    assert isinstance(restored, AgentRequestInfoResponse)
    assert [m.text for m in restored.messages] == ["more detail"]


def _agent(name: str, script: list[Any] | None = None) -> Agent:
    return Agent(client=ScriptedChatClient(script or ["ok"], name=f"{name}-model"), name=name)


def test_the_review_filter_resolves_names_and_agents_as_in_maf() -> None:
    writer = _agent("writer")
    given: list[Any] = ["editor", writer]

    assert resolve_request_info_filter(given) == maf_request_info.resolve_request_info_filter(given)
    assert resolve_request_info_filter(None) == set() == resolve_request_info_filter([])


def test_the_review_filter_refuses_what_is_not_an_agent_like_maf() -> None:
    with pytest.raises(TypeError) as theirs:
        maf_request_info.resolve_request_info_filter([42])  # type: ignore[list-item]
    with pytest.raises(TypeError) as ours:
        resolve_request_info_filter([42])  # type: ignore[list-item]
    assert str(ours.value) == str(theirs.value)


def test_a_review_filter_naming_a_non_agent_is_refused_naming_it() -> None:
    validate_request_info_filter({"writer"}, ["writer", "editor"])
    validate_request_info_filter(set(), ["writer"])

    with pytest.raises(ValueError, match="'ghost'") as ours:
        validate_request_info_filter({"ghost", "writer"}, ["writer"])
    with pytest.raises(ValueError) as theirs:
        maf_request_info.validate_request_info_filter({"ghost", "writer"}, ["writer"])
    assert str(ours.value) == str(theirs.value)


# endregion

# region AgentApprovalExecutor


def test_an_approval_executor_takes_the_agents_id_and_description() -> None:
    agent = Agent(client=ScriptedChatClient(["x"]), name="editor", description="Edits drafts.")

    executor = AgentApprovalExecutor(agent)

    assert executor.id == "editor"
    assert executor.description == "Edits drafts."
    assert executor.agent is agent
    assert executor.propagate_request and not executor.allow_direct_output
    assert sorted(executor.workflow.executors) == sorted(["editor", REQUEST_INFO_EXECUTOR_ID])


class _Sink(workflows.Executor):
    """Yields what an intermediate approval executor hands on."""

    @workflows.handler
    async def take(
        self, response: workflows.AgentExecutorResponse, ctx: workflows.WorkflowContext[Any, Any]
    ) -> None:
        await ctx.yield_output(response)


class _MafSink(maf.Executor):
    @maf.handler
    async def take(self, response: maf.AgentExecutorResponse, ctx: maf.WorkflowContext) -> None:
        await ctx.yield_output(response)


def _approval_workflow(on_maf: bool, agent: Agent, *, terminal: bool) -> Any:
    """The approval executor as the start; when it is not terminal, a sink shows what it
    hands on."""
    if on_maf:
        approval: Any = maf_request_info.AgentApprovalExecutor(agent, allow_direct_output=terminal)
        builder: Any = maf.WorkflowBuilder(start_executor=approval)
        sink: Any = _MafSink(id="sink")
    else:
        approval = AgentApprovalExecutor(agent, allow_direct_output=terminal)
        builder = WorkflowBuilder(start_executor=approval)
        sink = _Sink(id="sink")
    if not terminal:
        builder.add_edge(approval, sink)
    return builder.build()


async def _review_until_approved(
    workflow: Any, response_type: type, answers: list[list[str]]
) -> list[Any]:
    """Run ``"hi"``; answer each review with the next guidance (empty approves)."""
    result = await workflow.run("hi")
    seen: list[Any] = []
    for guidance in answers:
        [request] = result.get_request_info_events()
        seen.append(request.data)
        answer = response_type.from_strings(guidance) if guidance else response_type.approve()
        result = await workflow.run(responses={request.request_id: answer})
    assert not result.get_request_info_events()
    return [*seen, *result.get_outputs()]


@pytest.mark.parametrize("terminal", [False, True])
async def test_guidance_makes_the_agent_answer_again_and_approval_lets_it_out(
    terminal: bool,
) -> None:
    runs = []
    for on_maf, response_type in (
        (True, maf_orchestrations.AgentRequestInfoResponse),
        (False, AgentRequestInfoResponse),
    ):
        client = ScriptedChatClient(["draft", "better draft"], name="m")
        workflow = _approval_workflow(
            on_maf, Agent(client=client, name="editor"), terminal=terminal
        )
        seen = await _review_until_approved(workflow, response_type, [["shorter"], []])
        runs.append(seen)
        assert [[m.text for m in call] for call in client.calls] == [
            ["hi"],
            ["hi", "draft", "shorter"],
        ]
    theirs, ours = runs
    assert [type(x).__name__ for x in ours] == [type(x).__name__ for x in theirs]
    final = ours[-1]
    if terminal:
        assert isinstance(final, AgentResponse) and final.text == "better draft"
    else:  # handed on as the envelope the next agent executor takes
        assert final.agent_response.text == "better draft"
    assert [r.agent_response.text for r in ours[:2]] == ["draft", "better draft"]


async def test_a_paused_review_resumes_from_a_checkpoint_in_a_fresh_workflow(
    tmp_path: Path,
) -> None:
    def build(script: list[Any]) -> tuple[Any, ScriptedChatClient]:
        client = ScriptedChatClient(script, name="m")
        approval = AgentApprovalExecutor(
            Agent(client=client, name="editor"), allow_direct_output=True
        )
        workflow = WorkflowBuilder(
            start_executor=approval, checkpoint_storage=FileCheckpointStorage(tmp_path)
        ).build()
        return workflow, client

    first, _ = build(["draft"])
    [request] = (await first.run("hi")).get_request_info_events()
    checkpoint = await FileCheckpointStorage(tmp_path).get_latest(workflow_name=first.name)
    assert checkpoint is not None

    fresh, client = build(["better draft"])
    guided = await fresh.run(
        checkpoint_id=checkpoint.checkpoint_id,
        responses={request.request_id: AgentRequestInfoResponse.from_strings(["shorter"])},
    )
    [again] = guided.get_request_info_events()
    done = await fresh.run(responses={again.request_id: AgentRequestInfoResponse.approve()})

    assert [o.text for o in done.get_outputs()] == ["better draft"]
    # The restored conversation is the agent's; only the guided turn asked the model.
    assert [[m.text for m in call] for call in client.calls] == [["hi", "draft", "shorter"]]


# endregion

# region Participant output designation

_IDS = ["a", "b", "c"]


class _Node(workflows.Executor):
    @workflows.handler
    async def take(self, message: str, ctx: workflows.WorkflowContext[str, str]) -> None:
        await ctx.yield_output(message)


def _resolved(function: Any, **kwargs: Any) -> Any:
    nodes = [_Node(id=i) for i in _IDS]
    try:
        outputs, intermediates = function(
            participants=nodes, default_output_from=[nodes[-1]], **kwargs
        )
    except ValueError as error:
        return ("ValueError", str(error))
    return [e.id for e in outputs], [e.id for e in intermediates]


@pytest.mark.parametrize(
    ("output_from", "intermediate_output_from"),
    [
        (None, None),
        ("all", None),
        (None, "all"),
        (None, "all_other"),
        (["a"], "all_other"),
        (["a", "c"], None),
        (None, ["c"]),
        (None, ["a"]),
        (["a"], ["b"]),
        (["a"], ["a"]),
        (["x"], None),
        (None, ["a", "a"]),
        ([], None),
        ([], []),
        ("all", "all"),
    ],
)
def test_participant_outputs_resolve_as_in_maf(
    output_from: Any, intermediate_output_from: Any
) -> None:
    ours = _resolved(
        resolve_participant_output_config,
        output_from=output_from,
        intermediate_output_from=intermediate_output_from,
    )
    theirs = _resolved(
        maf_output._resolve_participant_output_config,
        output_from=output_from,
        intermediate_output_from=intermediate_output_from,
    )
    assert ours == theirs


def test_extra_output_executors_come_first() -> None:
    nodes = [_Node(id=i) for i in _IDS]
    aggregator = _Node(id="aggregator")

    outputs, intermediates = resolve_participant_output_config(
        participants=nodes,
        output_from=["b"],
        intermediate_output_from=None,
        extra_output_executors=[aggregator],
    )

    assert [e.id for e in outputs] == ["aggregator", "b"]
    assert intermediates == []


@pytest.mark.parametrize("value", ["all", "all_other", "everything", None, ["a"]])
def test_output_literals_are_checked_as_in_maf(value: Any) -> None:
    for ours, theirs in (
        (
            lambda: coalesce_output_from(output_from=value),
            lambda: maf_output._coalesce_output_from(output_from=value),
        ),
        (
            lambda: coerce_intermediate_output_from(value),
            lambda: maf_output._coerce_intermediate_output_from(value),
        ),
    ):
        try:
            expected: Any = theirs()
        except ValueError as error:
            with pytest.raises(ValueError) as raised:
                ours()
            assert str(raised.value) == str(error)
        else:
            assert ours() == expected


def test_an_output_selection_not_passed_is_no_selection() -> None:
    assert coalesce_output_from() is None
    assert coalesce_output_from(output_from=UNSET) is None
    assert not UNSET and repr(UNSET) == "UNSET"


# endregion

# region OrchestrationState and helpers


def test_orchestration_state_round_trips_through_its_dict_and_a_checkpoint() -> None:
    state = OrchestrationState(
        conversation=[Message("user", ["plan a trip"]), Message("assistant", ["where to?"])],
        round_index=2,
        orchestrator_name="manager",
        metadata={"stall": 1},
        task=Message("user", ["plan a trip"]),
    )

    as_dict = state.to_dict()
    theirs = maf_orchestrations.OrchestrationState(**vars(state)).to_dict()
    assert sorted(as_dict) == sorted(theirs)
    stored = json.loads(json.dumps(codec.encode(as_dict)))
    restored = OrchestrationState.from_dict(codec.decode(stored))

    assert [m.text for m in restored.conversation] == ["plan a trip", "where to?"]
    assert (restored.round_index, restored.orchestrator_name) == (2, "manager")
    assert restored.metadata == {"stall": 1}
    assert restored.task is not None and restored.task.text == "plan a trip"
    assert OrchestrationState.from_dict({}) == OrchestrationState()
    assert "task" not in OrchestrationState().to_dict()
    whole = codec.decode(json.loads(json.dumps(codec.encode(state))))
    assert isinstance(whole, OrchestrationState) and whole.round_index == 2


def _describe(messages: list[Message]) -> list[Any]:
    return [
        (m.role, m.author_name, [c.type for c in m.contents], m.text, m.additional_properties)
        for m in messages
    ]


def test_a_conversation_is_cleaned_for_handoff_as_in_maf() -> None:
    call = Content.from_function_call(call_id="c1", name="lookup", arguments={"q": "x"})
    conversation = [
        Message(
            "user", ["look it up", Content.from_uri("https://x.test/a.png", media_type="image/png")]
        ),
        Message("assistant", [call], author_name="triage"),
        Message("tool", [Content.from_function_result(call_id="c1", result="found")]),
        Message(
            "assistant",
            ["here it is", Content.from_uri("https://x.test/b.png", media_type="image/png")],
            author_name="triage",
            additional_properties={"k": "v"},
        ),
        Message("assistant", [""]),
    ]

    cleaned = clean_conversation_for_handoff(conversation)

    assert _describe(cleaned) == _describe(maf_helpers.clean_conversation_for_handoff(conversation))
    assert [m.text for m in cleaned] == ["look it up", "here it is"]


def test_completion_messages_are_made_as_in_maf() -> None:
    for kwargs in ({"author_name": "boss"}, {"author_name": "boss", "reason": "stopped"}):
        ours = create_completion_message(**kwargs)
        theirs = maf_orchestrations.create_completion_message(**kwargs)
        assert _describe([ours]) == _describe([theirs])
    assert create_completion_message(text="Done.", author_name="boss").text == "Done."


@pytest.mark.parametrize(
    "text",
    [
        'Here:\n```json\n{"a": 1}\n```\nthanks',
        '```{"a": 1}```',
        '```json\n{"code": "use ``` here"}\n```',
        "````\nouter ```inner``` body\n````",
        "``` \n  \n```\n```python\nprint(1)\n```",
        "```json\n{never closed",
        "no fences at all",
        "```application/json\n[1, 2]\n```   \n",
    ],
)
def test_markdown_fence_bodies_are_found_as_in_maf(text: str) -> None:
    assert extract_markdown_fence_bodies(text) == maf_helpers.extract_markdown_fence_bodies(text)


# endregion
