"""``RunContext``: what a functional workflow (or one of its steps) may ask of its run.

A workflow function or a ``@step`` gets one by declaring a parameter annotated ``RunContext``
(or named ``ctx``); anything else running inside the run reaches it with
``get_run_context()``. It offers human-in-the-loop requests (``request_info``), custom events
(``add_event``) and key/value state kept in checkpoints (``get_state`` / ``set_state``).

A run re-executes its function from the top on every resume: ``request_info`` returns the
answer when the caller has given one, and otherwise pauses the run (see ``tasks``).
"""

from __future__ import annotations

import copy
import logging
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

from ..chat_types import chat_type_name
from ..checkpoint import now_timestamp
from ..events import RequestInfoEvent, WorkflowEvent, WorkflowEventSource, describe_type
from ..exceptions import ReservedStateKeyError, ResponseTypeError
from ..registry import default_registry, is_restorable_class
from ..typecheck import coerce, is_instance_of
from .book import StepBook
from .journal import StepJournal
from .tasks import ACTIVE, TaskTracker

__all__ = ["RunContext", "get_run_context"]

logger = logging.getLogger("workflows")


def get_run_context() -> RunContext | None:
    """The ``RunContext`` of the functional run the caller is part of, or None outside one.

    Returns:
        The active context (inside a ``@workflow`` function, its steps, and every task they
        start), else None.
    """
    ctx = ACTIVE.get()
    return ctx if isinstance(ctx, RunContext) else None


