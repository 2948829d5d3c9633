"""The agent workflows the OpenAI end-to-end and fault tests run, in the test's process (on
either engine) and as a subprocess: a fresh Python that knows only this file, a checkpoint
folder and the server's address.

- The trip workflow: a ``researcher`` agent with a weather tool, chained to a ``booker`` agent
  whose booking tool needs a person's approval.
- The writing chain: three agents, ``outline`` -> ``draft`` -> ``polish``, one model call each.

Every agent has its own MAF ``OpenAIChatClient``. As a program, with ``OPENAI_BASE_URL``,
``OPENAI_API_KEY`` and ``OPENAI_MODEL`` pointing at the test's server (the clients read them,
as in production), it runs one step and prints one JSON report line::

    python openai_agents_app.py trip-pause FOLDER         # run until the approval request
    python openai_agents_app.py trip-answer FOLDER yes    # answer it from the latest checkpoint
    python openai_agents_app.py chain-run FOLDER          # the test kills this one mid-way
    python openai_agents_app.py chain-resume FOLDER       # resume from the latest checkpoint
"""

from __future__ import annotations

import asyncio
import itertools
import json
import sys
from collections.abc import Callable, Iterable
from types import ModuleType
from typing import Any

from agent_framework import Agent, FunctionTool, tool
from openai_script import ToolCall

import workflows

TRIP_NAME = "openai-trip"
TRIP_PROMPT = "Plan a weekend in Lisbon and book it."
CHAIN_NAME = "openai-writing-chain"
CHAIN_PROMPT = "Write a short note about tide pools."
CHAIN_AGENTS = ("outline", "draft", "polish")

RESEARCHER = "You research destinations. Use the weather tool."
BOOKER = "You book trips. Use the booking tool."

# The model's side of the trip, call by call: weather tool, answer, booking tool, answer.
TRIP_SCRIPT: list[Any] = [
    ToolCall("lookup_weather", {"city": "Lisbon"}),
    "Lisbon will be sunny and 24C this weekend.",
    ToolCall("book_trip", {"city": "Lisbon"}),
    "Your Lisbon trip is booked (ref LIS-42).",
]
CHAIN_SCRIPT = [
    "Outline: pools, creatures, tides.",
    "Draft: Tide pools hold small creatures between the tides.",
    "Polished: Between the tides, pools keep a small world alive.",
]

MakeClient = Callable[[], Any]


def weather_tool(log: list[str], failure: str | None = None) -> FunctionTool:
    @tool
    def lookup_weather(city: str) -> str:
        """Look up the weekend weather for a city."""
        log.append(f"weather:{city}")
        if failure is not None:
            raise ConnectionError(failure)
        return f"sunny, 24C in {city}"

    return lookup_weather


def booking_tool(log: list[str]) -> FunctionTool:
    @tool(approval_mode="always_require")
    def book_trip(city: str) -> str:
        """Book a weekend trip to a city."""
        log.append(f"book:{city}")
        return f"trip to {city} booked, ref LIS-42"

    return book_trip


def build_trip(
    engine: ModuleType,
    make_client: MakeClient,
    *,
    log: list[str],
    storage: Any = None,
    weather_failure: str | None = None,
) -> Any:
    """The trip workflow on ``engine`` (``workflows`` or ``agent_framework``)."""
    researcher = Agent(
        client=make_client(),
        name="researcher",
        instructions=RESEARCHER,
        tools=[weather_tool(log, weather_failure)],
    )
    booker = Agent(
        client=make_client(), name="booker", instructions=BOOKER, tools=[booking_tool(log)]
    )
    return (
        engine.WorkflowBuilder(
            name=TRIP_NAME, start_executor=researcher, checkpoint_storage=storage
        )
        .add_edge(researcher, booker)
        .build()
    )


