"""Executors: the nodes of a workflow graph, with typed ``@handler`` methods."""

from __future__ import annotations

import asyncio
import builtins
import copy
import inspect
import json
import logging
import typing
from collections.abc import Awaitable, Callable
from typing import Any, Self

from .checkpoint import WorkflowMessage
from .context import WorkflowContext
from .exceptions import WorkflowValidationError
from .handlers import (
    HANDLER_MARK,
    RESPONSE_MARK,
    HandlerSpec,
    ResponseHandlerSpec,
    handler,
    resolve_function_handler,
    resolve_handler,
    resolve_response_handler,
    response_handler,
)
from .typecheck import flatten_union, is_compatible, is_instance_of, match_distance

__all__ = [
    "Executor",
    "FunctionExecutor",
    "HandlerSpec",
    "ResponseHandlerSpec",
    "executor",
    "handler",
    "response_handler",
]

logger = logging.getLogger(__name__)

Handler = tuple[HandlerSpec, Callable[..., Awaitable[Any]]]
ResponseHandler = tuple[ResponseHandlerSpec, Callable[..., Awaitable[Any]]]


def _dispatch_is_cacheable(types_: list[Any]) -> bool:
    """A handler table whose types are all plain classes (or unions of them) picks its handler
    from ``type(message)`` alone, so the choice can be cached per message class."""
    return all(
        all(isinstance(t, type) and not typing.get_args(t) for t in flatten_union(tp)) or tp is Any
        for tp in types_
    )


