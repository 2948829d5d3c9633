"""What a handler can do: send messages, yield outputs, emit events, read and write shared state,
and ask a human for input."""

from __future__ import annotations

import logging
import uuid
from typing import Any, Generic, Never, Protocol

from typing_extensions import TypeVar

from . import run_kwargs
from .events import RESERVED_EVENT_TYPES, WorkflowEvent, WorkflowEventSource
from .exceptions import WorkflowRunError
from .typecheck import is_instance_of


class Superstep(Protocol):
    """What a handler's context needs of the superstep it runs in. The engine's superstep
    (``runtime.SuperstepScope``) provides it; the context knows no more of the run than this."""

    streaming: bool
    iteration: int
    committed_state: dict[str, Any]

    @property
    def tools(self) -> list[Any] | None: ...

    @property
    def run_kwargs(self) -> dict[str, Any]: ...

    @property
    def executor_ids(self) -> set[str]: ...

    @property
    def agent_names(self) -> dict[str, str]: ...

    def staged_state(self, executor_id: str) -> dict[str, Any]: ...

    def send(self, executor_id: str, data: Any, target_id: str | None) -> None: ...

    def emit(self, event: WorkflowEvent) -> None: ...

    def request_info(
        self, executor_id: str, request_id: str, data: Any, response_type: Any
    ) -> None: ...

    def classify_yield(self, executor_id: str) -> str | None: ...

    def accepts_request(self, executor_id: str, data: Any, response_type: Any) -> bool: ...


__all__ = ["SharedState", "WorkflowContext"]

logger = logging.getLogger("workflows")

OutT = TypeVar("OutT", default=Never)
WorkflowOutT = TypeVar("WorkflowOutT", default=Never)

_DELETED = object()


