"""Workflows whose orchestrations ask a person for words, for the tests of
``services/message_answers.py``: an agent's answer reviewed (``with_request_info``) and a
Magentic plan signed off, on the local model."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from agent_framework import Agent

from workflows import CheckpointStorage, Workflow
from workflows.agents.local_chat import LocalChatClient
from workflows.orchestrations import MagenticBuilder, SequentialBuilder


def build_reviewed_answer(checkpoint_storage: CheckpointStorage | None = None) -> Workflow:
    writer = Agent(client=LocalChatClient(name="writer-model"), name="writer")
    built: Workflow = (
        SequentialBuilder(participants=[writer], checkpoint_storage=checkpoint_storage)
        .with_request_info()
        .build()
    )
    return built


def build_signed_off_plan(checkpoint_storage: CheckpointStorage | None = None) -> Workflow:
    researcher = Agent(
        client=LocalChatClient(name="researcher-model"),
        name="researcher",
        description="Finds facts.",
    )
    manager = Agent(client=LocalChatClient(name="manager-model"), name="manager")
    built: Workflow = MagenticBuilder(
        participants=[researcher],
        manager_agent=manager,
        enable_plan_review=True,
        max_round_count=2,
        checkpoint_storage=checkpoint_storage,
    ).build()
    return built


@pytest.fixture
def registered_flows(settings: Any, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """These workflows registered (beside the demo's), on a local model that does not wait."""
    from dashboard.demo import agents

    monkeypatch.setattr(agents, "_WORD_DELAY", 0.0)
    settings.SUPERSTEP_WORKFLOWS = {
        name: f"{__name__}.{b.__name__}" for name, b in WORKFLOWS.items()
    }
    yield


# For a server of the browser tests (SUPERSTEP_WORKFLOWS=tests.dashboard.services.message_flows).
WORKFLOWS = {
    "reviewed-answer": build_reviewed_answer,
    "signed-off-plan": build_signed_off_plan,
}