def build_chain(engine: ModuleType, make_client: MakeClient, *, storage: Any = None) -> Any:
    """The writing chain on ``engine``: each agent rewrites what the previous one wrote."""
    agents = [
        Agent(client=make_client(), name=name, instructions=f"You write the {name}.")
        for name in CHAIN_AGENTS
    ]
    builder = engine.WorkflowBuilder(
        name=CHAIN_NAME, start_executor=agents[0], checkpoint_storage=storage
    )
    for before, after in itertools.pairwise(agents):
        builder = builder.add_edge(before, after)
    return builder.build()


def event_labels(events: Iterable[Any]) -> list[str]:
    """Events as comparable labels: type, who emitted it, what it carries, the state."""
    labels = []
    for event in events:
        label = event.type
        if event.type in ("output", "intermediate", "request_info", "executor_invoked"):
            who = getattr(event, "executor_id", None) or getattr(event, "source_executor_id", "")
            label += f":{who}:{type(event.data).__name__}"
        if event.type == "status":
            label += f":{event.state.name}"
        labels.append(label)
    return labels


def output_texts(outputs: Iterable[Any]) -> list[str]:
    """The texts of outputs: agent responses and streamed updates by their text."""
    return [str(getattr(item, "text", item)) for item in outputs]


# ------------------------------------------------------------------------------ as a program


def _env_client() -> Any:
    from agent_framework.openai import OpenAIChatClient

    # No arguments: OPENAI_BASE_URL, OPENAI_API_KEY and OPENAI_MODEL say where and what.
    client = OpenAIChatClient()
    _clients.append(client)
    return client


_clients: list[Any] = []


async def _latest(storage: Any, name: str) -> Any:
    latest = await storage.get_latest(workflow_name=name)
    if latest is None:
        raise SystemExit(f"no checkpoint of {name!r} in {storage.storage_path}")
    return latest


async def _trip_pause(storage: Any, log: list[str]) -> dict[str, Any]:
    result = await build_trip(workflows, _env_client, log=log, storage=storage).run(TRIP_PROMPT)
    requests = result.get_request_info_events()
    return {
        "state": result.get_final_state().name,
        "outputs": output_texts(result.get_outputs()),
        "requests": [(r.request_id, r.data.function_call.name) for r in requests],
    }


async def _trip_answer(storage: Any, log: list[str], approve: bool) -> dict[str, Any]:
    workflow = build_trip(workflows, _env_client, log=log, storage=storage)  # registers types
    latest = await _latest(storage, TRIP_NAME)
    answers = {
        request_id: event.data.to_function_approval_response(approved=approve)
        for request_id, event in latest.pending_request_info_events.items()
    }
    result = await workflow.run(responses=answers, checkpoint_id=latest.checkpoint_id)
    return {
        "answered_from": latest.iteration_count,
        "state": result.get_final_state().name,
        "outputs": output_texts(result.get_outputs()),
    }


async def _chain(storage: Any, resume: bool) -> dict[str, Any]:
    # Built first: building registers the types the checkpoints hold (agent messages).
    workflow = build_chain(workflows, _env_client, storage=storage)
    report: dict[str, Any] = {}
    if resume:
        latest = await _latest(storage, CHAIN_NAME)
        report["resumed_from"] = latest.iteration_count
        result = await workflow.run(checkpoint_id=latest.checkpoint_id)
    else:
        result = await workflow.run(CHAIN_PROMPT)
    outputs = output_texts(result.get_outputs())
    return {**report, "state": result.get_final_state().name, "outputs": outputs}


async def _main(argv: list[str]) -> dict[str, Any]:
    command, folder = argv[0], argv[1]
    storage = workflows.FileCheckpointStorage(folder)
    log: list[str] = []
    try:
        if command == "trip-pause":
            report = await _trip_pause(storage, log)
        elif command == "trip-answer":
            report = await _trip_answer(storage, log, approve=argv[2] == "yes")
        elif command in ("chain-run", "chain-resume"):
            report = await _chain(storage, resume=command == "chain-resume")
        else:
            raise SystemExit(f"unknown command {command!r}")
    finally:
        for client in _clients:
            await client.client.close()
    return {**report, "tool_log": log}


if __name__ == "__main__":
    print(json.dumps(asyncio.run(_main(sys.argv[1:]))), flush=True)
