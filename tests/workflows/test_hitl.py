"""Human in the loop: pausing on ``request_info`` and answering, in this process or another."""

from __future__ import annotations

import gc
import importlib
import json
import subprocess
import sys
import weakref
from dataclasses import dataclass
from decimal import Decimal
from pathlib import Path
from types import ModuleType
from typing import Any, Never

import pytest

from workflows import (
    Executor,
    FileCheckpointStorage,
    InMemoryCheckpointStorage,
    RequestAlreadyAnsweredError,
    RequestError,
    ResponseTypeError,
    RunArgumentsError,
    UnknownRequestError,
    WorkflowBuilder,
    WorkflowContext,
    WorkflowRunState,
    handler,
    response_handler,
)

HERE = Path(__file__).resolve().parent


@dataclass
class Question:
    text: str


@dataclass
class Verdict:
    approved: bool
    by: str = "anonymous"


class Reviewer(Executor):
    """Asks one question per topic; answers become outputs."""

    def __init__(self) -> None:
        super().__init__(id="reviewer")

    @handler
    async def ask(self, topics: list[str], ctx: WorkflowContext[Never, str]) -> None:
        for topic in topics:
            await ctx.request_info(Question(topic), Verdict, request_id=f"q-{topic}")

    @response_handler
    async def on_verdict(
        self, question: Question, verdict: Verdict, ctx: WorkflowContext[Never, str]
    ) -> None:
        word = "yes" if verdict.approved else "no"
        await ctx.yield_output(f"{question.text}={word} by {verdict.by} ({ctx.request_id})")


def review_workflow(storage: Any) -> Any:
    return WorkflowBuilder(
        start_executor=Reviewer(), checkpoint_storage=storage, name="review"
    ).build()


async def paused(storage: Any, topics: list[str]) -> tuple[Any, str]:
    """Run until the workflow waits; returns it and its pause checkpoint id."""
    workflow = review_workflow(storage)
    result = await workflow.run(topics)
    assert result.get_final_state() == WorkflowRunState.IDLE_WITH_PENDING_REQUESTS
    latest = await storage.get_latest(workflow_name="review")
    return workflow, latest.checkpoint_id


# ------------------------------------------------------------------------------- pausing


async def test_a_request_leaves_the_run_idle_with_pending_requests() -> None:
    storage = InMemoryCheckpointStorage()
    result = await review_workflow(storage).run(["budget", "hire"])
    assert result.get_final_state() == WorkflowRunState.IDLE_WITH_PENDING_REQUESTS
    assert WorkflowRunState.IN_PROGRESS_PENDING_REQUESTS in [
        e.state for e in result.status_timeline()
    ]
    requests = result.get_request_info_events()
    assert [r.request_id for r in requests] == ["q-budget", "q-hire"]
    assert requests[0].data == Question("budget")
    assert requests[0].source_executor_id == "reviewer"
    assert requests[0].response_type is Verdict
    json.dumps([r.to_dict() for r in requests])  # crosses a websocket unchanged
    pause = await storage.get_latest(workflow_name="review")
    assert pause.pending_request_ids == ["q-budget", "q-hire"]


async def test_other_branches_keep_running_while_a_request_waits() -> None:
    class Split(Executor):
        @handler
        async def split(self, topics: list[str], ctx: WorkflowContext[list[str]]) -> None:
            await ctx.send_message(topics)

    class Counter(Executor):
        @handler
        async def count(self, topics: list[str], ctx: WorkflowContext[list[str], int]) -> None:
            await ctx.yield_output(len(topics))
            if len(topics) > 1:
                await ctx.send_message(topics[1:])

    split, reviewer, counter = Split(id="split"), Reviewer(), Counter(id="counter")
    workflow = (
        WorkflowBuilder(start_executor=split)
        .add_fan_out_edges(split, [reviewer, counter])
        .add_edge(counter, counter)
        .build()
    )
    result = await workflow.run(["a", "b", "c"])
    assert result.get_outputs() == [3, 2, 1]
    assert result.get_final_state() == WorkflowRunState.IDLE_WITH_PENDING_REQUESTS


# --------------------------------------------------------------------- across processes


@pytest.fixture
def hitl_app(monkeypatch: pytest.MonkeyPatch) -> ModuleType:
    monkeypatch.syspath_prepend(str(HERE))
    return importlib.import_module("hitl_app")


