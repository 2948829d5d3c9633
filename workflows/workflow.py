"""``Workflow``: runs a built graph superstep by superstep, checkpointing at every boundary.

The loop only sequences: prepare (fresh input, or a restored checkpoint plus answers) → for each
superstep: route, run handlers, commit, checkpoint → final status. The steps themselves live in
``runtime.py``.
"""

from __future__ import annotations

import asyncio
import logging
import uuid
import weakref
from collections.abc import AsyncIterator, Awaitable, Callable, Coroutine, Mapping
from typing import TYPE_CHECKING, Any, Literal, overload

from . import run_kwargs, tracing
from .checkpoint import CheckpointKind, WorkflowCheckpoint, WorkflowMessage, group_by_source
from .events import RequestInfoEvent, WorkflowEvent, WorkflowRunState, describe_type
from .exceptions import (
    CheckpointEncodeError,
    ConcurrentRunError,
    InputTypeError,
    RequestAlreadyAnsweredError,
    ResponseTypeError,
    RunArgumentsError,
    UnknownRequestError,
    WorkflowConvergenceError,
)
from .graph import Graph
from .introspection import WorkflowIntrospection
from .result import WorkflowRunResult, WorkflowRunStream
from .runtime import (
    HandlerFailure,
    RunRuntime,
    SuperstepScope,
    commit,
    error_details,
    route,
    run_deliveries,
)
from .storage.protocol import SummaryStorage
from .typecheck import coerce, is_instance_of

if TYPE_CHECKING:
    from .context import WorkflowContext
    from .executor import Executor
    from .storage.protocol import CheckpointStorage

__all__ = ["Workflow"]

logger = logging.getLogger("workflows")


class _Prepared:
    """A run ready to go: its runtime, and the events to emit before the first superstep."""

    def __init__(self, runtime: RunRuntime, prelude: list[WorkflowEvent]) -> None:
        self.runtime = runtime
        self.prelude = prelude


_StreamRef = Callable[[], WorkflowRunStream | None]


class _LiveChannel:
    """Passes handler events on while the handlers are still running (streaming runs)."""

    def __init__(self) -> None:
        self._pending: list[WorkflowEvent] = []
        self._waiter: asyncio.Future[None] | None = None

    def _wake(self, *_: Any) -> None:
        if self._waiter is not None and not self._waiter.done():
            self._waiter.set_result(None)

    def sink(self, event: WorkflowEvent) -> None:
        self._pending.append(event)
        self._wake()

    async def run(
        self, owner: _StreamRef, work: Coroutine[Any, Any, None]
    ) -> AsyncIterator[WorkflowEvent]:
        loop = asyncio.get_running_loop()
        task = loop.create_task(work)
        stream = owner()
        if stream is not None:
            stream.live_task = task
        del stream
        task.add_done_callback(self._wake)
        try:
            while True:
                while self._pending:
                    yield self._pending.pop(0)
                if task.done():
                    break
                self._waiter = loop.create_future()
                await self._waiter
            task.result()
        finally:
            if not task.done():
                task.cancel()
                await asyncio.gather(task, return_exceptions=True)
            stream = owner()
            if stream is not None:
                stream.live_task = None


