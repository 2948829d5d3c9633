"""``workflows.orchestrations.base_group_chat`` against MAF 1.23's base group chat orchestrator.

A user's own orchestrator (a subclass of ``BaseGroupChatOrchestrator`` given to
``GroupChatBuilder(orchestrator=...)``) drives an agent and a custom executor on both engines;
the outputs, the events (``group_chat`` payloads included) and what each participant received
must be the same. The registry, the completion shapes, the checkpoint state and a resume in a
fresh workflow are checked on ours.
"""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any

import agent_framework
import agent_framework.orchestrations as maf_orchestrations
import pytest
from agent_framework import Agent, AgentResponse, AgentResponseUpdate, Message
from agent_framework_orchestrations import _base_group_chat_orchestrator as maf_base

import workflows
import workflows.orchestrations as our_orchestrations
from workflows.agents.local_chat import ScriptedChatClient
from workflows.orchestrations import base_group_chat as our_base
from workflows.orchestrations.request_info import AgentApprovalExecutor


@dataclass(frozen=True)
class Engine:
    """One engine's names: its core package, its orchestrations and its base module."""

    name: str
    core: ModuleType
    orchestrations: ModuleType
    base: ModuleType


MAF = Engine("maf", agent_framework, maf_orchestrations, maf_base)
OURS = Engine("ours", workflows, our_orchestrations, our_base)
ENGINES = [MAF, OURS]


# region What a run shows


def describe_data(data: Any) -> Any:
    if isinstance(data, AgentResponse):
        return ("AgentResponse", [(str(m.role), m.author_name, m.text) for m in data.messages])
    if isinstance(data, AgentResponseUpdate):
        return ("AgentResponseUpdate", str(data.role), data.author_name, data.text)
    return type(data).__name__


def describe(event: Any) -> tuple[Any, ...]:
    """An event as both engines can agree on it: type, executor, and its payload's content."""
    if event.type == "group_chat":
        data = event.data
        return (event.type, type(data).__name__, data.round_index, data.participant_name)
    if event.type in ("output", "intermediate", "request_info"):
        return (event.type, event.executor_id, describe_data(event.data))
    return (event.type, getattr(event, "executor_id", None))


async def run_events(workflow: Any, task: Any, *, stream: bool) -> list[Any]:
    if stream:
        return [event async for event in workflow.run(task, stream=True)]
    return list(await workflow.run(task))


def texts(call: list[Message]) -> list[tuple[str, str | None, str]]:
    return [(str(m.role), m.author_name, m.text) for m in call]


# endregion

# region A user's orchestrator and participant, for either engine


def take_turns_class(engine: Engine) -> type[Any]:
    """An orchestrator that asks each participant in turn, with an instruction and metadata."""

    class TakeTurns(engine.orchestrations.BaseGroupChatOrchestrator):
        async def _handle_messages(self, messages: list[Message], ctx: Any) -> None:
            self._append_messages(messages)
            if await self._check_terminate_and_yield(ctx):
                return
            await self._broadcast_messages_to_participants(messages, ctx)
            await self._ask_next(ctx)

        async def _handle_response(self, response: Any, ctx: Any) -> None:
            messages = self._process_participant_response(response)
            self._append_messages(messages)
            if await self._check_terminate_and_yield(ctx):
                return
            if await self._check_round_limit_and_yield(ctx):
                return
            speaker = ctx.get_source_executor_id()
            others = [p for p in self._participant_registry.participants if p != speaker]
            await self._broadcast_messages_to_participants(messages, ctx, participants=others)
            await self._ask_next(ctx)

        async def _ask_next(self, ctx: Any) -> None:
            names = list(self._participant_registry.participants)
            target = names[self._round_index % len(names)]
            await self._send_request_to_participant(
                target,
                ctx,
                additional_instruction=f"Round {self._round_index}: your turn, {target}.",
                metadata={"round": self._round_index},
            )
            self._increment_round()

    return TakeTurns


