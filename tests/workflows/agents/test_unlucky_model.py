"""Agent workflows whose model misbehaves, through MAF's real OpenAI client and a local server.

A model that answers 500, rate-limits, stalls or breaks its stream fails the run the way the
openai SDK and MAF decide (the SDK retries a refused or unanswered request twice; nothing
retries a stream that broke after it started): a ``failed`` event with the error's details and
the exception raised to the caller, and the last checkpoint still resumes once the model
behaves. A cancelled streaming run ends within a second and resumes too. A tool that raises is
reported to the model as MAF reports it. A request raised in one process is answered in
another, and a process killed mid-conversation is resumed by a new one without asking the
model again for the turns it had finished.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import json
import os
import signal
import sys
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).parent))  # the helper modules beside this file

import agent_framework
import openai
from agent_framework.exceptions import ChatClientException
from openai_agents_app import (
    CHAIN_AGENTS,
    CHAIN_NAME,
    CHAIN_PROMPT,
    CHAIN_SCRIPT,
    TRIP_PROMPT,
    TRIP_SCRIPT,
    build_chain,
    build_trip,
    event_labels,
    output_texts,
)
from openai_server import BrokenStream, HttpError, OpenAIServer, Reply, Stall, ToolCall

import workflows
from workflows import FileCheckpointStorage, WorkflowRunState

OUTLINE, DRAFT, POLISHED = CHAIN_SCRIPT
APP = Path(__file__).parent / "openai_agents_app.py"


def asked(server: OpenAIServer) -> list[str]:
    """Which agent each model call was for (the instructions name it)."""
    names = []
    for record in server.requests:
        instructions = record.instructions or ""
        names.append(next(name for name in CHAIN_AGENTS if name in instructions))
    return names


async def run_collecting(workflow: Any, message: Any, events: list[Any], stream: bool) -> Any:
    """Run, keeping every event a stream shows even when the run raises."""
    if not stream:
        return await workflow.run(message)
    async for event in workflow.run(message, stream=True):
        events.append(event)
    return None


async def resume_chain(server: OpenAIServer, storage: FileCheckpointStorage) -> list[str]:
    """A new workflow, built anew, resumed from the chain's latest checkpoint: its outputs.

    Every fault here hits the draft, so that checkpoint is the outline's superstep's: the
    failed or cancelled superstep left none behind.
    """
    latest = await storage.get_latest(workflow_name=CHAIN_NAME)
    assert latest is not None and latest.iteration_count == 1
    fresh = build_chain(workflows, server.responses_client, storage=storage)
    result = await fresh.run(checkpoint_id=latest.checkpoint_id)
    assert result.get_final_state() == WorkflowRunState.IDLE
    return output_texts(result.get_outputs())


def inner_error(error: ChatClientException) -> BaseException:
    """The SDK's error MAF wrapped: its ``inner_exception``, the exception's second argument."""
    inner = error.args[1]
    assert isinstance(inner, BaseException)
    return inner


def failure_of(events: list[Any]) -> Any:
    (failed,) = [event for event in events if event.type == "failed"]
    assert events[-1].type == "status" and events[-1].state == WorkflowRunState.FAILED
    return failed.details


# ----------------------------------------------------------------------- refusals and stalls


@pytest.mark.parametrize("stream", [False, True], ids=["plain", "streamed"])
async def test_a_model_answering_500_is_retried_twice_by_the_sdk_then_the_run_fails(
    tmp_path: Path, stream: bool
) -> None:
    storage = FileCheckpointStorage(tmp_path)
    async with OpenAIServer([OUTLINE, *[HttpError(500)] * 3, DRAFT, POLISHED]) as server:
        workflow = build_chain(workflows, server.responses_client, storage=storage)
        events: list[Any] = []
        with pytest.raises(ChatClientException) as raised:
            await run_collecting(workflow, CHAIN_PROMPT, events, stream)
        assert isinstance(inner_error(raised.value), openai.InternalServerError)
        assert [r.outcome for r in server.requests] == ["answered", *["http 500"] * 3]
        assert workflow.status == WorkflowRunState.FAILED
        if stream:
            details = failure_of(events)
            assert details.error_type == "ChatClientException"
            assert details.executor_id == "draft"
            assert "Error code: 500" in details.message

        assert await resume_chain(server, storage) == [DRAFT, POLISHED]
        assert asked(server) == ["outline", *["draft"] * 3, "draft", "polish"]


async def test_a_rate_limited_call_is_retried_after_the_servers_retry_after() -> None:
    script = [OUTLINE, HttpError(429, retry_after=0.3), DRAFT, POLISHED]
    async with OpenAIServer(script) as server:
        workflow = build_chain(workflows, server.responses_client)
        result = await workflow.run(CHAIN_PROMPT)
    assert output_texts(result.get_outputs()) == [OUTLINE, DRAFT, POLISHED]
    limited, retried = server.requests[1:3]
    assert (limited.outcome, retried.outcome) == ("http 429", "answered")
    assert retried.received_at - limited.received_at >= 0.3
    assert retried.body == limited.body


async def test_a_stalled_model_times_out_three_times_then_the_checkpoint_resumes(
    tmp_path: Path,
) -> None:
    storage = FileCheckpointStorage(tmp_path)
    async with OpenAIServer([OUTLINE, Stall(), Stall(), Stall(), DRAFT, POLISHED]) as server:
        workflow = build_chain(
            workflows, lambda: server.responses_client(timeout=0.5), storage=storage
        )
        events: list[Any] = []
        with pytest.raises(ChatClientException) as raised:
            await run_collecting(workflow, CHAIN_PROMPT, events, stream=True)
        assert isinstance(inner_error(raised.value), openai.APITimeoutError)
        assert failure_of(events).executor_id == "draft"
        stalled = server.requests[1:]
        assert [r.outcome for r in stalled] == ["stalled"] * 3
        # Each attempt waited out the client's 0.5 s timeout before the next one went.
        assert all(b.received_at - a.received_at >= 0.5 for a, b in itertools.pairwise(stalled))

        assert await resume_chain(server, storage) == [DRAFT, POLISHED]
        assert asked(server) == ["outline", *["draft"] * 3, "draft", "polish"]


async def test_a_slow_answer_within_the_timeout_is_only_slow() -> None:
    async with OpenAIServer([OUTLINE, Stall(0.3, then=DRAFT), POLISHED]) as server:
        workflow = build_chain(workflows, lambda: server.responses_client(timeout=2.0))
        result = await workflow.run(CHAIN_PROMPT)
    assert output_texts(result.get_outputs()) == [OUTLINE, DRAFT, POLISHED]
    assert server.count() == 3


# --------------------------------------------------------------------------- broken streams

BROKEN_CAUSES = {
    "drop": openai.APIConnectionError,
    "malformed": json.JSONDecodeError,
    "error": RuntimeError,  # MAF raises it for the API's own "error" event
}


@pytest.mark.parametrize("how", list(BROKEN_CAUSES))
async def test_a_stream_that_breaks_midway_fails_the_run_without_a_retry(
    tmp_path: Path, how: str
) -> None:
    storage = FileCheckpointStorage(tmp_path)
    broken = BrokenStream("this answer never ends", after=6, how=how)
    async with OpenAIServer([OUTLINE, broken, DRAFT, POLISHED]) as server:
        workflow = build_chain(workflows, server.responses_client, storage=storage)
        events: list[Any] = []
        with pytest.raises(ChatClientException) as raised:
            await run_collecting(workflow, CHAIN_PROMPT, events, stream=True)
        assert isinstance(inner_error(raised.value), BROKEN_CAUSES[how])
        details = failure_of(events)
        assert (details.error_type, details.executor_id) == ("ChatClientException", "draft")
        # The words that arrived before the break were already put out.
        partial = [e.data.text for e in events if e.type == "output" and e.executor_id == "draft"]
        assert [text for text in partial if text] == ["this ", "answer "]
        assert [r.outcome for r in server.requests] == ["answered", f"broken: {how}"]

        assert await resume_chain(server, storage) == [DRAFT, POLISHED]
        assert asked(server) == ["outline", "draft", "draft", "polish"]


async def test_a_hang_up_before_any_answer_is_retried_by_the_sdk() -> None:
    script = [OUTLINE, BrokenStream(how="drop"), DRAFT, POLISHED]
    async with OpenAIServer(script) as server:
        workflow = build_chain(workflows, server.responses_client)
        result = await workflow.run(CHAIN_PROMPT)
    assert output_texts(result.get_outputs()) == [OUTLINE, DRAFT, POLISHED]
    assert [r.outcome for r in server.requests[1:3]] == ["broken: drop", "answered"]


@pytest.mark.parametrize("fault", ["500", "broken stream"])
async def test_mafs_engine_fails_the_same_way(fault: str) -> None:
    faults = [HttpError(500)] * 3 if fault == "500" else [BrokenStream(after=6)]
    seen = {}
    for name, engine in {"maf": agent_framework, "ours": workflows}.items():
        async with OpenAIServer([OUTLINE, *faults]) as server:
            workflow = build_chain(engine, server.responses_client)
            events: list[Any] = []
            with pytest.raises(ChatClientException) as raised:
                await run_collecting(workflow, CHAIN_PROMPT, events, stream=True)
        seen[name] = {
            "labels": event_labels(events),
            "error": (type(raised.value), str(raised.value)),
            "failed": [e.details.error_type for e in events if e.type.endswith("failed")],
            "outcomes": [r.outcome for r in server.requests],
        }
    assert seen["ours"] == seen["maf"]
    assert seen["ours"]["failed"] == ["ChatClientException", "ChatClientException"]


# ------------------------------------------------------------------------------- cancelling


@pytest.mark.parametrize("how", ["cancel the task", "aclose the stream"])
async def test_cancelling_a_streaming_run_mid_answer_ends_it_within_a_second(
    tmp_path: Path, how: str
) -> None:
    storage = FileCheckpointStorage(tmp_path)
    held = Reply("Draft: this draft is cut short", hold_after=2)
    async with OpenAIServer([OUTLINE, held, DRAFT, POLISHED]) as server:
        workflow = build_chain(workflows, server.responses_client, storage=storage)
        stream = workflow.run(CHAIN_PROMPT, stream=True)
        tokens: list[str] = []
        two_tokens = asyncio.Event()

        async def consume() -> None:
            async for event in stream:
                if event.type == "output" and event.executor_id == "draft" and event.data.text:
                    tokens.append(event.data.text)
                    if len(tokens) == 2:
                        two_tokens.set()
                        if how == "aclose the stream":
                            return

        task = asyncio.create_task(consume())
        await asyncio.wait_for(two_tokens.wait(), 5)
        await server.wait_until(lambda: server.holding == 1, what="the draft stream held")
        started = time.monotonic()
        if how == "cancel the task":
            task.cancel()
            with pytest.raises(asyncio.CancelledError):
                await asyncio.wait_for(task, 1.0)
        else:
            await task
            await asyncio.wait_for(stream.aclose(), 1.0)
        assert time.monotonic() - started < 1.0
        assert workflow.status == WorkflowRunState.CANCELLED
        assert tokens == ["Draft: ", "this "]

        # The HTTP call was abandoned too: the held answer sees its client hang up.
        await server.wait_until(lambda: server.requests[1].outcome == "client gone", timeout=2)
        assert await resume_chain(server, storage) == [DRAFT, POLISHED]
        assert asked(server) == ["outline", "draft", "draft", "polish"]


# ------------------------------------------------------------------------ a tool that raises


@pytest.mark.parametrize("detailed", [False, True], ids=["default", "detailed errors"])
async def test_a_tool_that_raises_is_reported_to_the_model_and_the_run_goes_on(
    detailed: bool,
) -> None:
    script = [
        ToolCall("lookup_weather", {"city": "Lisbon"}),
        "I could not get the weather; booking anyway.",
        ToolCall("book_trip", {"city": "Lisbon"}),
    ]
    seen: dict[str, Any] = {}
    for name, engine in {"maf": agent_framework, "ours": workflows}.items():
        log: list[str] = []
        async with OpenAIServer(script) as server:

            def client(server: OpenAIServer = server) -> Any:
                configuration = {"include_detailed_errors": detailed}
                return server.responses_client(function_invocation_configuration=configuration)

            workflow = build_trip(
                engine, client, log=log, weather_failure="the weather service is down"
            )
            result = await workflow.run(TRIP_PROMPT)
        seen[name] = {
            "outputs": output_texts(result.get_outputs()),
            "state": result.get_final_state().name,
            "error_sent": server.requests[1].tool_results(),
            "bodies": [r.body for r in server.requests],
            "log": log,
        }
    expected = "Error: Function failed."
    if detailed:
        expected += " Exception: the weather service is down"
    ours = seen["ours"]
    assert ours["error_sent"] == {"call_0001_0": expected}
    assert ours["outputs"] == ["I could not get the weather; booking anyway."]
    assert ours["state"] == "IDLE_WITH_PENDING_REQUESTS"  # went on to the booker's approval
    assert ours["log"] == ["weather:Lisbon"]
    assert ours == seen["maf"]


# -------------------------------------------------------------------------- other processes


@contextlib.asynccontextmanager
async def spawned(server: OpenAIServer, *args: str) -> AsyncIterator[asyncio.subprocess.Process]:
    """The app as a fresh Python pointed at the server; killed on the way out if still alive."""
    # Only the server's settings: an OPENAI_CHAT_MODEL or Azure variable of the machine's
    # would take precedence over them in MAF's client.
    inherited = {k: v for k, v in os.environ.items() if "OPENAI" not in k}
    env = {**inherited, **server.env()}
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        str(APP),
        *args,
        env=env,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    try:
        yield process
    finally:
        if process.returncode is None:
            process.kill()
            await process.communicate()


async def run_app(server: OpenAIServer, *args: str) -> dict[str, Any]:
    async with spawned(server, *args) as process:
        out, err = await asyncio.wait_for(process.communicate(), 30)
    assert process.returncode == 0, err.decode()
    report: dict[str, Any] = json.loads(out.decode().strip().splitlines()[-1])
    return report


async def test_an_approval_raised_in_one_process_is_answered_in_another(tmp_path: Path) -> None:
    async with OpenAIServer(TRIP_SCRIPT) as server:
        paused = await run_app(server, "trip-pause", str(tmp_path))
        assert paused["state"] == "IDLE_WITH_PENDING_REQUESTS"
        assert [name for _, name in paused["requests"]] == ["book_trip"]
        assert paused["tool_log"] == ["weather:Lisbon"]
        assert server.count() == 3

        answered = await run_app(server, "trip-answer", str(tmp_path), "yes")
        assert answered["answered_from"] == 2  # the pause, after the booker's superstep
        assert answered["state"] == "IDLE"
        assert answered["outputs"] == ["Your Lisbon trip is booked (ref LIS-42)."]
        assert answered["tool_log"] == ["book:Lisbon"]  # the approved tool ran in process two
        # One more model call, on the booker's chain that the checkpoint carried across.
        assert server.count() == 4
        last = server.requests[-1]
        assert last.previous_response_id == "resp_0003"
        assert last.tool_results() == {"call_0003_0": "trip to Lisbon booked, ref LIS-42"}


async def test_a_process_killed_mid_conversation_is_resumed_without_asking_done_turns_again(
    tmp_path: Path,
) -> None:
    async with OpenAIServer([OUTLINE, DRAFT, Stall(), POLISHED]) as server:
        async with spawned(server, "chain-run", str(tmp_path)) as doomed:
            await server.wait_until(lambda: server.holding == 1, timeout=20, what="turn 3 stalled")
            doomed.send_signal(signal.SIGKILL)
            await asyncio.wait_for(doomed.wait(), 5)
        assert doomed.returncode == -signal.SIGKILL

        resumed = await run_app(server, "chain-resume", str(tmp_path))
        assert resumed["resumed_from"] == 2  # the checkpoint after the draft's superstep
        assert resumed["state"] == "IDLE"
        assert resumed["outputs"] == [POLISHED]
        # Turns 1 and 2 came from the checkpoint; only the polish turn was asked again.
        assert asked(server) == ["outline", "draft", "polish", "polish"]
        final = server.requests[-1]
        assert final.texts("assistant") == [OUTLINE, DRAFT]
        assert final.texts("user") == [CHAIN_PROMPT]