class Executor:
    """A node of a workflow graph.

    Subclass it and mark ``async`` methods with ``@handler``; the message annotation decides which
    messages a handler receives (the most specific matching type wins). Override
    ``on_checkpoint_save`` / ``on_checkpoint_restore`` to keep instance state across restarts.

    Args:
        id: unique within a workflow; it names the executor in events, checkpoints and the UI.
        type: an optional display name for the kind of executor (``type_`` is the same).
        defer_discovery: do not look for handlers now; they are found on first use, or when
            the subclass calls ``_discover_handlers()`` after registering its own.

    Raises:
        WorkflowValidationError: an empty id, no handlers, or two handlers for the same type.
    """

    # An executor that always sends its result on, whether or not an edge takes it (an agent
    # executor), sets this: at the graph's end those messages are dropped without a warning.
    ends_chains_quietly: bool = False

    def __init__(
        self,
        id: str,
        *,
        type: str | None = None,
        type_: str | None = None,
        defer_discovery: bool = False,
        **_: Any,
    ) -> None:
        if not isinstance(id, str) or not id.strip():
            raise WorkflowValidationError(f"an executor id must be a non-empty string, not {id!r}")
        self.id = id
        self.type = type or type_ or self.__class__.__name__
        self._handlers: list[Handler] = []
        self._response_handlers: list[ResponseHandler] = []
        self._dispatch: dict[builtins.type, Handler | None] = {}
        self._cacheable = True
        self._discovered = False
        if not defer_discovery:
            self._discover_handlers()

    @property
    def type_(self) -> str:
        """The same as ``type`` (MAF offers both spellings)."""
        return self.type

    @type_.setter
    def type_(self, value: str) -> None:
        self.type = value

    # ------------------------------------------------------------------------------- discovery

    def _discover_handlers(self) -> None:
        """Find the class's ``@handler`` and ``@response_handler`` methods (once)."""
        if self._discovered:
            return
        self._discovered = True
        owner = builtins.type(self)
        seen: set[str] = set()
        for klass in owner.__mro__:
            for name, member in vars(klass).items():
                if name in seen or not callable(member):
                    continue
                if hasattr(member, HANDLER_MARK):
                    seen.add(name)
                    self._add_handler(resolve_handler(name, member, owner), getattr(self, name))
                elif hasattr(member, RESPONSE_MARK):
                    seen.add(name)
                    spec = resolve_response_handler(name, member, owner)
                    self._add_response_handler(spec, getattr(self, name))
        if not self._handlers and not self._response_handlers:
            raise WorkflowValidationError(
                f"executor {self.id!r} ({owner.__name__}) has no @handler methods"
            )

    # MAF discovers the two kinds in two calls; one call here finds both.
    _discover_response_handlers = _discover_handlers

    def _ensure_discovered(self) -> None:
        if not self._discovered:
            self._discover_handlers()

    def _register_instance_handler(
        self,
        name: str,
        func: Callable[..., Awaitable[Any]],
        message_type: Any,
        ctx_annotation: Any = None,
        output_types: list[Any] | None = None,
        workflow_output_types: list[Any] | None = None,
    ) -> None:
        """Add a handler that is not a decorated method, ``func(message, ctx)``; an empty or
        missing ``output_types`` declares nothing."""
        del ctx_annotation  # the types are given explicitly
        spec = HandlerSpec(
            name,
            message_type,
            tuple(output_types) if output_types else None,
            tuple(workflow_output_types) if workflow_output_types else None,
        )
        self._add_handler(spec, func)

    def _add_handler(self, spec: HandlerSpec, bound: Callable[..., Awaitable[Any]]) -> None:
        for other, _ in self._handlers:
            if other.message_type == spec.message_type:
                raise WorkflowValidationError(
                    f"executor {self.id!r} has two handlers for {spec.message_type!r}: "
                    f"{other.name} and {spec.name}"
                )
        self._handlers.append((spec, bound))
        self._cacheable = _dispatch_is_cacheable([s.message_type for s, _ in self._handlers])
        self._dispatch.clear()

    def _add_response_handler(
        self, spec: ResponseHandlerSpec, bound: Callable[..., Awaitable[Any]]
    ) -> None:
        for other, _ in self._response_handlers:
            if (other.request_type, other.response_type) == (spec.request_type, spec.response_type):
                raise WorkflowValidationError(
                    f"executor {self.id!r} has two response handlers for "
                    f"({spec.request_type!r}, {spec.response_type!r})"
                )
        self._response_handlers.append((spec, bound))

    # ---------------------------------------------------------------------------- introspection

    @property
    def handler_specs(self) -> list[HandlerSpec]:
        self._ensure_discovered()
        return [spec for spec, _ in self._handlers]

    @property
    def response_handler_specs(self) -> list[ResponseHandlerSpec]:
        self._ensure_discovered()
        return [spec for spec, _ in self._response_handlers]

    def _all_specs(self) -> list[HandlerSpec | ResponseHandlerSpec]:
        return [*self.handler_specs, *self.response_handler_specs]

    @property
    def input_types(self) -> list[Any]:
        return [spec.message_type for spec in self.handler_specs]

    @property
    def output_types(self) -> list[Any]:
        """Every type the handlers declare they send; ``[]`` when none declares any."""
        out: list[Any] = []
        for spec in self._all_specs():
            out.extend(t for t in spec.output_types or () if t not in out)
        return out

    @property
    def declared_output_types(self) -> list[Any] | None:
        """Like ``output_types``, but None when some handler declares nothing (a bare
        ``WorkflowContext``, or explicit types without ``output=``): what it sends is unknown,
        so the graph cannot check it."""
        if any(spec.output_types is None for spec in self._all_specs()):
            return None
        return self.output_types

    @property
    def workflow_output_types(self) -> list[Any]:
        """Every type the handlers declare they yield as workflow output."""
        out: list[Any] = []
        for spec in self._all_specs():
            out.extend(t for t in spec.workflow_output_types or () if t not in out)
        return out

    @property
    def is_request_response_capable(self) -> bool:
        """Whether the executor has a ``@response_handler`` (and so may call ``request_info``)."""
        return bool(self.response_handler_specs)

    def is_request_supported(self, request_type: Any, response_type: Any) -> bool:
        """Whether some response handler takes requests of ``request_type`` answered with
        ``response_type`` (compared as types, not values)."""
        return any(
            is_compatible(request_type, spec.request_type)
            and is_compatible(response_type, spec.response_type)
            for spec in self.response_handler_specs
        )

    def to_dict(self) -> dict[str, Any]:
        """The executor as it appears in a workflow's topology: ``{"id", "type"}``."""
        return {"id": self.id, "type": self.type}

    def to_json(self) -> str:
        return json.dumps(self.to_dict())

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Self:
        """``cls(**data)``: works for executors whose constructor takes ``id`` and ``type``."""
        return cls(**data)

    @classmethod
    def from_json(cls, raw: str) -> Self:
        data = json.loads(raw)
        if not isinstance(data, dict):
            raise TypeError("an executor's JSON must be an object")
        return cls.from_dict(data)

    def clone(self, *, deep: bool = True) -> Self:
        return copy.deepcopy(self) if deep else copy.copy(self)

    # --------------------------------------------------------------------------------- dispatch

    def find_handler(self, message: Any) -> Handler | None:
        """The handler for ``message``: the most specific declared type that accepts it."""
        if self._cacheable:
            cls = message.__class__
            if cls in self._dispatch:
                return self._dispatch[cls]
        self._ensure_discovered()
        best = None
        best_distance = float("inf")
        for entry in self._handlers:
            spec = entry[0]
            if is_instance_of(message, spec.message_type):
                distance = match_distance(message, spec.message_type)
                if distance < best_distance:
                    best, best_distance = entry, distance
        if self._cacheable:
            self._dispatch[message.__class__] = best
        return best

    def can_handle(self, message: Any) -> bool:
        """Whether a handler takes ``message``: raw data, or a ``WorkflowMessage`` (an answer to
        a request matches the response handlers by its request and response together)."""
        if isinstance(message, WorkflowMessage):
            if message.kind == "response":
                request = message.request
                if request is None:
                    logger.warning(
                        "executor %r got a response message that carries no request", self.id
                    )
                    return False
                return self.find_response_handler(request.data, message.data) is not None
            message = message.data
        return self.find_handler(message) is not None

    def find_response_handler(self, request: Any, response: Any) -> ResponseHandler | None:
        self._ensure_discovered()
        best = None
        best_distance = float("inf")
        for entry in self._response_handlers:
            spec = entry[0]
            if is_instance_of(request, spec.request_type) and is_instance_of(
                response, spec.response_type
            ):
                distance = match_distance(request, spec.request_type) + match_distance(
                    response, spec.response_type
                )
                if distance < best_distance:
                    best, best_distance = entry, distance
        return best

    def accepts_request(self, request: Any, response_type: Any) -> bool:
        """Whether some response handler takes this request and answers of ``response_type``."""
        for spec in self.response_handler_specs:
            if is_instance_of(request, spec.request_type) and (
                spec.response_type is Any
                or spec.response_type == response_type
                or (
                    isinstance(response_type, type)
                    and isinstance(spec.response_type, type)
                    and issubclass(response_type, spec.response_type)
                )
            ):
                return True
        return False

    def check_response(self, request: Any, response: Any) -> None:
        """Refuse an answer to one of this executor's requests before the run accepts it (the
        request then stays pending). Accepts every answer of the declared type by default.

        Raises:
            Exception: any exception, which ``run(responses=...)`` raises unchanged.
        """

    def response_type_for(self, request: Any) -> Any:
        for spec in self.response_handler_specs:
            if is_instance_of(request, spec.request_type):
                return spec.response_type
        return None

    # ------------------------------------------------------------------------- checkpoint hooks

    async def on_checkpoint_save(self) -> dict[str, Any]:
        """Return the instance state to keep in checkpoints (a dict with string keys)."""
        return {}

    async def on_checkpoint_restore(self, state: dict[str, Any]) -> None:
        """Put back what ``on_checkpoint_save`` returned; called before any handler on resume."""

    def signature_type(self) -> str | dict[str, Any]:
        """What the graph signature records for this executor: its class (a sub-workflow adds
        its own graph's signature)."""
        cls = builtins.type(self)
        return f"{cls.__module__}.{cls.__qualname__}"

    def __repr__(self) -> str:
        return f"<{builtins.type(self).__name__} id={self.id!r}>"


