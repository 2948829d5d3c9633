"""What ``run()`` hands back: a finished result, or a stream of events."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable, Generator, Iterable
from typing import Any, Self

from .events import RequestInfoEvent, WorkflowEvent, WorkflowRunState

__all__ = ["WorkflowRunResult", "WorkflowRunStream"]


_STARTED = frozenset({"started"})
_STARTED_AND_STATUS = frozenset({"started", "status"})


class WorkflowRunResult(list[WorkflowEvent]):
    """The events of a finished run, in order, with helpers for the common questions.

    As in MAF, the list leaves out the ``started`` event and keeps ``status`` events aside
    (``status_timeline()``) unless the run was asked for them with ``include_status_events=True``.
    A stream yields every event as it happens.
    """

    def __init__(
        self,
        events: Iterable[WorkflowEvent] = (),
        status_events: Iterable[WorkflowEvent] | None = None,
    ) -> None:
        super().__init__(events)
        self._status_events: list[WorkflowEvent] = (
            [e for e in self if e.type == "status"]
            if status_events is None
            else list(status_events)
        )

    @classmethod
    def of(
        cls, events: list[WorkflowEvent], *, include_status_events: bool = False
    ) -> WorkflowRunResult:
        hidden = _STARTED if include_status_events else _STARTED_AND_STATUS
        return cls(
            [e for e in events if e.type not in hidden],
            [e for e in events if e.type == "status"],
        )

    def get_outputs(self) -> list[Any]:
        """The data of every ``output`` event."""
        return [event.data for event in self if event.type == "output"]

    def get_intermediate_outputs(self) -> list[Any]:
        """The data of every ``intermediate`` event (yields of intermediate executors)."""
        return [event.data for event in self if event.type == "intermediate"]

    def get_request_info_events(self) -> list[RequestInfoEvent]:
        """Requests raised (or re-emitted on resume) that wait for an answer."""
        return [event for event in self if isinstance(event, RequestInfoEvent)]

    def get_final_state(self) -> WorkflowRunState:
        """The run's state at the end: ``IDLE``, ``IDLE_WITH_PENDING_REQUESTS``, ``FAILED``..."""
        for event in reversed(self._status_events):
            state: WorkflowRunState | None = event.state
            if state is not None:
                return state
        raise RuntimeError("the run emitted no status event")

    def status_timeline(self) -> list[WorkflowEvent]:
        """The run's ``status`` events, in order (``[e.state for e in ...]`` for the states)."""
        return list(self._status_events)

    def get_checkpoint_ids(self) -> list[str]:
        """Checkpoints written after each superstep of this call, in order."""
        return [
            e.checkpoint_id for e in self if e.type == "superstep_completed" and e.checkpoint_id
        ]


class WorkflowRunStream:
    """The events of a run as they happen.

    Iterate it with ``async for``, or ``await`` it first and then iterate (both spellings are in
    common use). The run advances only while it is being iterated; leaving the loop early (or
    ``aclose()``) cancels the run, whose last checkpoint stays valid for a resume.
    """

    def __init__(self) -> None:
        self._factory: Callable[[], AsyncIterator[WorkflowEvent]] | None = None
        self._agen: AsyncIterator[WorkflowEvent] | None = None
        self._events: list[WorkflowEvent] = []
        self.include_status_events = False
        self.busy = False
        self.finished = False
        self.live_task: asyncio.Task[Any] | None = None

    def bind(self, factory: Callable[[], AsyncIterator[WorkflowEvent]]) -> None:
        """Set what produces the events (the workflow's run loop), started on first iteration."""
        self._factory = factory

    def __aiter__(self) -> WorkflowRunStream:
        return self

    async def __anext__(self) -> WorkflowEvent:
        if self.finished:
            raise StopAsyncIteration
        if self._agen is None:
            if self._factory is None:
                raise RuntimeError("this stream is not bound to a run")
            self._agen = self._factory()
            self._factory = None  # the generator now holds what it needs
        self.busy = True
        try:
            event = await self._agen.__anext__()
        except BaseException:
            self.finished = True
            raise
        finally:
            self.busy = False
        self._events.append(event)
        return event

    def __await__(self) -> Generator[Any, None, WorkflowRunStream]:
        async def ready() -> WorkflowRunStream:
            return self

        return ready().__await__()

    async def get_final_response(self) -> WorkflowRunResult:
        """Consume what is left and return the run's result (see ``WorkflowRunResult``)."""
        async for _ in self:
            pass
        return WorkflowRunResult.of(self._events, include_status_events=self.include_status_events)

    async def aclose(self) -> None:
        """Cancel the run if it is still going, and return once it has stopped (its handlers
        and their model calls included)."""
        task = self.live_task
        if task is not None and not task.done():
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)
        if self._agen is not None and not self.finished:
            self.finished = True
            await self._agen.aclose()  # type: ignore[attr-defined]
        self.finished = True

    def abandon(self) -> None:
        """Give up a stream its caller walked away from (a new run on the same workflow)."""
        if self.live_task is not None and not self.live_task.done():
            self.live_task.cancel()
        self.finished = True
        if self._agen is not None:
            agen = self._agen
            try:
                asyncio.get_running_loop().create_task(agen.aclose())  # type: ignore[attr-defined]
            except RuntimeError:  # no running loop: nothing was started, nothing to cancel
                pass

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()
