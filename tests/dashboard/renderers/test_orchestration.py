"""Orchestrations drawn from their events, as the run's log keeps them: a handoff's chain, a
group chat's speaker per round, a Magentic plan and its progress ledgers, each up to a
checkpoint's superstep when asked."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from typing import Any

import pytest
from agent_framework import Agent

from dashboard.demo import agents
from dashboard.renderers.orchestration import Handoff, orchestration_of
from workflows import InMemoryCheckpointStorage, Workflow
from workflows.agents.local_chat import LocalChatClient
from workflows.orchestrations import GroupChatBuilder, GroupChatState

Event = tuple[str, Mapping[str, Any]]


@pytest.fixture(autouse=True)
def fast_model(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(agents, "_WORD_DELAY", 0.0)


def logged(workflow: Workflow, *args: Any, **kwargs: Any) -> list[Event]:
    """Run ``workflow`` and keep its events as the worker logs them (codec JSON)."""

    async def run() -> list[Event]:
        found = []
        async for event in workflow.run(*args, stream=True, **kwargs):
            stored = event.to_dict()
            found.append((str(stored.pop("type")), stored))
        return found

    return asyncio.run(run())


def test_a_handoff_run_says_who_handed_off_to_whom_and_when() -> None:
    events = logged(agents.build_handoff_triage(), "My invoice shows a double charge")

    drawn = orchestration_of(events)

    assert drawn.handoffs[0] == Handoff("triage", "billing", 1)
    assert [h.superstep for h in drawn.handoffs] == sorted(h.superstep or 0 for h in drawn.handoffs)
    assert orchestration_of(events, up_to=1).handoffs == drawn.handoffs[:1]
    assert not drawn.rounds and not drawn.plans


def test_a_group_chat_shows_who_was_asked_to_speak_in_each_round() -> None:
    def member(name: str) -> Agent[Any]:
        return Agent(client=LocalChatClient(name="local"), name=name, description=name)

    def next_speaker(state: GroupChatState) -> str:
        names = list(state.participants)
        return names[state.current_round % len(names)]

    workflow = GroupChatBuilder(
        participants=[member("pro"), member("con"), member("judge")],
        selection_func=next_speaker,
        max_rounds=4,
    ).build()

    drawn = orchestration_of(logged(workflow, "Should tests wait on sleeps?"))

    assert [(r.number, r.speakers) for r in drawn.rounds] == [
        (1, ("pro",)),
        (2, ("con",)),
        (3, ("judge",)),
        (4, ("pro",)),
    ]


def test_a_magentic_run_shows_its_plan_and_a_ledger_per_round() -> None:
    storage = InMemoryCheckpointStorage()
    first = logged(agents.build_product_brief(storage), "A brief for a run dashboard")
    [request] = [data for kind, data in first if kind == "request_info"]
    paused = orchestration_of(first)
    assert paused.plan is not None and "1. analyst:" in paused.plan.text and not paused.ledgers

    async def latest() -> str:
        [checkpoint] = sorted(await storage.list_checkpoints(), key=lambda c: -c.iteration_count)[
            :1
        ]
        return checkpoint.checkpoint_id

    from workflows.orchestrations import MagenticPlanReviewResponse

    rest = logged(
        agents.build_product_brief(storage),
        checkpoint_id=asyncio.run(latest()),
        responses={request["request_id"]: MagenticPlanReviewResponse.approve()},
    )
    drawn = orchestration_of(first + rest)

    assert [ledger.next_speaker for ledger in drawn.ledgers] == [
        "analyst",
        "writer",
        "reviewer",
        "reviewer",
    ]
    assert [ledger.satisfied for ledger in drawn.ledgers] == [False, False, False, True]
    assert drawn.plan == paused.plan
    cut = drawn.ledgers[1].superstep
    assert len(orchestration_of(first + rest, up_to=cut).ledgers) == 2
