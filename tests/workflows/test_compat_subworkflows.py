"""MAF compatibility: a whole workflow used as one executor of another (``WorkflowExecutor``).

Written from MAF's documented and observed behaviour: the child runs to completion or idle
inside the parent's superstep; its outputs become the wrapper's messages (or the parent's outputs
with ``allow_direct_output``); its requests reach the parent as ``SubWorkflowRequestMessage`` or,
with ``propagate_request``, as the wrapper's own requests; and the parent's checkpoints carry the
child's whole run, so a parent resumed in a fresh set of objects continues the child exactly.
"""

from __future__ import annotations

import asyncio
import json
import logging
import subprocess
import sys
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Never

import pytest

from workflows import (
    Executor,
    FileCheckpointStorage,
    GraphMismatchError,
    InMemoryCheckpointStorage,
    SubWorkflowRequestMessage,
    SubWorkflowResponseMessage,
    Workflow,
    WorkflowBuilder,
    WorkflowCheckpoint,
    WorkflowContext,
    WorkflowExecutor,
    WorkflowRunState,
    executor,
    handler,
    response_handler,
)

# ----------------------------------------------------------------------------- the child graphs


@dataclass
class DomainCheck:
    domain: str
    email: str
    id: str = field(default_factory=lambda: uuid.uuid4().hex)


@dataclass
class Verdict:
    email: str
    valid: bool


class FormatCheck(Executor):
    @handler
    async def check(self, email: str, ctx: WorkflowContext[DomainCheck, Verdict]) -> None:
        if "@" not in email:
            await ctx.yield_output(Verdict(email, False))
            return
        await ctx.send_message(DomainCheck(email.split("@")[1], email))


class DomainApproval(Executor):
    """Asks outside whether a domain is approved."""

    @handler
    async def ask(self, check: DomainCheck, ctx: WorkflowContext[Never, Verdict]) -> None:
        await ctx.request_info(check, bool)

    @response_handler
    async def answered(
        self, check: DomainCheck, approved: bool, ctx: WorkflowContext[Never, Verdict]
    ) -> None:
        await ctx.yield_output(Verdict(check.email, approved))


def email_workflow() -> Workflow:
    fmt, domain = FormatCheck(id="format"), DomainApproval(id="domain")
    return WorkflowBuilder(start_executor=fmt).add_edge(fmt, domain).build()


class Collect(Executor):
    def __init__(self, id: str = "collect") -> None:
        super().__init__(id)
        self.got: list[Any] = []

    @handler
    async def collect(self, verdict: Verdict, ctx: WorkflowContext[Never, Verdict]) -> None:
        self.got.append(verdict)
        await ctx.yield_output(verdict)


def wrapped(**options: Any) -> tuple[Workflow, Collect]:
    """email workflow wrapped as 'sub', its outputs collected by a parent executor."""
    sub = WorkflowExecutor(email_workflow(), id="sub", **options)
    collect = Collect()
    return WorkflowBuilder(start_executor=sub).add_edge(sub, collect).build(), collect


# --------------------------------------------------------------------------------------- basics


async def test_child_output_reaches_the_next_parent_executor_as_a_message() -> None:
    parent, collect = wrapped()

    result = await parent.run("no-at-sign")

    assert collect.got == [Verdict("no-at-sign", False)]
    assert [(e.executor_id, e.data) for e in result if e.type == "output"] == [
        ("collect", Verdict("no-at-sign", False))
    ]
    assert result.get_final_state() is WorkflowRunState.IDLE


async def test_wrapper_types_come_from_the_child() -> None:
    child = email_workflow()
    sub = WorkflowExecutor(child, id="sub")

    assert sub.workflow is child
    assert sub.input_types == [str, SubWorkflowResponseMessage]
    # a child executor can ask for input, so the wrapper may send its requests on
    assert sub.output_types == [Verdict, SubWorkflowRequestMessage]
    assert sub.can_handle("x@y.z")
    assert not sub.can_handle(42)
    assert sub.to_dict()["workflow"] == child.to_dict()


async def test_allow_direct_output_makes_child_outputs_parent_outputs() -> None:
    sub = WorkflowExecutor(email_workflow(), id="sub", allow_direct_output=True)
    parent = WorkflowBuilder(start_executor=sub).build()

    result = await parent.run("bad")

    assert [(e.executor_id, e.data) for e in result if e.type == "output"] == [
        ("sub", Verdict("bad", False))
    ]