def note_taker_class(engine: Engine) -> type[Any]:
    """A custom participant: it counts what it hears and answers with the count; what it heard
    is in its checkpoint state."""
    # MAF exports GroupChatParticipantMessage from its base module only. The handlers' ctx is
    # unannotated: MAF checks a ctx annotation even when input= gives the types, and refuses Any.
    orch = engine.base

    class NoteTaker(engine.core.Executor):
        def __init__(self, id: str) -> None:
            super().__init__(id)
            self.heard: list[str] = []
            self.requests: list[tuple[str | None, Any]] = []

        @engine.core.handler(input=orch.GroupChatParticipantMessage)
        async def hear(self, message: Any, ctx) -> None:
            self.heard.extend(m.text for m in message.messages)

        @engine.core.handler(
            input=orch.GroupChatRequestMessage, output=orch.GroupChatResponseMessage
        )
        async def speak(self, request: Any, ctx) -> None:
            self.requests.append((request.additional_instruction, request.metadata))
            said = Message(
                role="assistant", contents=[f"{len(self.heard)} heard"], author_name=self.id
            )
            await ctx.send_message(orch.GroupChatResponseMessage(message=said))

        async def on_checkpoint_save(self) -> dict[str, Any]:
            return {"heard": list(self.heard), "requests": [list(r) for r in self.requests]}

        async def on_checkpoint_restore(self, state: dict[str, Any]) -> None:
            self.heard = list(state["heard"])
            self.requests = [(text, metadata) for text, metadata in state["requests"]]

    return NoteTaker


@dataclass
class Chat:
    workflow: Any
    writer_client: ScriptedChatClient
    notes: Any


def build_chat(
    engine: Engine,
    *,
    max_rounds: int | None = 3,
    termination_condition: Any = None,
    storage: Any = None,
    writer_script: tuple[str, ...] = ("First draft.", "Second draft."),
) -> Chat:
    client = ScriptedChatClient(list(writer_script), name="writer-model")
    writer = Agent(client=client, name="writer", description="Writes drafts")
    notes = note_taker_class(engine)("notes")
    registry = engine.base.ParticipantRegistry([engine.core.AgentExecutor(writer), notes])
    orchestrator = take_turns_class(engine)(
        "turns",
        registry,
        name="Chair",
        max_rounds=max_rounds,
        termination_condition=termination_condition,
    )
    workflow = engine.orchestrations.GroupChatBuilder(
        participants=[writer, notes], orchestrator=orchestrator, checkpoint_storage=storage
    ).build()
    return Chat(workflow, client, notes)


# endregion

# region A custom orchestrator behaves as on MAF


@pytest.mark.parametrize("stream", [False, True], ids=["run", "stream"])
async def test_a_custom_orchestrator_runs_as_on_maf(stream: bool) -> None:
    seen = {}
    for engine in ENGINES:
        chat = build_chat(engine)
        events = await run_events(chat.workflow, "Write a haiku.", stream=stream)
        seen[engine.name] = (
            [describe(event) for event in events],
            [texts(call) for call in chat.writer_client.calls],
            chat.notes.heard,
            chat.notes.requests,
        )
    assert seen["ours"] == seen["maf"]
    events, calls, heard, requests = seen["ours"]
    # The agent got its instruction as a user turn; the executor got it in its envelope.
    assert calls[0][-1] == ("user", None, "Round 0: your turn, writer.")
    assert requests == [("Round 1: your turn, notes.", {"round": 1})]
    assert heard == ["Write a haiku.", "First draft."]
    shape = "AgentResponseUpdate" if stream else "AgentResponse"
    outputs = [event for event in events if event[0] == "output"]
    assert [output[2][0] for output in outputs] == [shape]


async def test_group_chat_events_announce_each_request_and_each_response() -> None:
    chat = build_chat(OURS)
    events = await run_events(chat.workflow, "Write a haiku.", stream=False)
    progress = [describe(e)[1:] for e in events if e.type == "group_chat"]
    assert progress == [
        ("GroupChatRequestSentEvent", 0, "writer"),
        ("GroupChatResponseReceivedEvent", 1, "writer"),
        ("GroupChatRequestSentEvent", 1, "notes"),
        ("GroupChatResponseReceivedEvent", 2, "notes"),
        ("GroupChatRequestSentEvent", 2, "writer"),
        ("GroupChatResponseReceivedEvent", 3, "writer"),
    ]
    # The payloads are registered, so the events serialize for the dashboard.
    for event in events:
        if event.type == "group_chat":
            json.dumps(event.to_dict())


