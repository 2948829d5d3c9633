"""``@step``: a function whose result a functional run saves, and replays on resume.

Inside a running ``@workflow`` a call of a step is identified (``identity``, ``book``): when a
saved result pairs with it, the result comes back without calling the function (an
``executor_bypassed`` event); otherwise the function runs between ``executor_invoked`` and
``executor_completed`` (or ``executor_failed``) events, its result is saved, and a checkpoint is
written when the run has a storage. Outside a workflow a step is the plain function.
"""

from __future__ import annotations

import asyncio
import copy
import functools
import inspect
import typing
from collections.abc import Awaitable, Callable
from typing import Any, Literal, overload

from ..events import ErrorDetails, WorkflowEvent
from ..exceptions import StepMismatchError, StepReplayError
from ..registry import default_registry, is_restorable_class
from .book import SavedResult
from .context import RunContext
from .identity import argument_digest, code_digest, defaults_digest, digest, function_digest
from .journal import StepRecord
from .tasks import ACTIVE, INSIDE_STEP

__all__ = ["StepWrapper", "context_parameter", "register_annotations", "step"]


def context_parameter(func: Callable[..., Any]) -> str | None:
    """The parameter of ``func`` that receives the ``RunContext``: the first one annotated
    ``RunContext`` or named ``ctx``."""
    try:
        hints = typing.get_type_hints(func)
    except Exception:  # noqa: BLE001 - unresolvable annotations: fall back to the raw ones
        hints = {}
    for name, param in inspect.signature(func).parameters.items():
        if param.kind in (param.VAR_POSITIONAL, param.VAR_KEYWORD):
            continue
        if hints.get(name, param.annotation) is RunContext or name == "ctx":
            return name
    return None