async def test_child_intermediate_outputs_are_re_emitted_under_the_wrapper_id() -> None:
    class Step(Executor):
        @handler
        async def step(self, text: str, ctx: WorkflowContext[str, str]) -> None:
            await ctx.yield_output(f"working on {text}")
            await ctx.send_message(text.upper())

    class Done(Executor):
        @handler
        async def done(self, text: str, ctx: WorkflowContext[Never, str]) -> None:
            await ctx.yield_output(text)

    step, done = Step(id="step"), Done(id="done")
    child = (
        WorkflowBuilder(start_executor=step, output_from=[done], intermediate_output_from=[step])
        .add_edge(step, done)
        .build()
    )
    sub = WorkflowExecutor(child, id="sub", allow_direct_output=True)
    parent = WorkflowBuilder(start_executor=sub).build()

    result = await parent.run("x")

    assert [(e.executor_id, e.data) for e in result if e.type == "intermediate"] == [
        ("sub", "working on x")
    ]
    assert result.get_outputs() == ["X"]


# ----------------------------------------------------------------------- requests: interception


class Coordinator(Executor):
    """Answers the child's domain checks from a cache, and asks outside for the others."""

    def __init__(self, cache: dict[str, bool]) -> None:
        super().__init__("coordinator")
        self.cache = cache
        self.waiting: dict[str, SubWorkflowRequestMessage] = {}
        self.verdicts: list[Verdict] = []

    @handler
    async def start(self, email: str, ctx: WorkflowContext[str]) -> None:
        await ctx.send_message(email)

    @handler
    async def intercept(
        self, request: SubWorkflowRequestMessage, ctx: WorkflowContext[SubWorkflowResponseMessage]
    ) -> None:
        check = request.source_event.data
        assert isinstance(check, DomainCheck)
        if check.domain in self.cache:
            answer = request.create_response(self.cache[check.domain])
            await ctx.send_message(answer, target_id=request.executor_id)
        else:
            self.waiting[check.id] = request
            await ctx.request_info(check, bool)

    @response_handler
    async def outside_answer(
        self, check: DomainCheck, approved: bool, ctx: WorkflowContext[SubWorkflowResponseMessage]
    ) -> None:
        await ctx.send_message(self.waiting.pop(check.id).create_response(approved))

    @handler
    async def collect(self, verdict: Verdict, ctx: WorkflowContext) -> None:
        self.verdicts.append(verdict)

    async def on_checkpoint_save(self) -> dict[str, Any]:
        return {"waiting": self.waiting}

    async def on_checkpoint_restore(self, state: dict[str, Any]) -> None:
        self.waiting = state.get("waiting", {})


def intercepting(cache: dict[str, bool], storage: Any = None) -> tuple[Workflow, Coordinator]:
    coordinator = Coordinator(cache)
    sub = WorkflowExecutor(email_workflow(), id="sub")
    parent = (
        WorkflowBuilder(start_executor=coordinator, checkpoint_storage=storage)
        .add_edge(coordinator, sub)
        .add_edge(sub, coordinator)
        .build()
    )
    return parent, coordinator


async def test_parent_executor_answers_an_intercepted_request_itself() -> None:
    parent, coordinator = intercepting({"example.com": True})

    result = await parent.run("ann@example.com")

    assert result.get_request_info_events() == []
    assert coordinator.verdicts == [Verdict("ann@example.com", True)]


async def test_intercepted_request_forwarded_outside_is_answered_through_the_parent() -> None:
    parent, coordinator = intercepting({})

    first = await parent.run("bob@unknown.org")
    (request,) = first.get_request_info_events()
    assert request.data.domain == "unknown.org"
    assert request.source_executor_id == "coordinator"

    await parent.run(responses={request.request_id: False})

    assert coordinator.verdicts == [Verdict("bob@unknown.org", False)]