async def test_the_round_limit_ends_the_chat_with_a_warning(
    caplog: pytest.LogCaptureFixture,
) -> None:
    chat = build_chat(OURS, max_rounds=2)
    with caplog.at_level(logging.WARNING):
        result = await chat.workflow.run("Write a haiku.")
    (output,) = result.get_outputs()
    assert texts(output.messages) == [
        ("assistant", "Chair", "The group chat has reached the maximum number of rounds.")
    ]
    assert "TakeTurns reached max_rounds=2; forcing completion." in caplog.text


@pytest.mark.parametrize("engine", ENGINES, ids=lambda e: e.name)
def test_max_rounds_below_one_counts_as_one(engine: Engine) -> None:
    registry = engine.base.ParticipantRegistry([])
    assert take_turns_class(engine)("turns", registry, max_rounds=0)._max_rounds == 1
    assert take_turns_class(engine)("turns", registry)._max_rounds is None


@pytest.mark.parametrize("stream", [False, True], ids=["run", "stream"])
async def test_an_async_termination_condition_ends_the_chat_as_on_maf(stream: bool) -> None:
    async def after_the_notes(conversation: list[Message]) -> bool:
        return any(m.author_name == "notes" for m in conversation)

    seen = {}
    for engine in ENGINES:
        chat = build_chat(engine, max_rounds=None, termination_condition=after_the_notes)
        events = await run_events(chat.workflow, "Write a haiku.", stream=stream)
        seen[engine.name] = [describe(event) for event in events]
    assert seen["ours"] == seen["maf"]
    (output,) = [event for event in seen["ours"] if event[0] == "output"]
    assert "The group chat has reached its termination condition." in str(output)


async def test_a_task_that_already_meets_the_condition_asks_nobody() -> None:
    chat = build_chat(OURS, termination_condition=lambda conversation: True)
    result = await chat.workflow.run("Write a haiku.")
    assert chat.writer_client.calls == []
    (output,) = result.get_outputs()
    assert output.text == "The group chat has reached its termination condition."


@pytest.mark.parametrize("engine", ENGINES, ids=lambda e: e.name)
async def test_an_empty_conversation_is_refused(engine: Engine) -> None:
    chat = build_chat(engine)
    with pytest.raises(ValueError, match="At least one Message is required"):
        await chat.workflow.run([])


async def test_an_orchestrator_without_its_handlers_says_what_is_missing() -> None:
    class Unfinished(our_base.BaseGroupChatOrchestrator):
        pass

    writer = Agent(client=ScriptedChatClient([], name="w"), name="writer")
    orchestrator = Unfinished("unfinished", our_base.ParticipantRegistry([]))
    workflow = our_orchestrations.GroupChatBuilder(
        participants=[writer], orchestrator=orchestrator
    ).build()
    with pytest.raises(NotImplementedError, match="_handle_messages must be implemented"):
        await workflow.run("Hello")


# endregion

# region The registry


def test_the_registry_keeps_order_descriptions_and_which_participants_are_agents() -> None:
    writer = Agent(client=ScriptedChatClient([], name="w"), name="writer", description="Writes")
    silent = Agent(client=ScriptedChatClient([], name="s"), name="silent")
    reviewed = Agent(client=ScriptedChatClient([], name="r"), name="reviewed", description="Rev")
    notes = note_taker_class(OURS)("notes")
    registry = our_base.ParticipantRegistry(
        [
            workflows.AgentExecutor(writer),
            notes,
            workflows.AgentExecutor(silent),
            AgentApprovalExecutor(reviewed),
        ]
    )
    placeholder = our_base.ParticipantRegistry.EMPTY_DESCRIPTION_PLACEHOLDER
    assert list(registry.participants.items()) == [
        ("writer", "Writes"),
        ("notes", placeholder),
        ("silent", placeholder),
        ("reviewed", "Rev"),
    ]
    assert [registry.is_agent(name) for name in registry.participants] == [
        True,
        False,
        True,
        True,
    ]
    assert placeholder == maf_base.ParticipantRegistry.EMPTY_DESCRIPTION_PLACEHOLDER