class StepWrapper[R]:
    """What ``@step`` returns: the function, saved and replayed inside a functional run.

    Inside a run, a call is identified by the step's code, its bound arguments and how many
    identical calls came before, so calls made concurrently (``asyncio.gather``) pair with their
    own saved results on resume. Arguments with no fingerprint (a lock, a client) fall back to
    the call's place among that step's calls, which concurrent calls cannot use; a step whose
    closure captures state has no durable identity either. For both, ``replay_key`` names each
    logical call. A parameter annotated ``RunContext`` (or named ``ctx``) gets the run's
    context. Outside a run the wrapper calls the function as it is.

    Args:
        func: an ``async def`` function.
        name: the step's name in events and checkpoints (the function's name by default).
        replay_key: called with the call's arguments, returns a non-empty string naming the
            logical call (unique within a run); not called outside a run.

    Raises:
        TypeError: ``func`` is not an ``async def`` function.
    """

    def __init__(
        self,
        func: Callable[..., Awaitable[R]],
        *,
        name: str | None = None,
        replay_key: Callable[..., str] | None = None,
    ) -> None:
        if not inspect.iscoroutinefunction(func):
            raise TypeError(
                f"@step decorates async functions only; {getattr(func, '__name__', func)!r} is "
                "not a coroutine function (write it as async def)"
            )
        self._func = func
        self.name: str = name or func.__name__
        self._replay_key = replay_key
        self._source = code_digest(func)
        self._code, self._durable = function_digest(func)
        self._defaults, self._defaults_durable = defaults_digest(func)
        if ACTIVE.get() is not None:  # made inside a run: nothing identifies it in another one
            self._durable = False
        self._ctx_param = context_parameter(func)
        signature = inspect.signature(func)
        self._signature = signature
        self._identity_signature = signature.replace(
            parameters=[p for p in signature.parameters.values() if p.name != self._ctx_param]
        )
        functools.update_wrapper(self, func)
        register_annotations(func)

    # -------------------------------------------------------------------- what discovery reads

    @property
    def replay_key(self) -> Callable[..., str] | None:
        """The ``replay_key`` callback given to ``@step``, if any."""
        return self._replay_key

    def signature_entry(self) -> tuple[str, str, str]:
        """How this step counts in its workflow's signature: its name, and the code fingerprint
        its saved results depend on (its closure and defaults included unless a ``replay_key``
        takes their place)."""
        if self._replay_key is not None:
            return (self.name, self._source, defaults_digest(self._func)[0])
        return (self.name, "automatic", function_digest(self._func)[0])

    def expected_code(self) -> str:
        """The code fingerprint this step's keys carry now."""
        return self._source if self._replay_key is not None else function_digest(self._func)[0]

    # -------------------------------------------------------------------------------- a call

    async def __call__(self, *args: Any, **kwargs: Any) -> R:
        ctx = ACTIVE.get()
        if not isinstance(ctx, RunContext):
            return await self._func(*args, **kwargs)
        ctx._tasks.check(entering_step=True)
        order_key = ctx._book.order_key(self.name)  # counted for every call, as in MAF
        identity = self._identity(args, kwargs)
        if identity is not None:
            return await self._identified_call(ctx, self._key(ctx, identity), args, kwargs)
        return await self._ordered_call(ctx, order_key, args, kwargs)

    async def _identified_call(
        self, ctx: RunContext, key: str, args: tuple[Any, ...], kwargs: dict[str, Any]
    ) -> R:
        saved = ctx._book.find(key)
        if saved is not None:
            return await self._replay(ctx, key, saved, args, kwargs)
        if key.startswith('["auto"') and ctx._book.conflicts(key):
            raise StepMismatchError(
                f"the checkpoint's saved result for @step {self.name!r} at this place was "
                "written by a different definition of the step, so it is not compatible "
                "with this call; start a new run, or resume a checkpoint this code wrote",
                workflow_name=ctx._workflow_name,
                changed=(f"step {self.name!r}",),
            )
        return await self._compute(ctx, key, None, args, kwargs)

    async def _ordered_call(
        self, ctx: RunContext, key: str, args: tuple[Any, ...], kwargs: dict[str, Any]
    ) -> R:
        """A call with no fingerprint: paired by its place among this step's calls, which only
        a call with nothing running beside it may rely on."""
        shape = _argument_types(args, kwargs, ctx)
        saved = ctx._book.find(key, shape)
        if ctx._tasks.concurrent():
            raise StepReplayError(
                f"concurrent calls of @step {self.name!r} need a stable identity, and its "
                "arguments or captured state have none (a saved result paired by call order "
                "would not be safe); give it @step(replay_key=...) to name each logical call",
                self.name,
            )
        if saved is not None:
            return await self._replay(ctx, key, saved, args, kwargs)
        return await self._compute(ctx, key, shape, args, kwargs)

    def _identity(
        self, args: tuple[Any, ...], kwargs: dict[str, Any]
    ) -> tuple[Literal["auto", "explicit"], str] | None:
        if self._defaults_durable and defaults_digest(self._func) != (self._defaults, True):
            raise StepReplayError(
                f"the defaults of @step {self.name!r} changed after it was decorated; define "
                "the workflow again, or give the step a versioned replay_key",
                self.name,
            )
        if self._replay_key is not None:
            named = self._replay_key(*args, **kwargs)
            if not isinstance(named, str) or not named:
                raise StepReplayError(
                    f"the replay_key of @step {self.name!r} must return a non-empty string, "
                    f"got {named!r}",
                    self.name,
                )
            return ("explicit", digest(named))
        if not self._durable:
            return None
        given = {k: v for k, v in kwargs.items() if k != self._ctx_param}
        bound = self._identity_signature.bind(*args, **given)
        bound.apply_defaults()
        arguments = argument_digest(bound.arguments)
        return None if arguments is None else ("auto", arguments)

    def _key(self, ctx: RunContext, identity: tuple[str, str]) -> str:
        kind, value = identity
        if kind == "explicit":
            return ctx._book.explicit_key(self.name, self._source, value)
        return ctx._book.auto_key(self.name, self._code, value)

    async def _replay(
        self,
        ctx: RunContext,
        key: str,
        saved: SavedResult,
        args: tuple[Any, ...],
        kwargs: dict[str, Any],
    ) -> R:
        ctx._request_index += saved.requests
        value = ctx._book.replay_value(saved)
        given_args, given_kwargs = _without(ctx, args, kwargs)
        ctx._journal.replayed(self.name, key, given_args, given_kwargs, saved.duration_ms)
        await ctx.add_event(WorkflowEvent.executor_bypassed(self.name, _copy_or_same(value)))
        return value  # type: ignore[no-any-return]

    async def _compute(
        self,
        ctx: RunContext,
        key: str,
        shape: list[str] | None,
        args: tuple[Any, ...],
        kwargs: dict[str, Any],
    ) -> R:
        task = asyncio.current_task()
        given_args, given_kwargs = _without(ctx, args, kwargs)
        record = ctx._journal.called(self.name, key, given_args, given_kwargs)
        ctx._tasks.enter(task)
        try:
            requests_before = ctx._request_index
            result = await self._invoke(ctx, record, args, kwargs)
            swallowed = ctx._tasks.paused_inside(task)
            if swallowed is not None:  # the function caught its own pause: it still waits
                raise swallowed
            record.finished()
            self._save(ctx, key, shape, result, ctx._request_index - requests_before, record)
            await ctx.add_event(WorkflowEvent.executor_completed(self.name, _copy_or_same(result)))
            if ctx._step_saved is not None:
                await ctx._step_saved()
            return result
        finally:
            ctx._tasks.leave(task)

    async def _invoke(
        self, ctx: RunContext, record: StepRecord, args: tuple[Any, ...], kwargs: dict[str, Any]
    ) -> R:
        """The function itself, after its ``executor_invoked`` event (and, when it raises,
        before its ``executor_failed`` one)."""
        call_args, call_kwargs = self._with_context(ctx, args, kwargs)
        invoked = _copy_or_same({"args": args, "kwargs": kwargs}) if args or kwargs else None
        await ctx.add_event(WorkflowEvent.executor_invoked(self.name, invoked))
        inside = INSIDE_STEP.set(True)
        try:
            return await self._func(*call_args, **call_kwargs)
        except Exception as error:  # a pause (a CancelledError) passes: it is no failure
            record.failed(error)
            details = ErrorDetails.from_exception(error, executor_id=self.name)
            await ctx.add_event(WorkflowEvent.executor_failed(self.name, details))
            if ctx._tasks.pause is not None:  # the run is winding down: this fails it
                ctx._tasks.failures.append(error)
            raise
        finally:
            INSIDE_STEP.reset(inside)

    def _save(
        self,
        ctx: RunContext,
        key: str,
        shape: list[str] | None,
        result: Any,
        requests: int,
        record: StepRecord,
    ) -> None:
        if is_restorable_class(type(result)):
            default_registry.register(type(result))
        try:
            kept, copied = copy.deepcopy(result), True
        except Exception:  # noqa: BLE001 - kept for this process only; not replayable
            kept, copied = result, False
        replayable = copied and (self._replay_key is not None or self._durable)
        saved = SavedResult(self.name, kept, requests, shape, replayable, record.duration_ms)
        ctx._book.save(key, saved)

    def _with_context(
        self, ctx: RunContext, args: tuple[Any, ...], kwargs: dict[str, Any]
    ) -> tuple[tuple[Any, ...], dict[str, Any]]:
        """The call's arguments with the context put where the function declares it, without
        taking the place of an argument the caller gave."""
        if self._ctx_param is None or self._ctx_param in kwargs:
            return args, dict(kwargs)
        positional: list[Any] = []
        keywords = dict(kwargs)
        rest = list(args)
        gap = False  # an earlier parameter was given by keyword: the context must be too
        for param in self._signature.parameters.values():
            if param.name == self._ctx_param:
                by_name = gap and param.kind is not param.POSITIONAL_ONLY
                if param.kind is param.KEYWORD_ONLY or by_name:
                    keywords[param.name] = ctx
                else:
                    positional.append(ctx)
            elif param.kind in (param.POSITIONAL_ONLY, param.POSITIONAL_OR_KEYWORD):
                if rest:
                    positional.append(rest.pop(0))
                else:
                    gap = True
            elif param.kind is param.VAR_POSITIONAL:
                positional.extend(rest)
                rest = []
        return (*positional, *rest), keywords


