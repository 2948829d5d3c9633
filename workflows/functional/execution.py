"""Calling a functional workflow's function for one run attempt.

The function runs in a root task whose context carries the run's ``RunContext``, so it and every
task it starts find the run (``get_run_context()``, the steps) and nothing outside the run does.
The caller gets the function's return value, the failure that ended it, or ``RunPaused`` once a
request for outside input has wound the run down (see ``tasks``).
"""

from __future__ import annotations

import asyncio
import contextvars
import inspect
import logging
import typing
from collections.abc import Awaitable, Callable
from typing import Any

from ..exceptions import RunArgumentsError, WorkflowValidationError
from .context import RunContext
from .tasks import ACTIVE, RunPaused, TaskTracker

__all__ = ["call_workflow", "input_parameters"]

logger = logging.getLogger("workflows")


def input_parameters(func: Callable[..., Any]) -> list[str]:
    """The parameters of a workflow function other than its ``RunContext`` (at most one: it
    receives the run's input).

    Raises:
        WorkflowValidationError: the function declares more than one.
    """
    hints = _hints(func)
    names = [
        name
        for name, param in inspect.signature(func).parameters.items()
        if not _is_context(name, param, hints)
        and param.kind not in (param.VAR_POSITIONAL, param.VAR_KEYWORD)
    ]
    if len(names) > 1:
        raise WorkflowValidationError(
            f"@workflow function {func.__name__!r} has multiple non-RunContext parameters "
            f"{names}: a workflow takes one input (the message given to run()); gather the "
            "inputs into one object or dict"
        )
    return names


async def call_workflow(ctx: RunContext, func: Callable[..., Awaitable[Any]], message: Any) -> Any:
    """Run ``func`` for one attempt of ``ctx``'s run.

    Returns:
        What the function returned.

    Raises:
        RunPaused: the run waits for answers (after its running steps finished).
        RunArgumentsError: a message was given to a function that takes none.
        Exception: whatever ended the function (the run's other tasks are cancelled first).
    """
    args, kwargs = _arguments(func, ctx, message)
    context = contextvars.copy_context()
    context.run(ACTIVE.set, ctx)
    tracker = ctx._tasks

    async def invoke() -> Any:
        return await func(*args, **kwargs)

    root = asyncio.get_running_loop().create_task(invoke(), context=context)
    tracker.root = root
    try:
        await asyncio.wait({root})
    except BaseException:  # the caller of the run was cancelled: so is the run
        root.cancel()
        await asyncio.gather(root, return_exceptions=True)
        await tracker.cancel_all()
        raise
    return await _outcome(tracker, root)


async def _outcome(tracker: TaskTracker, root: asyncio.Task[Any]) -> Any:
    failure = None if root.cancelled() else root.exception()
    if tracker.pause is None:
        if root.cancelled() or failure is not None:
            await tracker.cancel_all()
        return root.result()  # the value, or raises the failure (or the cancellation)
    if failure is not None:
        real = _without_pauses(failure)
        if real is not None:  # a failure beside the pause still fails the run, as in MAF
            await tracker.cancel_all()
            raise real
    await tracker.settle()
    raise tracker.pause


def _without_pauses(error: BaseException) -> BaseException | None:
    """``error`` with the run's pauses taken out of it (a ``TaskGroup``'s group may mix them
    with real failures), or None when nothing else is left."""
    if isinstance(error, RunPaused):
        return None
    if isinstance(error, BaseExceptionGroup):
        _, rest = error.split(RunPaused)
        return rest
    return error


def _arguments(
    func: Callable[..., Any], ctx: RunContext, message: Any
) -> tuple[list[Any], dict[str, Any]]:
    hints = _hints(func, warn=True)
    args: list[Any] = []
    kwargs: dict[str, Any] = {}
    given = False
    for name, param in inspect.signature(func).parameters.items():
        if param.kind in (param.VAR_POSITIONAL, param.VAR_KEYWORD):
            continue
        if _is_context(name, param, hints):
            value = ctx
        elif not given:
            value, given = message, True
        else:
            continue
        if param.kind is param.KEYWORD_ONLY:
            kwargs[name] = value
        else:
            args.append(value)
    if message is not None and not given:
        raise RunArgumentsError(
            f"@workflow function {func.__name__!r} has no non-RunContext parameter to take the "
            "message given to run(); add one, or run it without a message"
        )
    return args, kwargs


def _is_context(name: str, param: inspect.Parameter, hints: dict[str, Any]) -> bool:
    return hints.get(name, param.annotation) is RunContext or name == "ctx"


def _hints(func: Callable[..., Any], *, warn: bool = False) -> dict[str, Any]:
    try:
        return typing.get_type_hints(func)
    except Exception as exc:  # noqa: BLE001 - unresolvable annotations: the raw ones, and names
        if warn:
            logger.warning(
                "the annotations of workflow function %r cannot be resolved (%s); its "
                "RunContext parameter is found by its raw annotation or the name 'ctx' only",
                getattr(func, "__name__", func),
                exc,
            )
        return {}