@pytest.mark.parametrize("engine", ENGINES, ids=lambda e: e.name)
def test_the_registry_refuses_two_participants_with_one_id(engine: Engine) -> None:
    notes = note_taker_class(engine)
    with pytest.raises(ValueError) as refused:
        engine.base.ParticipantRegistry([notes("notes"), notes("notes")])
    assert str(refused.value) == (
        "Participant ID conflict: 'notes' registered as both agent and executor."
    )


# endregion

# region Envelopes and completions


@pytest.mark.parametrize("engine", ENGINES, ids=lambda e: e.name)
def test_the_envelopes_have_mafs_fields_and_defaults(engine: Engine) -> None:
    orch = engine.base
    request = orch.GroupChatRequestMessage()
    assert (request.additional_instruction, request.metadata) == (None, None)
    message = Message(role="user", contents=["hi"])
    assert orch.GroupChatParticipantMessage(messages=[message]).messages == [message]
    assert orch.GroupChatResponseMessage(message=message).message is message
    sent = orch.GroupChatRequestSentEvent(round_index=2, participant_name="a")
    received = orch.GroupChatResponseReceivedEvent(round_index=3, participant_name="b")
    assert (sent.round_index, sent.participant_name) == (2, "a")
    assert (received.round_index, received.participant_name) == (3, "b")


def test_a_response_of_another_kind_is_refused() -> None:
    orchestrator = take_turns_class(OURS)("turns", our_base.ParticipantRegistry([]))
    with pytest.raises(TypeError, match="Unsupported response type"):
        orchestrator._process_participant_response("not an envelope")


# endregion

# region Checkpoints


async def test_the_checkpoint_state_is_an_orchestration_state_with_pattern_metadata() -> None:
    class Counting(take_turns_class(OURS)):
        seen = 0

        def _snapshot_pattern_metadata(self) -> dict[str, Any]:
            return {"seen": self.seen}

        def _restore_pattern_metadata(self, metadata: dict[str, Any]) -> None:
            self.seen = metadata["seen"]

    saved = Counting("turns", our_base.ParticipantRegistry([]), name="Chair")
    saved._append_messages([Message(role="user", contents=["task"])])
    saved._increment_round()
    saved.seen = 7
    state = await saved.on_checkpoint_save()
    assert set(state) == {"conversation", "round_index", "orchestrator_name", "metadata"}
    restored = Counting("turns", our_base.ParticipantRegistry([]))
    await restored.on_checkpoint_restore(state)
    assert texts(restored._get_conversation()) == [("user", None, "task")]
    assert (restored._round_index, restored._name, restored.seen) == (1, "Chair", 7)


async def test_a_custom_orchestrator_resumes_from_a_checkpoint_in_a_fresh_workflow(
    tmp_path: Path,
) -> None:
    storage = workflows.FileCheckpointStorage(tmp_path)
    first = build_chat(OURS, storage=storage)
    await first.workflow.run("Write a haiku.")
    checkpoints = await storage.list_checkpoints(workflow_name=first.workflow.name)
    # The checkpoint after the writer's first turn: its answer is in flight to the orchestrator.
    after_first_turn = next(
        cp for cp in checkpoints if cp.messages.get("writer") and cp.iteration_count == 2
    )

    fresh = build_chat(OURS, storage=storage, writer_script=("Second draft.",))
    resumed = await fresh.workflow.run(checkpoint_id=after_first_turn.checkpoint_id)
    (output,) = resumed.get_outputs()
    assert output.text == "The group chat has reached the maximum number of rounds."
    # The fresh writer was asked once only: its first turn is in its restored conversation.
    (call,) = fresh.writer_client.calls
    assert texts(call) == texts(first.writer_client.calls[1])
    assert fresh.notes.heard == first.notes.heard
    assert fresh.notes.requests == first.notes.requests


# endregion