class RunContext:
    """The run a functional workflow is part of: requests, events and state.

    Declare it only when needed: ``async def review(doc: str, ctx: RunContext)``. The engine
    passes it to the workflow function and to ``@step`` functions that declare it (by the
    annotation, or by the parameter name ``ctx``).

    Args:
        workflow_name: the workflow's name (requests name it as their source).
        streaming: whether the run was started with ``stream=True``.
        run_kwargs: the extra keyword arguments given to ``run()``.
    """

    def __init__(
        self,
        workflow_name: str,
        *,
        streaming: bool = False,
        run_kwargs: dict[str, Any] | None = None,
    ) -> None:
        self._workflow_name = workflow_name
        self._streaming = streaming
        self._run_kwargs: dict[str, Any] = dict(run_kwargs or {})
        self._events: list[WorkflowEvent[Any]] = []
        self._state: dict[str, Any] = {}
        self._responses: dict[str, Any] = {}
        self._pending: dict[str, RequestInfoEvent] = {}
        self._request_index = 0
        self._tasks = TaskTracker(self)
        # What the steps of the run save and record; the run sets ``_step_saved`` to write a
        # checkpoint after each step that computed its result.
        self._book = StepBook(workflow_name)
        self._journal = StepJournal()
        self._step_saved: Callable[[], Awaitable[object]] | None = None

    def __deepcopy__(self, memo: dict[int, Any]) -> RunContext:
        # A handle on the run, not data: event payloads that hold it keep the same one.
        return self

    # ----------------------------------------------------------------------------- requests

    async def request_info(
        self, request_data: Any, response_type: Any, *, request_id: str | None = None
    ) -> Any:
        """Ask for outside input: the answer when the caller gave one, else the run pauses.

        Pausing emits a ``request_info`` event and ends the run call in the
        ``IDLE_WITH_PENDING_REQUESTS`` state; ``run(responses={request_id: value})`` (or with
        ``checkpoint_id=`` in another process) runs the function again, and this call then
        returns ``value``.

        Args:
            request_data: what is asked (a dict, a dataclass, a text...).
            response_type: the type the answer must have (JSON-like answers are converted).
            request_id: a stable id; without one the n-th request of the run is ``auto::<n>``.

        Returns:
            The answer (``None`` is allowed, with a warning when it is given).

        Raises:
            ResponseTypeError: the answer is not a ``response_type``.
        """
        self._tasks.check()
        if request_id is None:
            rid = f"auto::{self._request_index}"
            self._request_index += 1
        else:
            rid = request_id
        if rid in self._responses:
            self._pending.pop(rid, None)
            value = self._responses[rid]
            return None if value is None else _checked_answer(value, response_type, rid)
        self._state = _snapshot(self._state)
        _remember_class(request_data)
        event = RequestInfoEvent(
            "request_info",
            data=request_data,
            request_id=rid,
            source_executor_id=self._workflow_name,
            request_type=type(request_data),
            response_type=response_type,
            created_at=now_timestamp(),
        )
        await self.add_event(event)
        self._pending[rid] = event
        raise self._tasks.paused(rid)

    # ------------------------------------------------------------------------------- events

    async def add_event(self, event: WorkflowEvent[Any]) -> None:
        """Add an event to the run's events (after the engine's own, in emission order).

        Args:
            event: any ``WorkflowEvent``; its origin becomes ``EXECUTOR``.
        """
        self._tasks.check()
        event.origin = WorkflowEventSource.EXECUTOR
        self._events.append(event)

    # -------------------------------------------------------------------------------- state

    def get_state(self, key: str, default: Any = None) -> Any:
        """A value of the run's state (kept in checkpoints and across pauses).

        Args:
            key: the state key.
            default: returned when the key is not set.

        Returns:
            The value, or ``default``.
        """
        self._tasks.check()
        return self._state.get(key, default)

    def set_state(self, key: str, value: Any) -> None:
        """Set a value of the run's state. It must be storable by the checkpoint codec when the
        run has a checkpoint storage (JSON values, registered dataclasses...).

        Args:
            key: the state key; not starting with ``_``.
            value: the value.

        Raises:
            ReservedStateKeyError: ``key`` starts with ``_``.
        """
        self._tasks.check()
        if key.startswith("_"):
            raise ReservedStateKeyError(
                f"state key {key!r} starts with '_', which is reserved for framework "
                "bookkeeping (functional checkpoints keep their records under '_functional...'); "
                "choose a key without the leading underscore"
            )
        self._state[key] = value

    def is_streaming(self) -> bool:
        """Whether the run was started with ``stream=True``.

        Returns:
            True for a streaming run.
        """
        return self._streaming

    # ------------------------------------------------------------------- engine-side helpers

    def _answer(self, responses: Mapping[str, Any]) -> None:
        """Take the caller's answers for this run (they are matched by request id)."""
        for rid, value in responses.items():
            if value is None:
                logger.warning(
                    "the answer to request %r is None; it is passed on as None (a sentinel "
                    "value says more when the absence of data means something)",
                    rid,
                )
        self._responses.update(responses)
        for rid in responses:
            self._pending.pop(rid, None)


def _checked_answer(value: Any, response_type: Any, request_id: str) -> Any:
    # MAF turns a text answer to a Content request into a text Content.
    if (
        isinstance(value, str)
        and isinstance(response_type, type)
        and chat_type_name(response_type) == "Content"
    ):
        value = response_type.from_text(text=value)  # type: ignore[attr-defined]
    converted = coerce(value, response_type)
    if not is_instance_of(converted, response_type):
        raise ResponseTypeError(
            f"Response type mismatch for request ID {request_id}: the answer must be a "
            f"{describe_type(response_type)}, got {type(value).__name__}: {value!r:.200}"
        )
    return converted


def _snapshot(state: dict[str, Any]) -> dict[str, Any]:
    """The state as it is now, so what the run keeps for a resume is not changed by code that
    still runs while the run winds down (values that cannot be copied are shared)."""
    try:
        return copy.deepcopy(state)
    except Exception:  # noqa: BLE001 - copy what can be copied, share the rest
        return {key: _copied(value) for key, value in state.items()}


def _copied(value: Any) -> Any:
    try:
        return copy.deepcopy(value)
    except Exception:  # noqa: BLE001
        return value


def _remember_class(value: Any) -> None:
    """A dataclass, pydantic model or enum the run holds is restorable from its checkpoints
    (the class is in hand, so it is the one meant)."""
    if is_restorable_class(type(value)):
        default_registry.register(type(value))
