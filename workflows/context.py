"""What a handler can do: send messages, yield outputs, emit events, read and write shared state,
and ask a human for input."""

from __future__ import annotations

import uuid
from typing import TYPE_CHECKING, Any, Generic, Never

from typing_extensions import TypeVar

from .events import RESERVED_EVENT_TYPES, WorkflowEvent
from .exceptions import WorkflowRunError
from .typecheck import is_instance_of

if TYPE_CHECKING:
    from .runtime import SuperstepScope

__all__ = ["WorkflowContext"]

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
        "_scope",
        "_executor_id",
        "_source_ids",
        "_request_id",
        "_out_types",
        "_staged",
    )

    def __init__(
        self,
        scope: SuperstepScope,
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

    async def send_message(self, message: OutT, target_id: str | None = None) -> None:
        """Send ``message`` along this executor's edges; it is delivered in the next superstep.

        Args:
            message: the payload; it must fit the handler's declared ``WorkflowContext[OutT]``.
            target_id: deliver only to this executor (it must be reachable by an edge).

        Raises:
            TypeError: the handler declared its output types and ``message`` fits none of them.
        """
        if self._out_types is not None and not any(
            is_instance_of(message, t) for t in self._out_types
        ):
            declared = ", ".join(getattr(t, "__name__", repr(t)) for t in self._out_types) or "none"
            raise TypeError(
                f"executor {self._executor_id!r} sent a {type(message).__name__}, but its handler "
                f"declares it sends: {declared}"
            )
        self._scope.send(self._executor_id, message, target_id)

    async def yield_output(self, output: WorkflowOutT) -> None:
        """Emit ``output`` as a workflow output (an ``output`` event, right away)."""
        self._scope.emit(WorkflowEvent("output", data=output, executor_id=self._executor_id))

    async def add_event(self, event: WorkflowEvent | str, data: Any = None) -> None:
        """Emit a custom event: ``add_event(MyEvent(...))`` or ``add_event("progress", data)``.

        Executors may not emit the framework's own event types; such an event is replaced by a
        ``warning`` event so the attempt is visible rather than silently dropped.
        """
        if isinstance(event, str):
            event = WorkflowEvent(event, data=data, executor_id=self._executor_id)
        if event.type in RESERVED_EVENT_TYPES:
            self._scope.emit(
                WorkflowEvent(
                    "warning",
                    data=f"executor {self._executor_id!r} tried to emit a reserved "
                    f"{event.type!r} event; it was not emitted",
                    executor_id=self._executor_id,
                )
            )
            return
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

    # ------------------------------------------------------------------------ human in the loop

    async def request_info(
        self, request_data: Any, response_type: Any, request_id: str | None = None
    ) -> str:
        """Ask for outside input; the run goes idle with a pending request until it is answered.

        The executor must have a ``@response_handler`` for ``(type(request_data), response_type)``.

        Returns:
            The request id (``request_id`` if given, else a new uuid4 hex).

        Raises:
            TypeError: no response handler of this executor accepts such a request and answer.
        """
        rid = request_id or uuid.uuid4().hex
        self._scope.request_info(self._executor_id, rid, request_data, response_type)
        return rid


_MISSING = object()