def answer_in_another_process(
    folder: Path, checkpoint_id: str, request_id: str, response: Any
) -> dict[str, Any]:
    code = f"import sys; sys.path.insert(0, {str(HERE)!r}); import hitl_app; hitl_app.answer_main()"
    done = subprocess.run(
        [sys.executable, "-c", code, str(folder), checkpoint_id, request_id, json.dumps(response)],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=folder,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1])


async def test_a_paused_workflow_is_answered_by_a_new_workflow_in_another_process(
    tmp_path: Path, hitl_app: ModuleType
) -> None:
    storage = FileCheckpointStorage(tmp_path)
    workflow = hitl_app.build(storage)
    result = await workflow.run(hitl_app.ExpenseClaim("ada", Decimal("120.50")))
    assert result.get_final_state() == WorkflowRunState.IDLE_WITH_PENDING_REQUESTS
    (request,) = result.get_request_info_events()
    request_id = request.request_id
    pause = await storage.get_latest(workflow_name=hitl_app.WORKFLOW_NAME)
    pause_id, pause_iteration = pause.checkpoint_id, pause.iteration_count
    assert pause.pending_request_ids == [request_id]

    # Drop every object of the pausing side; only the files remain.
    gone = weakref.ref(workflow)
    del workflow, result, request, storage, pause
    gc.collect()
    assert gone() is None

    report = answer_in_another_process(
        tmp_path, pause_id, request_id, {"approved": True, "reviewer": "grace", "note": "ok"}
    )
    assert report == {
        "outputs": ["ada's 120.50 claim approved by grace (asked 1x)"],
        "state": "IDLE",
        "requests": [],
    }
    # The other process left the response-entry checkpoint and the final one behind.
    after = await FileCheckpointStorage(tmp_path).list_checkpoints(
        workflow_name=hitl_app.WORKFLOW_NAME
    )
    entry = next(cp for cp in after if cp.previous_checkpoint_id == pause_id)
    assert entry.metadata["kind"] == "responses"
    assert entry.iteration_count == pause_iteration
    assert entry.answered_request_ids == [request_id] and entry.pending_request_ids == []


async def test_a_second_process_cannot_answer_a_request_that_was_answered(
    tmp_path: Path, hitl_app: ModuleType
) -> None:
    storage = FileCheckpointStorage(tmp_path)
    result = await hitl_app.build(storage).run(hitl_app.ExpenseClaim("bob", Decimal(9)))
    (request,) = result.get_request_info_events()
    pause = await storage.get_latest(workflow_name=hitl_app.WORKFLOW_NAME)
    first = answer_in_another_process(
        tmp_path, pause.checkpoint_id, request.request_id, {"approved": False, "reviewer": "eve"}
    )
    assert first["outputs"] == ["bob's 9 claim rejected by eve (asked 1x)"]
    second = answer_in_another_process(
        tmp_path, pause.checkpoint_id, request.request_id, {"approved": True, "reviewer": "mallory"}
    )
    assert second["error"] == "RequestAlreadyAnsweredError"
    assert request.request_id in second["message"]


async def test_another_process_refuses_an_unknown_request_id(
    tmp_path: Path, hitl_app: ModuleType
) -> None:
    storage = FileCheckpointStorage(tmp_path)
    await hitl_app.build(storage).run(hitl_app.ExpenseClaim("cy", Decimal(1)))
    pause = await storage.get_latest(workflow_name=hitl_app.WORKFLOW_NAME)
    report = answer_in_another_process(
        tmp_path, pause.checkpoint_id, "made-up", {"approved": True, "reviewer": "x"}
    )
    assert report["error"] == "UnknownRequestError" and "made-up" in report["message"]


# ------------------------------------------------------------------------ refused answers


async def test_an_unknown_request_id_is_refused_and_changes_nothing() -> None:
    storage = InMemoryCheckpointStorage()
    _, pause_id = await paused(storage, ["budget"])
    before = await storage.list_checkpoint_ids()
    with pytest.raises(UnknownRequestError, match="nope") as caught:
        await review_workflow(storage).run(
            checkpoint_id=pause_id, responses={"nope": Verdict(True)}
        )
    assert "q-budget" in str(caught.value)  # the message lists what is pending
    assert await storage.list_checkpoint_ids() == before


