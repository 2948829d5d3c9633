"""Human-in-the-loop in functional workflows: ``ctx.request_info`` pauses a run, and the answer
resumes it, in the same workflow object (``responses=``) or from a checkpoint in a freshly built
one (``checkpoint_id=`` with ``responses=``), with the run's lineage kept.
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from workflows import (
    ConcurrentRunError,
    FileCheckpointStorage,
    InMemoryCheckpointStorage,
    ReservedStateKeyError,
    ResponseTypeError,
    RunContext,
    UnknownRequestError,
    WorkflowEvent,
    WorkflowRunState,
    step,
    workflow,
)

pytestmark = pytest.mark.filterwarnings(
    "ignore::agent_framework._feature_stage.ExperimentalWarning"
)

DRAFTS: list[str] = []


@dataclass
class Approval:
    approved: bool
    note: str = ""


@step
async def draft(topic: str) -> str:
    DRAFTS.append(topic)
    return f"draft about {topic}"


@step
async def sign_off(text: str, ctx: RunContext) -> Approval:
    answer: Approval = await ctx.request_info(
        {"text": text}, response_type=Approval, request_id="sign-off"
    )
    return answer


@workflow(name="two-reviews")
async def two_reviews(topic: str, ctx: RunContext) -> str:
    text = await draft(topic)
    edits = await ctx.request_info({"draft": text}, response_type=str, request_id="edit")
    approval = await sign_off(f"{text} + {edits}")
    return f"{text} + {edits}: approved={approval.approved} ({approval.note})"


@pytest.fixture(autouse=True)
def fresh_drafts() -> None:
    DRAFTS.clear()


async def test_a_paused_run_resumes_in_a_fresh_workflow_from_its_checkpoint(
    tmp_path: Path,
) -> None:
    first = two_reviews.build(checkpoint_storage=FileCheckpointStorage(tmp_path))
    paused = await first.run("tea")
    assert [e.request_id for e in paused.get_request_info_events()] == ["edit"]
    latest = await FileCheckpointStorage(tmp_path).get_latest(workflow_name="two-reviews")
    assert latest is not None and list(latest.pending_request_info_events) == ["edit"]

    second = two_reviews.build(checkpoint_storage=FileCheckpointStorage(tmp_path))
    again = await second.run(checkpoint_id=latest.checkpoint_id, responses={"edit": "shorter"})
    assert [e.request_id for e in again.get_request_info_events()] == ["sign-off"]
    latest = await FileCheckpointStorage(tmp_path).get_latest(workflow_name="two-reviews")
    assert latest is not None

    third = two_reviews.build(checkpoint_storage=FileCheckpointStorage(tmp_path))
    done = await third.run(
        checkpoint_id=latest.checkpoint_id,
        responses={"sign-off": {"approved": True, "note": "fine"}},  # JSON, as from a form
    )

    assert done.get_outputs() == ["draft about tea + shorter: approved=True (fine)"]
    assert DRAFTS == ["tea"]
    runs = await FileCheckpointStorage(tmp_path).list_checkpoints(workflow_name="two-reviews")
    assert len({c.run_id for c in runs}) == 1


async def test_answers_given_earlier_in_a_lineage_apply_again_on_resume() -> None:
    # A deliberate difference from MAF 1.23, which forgets earlier answers: resuming at the
    # second request with its answer alone would ask the first question again there.
    storage = InMemoryCheckpointStorage()
    pipeline = two_reviews.build(checkpoint_storage=storage)
    await pipeline.run("tea")
    await pipeline.run(responses={"edit": "shorter"})

    done = await pipeline.run(responses={"sign-off": Approval(True, "ok")})

    assert done.get_outputs() == ["draft about tea + shorter: approved=True (ok)"]
    latest = await storage.get_latest(workflow_name="two-reviews")
    assert latest is not None
    assert latest.state["_functional"]["answers"] == {
        "edit": "shorter",
        "sign-off": Approval(True, "ok"),
    }


async def test_a_new_run_id_forks_a_lineage_from_a_checkpoint() -> None:
    storage = InMemoryCheckpointStorage()
    pipeline = two_reviews.build(checkpoint_storage=storage)
    await pipeline.run("tea", run_id="original")
    paused = await storage.get_latest(workflow_name="two-reviews")
    assert paused is not None and paused.run_id == "original"

    fork = two_reviews.build(checkpoint_storage=storage)
    await fork.run(checkpoint_id=paused.checkpoint_id, responses={"edit": "x"}, run_id="fork")

    assert {c.run_id for c in await storage.list_checkpoints(run_id="fork")} == {"fork"}
    assert len(await storage.list_checkpoints(run_id="original")) == 2  # step + idle, unchanged
    assert fork.run_id == "fork"


async def test_the_workflow_object_knows_what_its_paused_run_waits_for() -> None:
    pipeline = two_reviews.build()
    assert pipeline.pending_requests == {}
    await pipeline.run("tea")

    assert list(pipeline.pending_requests) == ["edit"]
    assert pipeline.pending_requests["edit"].data == {"draft": "draft about tea"}
    assert pipeline.pending_requests["edit"].source_executor_id == "two-reviews"


async def test_an_answer_of_the_wrong_type_fails_the_run_with_a_typed_error() -> None:
    pipeline = two_reviews.build()
    await pipeline.run("tea")
    await pipeline.run(responses={"edit": "ok"})

    with pytest.raises(ResponseTypeError, match="Response type mismatch for request ID sign-off"):
        await pipeline.run(responses={"sign-off": 42})


async def test_answers_without_a_paused_run_are_refused() -> None:
    with pytest.raises(UnknownRequestError, match="no pending request_info events"):
        await two_reviews.build().run(responses={"edit": "x"})


async def test_a_none_answer_is_passed_on_with_a_warning(caplog: pytest.LogCaptureFixture) -> None:
    @workflow
    async def optional(topic: str, ctx: RunContext) -> str:
        answer = await ctx.request_info("anything?", response_type=str, request_id="maybe")
        return f"{topic}:{answer}"

    pipeline = optional.build()
    await pipeline.run("tea")
    with caplog.at_level(logging.WARNING, logger="workflows"):
        done = await pipeline.run(responses={"maybe": None})

    assert done.get_outputs() == ["tea:None"]
    assert any("'maybe'" in r.getMessage() and "None" in r.getMessage() for r in caplog.records)


async def test_state_keys_starting_with_an_underscore_are_refused() -> None:
    @workflow
    async def sneaky(topic: str, ctx: RunContext) -> str:
        ctx.set_state("_functional", {})
        return topic

    with pytest.raises(ReservedStateKeyError, match="reserved for framework"):
        await sneaky.build().run("tea")


async def test_a_second_run_while_one_streams_is_refused_as_a_runtime_error() -> None:
    pipeline = two_reviews.build()
    stream = pipeline.run("tea", stream=True)

    with pytest.raises(ConcurrentRunError, match="already running") as caught:
        pipeline.run("coffee")
    assert isinstance(caught.value, RuntimeError)
    result = await stream.get_final_response()
    assert result.get_final_state() is WorkflowRunState.IDLE_WITH_PENDING_REQUESTS


async def test_requests_from_parallel_steps_are_all_asked_and_all_answered() -> None:
    asked: list[Any] = []

    # It captures ``asked`` (a closure): its calls are named by a replay_key.
    @step(replay_key=lambda reviewer: reviewer)
    async def opinion(reviewer: str, ctx: RunContext) -> str:
        asked.append(reviewer)
        await ctx.add_event(WorkflowEvent("progress", data=reviewer))
        await asyncio.sleep(0)  # both calls are inside their step when the first one asks
        answer: str = await ctx.request_info({"reviewer": reviewer}, str, request_id=reviewer)
        return answer

    @workflow
    async def panel(topic: str) -> list[str]:
        return list(await asyncio.gather(opinion("ann"), opinion("bob")))

    pipeline = panel.build()
    paused = await pipeline.run("tea")
    assert sorted(e.request_id for e in paused.get_request_info_events()) == ["ann", "bob"]

    done = await pipeline.run(responses={"ann": "yes", "bob": "no"})
    assert done.get_outputs() == [["yes", "no"]]
    assert asked == ["ann", "bob", "ann", "bob"]
    assert [e.data for e in paused if e.type == "progress"] == ["ann", "bob"]