class Workflow(WorkflowIntrospection):
    """A validated graph that can be run, resumed and answered. Build it with ``WorkflowBuilder``.

    One run at a time per instance. Between runs the instance keeps the current lineage in memory,
    so ``run(responses=...)`` can answer requests of the previous run without a checkpoint.
    """

    def __init__(
        self,
        graph: Graph,
        *,
        name: str,
        description: str | None,
        max_iterations: int,
        checkpoint_storage: CheckpointStorage | None,
    ) -> None:
        self._graph = graph
        self.name = name
        self.description = description
        self.max_iterations = max_iterations
        self.checkpoint_storage = checkpoint_storage
        self._runtime: RunRuntime | None = None
        self._status = WorkflowRunState.IDLE
        # Weak: a stream its caller dropped must be collectable, so that finalizing it cancels
        # the run (breaking out of ``async for`` leaves no other trace).
        self._active: _StreamRef | None = None
        self._active_token: object | None = None

    # ------------------------------------------------------------------------------ properties

    @property
    def status(self) -> WorkflowRunState:
        return self._status

    @property
    def graph_signature(self) -> dict[str, Any]:
        return self._graph.signature

    @property
    def graph_signature_hash(self) -> str:
        return self._graph.signature_hash

    @property
    def start_executor(self) -> Executor:
        return self._graph.executors[self._graph.start_id]

    @property
    def executors(self) -> dict[str, Executor]:
        return dict(self._graph.executors)

    @property
    def input_types(self) -> list[Any]:
        return self.start_executor.input_types

    @property
    def run_id(self) -> str | None:
        """The lineage the instance holds in memory (the last run's), if any."""
        return self._runtime.run_id if self._runtime else None

    @property
    def pending_requests(self) -> dict[str, RequestInfoEvent]:
        return dict(self._runtime.pending) if self._runtime else {}

    # ------------------------------------------------------------------------------------ run

    @overload
    def run(
        self,
        message: Any = None,
        *,
        stream: Literal[False] = False,
        responses: Mapping[str, Any] | None = None,
        checkpoint_id: str | None = None,
        checkpoint_storage: CheckpointStorage | None = None,
        run_id: str | None = None,
        include_status_events: bool = False,
        tools: Any = None,
        function_invocation_kwargs: run_kwargs.Given | None = None,
        client_kwargs: run_kwargs.Given | None = None,
    ) -> Awaitable[WorkflowRunResult]: ...

    @overload
    def run(
        self,
        message: Any = None,
        *,
        stream: Literal[True],
        responses: Mapping[str, Any] | None = None,
        checkpoint_id: str | None = None,
        checkpoint_storage: CheckpointStorage | None = None,
        run_id: str | None = None,
        include_status_events: bool = False,
        tools: Any = None,
        function_invocation_kwargs: run_kwargs.Given | None = None,
        client_kwargs: run_kwargs.Given | None = None,
    ) -> WorkflowRunStream: ...

    def run(
        self,
        message: Any = None,
        *,
        stream: bool = False,
        responses: Mapping[str, Any] | None = None,
        checkpoint_id: str | None = None,
        checkpoint_storage: CheckpointStorage | None = None,
        run_id: str | None = None,
        include_status_events: bool = False,
        tools: Any = None,
        function_invocation_kwargs: run_kwargs.Given | None = None,
        client_kwargs: run_kwargs.Given | None = None,
    ) -> Awaitable[WorkflowRunResult] | WorkflowRunStream:
        """Start a run, resume one from a checkpoint, or answer pending requests.

        Args:
            message: input for the start executor; starts a fresh run (a new ``run_id``).
            stream: return a ``WorkflowRunStream`` of live events instead of a finished result.
            responses: answers to pending requests, by request id. Alone, they answer this
                instance's last run; with ``checkpoint_id``, the checkpoint's requests.
            checkpoint_id: resume from this checkpoint (in any process).
            checkpoint_storage: the storage for this run only (overrides the builder's).
            run_id: the lineage id for a fresh run; with ``checkpoint_id``, a new id forks the
                lineage (the original stays as it was).
            include_status_events: keep ``status`` events inline in the final result (they are
                always in ``status_timeline()``; a stream always yields them).
            tools: tools the agents of this run may call, beside their own (not kept in
                checkpoints: pass them again when resuming).
            function_invocation_kwargs: passed to the agents' tools; a mapping for every agent,
                one keyed by executor id, or a ``WorkflowInvocationKwargs`` (see
                ``workflows.run_kwargs``). Kept in the lineage's checkpoints.
            client_kwargs: passed to the agents' chat clients, in the same forms.

        Returns:
            An awaitable ``WorkflowRunResult``, or a ``WorkflowRunStream`` when ``stream`` is true.

        Raises:
            RunArgumentsError: ``message`` together with ``checkpoint_id`` or ``responses``, or
                nothing to do at all.
            ConcurrentRunError: this instance is in the middle of another run.
        """
        if message is not None and checkpoint_id is not None:
            raise RunArgumentsError(
                "pass either a message (a fresh run) or a checkpoint_id (resume), not both: a "
                "resumed run continues with the messages saved in its checkpoint"
            )
        if message is not None and responses is not None:
            raise RunArgumentsError(
                "responses answer an existing run; they cannot come with a new message"
            )
        if message is None and checkpoint_id is None and responses is None:
            raise RunArgumentsError("run() needs a message, a checkpoint_id or responses")
        if responses is not None and not isinstance(responses, Mapping):
            raise RunArgumentsError("responses must be a mapping of request id to answer")
        args = _AgentArgs(tools, function_invocation_kwargs, client_kwargs)
        self._claim()
        storage = checkpoint_storage if checkpoint_storage is not None else self.checkpoint_storage
        token = object()
        run_stream = WorkflowRunStream()
        run_stream.include_status_events = include_status_events
        stream_ref = weakref.ref(run_stream)
        run_stream.bind(
            lambda: self._events(
                stream_ref,
                token,
                message,
                checkpoint_id,
                responses,
                storage,
                run_id,
                args,
                live=stream,
            )
        )
        self._active, self._active_token = stream_ref, token
        if stream:
            return run_stream
        return run_stream.get_final_response()

    def _claim(self) -> None:
        # The previous stream is the lock, as in MAF: while its caller still holds it unfinished,
        # a second run would interleave with it. A stream the caller dropped is collected (its
        # finalizer cancels the run), which frees the instance.
        active = self._active() if self._active is not None else None
        if active is None or active.finished:
            return
        raise ConcurrentRunError(
            f"workflow {self.name!r} is already running; concurrent runs are not allowed on the "
            "same instance (finish or aclose() the previous stream first)"
        )

    # ---------------------------------------------------------------------------- the loop

    async def _events(
        self,
        owner: _StreamRef,
        token: object,
        message: Any,
        checkpoint_id: str | None,
        responses: Mapping[str, Any] | None,
        storage: CheckpointStorage | None,
        run_id: str | None,
        args: _AgentArgs,
        *,
        live: bool,
    ) -> AsyncIterator[WorkflowEvent]:
        prepared = await self._prepare(message, checkpoint_id, responses, storage, run_id, args)
        runtime = prepared.runtime
        self._runtime = runtime
        self._status = WorkflowRunState.IN_PROGRESS
        runtime.trace = tracing.start_run(
            workflow_name=self.name,
            run_id=runtime.run_id,
            carrier=runtime.trace_carrier,
            resumed_from=checkpoint_id,
        )
        if runtime.trace is not None:
            runtime.trace_carrier = runtime.trace.carrier
        try:
            yield WorkflowEvent("started")
            yield WorkflowEvent("status", state=WorkflowRunState.IN_PROGRESS)
            for event in prepared.prelude:
                yield event
            if runtime.pending:
                yield WorkflowEvent("status", state=WorkflowRunState.IN_PROGRESS_PENDING_REQUESTS)
            while runtime.messages:
                if runtime.iteration >= self.max_iterations:
                    raise WorkflowConvergenceError(
                        f"workflow {self.name!r} did not finish within max_iterations="
                        f"{self.max_iterations} supersteps; messages are still queued"
                    )
                async for event in self._superstep(owner, runtime, storage, live):
                    yield event
            final = (
                WorkflowRunState.IDLE_WITH_PENDING_REQUESTS
                if runtime.pending
                else WorkflowRunState.IDLE
            )
            self._status = final
            yield WorkflowEvent("status", state=final)
        except (GeneratorExit, asyncio.CancelledError):
            if self._active_token is token:
                self._status = WorkflowRunState.CANCELLED
            raise
        except HandlerFailure as failure:
            self._status = WorkflowRunState.FAILED
            self._end_trace(runtime, failure.error)
            yield WorkflowEvent("failed", details=error_details(failure.error, failure.executor_id))
            yield WorkflowEvent("status", state=WorkflowRunState.FAILED)
            # The handler's own exception, its cause kept (an SDK error under a client's).
            raise failure.error from failure.error.__cause__
        except Exception as error:
            self._status = WorkflowRunState.FAILED
            self._end_trace(runtime, error)
            yield WorkflowEvent("failed", details=error_details(error, None))
            yield WorkflowEvent("status", state=WorkflowRunState.FAILED)
            raise
        finally:
            self._end_trace(runtime, None)

    def _end_trace(self, runtime: RunRuntime, error: BaseException | None) -> None:
        """End this invocation's run span once, with the state the run ended in."""
        trace, runtime.trace = runtime.trace, None
        if trace is not None:
            trace.checkpoint(runtime.last_checkpoint_id)
            trace.end(self._status.name, error)

    async def _superstep(
        self,
        owner: _StreamRef,
        runtime: RunRuntime,
        storage: CheckpointStorage | None,
        live: bool,
    ) -> AsyncIterator[WorkflowEvent]:
        iteration = runtime.iteration + 1
        # A try block costs nothing until something raises: an untraced run pays one test.
        step = runtime.trace.superstep(iteration) if runtime.trace is not None else None
        try:
            yield WorkflowEvent("superstep_started", iteration=iteration)
            plan = await route(self._graph, runtime.messages, runtime.buffers)
            for text in plan.warnings:
                yield WorkflowEvent("warning", data=text, iteration=iteration)
            if live:
                channel = _LiveChannel()
                scope = SuperstepScope(self._graph, runtime, iteration, channel.sink, True)
                scope.trace = step
                async for event in channel.run(owner, run_deliveries(scope, plan.deliveries)):
                    yield event
            else:
                buffered: list[WorkflowEvent] = []
                scope = SuperstepScope(self._graph, runtime, iteration, buffered.append, False)
                scope.trace = step
                try:
                    await run_deliveries(scope, plan.deliveries)
                except HandlerFailure:
                    for event in buffered:  # executor_invoked / executor_failed before the failure
                        yield event
                    raise
                for event in buffered:
                    yield event
            for text in commit(runtime, scope, plan, list(plan.deliveries)):
                yield WorkflowEvent("warning", data=text, iteration=iteration)
            checkpoint_id = await self._save(runtime, storage, CheckpointKind.SUPERSTEP)
        except BaseException as error:
            if step is not None:
                step.end(None, error)
            raise
        if step is not None:
            step.end(checkpoint_id)
        yield WorkflowEvent("superstep_completed", iteration=iteration, checkpoint_id=checkpoint_id)

    # ---------------------------------------------------------------------------- preparation

    async def _prepare(
        self,
        message: Any,
        checkpoint_id: str | None,
        responses: Mapping[str, Any] | None,
        storage: CheckpointStorage | None,
        run_id: str | None,
        args: _AgentArgs,
    ) -> _Prepared:
        """Everything that can refuse a run happens here, before any event or state change."""
        if checkpoint_id is not None:
            runtime, restored = await self._load(checkpoint_id, storage, run_id)
            args.apply(runtime)
            answered = await self._accept(runtime, responses or {}, storage, restored.run_id)
            await self._restore_executors(restored)
            again: list[WorkflowEvent] = [
                ev for rid, ev in runtime.pending.items() if rid not in answered
            ]
            if answered or runtime.run_id != restored.run_id:
                await self._save(
                    runtime, storage, CheckpointKind.RESPONSES if answered else CheckpointKind.FORK
                )
            return _Prepared(runtime, again)
        if message is None:
            runtime = self._runtime_copy_for_answers()
            args.apply(runtime)
            await self._accept(runtime, responses or {}, storage, runtime.run_id)
            await self._save(runtime, storage, CheckpointKind.RESPONSES)
            return _Prepared(runtime, [])
        if isinstance(message, WorkflowMessage):  # as MAF: the message's data is the input
            message = message.data
        start = self.start_executor
        if not start.can_handle(message):
            accepted = ", ".join(describe_type(t) or "?" for t in start.input_types)
            raise InputTypeError(
                f"start executor {start.id!r} cannot handle a {type(message).__name__} message "
                f"(it accepts: {accepted})"
            )
        runtime = RunRuntime(run_id=run_id or uuid.uuid4().hex)
        args.apply(runtime)
        runtime.messages = [WorkflowMessage(message, f"internal:{start.id}", start.id)]
        prelude: list[WorkflowEvent] = []
        previous = self._runtime
        if previous is not None:
            # As in MAF, one workflow object is one conversation: shared state (and the
            # executors' own attributes) carry into the next run, and so do unanswered requests.
            runtime.state = dict(previous.state)
            if previous.pending:
                runtime.pending = dict(previous.pending)
                text = (
                    f"workflow {self.name!r} got a new message while {len(previous.pending)} "
                    "request(s) are still pending; they stay pending, but this run moves the "
                    "executors and shared state on, so a later answer may meet a changed workflow"
                )
                logger.warning("%s", text)
                prelude.append(WorkflowEvent("warning", data=text))
        await self._save(runtime, storage, CheckpointKind.ENTRY)
        return _Prepared(runtime, prelude)

    def _runtime_copy_for_answers(self) -> RunRuntime:
        current = self._runtime
        if current is None or not current.pending:
            raise UnknownRequestError(
                "this workflow instance has no pending requests; to answer requests saved in a "
                "checkpoint, pass checkpoint_id= as well"
            )
        return RunRuntime(
            run_id=current.run_id,
            iteration=current.iteration,
            messages=list(current.messages),
            state=current.state,
            buffers=current.buffers,
            pending=dict(current.pending),
            answered=list(current.answered),
            last_checkpoint_id=current.last_checkpoint_id,
            trace_carrier=current.trace_carrier,
            run_kwargs=dict(current.run_kwargs),
        )

    async def _load(
        self, checkpoint_id: str, storage: CheckpointStorage | None, run_id: str | None
    ) -> tuple[RunRuntime, WorkflowCheckpoint]:
        if storage is None:
            raise RunArgumentsError(
                "resuming from a checkpoint needs a checkpoint storage (on the builder or as "
                "run(checkpoint_storage=...))"
            )
        checkpoint = await storage.load(checkpoint_id)
        self._graph.check_signature(checkpoint.graph_signature_hash, checkpoint.graph_signature)
        pending = {}
        for rid, event in checkpoint.pending_request_info_events.items():
            pending[rid] = self._with_response_type(event)
        runtime = RunRuntime(
            run_id=run_id or checkpoint.run_id,
            iteration=checkpoint.iteration_count,
            messages=checkpoint.message_list(),
            state=dict(checkpoint.state),
            buffers={
                k: {s: list(v) for s, v in slot.items()}
                for k, slot in checkpoint.edge_states.items()
            },
            pending=pending,
            answered=list(checkpoint.answered_request_ids),
            last_checkpoint_id=checkpoint.checkpoint_id,
            trace_carrier=_stored_carrier(checkpoint.metadata.get(tracing.TRACE_KEY)),
            run_kwargs=run_kwargs.from_stored(checkpoint.metadata.get(_RUN_KWARGS_KEY)),
        )
        return runtime, checkpoint

    def _with_response_type(self, event: RequestInfoEvent) -> RequestInfoEvent:
        if isinstance(event.response_type, str) or event.response_type is None:
            executor = self._graph.executors.get(event.source_executor_id)
            declared = executor.response_type_for(event.data) if executor else None
            return RequestInfoEvent(
                "request_info",
                data=event.data,
                executor_id=event.executor_id,
                request_id=event.request_id,
                source_executor_id=event.source_executor_id,
                request_type=event.request_type,
                response_type=declared,
                created_at=event.created_at,
            )
        return event

    async def _restore_executors(self, checkpoint: WorkflowCheckpoint) -> None:
        unknown = sorted(set(checkpoint.executor_states) - set(self._graph.executors))
        if unknown:  # the signature check makes this unreachable unless a storage was edited
            raise RunArgumentsError(f"checkpoint holds state for unknown executors {unknown}")
        for executor_id, executor in self._graph.executors.items():
            await executor.on_checkpoint_restore(
                dict(checkpoint.executor_states.get(executor_id, {}))
            )

    async def _accept(
        self,
        runtime: RunRuntime,
        responses: Mapping[str, Any],
        storage: CheckpointStorage | None,
        lineage: str,
    ) -> set[str]:
        """Validate every answer first, then queue them all; a bad answer changes nothing."""
        accepted: list[tuple[RequestInfoEvent, Any]] = []
        for request_id, value in responses.items():
            if request_id in runtime.answered:
                raise RequestAlreadyAnsweredError(f"request {request_id!r} was already answered")
            event = runtime.pending.get(request_id)
            if event is None:
                pending = sorted(runtime.pending) or "none"
                raise UnknownRequestError(
                    f"no pending request has id {request_id!r} (pending: {pending})"
                )
            accepted.append((event, self._check_answer(event, value)))
        if accepted and runtime.run_id == lineage:
            await self._refuse_answered_elsewhere(
                storage, lineage, [e.request_id for e, _ in accepted]
            )
        for event, value in accepted:
            runtime.pending.pop(event.request_id)
            runtime.answered.append(event.request_id)
            runtime.messages.append(
                WorkflowMessage(
                    value,
                    f"internal:{event.source_executor_id}",
                    event.source_executor_id,
                    kind="response",
                    request=event,
                )
            )
        return {event.request_id for event, _ in accepted}

    def _check_answer(self, event: RequestInfoEvent, value: Any) -> Any:
        expected = event.response_type
        converted = coerce(value, expected) if expected is not None else value
        if expected is not None and not is_instance_of(converted, expected):
            raise ResponseTypeError(
                f"request {event.request_id!r} expects a {describe_type(expected)} answer, got "
                f"{type(value).__name__}: {value!r:.200}"
            )
        # The asking executor may refuse an answer before the run takes it, leaving the request
        # pending (an agent refuses a computer result that is not its call's).
        asker = self._graph.executors.get(event.source_executor_id)
        if asker is not None:
            asker.check_response(event.data, converted)
        return converted

    async def _refuse_answered_elsewhere(
        self, storage: CheckpointStorage | None, run_id: str, request_ids: list[str]
    ) -> None:
        """Another process may have answered from the same pause checkpoint already."""
        if not isinstance(storage, SummaryStorage):
            return
        for summary in await storage.list_summaries(run_id=run_id):
            twice = set(request_ids) & set(summary.answered_request_ids)
            if twice:
                raise RequestAlreadyAnsweredError(
                    f"request {min(twice)!r} was already answered in this run (checkpoint "
                    f"{summary.checkpoint_id}); resume with a new run_id to answer it differently"
                )

    def as_agent(
        self,
        name: str | None = None,
        *,
        description: str | None = None,
        context_providers: Any = None,
        **kwargs: Any,
    ) -> Any:
        """This workflow as a Microsoft Agent Framework agent (``WorkflowAgent``): agent inputs
        become a ``list[Message]`` for the start executor, outputs become the agent's answer and
        requests become function calls the caller answers.

        Args:
            name: the agent's name (the workflow's by default).
            description: the agent's description (the workflow's by default).
            context_providers: MAF context providers whose hooks run around each call.
            kwargs: passed on to MAF's ``BaseAgent``.

        Raises:
            ValueError: the start executor does not take a ``list[Message]``.
        """
        from .agents.workflow_agent import WorkflowAgent

        return WorkflowAgent(
            self,
            name=name if name is not None else self.name,
            description=description if description is not None else self.description,
            context_providers=context_providers,
            **kwargs,
        )

    # ------------------------------------------------------------------------------ checkpoints

    async def _save(
        self, runtime: RunRuntime, storage: CheckpointStorage | None, kind: CheckpointKind
    ) -> str | None:
        if storage is None:
            return None
        checkpoint = WorkflowCheckpoint(
            workflow_name=self.name,
            graph_signature_hash=self._graph.signature_hash,
            run_id=runtime.run_id,
            previous_checkpoint_id=runtime.last_checkpoint_id,
            iteration_count=runtime.iteration,
            messages=group_by_source(runtime.messages),
            state=dict(runtime.state),
            executor_states=await self._executor_states(),
            edge_states={
                k: {s: list(v) for s, v in slot.items()} for k, slot in runtime.buffers.items()
            },
            pending_request_info_events=dict(runtime.pending),
            answered_request_ids=list(runtime.answered),
            graph_signature=self._graph.signature,
            metadata=_metadata(runtime, kind),
        )
        await storage.save(checkpoint)
        runtime.last_checkpoint_id = checkpoint.checkpoint_id
        return checkpoint.checkpoint_id

    async def _executor_states(self) -> dict[str, dict[str, Any]]:
        states: dict[str, dict[str, Any]] = {}
        for executor_id, executor in self._graph.executors.items():
            state = await executor.on_checkpoint_save()
            if not isinstance(state, dict) or not all(isinstance(k, str) for k in state):
                raise CheckpointEncodeError(
                    f"executor {executor_id!r}: on_checkpoint_save() must return a dict with "
                    f"string keys, not {type(state).__name__}"
                )
            if state:
                states[executor_id] = state
        return states

    # ------------------------------------------------------------------------------------------
    # Sub-workflow hooks, used only by subworkflow.WorkflowExecutor (owned with that module).
    # A child runs inside its parent's superstep without storage of its own; its whole run
    # travels in the parent's checkpoints as an in-memory WorkflowCheckpoint. Export and import
    # go through _save/_load with a one-slot storage, so they capture exactly what a stored
    # checkpoint would.

    class _HeldCheckpoint:
        """A storage holding one checkpoint object, never encoded."""

        def __init__(self, checkpoint: WorkflowCheckpoint | None = None) -> None:
            self.checkpoint = checkpoint

        async def save(self, checkpoint: WorkflowCheckpoint) -> str:
            self.checkpoint = checkpoint
            return checkpoint.checkpoint_id

        async def load(self, checkpoint_id: str) -> WorkflowCheckpoint:
            assert self.checkpoint is not None and self.checkpoint.checkpoint_id == checkpoint_id
            return self.checkpoint

    async def _run_as_child(
        self,
        *,
        message: Any = None,
        responses: Mapping[str, Any] | None = None,
        parent: WorkflowContext[Any, Any] | None = None,
    ) -> WorkflowRunResult:
        """Run a new input, or answers, to completion or idle, writing no checkpoints.

        A new input while requests are pending joins the held run (same lineage) rather than
        starting a fresh one; the wrapper has already warned about the overlap in the parent.
        The parent's agent arguments reach the child's agents, resolved against the child's
        own executors (as in MAF).
        """
        own = self.checkpoint_storage
        self.checkpoint_storage = None
        agent_args: dict[str, Any] = {}
        pending: Awaitable[WorkflowRunResult]
        if parent is not None:
            agent_args = {"tools": parent.get_runtime_tools(), **parent.parent_run_kwargs()}
        try:
            runtime = self._runtime
            if message is not None and runtime is not None and runtime.pending:
                start = self.start_executor
                runtime.messages.append(WorkflowMessage(message, f"internal:{start.id}", start.id))
                pending = self.run(responses={}, **agent_args)
            elif message is not None:
                pending = self.run(message, **agent_args)
            else:
                pending = self.run(responses=responses, **agent_args)
        finally:  # run() has picked its storage by now
            self.checkpoint_storage = own
        return await pending

    async def _export_run(self) -> WorkflowCheckpoint | None:
        """The held run as a checkpoint object (None before the first run)."""
        runtime = self._runtime
        if runtime is None:
            return None
        held = Workflow._HeldCheckpoint()
        previous = runtime.last_checkpoint_id
        storage: Any = held
        try:
            await self._save(runtime, storage, CheckpointKind.SUB_WORKFLOW)
        finally:
            runtime.last_checkpoint_id = previous
        assert held.checkpoint is not None
        return held.checkpoint

    async def _import_run(self, checkpoint: WorkflowCheckpoint | None) -> None:
        """Hold the run ``checkpoint`` describes, executors restored; None forgets the run.

        Raises:
            GraphMismatchError: the checkpoint was written by a different graph.
        """
        if checkpoint is None:
            self._runtime = None
            self._status = WorkflowRunState.IDLE
            return
        storage: Any = Workflow._HeldCheckpoint(checkpoint)
        runtime, restored = await self._load(checkpoint.checkpoint_id, storage, None)
        await self._restore_executors(restored)
        self._runtime = runtime
        self._status = (
            WorkflowRunState.IDLE_WITH_PENDING_REQUESTS
            if runtime.pending
            else WorkflowRunState.IDLE
        )