async def test_create_response_refuses_an_answer_of_the_wrong_type() -> None:
    seen: list[SubWorkflowRequestMessage] = []

    @executor(id="grab")
    async def grab(request: SubWorkflowRequestMessage, ctx: WorkflowContext) -> None:
        seen.append(request)

    sub = WorkflowExecutor(email_workflow(), id="sub")
    parent = WorkflowBuilder(start_executor=sub).add_edge(sub, grab).build()
    await parent.run("c@d.e")

    (request,) = seen
    assert request.executor_id == "sub"
    assert request.source_event.response_type is bool
    with pytest.raises(TypeError, match="bool"):
        request.create_response("yes")
    assert request.create_response(True).data is True


# ---------------------------------------------------------------- requests: propagate_request


async def test_propagated_request_is_answered_through_the_parent_and_resumes_the_child() -> None:
    parent, collect = wrapped(propagate_request=True)

    first = await parent.run("dan@example.com")
    (request,) = first.get_request_info_events()
    assert request.source_executor_id == "sub"
    assert request.data == DomainCheck("example.com", "dan@example.com", request.data.id)
    assert request.response_type is bool
    # the parent's request keeps the child's request id
    assert list(parent.executors["sub"].workflow.pending_requests) == [request.request_id]
    assert first.get_final_state() is WorkflowRunState.IDLE_WITH_PENDING_REQUESTS

    second = await parent.run(responses={request.request_id: True})

    assert collect.got == [Verdict("dan@example.com", True)]
    assert second.get_final_state() is WorkflowRunState.IDLE


# ------------------------------------------------------------------------------- checkpoints


class Notebook(Executor):
    """Asks twice, remembering answers in instance state and in shared state."""

    def __init__(self) -> None:
        super().__init__("notebook")
        self.answers: list[str] = []

    @handler
    async def begin(self, topic: str, ctx: WorkflowContext) -> None:
        ctx.set_state("topic", topic)
        await ctx.request_info(f"first question about {topic}", str)

    @response_handler
    async def answered(self, question: str, answer: str, ctx: WorkflowContext[Never, str]) -> None:
        self.answers.append(answer)
        if len(self.answers) == 1:
            await ctx.request_info("second question", str)
        else:
            await ctx.yield_output(f"{ctx.get_state('topic')}: {' + '.join(self.answers)}")

    async def on_checkpoint_save(self) -> dict[str, Any]:
        return {"answers": list(self.answers)}

    async def on_checkpoint_restore(self, state: dict[str, Any]) -> None:
        self.answers = list(state.get("answers", []))


class Report(Executor):
    @handler
    async def report(self, text: str, ctx: WorkflowContext[Never, str]) -> None:
        await ctx.yield_output(f"report: {text}")


def notebook_parent(storage: Any) -> Workflow:
    """Built anew for every 'process': new executors, a new child, the same graph."""
    child = WorkflowBuilder(start_executor=Notebook()).build()
    sub = WorkflowExecutor(child, id="sub", propagate_request=True)
    report = Report(id="report")
    return (
        WorkflowBuilder(start_executor=sub, checkpoint_storage=storage)
        .add_edge(sub, report)
        .build()
    )


async def latest_checkpoint(storage: InMemoryCheckpointStorage, workflow: Workflow) -> str:
    ids = await storage.list_checkpoint_ids(workflow_name=workflow.name)
    loaded = [await storage.load(i) for i in ids]
    return max(loaded, key=lambda cp: (cp.iteration_count, cp.timestamp)).checkpoint_id


async def test_parent_checkpoint_embeds_the_child_run_as_a_nested_checkpoint() -> None:
    storage = InMemoryCheckpointStorage()
    parent = notebook_parent(storage)
    (request,) = (await parent.run("tea")).get_request_info_events()

    checkpoint = await storage.load(await latest_checkpoint(storage, parent))
    nested = WorkflowCheckpoint.from_dict(
        checkpoint.executor_states["sub"]["sub_workflow_checkpoint"]
    )

    assert list(nested.pending_request_info_events) == [request.request_id]
    assert nested.state == {"topic": "tea"}
    assert nested.graph_signature_hash == parent.executors["sub"].workflow.graph_signature_hash
    assert list(checkpoint.pending_request_info_events) == [request.request_id]