# ---------------------------------------------------------------------------- function executors


class FunctionExecutor(Executor):
    """An executor made from one function ``f(message: T)`` or ``f(message: T, ctx)``.

    The function may be ``async def`` or a plain ``def``; a plain one runs in a worker thread
    (``asyncio.to_thread``) so it cannot stall the other executors. Inside it, the context's
    methods are called without ``await`` (``ctx.send_message(x)``): each call runs on the
    event loop and returns when it is done.

    Args:
        func: the function; its id defaults to the function's name.
        input: the message type, overriding the annotation (a type, a union, or its text).
        output: what it sends, overriding ``WorkflowContext[OutT]``.
        workflow_output: what it yields, overriding ``WorkflowContext[..., WorkflowOutT]``.

    Raises:
        WorkflowValidationError: a static/class method, a wrong number of parameters, or types
            that cannot be resolved.
    """

    def __init__(
        self,
        func: Callable[..., Any],
        id: str | None = None,
        *,
        input: Any = None,
        output: Any = None,
        workflow_output: Any = None,
    ) -> None:
        if isinstance(func, (staticmethod, classmethod)):
            raise WorkflowValidationError(
                "@executor takes a plain function, not a static/class method; "
                "use an Executor subclass with @handler methods instead"
            )
        spec = resolve_function_handler(
            func, input=input, output=output, workflow_output=workflow_output
        )
        self._func = func
        self._is_async = inspect.iscoroutinefunction(func)
        self._takes_ctx = len(inspect.signature(func).parameters) == 2
        name = getattr(func, "__name__", "FunctionExecutor")
        super().__init__(str(id or name), type="FunctionExecutor", defer_discovery=True)
        self._add_handler(spec, self._call)
        self._discover_handlers()

    async def _call(self, message: Any, ctx: WorkflowContext[Any, Any]) -> Any:
        args: tuple[Any, ...] = (message, ctx) if self._takes_ctx else (message,)
        if self._is_async:
            return await self._func(*args)
        if self._takes_ctx:
            args = (message, _ContextFromThread(ctx, asyncio.get_running_loop()))
        return await asyncio.to_thread(self._func, *args)

    def signature_type(self) -> str:
        return f"function:{self._func.__module__}.{self._func.__qualname__}"


