"""``FunctionalWorkflow``: a ``@workflow`` function made runnable, with MAF 1.23's ``run()``.

A run call emits ``started`` and ``status`` (``IN_PROGRESS``) first, then the events the
function's steps and ``ctx.add_event`` produced, in order, then the return value as an
``output`` (when it is not None) and the final ``status``. As in MAF, the function's events are
handed out once it has returned or paused, not while it runs: a step that prints, and a caller
that prints events, print in the same order on both engines. Each ``request_info`` event is
followed by an ``IN_PROGRESS_PENDING_REQUESTS`` status; a paused call ends
``IDLE_WITH_PENDING_REQUESTS``, a finished one ``IDLE``, a failed one with ``failed`` and
``FAILED`` and then the failure itself.
"""

from __future__ import annotations

import functools
import logging
import typing
import weakref
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from typing import TYPE_CHECKING, Any, Literal, overload

from .. import tracing
from ..checkpoint import CheckpointKind
from ..events import ErrorDetails, RequestInfoEvent, WorkflowEvent, WorkflowRunState
from ..exceptions import ConcurrentRunError, RunArgumentsError, UnknownRequestError
from ..result import WorkflowRunResult, WorkflowRunStream
from .attempt import Attempt, Held, Origin, begin
from .context import RunContext
from .discovery import signature_of
from .execution import call_workflow, input_parameters
from .steps import register_annotations
from .tasks import RunPaused

if TYPE_CHECKING:
    from ..storage.protocol import CheckpointStorage

__all__ = ["FunctionalWorkflow"]

logger = logging.getLogger("workflows")

_StreamRef = Callable[[], WorkflowRunStream | None]


