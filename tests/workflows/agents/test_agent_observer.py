"""An observer hears every agent of a run, output executor or not, without changing its events."""

from __future__ import annotations

from typing import Any

import pytest
from agent_framework import Agent, AgentResponse, AgentResponseUpdate

from workflows import InMemoryCheckpointStorage, observing
from workflows.agents.local_chat import LocalChatClient
from workflows.orchestrations import SequentialBuilder

PROMPT = "Write a short report about durable workflows and checkpoints"


class Recorder:
    def __init__(self) -> None:
        self.updates: list[tuple[str, AgentResponseUpdate]] = []
        self.replies: list[tuple[str, AgentResponse]] = []
        self.models: list[str] = []

    def reply_update(self, executor_id: str, update: Any) -> None:
        self.updates.append((executor_id, update))

    def reply_done(self, executor_id: str, response: Any, model: str) -> None:
        self.replies.append((executor_id, response))
        self.models.append(model)


def two_agents() -> Any:
    writer = Agent(client=LocalChatClient(), name="writer")
    editor = Agent(client=LocalChatClient(), name="editor")
    return SequentialBuilder(
        participants=[writer, editor], checkpoint_storage=InMemoryCheckpointStorage()
    ).build()


async def event_kinds(stream: bool, observer: Recorder | None) -> list[tuple[str, str | None]]:
    workflow = two_agents()
    if observer is None:
        events = [e async for e in workflow.run(PROMPT, stream=True)] if stream else None
        if events is None:
            events = list(await workflow.run(PROMPT))
    else:
        with observing(observer):
            if stream:
                events = [e async for e in workflow.run(PROMPT, stream=True)]
            else:
                events = list(await workflow.run(PROMPT))
    return [(e.type, e.executor_id) for e in events]


@pytest.mark.asyncio
async def test_a_streaming_run_reports_each_agents_chunks_and_its_finished_reply_once() -> None:
    recorder = Recorder()
    await event_kinds(stream=True, observer=recorder)

    streamed = {executor for executor, _ in recorder.updates}
    assert streamed == {"writer", "editor"}  # the writer is no output executor, and still heard
    assert [executor for executor, _ in recorder.replies] == ["writer", "editor"]
    assert recorder.models == ["local", "local"]  # the client's model_id
    for executor, reply in recorder.replies:
        chunks = "".join(u.text for e, u in recorder.updates if e == executor)
        assert reply.text == chunks
        usage = reply.usage_details or {}
        assert usage.get("input_token_count", 0) > 0
        assert usage.get("output_token_count", 0) > 0


@pytest.mark.asyncio
async def test_a_run_without_streaming_reports_finished_replies_only() -> None:
    recorder = Recorder()
    await event_kinds(stream=False, observer=recorder)

    assert recorder.updates == []
    assert [executor for executor, _ in recorder.replies] == ["writer", "editor"]


@pytest.mark.asyncio
@pytest.mark.parametrize("stream", [True, False])
async def test_observing_leaves_the_event_stream_as_it_was(stream: bool) -> None:
    assert await event_kinds(stream, Recorder()) == await event_kinds(stream, None)


@pytest.mark.asyncio
async def test_the_observer_ends_with_its_block() -> None:
    recorder = Recorder()
    with observing(recorder):
        pass
    await event_kinds(stream=True, observer=None)
    assert recorder.updates == [] and recorder.replies == []