class _ContextFromThread:
    """What a plain ``def`` executor gets as its context: every method call is run on the event
    loop and waited for, so ``ctx.send_message(x)`` works without ``await`` and no coroutine is
    left un-awaited (MAF's own example calls it that way)."""

    __slots__ = ("_ctx", "_loop")

    def __init__(self, ctx: WorkflowContext[Any, Any], loop: asyncio.AbstractEventLoop) -> None:
        self._ctx = ctx
        self._loop = loop

    def __getattr__(self, name: str) -> Any:
        attr = getattr(self._ctx, name)
        if not callable(attr):
            return attr

        def on_loop(*args: Any, **kwargs: Any) -> Any:
            async def call() -> Any:
                result = attr(*args, **kwargs)
                return await result if inspect.isawaitable(result) else result

            return asyncio.run_coroutine_threadsafe(call(), self._loop).result()

        return on_loop


def executor(
    func: Callable[..., Any] | None = None,
    *,
    id: str | None = None,
    input: Any = None,
    output: Any = None,
    workflow_output: Any = None,
) -> Any:
    """Turn a function into an executor: ``@executor``, ``@executor(id="upper")``, or with
    explicit types ``@executor(input=str, output=int)``; see ``FunctionExecutor``."""

    def wrap(fn: Callable[..., Any]) -> FunctionExecutor:
        return FunctionExecutor(fn, id, input=input, output=output, workflow_output=workflow_output)

    return wrap(func) if func is not None else wrap
