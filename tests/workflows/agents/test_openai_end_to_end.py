"""Agents in a workflow through MAF's real OpenAI clients, against a local OpenAI-compatible
server: tools run, an approval pauses the run and its answer resumes it, tokens stream as
``output`` events while the server is still sending them, and MAF 1.23's own engine, given the
same workflow and the same model, emits the same events and outputs and sends the model the
same requests."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).parent))  # the helper modules beside this file

import agent_framework
from openai_agents_app import (
    BOOKER,
    RESEARCHER,
    TRIP_PROMPT,
    TRIP_SCRIPT,
    build_trip,
    event_labels,
    output_texts,
)
from openai_server import OpenAIServer, RecordedRequest, Reply

import workflows
from workflows import WorkflowRunState

ENGINES = {"maf": agent_framework, "ours": workflows}
CLIENTS = ("responses", "chat/completions")


def make_client(server: OpenAIServer, kind: str) -> Any:
    return server.responses_client() if kind == "responses" else server.completions_client()


def approvals_for(events: list[Any]) -> dict[str, Any]:
    """An approval for every request among ``events``."""
    return {
        event.request_id: event.data.to_function_approval_response(approved=True)
        for event in events
        if event.type == "request_info"
    }


async def run_trip(engine: Any, server: OpenAIServer, kind: str, stream: bool) -> dict[str, Any]:
    """The trip to its end on ``engine``: run, approve the booking, carry on."""
    log: list[str] = []
    workflow = build_trip(engine, lambda: make_client(server, kind), log=log)
    if stream:
        first = [event async for event in workflow.run(TRIP_PROMPT, stream=True)]
        second = [
            event async for event in workflow.run(responses=approvals_for(first), stream=True)
        ]
    else:
        first = list(await workflow.run(TRIP_PROMPT, include_status_events=True))
        answers = approvals_for(first)
        second = list(await workflow.run(responses=answers, include_status_events=True))
    return {"first": first, "second": second, "log": log, "status": workflow.status}


def texts_of(events: list[Any], executor_id: str) -> list[str]:
    """The non-empty texts ``executor_id`` put out (whole answers, or streamed updates)."""
    return [
        event.data.text
        for event in events
        if event.type == "output" and event.executor_id == executor_id and event.data.text
    ]


# ------------------------------------------------------------------------------- the trip


async def test_a_tool_agent_and_an_approval_agent_run_through_the_openai_responses_client() -> None:
    async with OpenAIServer(TRIP_SCRIPT) as server:
        run = await run_trip(workflows, server, "responses", stream=False)

    first, second = run["first"], run["second"]
    assert texts_of(first, "researcher") == ["Lisbon will be sunny and 24C this weekend."]
    assert first[-1].state == WorkflowRunState.IDLE_WITH_PENDING_REQUESTS
    (request,) = [event for event in first if event.type == "request_info"]
    assert request.source_executor_id == "booker"
    assert request.data.type == "function_approval_request"
    assert request.data.function_call.name == "book_trip"
    assert request.data.function_call.parse_arguments() == {"city": "Lisbon"}

    assert texts_of(second, "booker") == ["Your Lisbon trip is booked (ref LIS-42)."]
    assert run["status"] == WorkflowRunState.IDLE
    assert run["log"] == ["weather:Lisbon", "book:Lisbon"]

    # What the model was sent, call by call.
    lookup, answer, book, booked = server.requests
    assert [r.instructions for r in server.requests] == [RESEARCHER, RESEARCHER, BOOKER, BOOKER]
    assert lookup.texts("user") == [TRIP_PROMPT] and lookup.tool_names == ["lookup_weather"]
    assert answer.previous_response_id == "resp_0001"
    assert answer.tool_results() == {"call_0001_0": "sunny, 24C in Lisbon"}
    # The booker starts a conversation of its own, holding the researcher's.
    assert book.previous_response_id is None
    assert book.texts("user") == [TRIP_PROMPT]
    assert book.texts("assistant") == ["Lisbon will be sunny and 24C this weekend."]
    # The approved call ran, and its result went back on the booker's own chain.
    assert booked.previous_response_id == "resp_0003"
    assert booked.tool_results() == {"call_0003_0": "trip to Lisbon booked, ref LIS-42"}
    assert [r.outcome for r in server.requests] == ["answered"] * 4
    assert server.remaining == 0


async def test_a_scripted_model_answers_from_the_conversation_the_service_recalls() -> None:
    def summarise(request: RecordedRequest) -> str:
        # The researcher's second call sends only the tool result: the rest of the
        # conversation is recalled through previous_response_id, as the service does.
        (result,) = request.tool_results().values()
        (prompt,) = [item for item in request.conversation if item.get("role") == "user"]
        return f"For '{prompt['content'][0]['text']}': {result}."

    script = [TRIP_SCRIPT[0], summarise, *TRIP_SCRIPT[2:]]
    async with OpenAIServer(script) as server:
        run = await run_trip(workflows, server, "responses", stream=False)
    assert texts_of(run["first"], "researcher") == [f"For '{TRIP_PROMPT}': sunny, 24C in Lisbon."]
    assert server.requests[1].items == [
        {"call_id": "call_0001_0", "type": "function_call_output", "output": "sunny, 24C in Lisbon"}
    ]


async def test_an_agents_usage_is_the_usage_the_service_reported() -> None:
    async with OpenAIServer(TRIP_SCRIPT) as server:
        run = await run_trip(workflows, server, "responses", stream=False)
    (researcher,) = [e.data for e in run["first"] if e.type == "output"]
    lookup, answer = server.requests[:2]
    assert lookup.usage is not None and answer.usage is not None
    usage = researcher.usage_details
    assert usage["input_token_count"] == lookup.usage[0] + answer.usage[0]
    assert usage["output_token_count"] == lookup.usage[1] + answer.usage[1]


async def test_streamed_tokens_arrive_as_output_events_while_the_server_is_still_streaming() -> (
    None
):
    # The researcher's answer stops after two words until the test has seen them as events.
    script = list(TRIP_SCRIPT)
    script[1] = Reply("Lisbon will be sunny and 24C this weekend.", hold_after=2)
    async with OpenAIServer(script) as server:
        workflow = build_trip(workflows, server.responses_client, log=[])
        tokens: list[str] = []
        seen_while_held: list[str] = []
        first = []
        async for event in workflow.run(TRIP_PROMPT, stream=True):
            first.append(event)
            if event.type == "output" and event.data.text:
                tokens.append(event.data.text)
                if tokens == ["Lisbon ", "will "]:
                    await server.wait_until(lambda: server.holding == 1, what="the held stream")
                    seen_while_held = list(tokens)
                    server.release()
        second = [e async for e in workflow.run(responses=approvals_for(first), stream=True)]

    assert seen_while_held == ["Lisbon ", "will "]
    # One event per delta, then MAF's closing full text (the API's output_text.done).
    answer = "Lisbon will be sunny and 24C this weekend."
    assert tokens == [*(f"{w} " for w in answer.split()[:-1]), "weekend.", answer]
    assert all(type(e.data).__name__ == "AgentResponseUpdate" for e in first if e.type == "output")
    assert texts_of(second, "booker")[-1] == "Your Lisbon trip is booked (ref LIS-42)."
    assert workflow.status == WorkflowRunState.IDLE
    assert all(r.stream for r in server.requests) and server.count() == 4


async def test_the_chat_completions_client_runs_the_trip_too() -> None:
    async with OpenAIServer(TRIP_SCRIPT) as server:
        run = await run_trip(workflows, server, "chat/completions", stream=True)
    # Chat Completions streams deltas only; they add up to the answer.
    assert "".join(texts_of(run["second"], "booker")) == "Your Lisbon trip is booked (ref LIS-42)."
    assert run["log"] == ["weather:Lisbon", "book:Lisbon"]
    assert server.count("chat/completions") == 4 and server.count("responses") == 0
    booked = server.requests[-1]
    assert booked.instructions == BOOKER
    # Chat Completions keeps no state on the service: the whole conversation is resent, the
    # researcher's tool call included.
    assert booked.texts("user") == [TRIP_PROMPT]
    assert booked.tool_results() == {
        "call_0001_0": "sunny, 24C in Lisbon",
        "call_0003_0": "trip to Lisbon booked, ref LIS-42",
    }


# ------------------------------------------------------------------------------ MAF's engine


@pytest.mark.parametrize("stream", [False, True], ids=["plain", "streamed"])
@pytest.mark.parametrize("kind", CLIENTS)
async def test_mafs_engine_gives_the_same_events_outputs_and_model_requests(
    kind: str, stream: bool
) -> None:
    seen: dict[str, Any] = {}
    for name, engine in ENGINES.items():
        async with OpenAIServer(TRIP_SCRIPT) as server:
            run = await run_trip(engine, server, kind, stream)
        events = run["first"] + run["second"]
        seen[name] = {
            "labels": event_labels(events),
            "outputs": output_texts(e.data for e in events if e.type == "output"),
            "bodies": [r.body for r in server.requests],
            "log": run["log"],
            "status": run["status"].name,
        }
    maf, ours = seen["maf"], seen["ours"]
    assert ours["labels"] == maf["labels"]
    assert ours["outputs"] == maf["outputs"]
    assert ours["log"] == maf["log"] == ["weather:Lisbon", "book:Lisbon"]
    assert ours["status"] == maf["status"] == "IDLE"
    assert ours["bodies"] == maf["bodies"]