async def test_answering_a_fresh_instance_without_a_checkpoint_is_refused() -> None:
    with pytest.raises(UnknownRequestError, match="checkpoint_id"):
        await review_workflow(InMemoryCheckpointStorage()).run(
            responses={"q-budget": Verdict(True)}
        )


async def test_a_wrong_response_type_is_refused_and_changes_nothing() -> None:
    storage = InMemoryCheckpointStorage()
    _, pause_id = await paused(storage, ["budget"])
    before = await storage.list_checkpoint_ids()
    for wrong in ["yes", 1, {"unknown_field": 1}, ["approved"], None]:
        with pytest.raises(ResponseTypeError) as caught:
            await review_workflow(storage).run(
                checkpoint_id=pause_id, responses={"q-budget": wrong}
            )
        assert isinstance(caught.value, TypeError) and isinstance(caught.value, RequestError)
        assert "q-budget" in str(caught.value)
    assert await storage.list_checkpoint_ids() == before


async def test_a_json_dict_answer_is_coerced_into_the_declared_dataclass() -> None:
    storage = InMemoryCheckpointStorage()
    _, pause_id = await paused(storage, ["budget"])
    result = await review_workflow(storage).run(
        checkpoint_id=pause_id, responses={"q-budget": {"approved": True, "by": "ada"}}
    )
    assert result.get_outputs() == ["budget=yes by ada (q-budget)"]
    assert result.get_final_state() == WorkflowRunState.IDLE


async def test_one_bad_answer_refuses_the_whole_batch() -> None:
    storage = InMemoryCheckpointStorage()
    _, pause_id = await paused(storage, ["a", "b"])
    with pytest.raises(ResponseTypeError):
        await review_workflow(storage).run(
            checkpoint_id=pause_id, responses={"q-a": Verdict(True), "q-b": "nonsense"}
        )
    result = await review_workflow(storage).run(checkpoint_id=pause_id)
    assert [r.request_id for r in result.get_request_info_events()] == ["q-a", "q-b"]


async def test_a_second_answer_in_the_same_instance_is_refused() -> None:
    storage = InMemoryCheckpointStorage()
    workflow, _ = await paused(storage, ["a", "b"])
    await workflow.run(responses={"q-a": Verdict(True)})
    with pytest.raises(RequestAlreadyAnsweredError, match="q-a"):
        await workflow.run(responses={"q-a": Verdict(False)})
    result = await workflow.run(responses={"q-b": Verdict(False, "bo")})
    assert result.get_outputs() == ["b=no by bo (q-b)"]
    assert result.get_final_state() == WorkflowRunState.IDLE


@pytest.mark.parametrize("storage_kind", ["memory", "file"])
async def test_a_second_answer_from_another_instance_is_refused(
    storage_kind: str, tmp_path: Path
) -> None:
    storage = (
        InMemoryCheckpointStorage() if storage_kind == "memory" else FileCheckpointStorage(tmp_path)
    )
    _, pause_id = await paused(storage, ["a"])
    await review_workflow(storage).run(checkpoint_id=pause_id, responses={"q-a": Verdict(True)})
    with pytest.raises(RequestAlreadyAnsweredError, match="q-a"):
        await review_workflow(storage).run(
            checkpoint_id=pause_id, responses={"q-a": Verdict(False)}
        )


async def test_a_request_answered_twice_in_a_forked_lineage_is_allowed() -> None:
    storage = InMemoryCheckpointStorage()
    _, pause_id = await paused(storage, ["a"])
    await review_workflow(storage).run(checkpoint_id=pause_id, responses={"q-a": Verdict(True)})
    fork = await review_workflow(storage).run(
        checkpoint_id=pause_id, responses={"q-a": Verdict(False, "re")}, run_id="second-opinion"
    )
    assert fork.get_outputs() == ["a=no by re (q-a)"]


async def test_responses_with_a_new_message_are_refused() -> None:
    with pytest.raises(RunArgumentsError):
        await review_workflow(None).run(["a"], responses={"q-a": Verdict(True)})


# -------------------------------------------------------------------- partial and re-emission


