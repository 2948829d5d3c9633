"""The asyncio tasks of one functional run: which belong to it, which are inside a step, and
how the run stops when one of them asks a human for input.

A run's workflow function runs in a task of its own (the *root*), in a context where
``ACTIVE`` holds the run's ``RunContext``; every task it creates (``asyncio.gather``,
``create_task``, a ``TaskGroup``) inherits that context, so the run's tasks are found by asking
each live task for its context, with no task factory and nothing installed on the loop.

``ctx.request_info`` without an answer raises ``RunPaused``, a ``CancelledError`` so that
``except Exception`` in user code lets it through and a ``TaskGroup`` does not cancel the
siblings of the task that raised it. From then on the run winds down as MAF's does: steps
already running may finish (their results are saved, and a request one of them makes is
raised too), including the steps of tasks such a step starts from then on (each its first);
no other step starts, and the workflow's plain code gets the pause at its next call into the
run; once no step is running, the run's remaining tasks are cancelled.
"""

from __future__ import annotations

import asyncio
from contextvars import ContextVar
from typing import Any

__all__ = ["ACTIVE", "INSIDE_STEP", "RunPaused", "TaskTracker"]

ACTIVE: ContextVar[Any] = ContextVar("workflows_functional_run", default=None)
"""The running ``RunContext`` (typed ``Any`` here: this module does not import it)."""

INSIDE_STEP: ContextVar[bool] = ContextVar("workflows_functional_step", default=False)
"""True while a step's function runs, and in the tasks it starts (they inherit it)."""


class RunPaused(asyncio.CancelledError):
    """Internal: the run stops here until ``request_id`` is answered. Never reaches callers of
    ``run()``, which get a result in the ``IDLE_WITH_PENDING_REQUESTS`` state instead."""

    def __init__(self, request_id: str) -> None:
        super().__init__(f"the run waits for an answer to request {request_id!r}")
        self.request_id = request_id


class TaskTracker:
    """Bookkeeping of the tasks of one run (one per ``RunContext``)."""

    def __init__(self, owner: object) -> None:
        self._owner = owner
        self.root: asyncio.Task[Any] | None = None
        self.pause: RunPaused | None = None
        self._task_pauses: dict[asyncio.Task[Any], RunPaused] = {}
        self._depth: dict[asyncio.Task[Any], int] = {}
        self._stepped: set[asyncio.Task[Any]] = set()  # tasks that entered a step
        self._before_pause: set[asyncio.Task[Any]] = set()  # the run's tasks when it paused
        self._idle: asyncio.Event | None = None
        # Step failures while the run winds down: they fail the run, as they would have.
        self.failures: list[BaseException] = []

    # -------------------------------------------------------------------------- which tasks

    def run_tasks(self) -> list[asyncio.Task[Any]]:
        """The run's live tasks other than the calling one."""
        current = asyncio.current_task()
        return [
            task
            for task in asyncio.all_tasks()
            if task is not current
            and not task.done()
            and task.get_context().get(ACTIVE) is self._owner
        ]

    def concurrent(self) -> bool:
        """Whether another task of the run may be running steps beside the calling one."""
        if self.root is None:
            return False
        return asyncio.current_task() is not self.root or bool(self.run_tasks())

    # ------------------------------------------------------------------------------- pausing

    def check(self, *, entering_step: bool = False) -> None:
        """Raise the pause where the run no longer goes on: in a task that paused itself, on
        entering a step once the run paused (but for the first step of a task a running step
        started since), and in plain code outside a running step."""
        if self.pause is None:  # the common case: nothing paused, nothing to look up
            return
        task = asyncio.current_task()
        own = self._task_pauses.get(task) if task is not None else None
        if own is not None:
            raise own
        if task is None:
            raise self.pause
        if entering_step:
            if task in self._stepped or task in self._before_pause or not INSIDE_STEP.get():
                raise self.pause
        elif not self._depth.get(task, 0):
            raise self.pause

    def paused(self, request_id: str) -> RunPaused:
        """Record that the calling task asks for ``request_id``; the signal to raise."""
        signal = RunPaused(request_id)
        task = asyncio.current_task()
        if self.pause is None:
            self.pause = signal
            self._before_pause = set(self.run_tasks())
            if task is not None:
                self._before_pause.add(task)
        if task is not None:
            self._task_pauses[task] = signal
        return signal

    def paused_inside(self, task: asyncio.Task[Any] | None) -> RunPaused | None:
        """The pause ``task`` raised, if any (a step that swallowed it still pauses)."""
        return self._task_pauses.get(task) if task is not None else None

    # --------------------------------------------------------------------------------- steps

    def enter(self, task: asyncio.Task[Any] | None) -> None:
        if task is None:
            return
        self._stepped.add(task)
        self._depth[task] = self._depth.get(task, 0) + 1
        if self._idle is not None:
            self._idle.clear()

    def leave(self, task: asyncio.Task[Any] | None) -> None:
        if task is None:
            return
        depth = self._depth[task] - 1
        if depth:
            self._depth[task] = depth
        else:
            del self._depth[task]
            if not self._depth and self._idle is not None:
                self._idle.set()

    # ---------------------------------------------------------------------------- winding down

    async def settle(self) -> None:
        """After a pause: let running steps finish, then cancel what is left of the run.

        Raises:
            Exception: the first failure of a step that was still running.
        """
        try:
            while self._depth:
                self._idle = asyncio.Event()
                await self._idle.wait()
        finally:
            await self.cancel_all()
        if self.failures:
            raise self.failures[0]

    async def cancel_all(self) -> None:
        """Cancel every live task of the run and wait until they have all stopped."""
        while tasks := self.run_tasks():
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