async def test_inner_request_answered_from_a_parent_checkpoint_in_fresh_objects() -> None:
    storage = InMemoryCheckpointStorage()
    first = await notebook_parent(storage).run("tea")
    (q1,) = first.get_request_info_events()
    pause = await latest_checkpoint(storage, notebook_parent(storage))

    # "another process": everything rebuilt, only the storage is shared
    second_parent = notebook_parent(storage)
    second = await second_parent.run(checkpoint_id=pause, responses={q1.request_id: "green"})
    (q2,) = second.get_request_info_events()
    assert q2.data == "second question"
    pause2 = await latest_checkpoint(storage, second_parent)

    third = await notebook_parent(storage).run(
        checkpoint_id=pause2, responses={q2.request_id: "milk"}
    )

    # the child's executor state (first answer) and shared state (topic) came through both
    assert third.get_outputs() == ["report: tea: green + milk"]
    assert third.get_final_state() is WorkflowRunState.IDLE


def answer_main() -> None:
    """The answering side of the cross-process test: ``<folder> <checkpoint id> <request id>
    <answer>`` in argv; prints the run's requests, outputs and pause checkpoint as JSON."""
    folder, checkpoint_id, request_id, answer = sys.argv[1:5]

    async def answer_once() -> dict[str, Any]:
        storage = FileCheckpointStorage(folder)
        parent = notebook_parent(storage)
        result = await parent.run(checkpoint_id=checkpoint_id, responses={request_id: answer})
        latest = await storage.get_latest(workflow_name=parent.name)
        return {
            "requests": [[r.request_id, r.data] for r in result.get_request_info_events()],
            "outputs": result.get_outputs(),
            "checkpoint_id": latest.checkpoint_id if latest else None,
        }

    print(json.dumps(asyncio.run(answer_once())))


def answer_in_another_process(
    folder: Path, checkpoint_id: str, request_id: str, answer: str
) -> Any:
    here = str(Path(__file__).parent)
    code = f"import sys; sys.path.insert(0, {here!r}); import {__name__} as m; m.answer_main()"
    done = subprocess.run(
        [sys.executable, "-c", code, str(folder), checkpoint_id, request_id, answer],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1])


async def test_inner_requests_are_answered_in_other_processes_from_parent_checkpoints(
    tmp_path: Path,
) -> None:
    storage = FileCheckpointStorage(tmp_path)
    parent = notebook_parent(storage)
    (q1,) = (await parent.run("tea")).get_request_info_events()
    pause = await storage.get_latest(workflow_name=parent.name)
    assert pause is not None

    second = answer_in_another_process(tmp_path, pause.checkpoint_id, q1.request_id, "green")
    ((q2_id, q2_data),) = second["requests"]
    assert q2_data == "second question" and second["outputs"] == []

    third = answer_in_another_process(tmp_path, second["checkpoint_id"], q2_id, "milk")

    assert third == {
        "requests": [],
        "outputs": ["report: tea: green + milk"],
        "checkpoint_id": third["checkpoint_id"],
    }


async def test_restored_child_does_not_emit_an_answered_request_again() -> None:
    storage = InMemoryCheckpointStorage()
    first = await notebook_parent(storage).run("tea")
    (q1,) = first.get_request_info_events()
    pause = await latest_checkpoint(storage, notebook_parent(storage))

    resumed = notebook_parent(storage)
    replayed = await resumed.run(checkpoint_id=pause)
    assert [e.request_id for e in replayed.get_request_info_events()] == [q1.request_id]

    answered = await resumed.run(responses={q1.request_id: "green"})

    assert [e.data for e in answered.get_request_info_events()] == ["second question"]


async def test_intercepted_requests_survive_a_parent_checkpoint_in_fresh_objects() -> None:
    # The coordinator keeps the SubWorkflowRequestMessage in its own checkpointed state.
    storage = InMemoryCheckpointStorage()
    parent, _ = intercepting({}, storage)
    (request,) = (await parent.run("eve@far.away")).get_request_info_events()
    pause = await latest_checkpoint(storage, parent)

    fresh, coordinator = intercepting({}, storage)
    await fresh.run(checkpoint_id=pause, responses={request.request_id: True})

    assert coordinator.verdicts == [Verdict("eve@far.away", True)]