async def test_a_partial_answer_leaves_the_rest_pending() -> None:
    storage = InMemoryCheckpointStorage()
    _, pause_id = await paused(storage, ["a", "b", "c"])
    result = await review_workflow(storage).run(
        checkpoint_id=pause_id, responses={"q-b": Verdict(True)}
    )
    assert result.get_outputs() == ["b=yes by anonymous (q-b)"]
    assert result.get_final_state() == WorkflowRunState.IDLE_WITH_PENDING_REQUESTS
    latest = await storage.get_latest(workflow_name="review")
    assert latest.pending_request_ids == ["q-a", "q-c"]
    # The rest are re-emitted on the next resume, and can be answered from there.
    again = await review_workflow(storage).run(checkpoint_id=latest.checkpoint_id)
    assert [r.request_id for r in again.get_request_info_events()] == ["q-a", "q-c"]
    done = await review_workflow(storage).run(
        checkpoint_id=latest.checkpoint_id, responses={"q-a": Verdict(False), "q-c": Verdict(True)}
    )
    assert sorted(done.get_outputs()) == ["a=no by anonymous (q-a)", "c=yes by anonymous (q-c)"]
    assert done.get_final_state() == WorkflowRunState.IDLE


async def test_resume_re_emits_pending_requests_except_those_answered_in_the_same_call() -> None:
    storage = InMemoryCheckpointStorage()
    _, pause_id = await paused(storage, ["a", "b"])
    plain = await review_workflow(storage).run(checkpoint_id=pause_id)
    assert [r.request_id for r in plain.get_request_info_events()] == ["q-a", "q-b"]
    assert plain.get_final_state() == WorkflowRunState.IDLE_WITH_PENDING_REQUESTS
    answering = await review_workflow(storage).run(
        checkpoint_id=pause_id, responses={"q-a": Verdict(True)}
    )
    assert [r.request_id for r in answering.get_request_info_events()] == ["q-b"]
    assert answering.get_outputs() == ["a=yes by anonymous (q-a)"]


async def test_answers_write_a_response_entry_checkpoint_at_the_pause_iteration() -> None:
    storage = InMemoryCheckpointStorage()
    _, pause_id = await paused(storage, ["a", "b"])
    pause = await storage.load(pause_id)
    result = await review_workflow(storage).run(
        checkpoint_id=pause_id, responses={"q-a": Verdict(True)}
    )
    entry = await storage.load(result.get_checkpoint_ids()[0])
    entry = await storage.load(entry.previous_checkpoint_id)
    assert entry.previous_checkpoint_id == pause_id
    assert entry.metadata["kind"] == "responses"
    assert entry.iteration_count == pause.iteration_count
    assert entry.run_id == pause.run_id
    assert entry.pending_request_ids == ["q-b"] and entry.answered_request_ids == ["q-a"]
    (message,) = entry.message_list()
    assert message.kind == "response" and message.data == Verdict(True)
    assert message.request is not None and message.request.request_id == "q-a"
    # Resuming the response-entry checkpoint replays the consuming superstep.
    replay = await review_workflow(storage).run(checkpoint_id=entry.checkpoint_id, run_id="replay")
    assert replay.get_outputs() == ["a=yes by anonymous (q-a)"]


class Reviser(Executor):
    """Asks for review under a fixed request id; asks again (same id) until approved."""

    def __init__(self) -> None:
        super().__init__(id="reviser")
        self.rounds = 0

    @handler
    async def start(self, draft: str, ctx: WorkflowContext[Never, str]) -> None:
        await ctx.request_info(Question(draft), Verdict, request_id="review-doc-1")

    @response_handler
    async def reviewed(
        self, question: Question, verdict: Verdict, ctx: WorkflowContext[Never, str]
    ) -> None:
        self.rounds += 1
        if verdict.approved:
            await ctx.yield_output(f"accepted after {self.rounds}")
        else:
            await ctx.request_info(
                Question(question.text + "+"), Verdict, request_id="review-doc-1"
            )


async def test_a_request_id_asked_again_after_its_answer_is_answerable_or_refused_when_asked() -> (
    None
):
    # Either the second ask with a used id fails at once, or its answer is accepted; a pending
    # request that can never be answered would strand the run.
    workflow = WorkflowBuilder(
        start_executor=Reviser(), checkpoint_storage=InMemoryCheckpointStorage(), name="revise"
    ).build()
    await workflow.run("draft")
    try:
        await workflow.run(responses={"review-doc-1": Verdict(False)})
    except ValueError as refused:
        assert "review-doc-1" in str(refused)
        return
    assert list(workflow.pending_requests) == ["review-doc-1"]
    final = await workflow.run(responses={"review-doc-1": Verdict(True)})
    assert final.get_outputs() == ["accepted after 2"]
