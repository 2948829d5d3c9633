"""``@workflow``: an async function as a functional workflow definition (MAF 1.23's shape).

The decorator returns a ``FunctionalWorkflowDefinition``, which holds no run state; its
``build()`` makes a ``FunctionalWorkflow`` for one caller (one conversation, one session), with
its own paused run and, optionally, its own checkpoint storage.
"""

from __future__ import annotations

import functools
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any, overload

from .execution import input_parameters
from .runner import FunctionalWorkflow

if TYPE_CHECKING:
    from ..storage.protocol import CheckpointStorage

__all__ = ["FunctionalWorkflowDefinition", "workflow"]


class FunctionalWorkflowDefinition:
    """What ``@workflow`` returns: a workflow function with its name and description. It has no
    ``run()``; ``build()`` makes the runnable ``FunctionalWorkflow``.

    Args:
        func: the ``async def`` workflow function; it takes its input as its one parameter
            other than a ``RunContext`` (annotated so, or named ``ctx``).
        name: the workflow's name (the function's by default).
        description: what it does.

    Raises:
        WorkflowValidationError: the function takes more than one input parameter.
    """

    def __init__(
        self,
        func: Callable[..., Awaitable[Any]],
        *,
        name: str | None = None,
        description: str | None = None,
    ) -> None:
        input_parameters(func)
        self._func = func
        self.name = name or func.__name__
        self.description = description
        functools.update_wrapper(self, func)  # type: ignore[arg-type]

    def build(self, *, checkpoint_storage: CheckpointStorage | None = None) -> FunctionalWorkflow:
        """A runnable workflow for one caller.

        Args:
            checkpoint_storage: where its runs' checkpoints go (none by default: a built
                workflow does not share a storage with another unless given the same one).

        Returns:
            A new ``FunctionalWorkflow``.
        """
        return FunctionalWorkflow(
            self._func,
            name=self.name,
            description=self.description,
            checkpoint_storage=checkpoint_storage,
        )


@overload
def workflow(func: Callable[..., Awaitable[Any]]) -> FunctionalWorkflowDefinition: ...


@overload
def workflow(
    *, name: str | None = None, description: str | None = None
) -> Callable[[Callable[..., Awaitable[Any]]], FunctionalWorkflowDefinition]: ...


def workflow(
    func: Callable[..., Awaitable[Any]] | None = None,
    *,
    name: str | None = None,
    description: str | None = None,
) -> (
    FunctionalWorkflowDefinition
    | Callable[[Callable[..., Awaitable[Any]]], FunctionalWorkflowDefinition]
):
    """Make an async function a functional workflow: ``@workflow`` or
    ``@workflow(name=..., description=...)``. Build it to run it:
    ``pipeline.build(checkpoint_storage=storage).run("input")``.

    Args:
        func: the workflow function (bare form).
        name: the workflow's name (the function's by default).
        description: what it does.

    Returns:
        A ``FunctionalWorkflowDefinition``, or a decorator making one.

    Raises:
        WorkflowValidationError: the function takes more than one input parameter.
    """
    if func is not None:
        return FunctionalWorkflowDefinition(func, name=name, description=description)

    def decorate(fn: Callable[..., Awaitable[Any]]) -> FunctionalWorkflowDefinition:
        return FunctionalWorkflowDefinition(fn, name=name, description=description)

    return decorate