async def test_resume_refuses_a_changed_child_graph_naming_the_wrapper() -> None:
    storage = InMemoryCheckpointStorage()
    parent = notebook_parent(storage)
    await parent.run("tea")
    pause = await latest_checkpoint(storage, parent)

    notebook = Notebook()
    changed_child = (
        WorkflowBuilder(start_executor=notebook).add_edge(notebook, Report(id="extra")).build()
    )
    sub = WorkflowExecutor(changed_child, id="sub", propagate_request=True)
    report = Report(id="report")
    changed = (
        WorkflowBuilder(start_executor=sub, checkpoint_storage=storage, name=parent.name)
        .add_edge(sub, report)
        .build()
    )

    assert changed.graph_signature_hash != parent.graph_signature_hash
    with pytest.raises(
        GraphMismatchError, match=r"sub-workflow 'sub': executors added: \['extra'\]"
    ):
        await changed.run(checkpoint_id=pause)


# ------------------------------------------------------------------- failures and overlapping


async def test_child_failure_fails_the_parent_with_the_child_error() -> None:
    # Observed on MAF 1.23: the child's run raises, so the wrapper's handler fails.
    class Broken(Executor):
        @handler
        async def fail(self, text: str, ctx: WorkflowContext[Never, str]) -> None:
            raise ValueError(f"cannot handle {text}")

    sub = WorkflowExecutor(WorkflowBuilder(start_executor=Broken(id="broken")).build(), id="sub")
    parent = WorkflowBuilder(start_executor=sub).add_edge(sub, Report(id="report")).build()

    stream = parent.run("x", stream=True)
    events = []
    with pytest.raises(ValueError, match="cannot handle x"):
        async for event in stream:
            events.append(event)

    failed = [e for e in events if e.type == "executor_failed"]
    assert [e.executor_id for e in failed] == ["sub"]
    assert parent.status is WorkflowRunState.FAILED


async def test_new_input_while_the_child_waits_warns_and_keeps_both_requests(
    caplog: pytest.LogCaptureFixture,
) -> None:
    class Fan(Executor):
        @handler
        async def fan(self, emails: list[str], ctx: WorkflowContext[str]) -> None:
            for email in emails:
                await ctx.send_message(email)

    fan = Fan(id="fan")
    sub = WorkflowExecutor(email_workflow(), id="sub", propagate_request=True)
    collect = Collect()
    parent = WorkflowBuilder(start_executor=fan).add_edge(fan, sub).add_edge(sub, collect).build()

    with caplog.at_level(logging.WARNING, logger="workflows.subworkflow"):
        first = await parent.run(["a@one.com", "b@two.com"])

    warnings = [e.data for e in first if e.type == "warning"]
    assert len(warnings) == 1 and "still waits for 1 answer" in warnings[0]
    assert "still waits for 1 answer" in caplog.text
    requests = first.get_request_info_events()
    assert sorted(r.data.domain for r in requests) == ["one.com", "two.com"]

    await parent.run(responses={r.request_id: r.data.domain == "one.com" for r in requests})

    assert sorted(collect.got, key=lambda v: v.email) == [
        Verdict("a@one.com", True),
        Verdict("b@two.com", False),
    ]


async def test_answer_the_child_is_not_waiting_for_is_ignored_with_a_warning() -> None:
    stale: list[SubWorkflowRequestMessage] = []

    class Replayer(Executor):
        @handler
        async def start(self, email: str, ctx: WorkflowContext[str]) -> None:
            await ctx.send_message(email)

        @handler
        async def answer_twice(
            self, request: SubWorkflowRequestMessage, ctx: WorkflowContext[Any]
        ) -> None:
            stale.append(request)
            await ctx.send_message(request.create_response(True))
            await ctx.send_message(request.create_response(False))

        @handler
        async def collect(self, verdict: Verdict, ctx: WorkflowContext[Never, Verdict]) -> None:
            await ctx.yield_output(verdict)

    replayer = Replayer(id="replayer")
    sub = WorkflowExecutor(email_workflow(), id="sub")
    parent = (
        WorkflowBuilder(start_executor=replayer)
        .add_edge(replayer, sub)
        .add_edge(sub, replayer)
        .build()
    )

    result = await parent.run("f@g.h")

    assert result.get_outputs() == [Verdict("f@g.h", True)]
    warnings = [e.data for e in result if e.type == "warning" and e.executor_id == "sub"]
    assert len(warnings) == 1 and stale[0].source_event.request_id in warnings[0]