class WorkflowContext(Generic[OutT, WorkflowOutT]):
    """Handed to every handler call. Its type parameters declare what the handler sends
    (``OutT``) and what it yields as workflow output (``WorkflowOutT``); the builder checks the
    first against the graph's edges and ``send_message`` refuses anything else at run time.

    Shared state written here is visible to this executor at once and to every executor from the
    next superstep on; it is committed at the superstep boundary and discarded if the superstep
    fails.
    """

    __slots__ = (
        "_executor_id",
        "_out_types",
        "_request_id",
        "_scope",
        "_sent",
        "_source_ids",
        "_staged",
        "_yielded",
    )

    def __init__(
        self,
        scope: Superstep,
        executor_id: str,
        source_ids: list[str],
        out_types: tuple[Any, ...] | None,
        request_id: str | None = None,
    ) -> None:
        self._scope = scope
        self._executor_id = executor_id
        self._source_ids = source_ids
        self._out_types = out_types
        self._request_id = request_id
        self._staged = scope.staged_state(executor_id)
        self._sent: list[Any] | None = None
        self._yielded: list[Any] | None = None

    # ----------------------------------------------------------------------------- messaging

    @property
    def executor_id(self) -> str:
        return self._executor_id

    @property
    def source_executor_ids(self) -> list[str]:
        """Who sent the message being handled (every source, for a fan-in list)."""
        return list(self._source_ids)

    def get_source_executor_id(self) -> str:
        if len(self._source_ids) != 1:
            raise WorkflowRunError(
                f"message to {self._executor_id!r} has {len(self._source_ids)} sources; "
                "use source_executor_ids"
            )
        return self._source_ids[0]

    @property
    def request_id(self) -> str | None:
        """Inside a response handler: the id of the request being answered."""
        return self._request_id

    def is_streaming(self) -> bool:
        return self._scope.streaming

    # ------------------------------------------------------------------------- agent arguments

    def get_runtime_tools(self) -> list[Any] | None:
        """The tools ``run(tools=...)`` gave this run's agents (None when it gave none)."""
        return self._scope.tools

    def agent_run_kwargs(self) -> tuple[dict[str, Any] | None, dict[str, Any] | None]:
        """What this executor's agent passes to its tools and to its chat client: its share of
        ``run(function_invocation_kwargs=..., client_kwargs=...)`` (see ``workflows.run_kwargs``).

        Raises:
            RunArgumentsError: the arguments target this executor twice (by id and by name).
        """
        given = self._scope.run_kwargs
        ids, names = self._scope.executor_ids, self._scope.agent_names
        function_kwargs, client_kwargs = (
            run_kwargs.for_executor(given.get(kind), kind, self._executor_id, ids, names)
            for kind in run_kwargs.KWARG_KINDS
        )
        return function_kwargs, client_kwargs

    def parent_run_kwargs(self) -> dict[str, Any]:
        """The run's agent arguments as its caller gave them, for a sub-workflow's run."""
        return dict(self._scope.run_kwargs)

    async def send_message(self, message: OutT, target_id: str | None = None) -> None:
        """Send ``message`` along this executor's edges; it is delivered in the next superstep.

        Args:
            message: the payload; it must fit the handler's declared ``WorkflowContext[OutT]``.
            target_id: deliver only to this executor (it must be reachable by an edge).

        A message that fits none of the handler's declared ``OutT`` types is still sent (MAF
        checks the declaration only when the graph is built) but the run gets a ``warning``.
        """
        if self._out_types is not None and not any(
            is_instance_of(message, t) for t in self._out_types
        ):
            declared = (
                ", ".join(getattr(t, "__name__", repr(t)) for t in self._out_types) or "nothing"
            )
            self._warn(
                f"executor {self._executor_id!r} sent a {type(message).__name__}, but its handler "
                f"declares it sends {declared}"
            )
        if self._sent is None:
            self._sent = []
        self._sent.append(message)
        self._scope.send(self._executor_id, message, target_id)

    async def yield_output(self, output: WorkflowOutT) -> None:
        """Emit ``output`` right away: an ``output`` event, an ``intermediate`` event, or nothing,
        as the builder's ``output_from`` / ``intermediate_output_from`` designate this executor."""
        if self._yielded is None:
            self._yielded = []
        self._yielded.append(output)
        kind = self._scope.classify_yield(self._executor_id)
        if kind is not None:
            self._scope.emit(WorkflowEvent(kind, data=output, executor_id=self._executor_id))

    def get_sent_messages(self) -> list[Any]:
        """What this handler call has sent so far."""
        return list(self._sent or ())

    def get_yielded_outputs(self) -> list[Any]:
        """What this handler call has yielded so far (designated or not)."""
        return list(self._yielded or ())

    @property
    def has_produced(self) -> bool:
        return self._sent is not None or self._yielded is not None

    def produced(self) -> list[Any] | None:
        """Sent messages then yielded outputs: the data of ``executor_completed`` (None if none)."""
        # The common case sent or yielded, not both: hand over that list, allocating nothing.
        if self._yielded is None:
            return self._sent
        if self._sent is None:
            return self._yielded
        return [*self._sent, *self._yielded]

    def _warn(self, text: str) -> None:
        logger.warning("%s", text)
        self._scope.emit(
            WorkflowEvent(
                "warning", data=text, executor_id=self._executor_id, iteration=self._scope.iteration
            )
        )

    async def add_event(self, event: WorkflowEvent | str, data: Any = None) -> None:
        """Emit a custom event: ``add_event(MyEvent(...))`` or ``add_event("progress", data)``.

        Executors may not emit the framework's own event types; such an event is replaced by a
        ``warning`` event so the attempt is visible rather than silently dropped.
        """
        if isinstance(event, str):
            event = WorkflowEvent(event, data=data, executor_id=self._executor_id)
        if event.type in RESERVED_EVENT_TYPES:
            self._warn(
                f"executor {self._executor_id!r} tried to emit a reserved {event.type!r} event; "
                "it was not emitted"
            )
            return
        event.origin = WorkflowEventSource.EXECUTOR
        self._scope.emit(event)

    # --------------------------------------------------------------------------------- state

    def get_state(self, key: str, default: Any = None) -> Any:
        """Shared state: this executor's own writes of this superstep, else the committed value."""
        value = self._staged.get(key, _MISSING)
        if value is _MISSING:
            return self._scope.committed_state.get(key, default)
        return default if value is _DELETED else value

    def set_state(self, key: str, value: Any) -> None:
        """Stage a shared-state write; committed when the superstep completes."""
        if not isinstance(key, str):
            raise TypeError(f"state keys are strings, not {type(key).__name__}")
        self._staged[key] = value

    def has_state(self, key: str) -> bool:
        return self.get_state(key, _MISSING) is not _MISSING

    def delete_state(self, key: str) -> None:
        """Stage the removal of a shared-state key. Raises KeyError if it does not exist."""
        if not self.has_state(key):
            raise KeyError(key)
        self._staged[key] = _DELETED

    @property
    def state(self) -> SharedState:
        """MAF's ``ctx.state``: ``get``/``set``/``has``/``delete`` on the shared state."""
        return SharedState(self)

    # ------------------------------------------------------------------------ human in the loop

    async def request_info(
        self, request_data: Any, response_type: Any, request_id: str | None = None
    ) -> str:
        """Ask for outside input; the run goes idle with a pending request until it is answered.

        The answer goes to this executor's ``@response_handler`` for
        ``(type(request_data), response_type)``. Without one the request is still raised (as in
        MAF) with a ``warning``, and its answer will be dropped with another.

        Returns:
            The request id (``request_id`` if given, else a new uuid4 string, as in MAF).
        """
        rid = request_id or str(uuid.uuid4())
        if not self._scope.accepts_request(self._executor_id, request_data, response_type):
            self._warn(
                f"executor {self._executor_id!r} asked for a "
                f"{getattr(response_type, '__name__', response_type)} answer to a "
                f"{type(request_data).__name__} request but has no @response_handler for that "
                "pair; the request is pending, but its answer will not be handled"
            )
        self._scope.request_info(self._executor_id, rid, request_data, response_type)
        return rid


class SharedState:
    """The shared state as one executor sees it in one handler call (``ctx.state``)."""

    __slots__ = ("_ctx",)

    def __init__(self, ctx: WorkflowContext[Any, Any]) -> None:
        self._ctx = ctx

    def get(self, key: str, default: Any = None) -> Any:
        return self._ctx.get_state(key, default)

    def set(self, key: str, value: Any) -> None:
        self._ctx.set_state(key, value)

    def has(self, key: str) -> bool:
        return self._ctx.has_state(key)

    def delete(self, key: str) -> None:
        self._ctx.delete_state(key)

    def __contains__(self, key: object) -> bool:
        return isinstance(key, str) and self._ctx.has_state(key)

    def __getitem__(self, key: str) -> Any:
        if not self._ctx.has_state(key):
            raise KeyError(key)
        return self._ctx.get_state(key)

    def __setitem__(self, key: str, value: Any) -> None:
        self._ctx.set_state(key, value)


_MISSING = object()