_RUN_KWARGS_KEY = "run_kwargs"


def _metadata(runtime: RunRuntime, kind: CheckpointKind) -> dict[str, Any]:
    # Plain text for the kind: the codec would tag an enum.
    metadata: dict[str, Any] = {"kind": kind.value}
    if runtime.trace_carrier is not None:
        metadata[tracing.TRACE_KEY] = runtime.trace_carrier
    if runtime.run_kwargs:
        metadata[_RUN_KWARGS_KEY] = run_kwargs.stored(runtime.run_kwargs)
    return metadata


class _AgentArgs:
    """The agent arguments one ``run()`` call was given."""

    __slots__ = ("kwargs", "tools")

    def __init__(self, tools: Any, function_invocation: Any, client: Any) -> None:
        self.tools = _tool_list(tools)
        self.kwargs: dict[str, run_kwargs.Given] = {}
        for kind, given in zip(run_kwargs.KWARG_KINDS, (function_invocation, client), strict=True):
            if given is not None:
                self.kwargs[kind] = run_kwargs.check(given, kind)

    def apply(self, runtime: RunRuntime) -> None:
        """New arguments replace the lineage's of the same kind; tools are this call's only."""
        runtime.run_kwargs.update(self.kwargs)
        runtime.tools = self.tools


def _tool_list(tools: Any) -> list[Any] | None:
    if tools is None:
        return None
    if isinstance(tools, (list, tuple)):
        return list(tools)
    return [tools]


def _stored_carrier(value: Any) -> dict[str, str] | None:
    """A checkpoint's trace context, if it is one (text to text); anything else is ignored."""
    if (
        isinstance(value, dict)
        and value
        and all(isinstance(k, str) and isinstance(v, str) for k, v in value.items())
    ):
        return dict(value)
    return None