class FunctionalWorkflow:
    """A workflow written as an async function: ``run()`` it, resume it, use it as an agent.

    Built by ``FunctionalWorkflowDefinition.build()`` (what ``@workflow`` returns). Like a graph
    ``Workflow``, one object holds one caller's state: the run it paused last, which
    ``run(responses=...)`` resumes. One run at a time per object.

    Args:
        func: the ``async def`` workflow function.
        name: the workflow's name (the function's by default).
        description: what it does.
        checkpoint_storage: where its runs' checkpoints go (``run()`` may give another).

    Attributes:
        graph_signature_hash: the fingerprint of the code its checkpoints depend on (the
            workflow function, the steps and helpers it reaches; see ``discovery``).
    """

    def __init__(
        self,
        func: Callable[..., Awaitable[Any]],
        *,
        name: str | None = None,
        description: str | None = None,
        checkpoint_storage: CheckpointStorage | None = None,
    ) -> None:
        self._func = func
        self.name = name or func.__name__
        self.description = description
        self.checkpoint_storage = checkpoint_storage
        self._inputs = input_parameters(func)
        # Its input and output types are restorable, as a graph's handler types are once built:
        # a process that starts runs (a start form's value) need not have run one first.
        register_annotations(func)
        signature = signature_of(self.name, func)
        self.graph_signature_hash = signature.hash
        self.graph_signature: dict[str, Any] = signature.document
        self._held: Held | None = None
        self._active: _StreamRef | None = None
        functools.update_wrapper(self, func)  # type: ignore[arg-type]

    # ------------------------------------------------------------------------------ properties

    @property
    def pending_requests(self) -> dict[str, RequestInfoEvent]:
        """The requests the run this object paused last waits for, by id (empty when none)."""
        return dict(self._held.pending) if self._held is not None else {}

    @property
    def input_types(self) -> list[Any]:
        """The type of the run's input as the function annotates it (empty when it takes none
        or does not say): what a start form asks for."""
        if not self._inputs:
            return []
        try:
            annotation = typing.get_type_hints(self._func).get(self._inputs[0])
        except Exception:  # noqa: BLE001 - an annotation that does not resolve says nothing
            return []
        return [] if annotation is None else [annotation]

    @property
    def run_id(self) -> str | None:
        """The lineage of the run this object paused last, if it holds one."""
        return self._held.run_id if self._held is not None else None

    # ------------------------------------------------------------------------------------ run

    @overload
    def run(
        self,
        message: Any | None = None,
        *,
        stream: Literal[True],
        responses: Mapping[str, Any] | None = None,
        checkpoint_id: str | None = None,
        checkpoint_storage: CheckpointStorage | None = None,
        include_status_events: bool = False,
        run_id: str | None = None,
        **kwargs: Any,
    ) -> WorkflowRunStream: ...

    @overload
    def run(
        self,
        message: Any | None = None,
        *,
        stream: Literal[False] = False,
        responses: Mapping[str, Any] | None = None,
        checkpoint_id: str | None = None,
        checkpoint_storage: CheckpointStorage | None = None,
        include_status_events: bool = False,
        run_id: str | None = None,
        **kwargs: Any,
    ) -> Awaitable[WorkflowRunResult]: ...

    def run(
        self,
        message: Any | None = None,
        *,
        stream: bool = False,
        responses: Mapping[str, Any] | None = None,
        checkpoint_id: str | None = None,
        checkpoint_storage: CheckpointStorage | None = None,
        include_status_events: bool = False,
        run_id: str | None = None,
        **kwargs: Any,
    ) -> WorkflowRunStream | Awaitable[WorkflowRunResult]:
        """Start a run, resume one from a checkpoint, or answer the requests of a paused run.

        At least one of ``message``, ``responses`` and ``checkpoint_id`` is needed: a message
        starts a new run; responses alone resume the run this object paused last; a checkpoint
        id resumes a saved run in any process, with ``responses`` answering its requests in
        the same call. A message goes with neither of the other two. A resumed run calls the
        function again from the top: steps with saved results return them without running,
        plain code runs again.

        Args:
            message: the run's input (the function's first non-context parameter).
            stream: return a ``WorkflowRunStream`` of events instead of an awaitable result.
            responses: answers by request id. Answers given earlier in the run's lineage are
                kept in its checkpoints and apply again; new ones take their place.
            checkpoint_id: the checkpoint to resume from.
            checkpoint_storage: the storage for this call (instead of the workflow's).
            include_status_events: keep ``status`` events in the result list (they are always
                in ``status_timeline()``).
            run_id: the lineage id of a new run, or a new one to fork a resumed checkpoint's
                lineage (by default a new run gets a fresh id and a resume keeps its own).
            kwargs: passed on to the run; the ``RunContext`` keeps them.

        Returns:
            An awaitable ``WorkflowRunResult``, or a ``WorkflowRunStream`` with ``stream=True``.

        Raises:
            RunArgumentsError: contradictory or missing arguments.
            UnknownRequestError: responses alone, when no paused run waits for them.
            ConcurrentRunError: this object is in the middle of another run.
        """
        _check_arguments(message, responses, checkpoint_id)
        self._warn_on_pending(message, checkpoint_id)
        if responses and checkpoint_id is None:
            self._check_answers(responses)
        self._claim()
        storage = checkpoint_storage if checkpoint_storage is not None else self.checkpoint_storage
        origin = Origin(message, responses, checkpoint_id, run_id, self._held)
        run_stream = WorkflowRunStream()
        run_stream.include_status_events = include_status_events
        run_stream.bind(lambda: self._events(origin, storage, stream, kwargs))
        self._active = weakref.ref(run_stream)
        if stream:
            return run_stream
        return run_stream.get_final_response()

    def as_agent(
        self,
        name: str | None = None,
        *,
        description: str | None = None,
        context_providers: Any = None,
        **kwargs: Any,
    ) -> Any:
        """This workflow as a Microsoft Agent Framework agent (``FunctionalWorkflowAgent``):
        an agent call is a run call, its outputs become the answer and its requests become
        function-approval requests the caller answers with ``responses=``.

        Args:
            name: the agent's name (the workflow's by default).
            description: the agent's description (the workflow's by default).
            context_providers: MAF context providers, kept on the agent.
            kwargs: accepted for parity with ``Workflow.as_agent``.

        Returns:
            A ``FunctionalWorkflowAgent`` (loading ``agent_framework``).
        """
        from .agent import FunctionalWorkflowAgent

        return FunctionalWorkflowAgent(
            self,
            name=name,
            description=description,
            context_providers=context_providers,
            **kwargs,
        )

    # ---------------------------------------------------------------------------- checking

    def _warn_on_pending(self, message: Any, checkpoint_id: str | None) -> None:
        if (message is None and checkpoint_id is None) or not self.pending_requests:
            return
        what = "a fresh message" if message is not None else "a checkpoint restore"
        logger.warning(
            "workflow %s got %s while %d request_info event(s) are still pending from its "
            "paused run; %s. Answer them with run(responses=...) to finish that run first.",
            self.name,
            what,
            len(self.pending_requests),
            "they stay answerable, but this run moves the workflow on, so a later answer may "
            "meet a changed workflow"
            if message is not None
            else "the checkpoint's own requests replace them",
        )

    def _check_answers(self, responses: Mapping[str, Any]) -> None:
        pending = self.pending_requests
        if not pending:
            raise UnknownRequestError(
                f"responses {sorted(responses)!r} answer nothing: workflow {self.name!r} has no "
                "pending request_info events to resume. Start a new run with a message, or pass "
                "checkpoint_id= to resume a saved run"
            )
        if not set(responses) & set(pending):
            raise UnknownRequestError(
                f"responses {sorted(responses)!r} do not answer any pending request of workflow "
                f"{self.name!r} (pending: {sorted(pending)!r})"
            )

    def _claim(self) -> None:
        # As for graph workflows: the last stream is the lock; a stream its caller dropped is
        # collected, which frees the object.
        active = self._active() if self._active is not None else None
        if active is None or active.finished:
            return
        raise ConcurrentRunError(
            f"workflow {self.name!r} is already running; concurrent runs of one workflow object "
            "are not allowed (finish or aclose() the previous stream, or build another object)"
        )

    # -------------------------------------------------------------------------- the events

    async def _events(
        self, origin: Origin, storage: CheckpointStorage | None, streaming: bool, kwargs: Any
    ) -> AsyncIterator[WorkflowEvent]:
        signature = signature_of(self.name, self._func)
        self.graph_signature_hash, self.graph_signature = signature.hash, signature.document
        ctx = RunContext(self.name, streaming=streaming, run_kwargs=kwargs or None)
        attempt = await begin(self.name, signature, ctx, storage, origin)
        if storage is not None:
            ctx._step_saved = functools.partial(attempt.save, CheckpointKind.STEP)
            ctx._journal.keep_inputs = True
        trace = tracing.start_run(
            workflow_name=self.name,
            run_id=attempt.run_id,
            carrier=attempt.trace_carrier,
            resumed_from=origin.checkpoint_id,
        )
        if trace is not None:
            attempt.trace_carrier = trace.carrier
        state, error = WorkflowRunState.FAILED, None
        try:
            async for event in self._attempt_events(attempt):
                if event.type == "status" and event.state is not None:
                    state = event.state
                yield event
        except BaseException as failure:
            error = failure if isinstance(failure, Exception) else None
            raise
        finally:
            if trace is not None:
                trace.checkpoint(attempt.last_checkpoint_id)
                trace.end(state.name, error)

    async def _attempt_events(self, attempt: Attempt) -> AsyncIterator[WorkflowEvent]:
        ctx = attempt.ctx
        yield WorkflowEvent("started")
        yield WorkflowEvent("status", state=WorkflowRunState.IN_PROGRESS)
        paused = False
        try:
            value = await call_workflow(ctx, self._func, attempt.given)
        except RunPaused:
            paused = True
        except Exception as error:
            for event in ctx._events:
                yield event
            yield WorkflowEvent.failed(ErrorDetails.from_exception(error))
            yield WorkflowEvent("status", state=WorkflowRunState.FAILED)
            raise
        else:
            if value is not None:
                ctx._events.append(WorkflowEvent("output", data=value, executor_id=self.name))
        if paused:
            self._held = attempt.hold()
        asked = False
        for event in ctx._events:
            yield event
            if isinstance(event, RequestInfoEvent):
                asked = True
                yield WorkflowEvent("status", state=WorkflowRunState.IN_PROGRESS_PENDING_REQUESTS)
        await attempt.save(CheckpointKind.IDLE)
        if paused or asked:
            if self._held is not None:
                self._held.last_checkpoint_id = attempt.last_checkpoint_id
            yield WorkflowEvent("status", state=WorkflowRunState.IDLE_WITH_PENDING_REQUESTS)
        else:
            self._held = None  # finished: responses alone have nothing left to resume
            yield WorkflowEvent("status", state=WorkflowRunState.IDLE)


def _check_arguments(
    message: Any, responses: Mapping[str, Any] | None, checkpoint_id: str | None
) -> None:
    if message is not None and responses is not None:
        raise RunArgumentsError(
            "Cannot provide both a message and responses: a message starts a new run, "
            "responses answer a paused one"
        )
    if message is not None and checkpoint_id is not None:
        raise RunArgumentsError(
            "Cannot provide both a message and a checkpoint_id: a message starts a new run, "
            "a checkpoint id resumes a saved one"
        )
    if message is None and responses is None and checkpoint_id is None:
        raise RunArgumentsError(
            "Must provide at least one of: a message (a new run), responses (answers to the "
            "paused run) or a checkpoint_id (resume a saved run)"
        )
    if responses is not None and not isinstance(responses, Mapping):
        raise RunArgumentsError("responses must be a mapping of request id to answer")