def _without(
    ctx: RunContext, args: tuple[Any, ...], kwargs: dict[str, Any]
) -> tuple[tuple[Any, ...], dict[str, Any]]:
    return (
        tuple(a for a in args if a is not ctx),
        {k: v for k, v in kwargs.items() if v is not ctx},
    )


def _argument_types(args: tuple[Any, ...], kwargs: dict[str, Any], ctx: RunContext) -> list[str]:
    """The types of a call's arguments: what an ``order`` key keeps to notice a changed call."""
    given_args, given_kwargs = _without(ctx, args, kwargs)
    values = [*given_args, *(given_kwargs[k] for k in sorted(given_kwargs))]
    names = [f"{k}=" for k in sorted(given_kwargs)]
    types = [f"{type(v).__module__}.{type(v).__qualname__}" for v in values]
    return [*types, *names]


def _copy_or_same(value: Any) -> Any:
    try:
        return copy.deepcopy(value)
    except Exception:  # noqa: BLE001 - events may hold the live value
        return value


def register_annotations(func: Callable[..., Any]) -> None:
    """Classes a step (or a workflow function) names in its annotations are restorable from
    checkpoints (as the graph builder does for handlers)."""
    try:
        hints = typing.get_type_hints(func)
    except Exception:  # noqa: BLE001 - a local class: registered when a result holds it
        return
    for annotation in hints.values():
        default_registry.register_annotation(annotation)


# ------------------------------------------------------------------------------- decorator


@overload
def step[R](func: Callable[..., Awaitable[R]]) -> StepWrapper[R]: ...


@overload
def step[R](
    *, name: str | None = None, replay_key: Callable[..., str] | None = None
) -> Callable[[Callable[..., Awaitable[R]]], StepWrapper[R]]: ...


def step(
    func: Callable[..., Awaitable[Any]] | None = None,
    *,
    name: str | None = None,
    replay_key: Callable[..., str] | None = None,
) -> StepWrapper[Any] | Callable[[Callable[..., Awaitable[Any]]], StepWrapper[Any]]:
    """Make an async function a step: its result is saved in a functional run and replayed,
    not recomputed, when the run resumes. Bare (``@step``) or with options
    (``@step(name=..., replay_key=...)``); see ``StepWrapper``.

    Args:
        func: the function (bare form).
        name: the step's name (the function's by default).
        replay_key: names each logical call; needed for concurrent calls whose arguments (or
            the step's closure) have no fingerprint.

    Returns:
        A ``StepWrapper``, or a decorator making one.

    Raises:
        TypeError: the function is not ``async def``.
    """
    if func is not None:
        return StepWrapper(func, name=name, replay_key=replay_key)

    def decorate(fn: Callable[..., Awaitable[Any]]) -> StepWrapper[Any]:
        return StepWrapper(fn, name=name, replay_key=replay_key)

    return decorate
