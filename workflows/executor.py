"""Executors: the nodes of a workflow graph, with typed ``@handler`` methods."""

from __future__ import annotations

import inspect
import types
import typing
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
import builtins
from typing import Any, Never, NoReturn, TypeVar, Union, cast

from .context import WorkflowContext
from .exceptions import WorkflowValidationError
from .typecheck import flatten_union, is_instance_of, match_distance

__all__ = ["Executor", "FunctionExecutor", "executor", "handler", "response_handler"]

F = TypeVar("F", bound=Callable[..., Awaitable[Any]])

_HANDLER_MARK = "__superstep_handler__"
_RESPONSE_MARK = "__superstep_response_handler__"
_UNSET: Any = object()


@dataclass(frozen=True, slots=True)
class HandlerSpec:
    """A resolved handler: the message type it takes and what it declares it sends and yields.

    ``output_types`` is None when the handler's context is a bare ``WorkflowContext`` (nothing
    declared, nothing checked)."""

    name: str
    message_type: Any
    output_types: tuple[Any, ...] | None
    workflow_output_types: tuple[Any, ...] | None


@dataclass(frozen=True, slots=True)
class ResponseHandlerSpec:
    name: str
    request_type: Any
    response_type: Any
    output_types: tuple[Any, ...] | None
    workflow_output_types: tuple[Any, ...] | None


# ------------------------------------------------------------------------------------ decorators


def handler(
    func: F | None = None,
    *,
    input: Any = _UNSET,
    output: Any = _UNSET,
    workflow_output: Any = _UNSET,
) -> Any:
    """Mark an ``async def h(self, message: T, ctx: WorkflowContext[OutT, WorkflowOutT])`` method
    as a message handler. Types come from the annotations, or all from the keyword arguments
    (``@handler(input=Order, output=Invoice)``) when annotations cannot express them."""

    def mark(fn: F) -> F:
        if not inspect.iscoroutinefunction(cast(Any, fn)):
            raise WorkflowValidationError(f"handler {fn.__qualname__} must be an async def")
        explicit = None if input is _UNSET else (input, output, workflow_output)
        setattr(fn, _HANDLER_MARK, explicit)
        return fn

    return mark(func) if func is not None else mark


def response_handler(
    func: F | None = None,
    *,
    request: Any = _UNSET,
    response: Any = _UNSET,
    output: Any = _UNSET,
    workflow_output: Any = _UNSET,
) -> Any:
    """Mark an ``async def h(self, original_request: ReqT, response: RespT, ctx)`` method as the
    receiver of answers to this executor's ``ctx.request_info(ReqT(...), RespT)`` requests."""

    def mark(fn: F) -> F:
        if not inspect.iscoroutinefunction(cast(Any, fn)):
            raise WorkflowValidationError(f"response handler {fn.__qualname__} must be async")
        explicit = None if request is _UNSET else (request, response, output, workflow_output)
        setattr(fn, _RESPONSE_MARK, explicit)
        return fn

    return mark(func) if func is not None else mark


# ------------------------------------------------------------------------------- introspection


def parse_context_annotation(annotation: Any) -> tuple[tuple[Any, ...] | None, tuple[Any, ...] | None]:
    """``WorkflowContext[A, B]`` -> ((A,), (B,)); bare ``WorkflowContext`` -> (None, None)."""
    if annotation is inspect.Parameter.empty or annotation is WorkflowContext:
        return None, None
    if typing.get_origin(annotation) is not WorkflowContext:
        raise WorkflowValidationError(
            f"the context parameter must be annotated WorkflowContext[...], not {annotation!r}"
        )
    args = typing.get_args(annotation)
    if len(args) > 2:
        raise WorkflowValidationError("WorkflowContext takes at most two type arguments")
    outs = _declared(args[0]) if args else ()
    wouts = _declared(args[1]) if len(args) > 1 else ()
    return outs, wouts


def _declared(annotation: Any) -> tuple[Any, ...]:
    if annotation in (Never, NoReturn, None, type(None)):
        return ()
    if isinstance(annotation, TypeVar):
        raise WorkflowValidationError(f"unresolved type variable {annotation} in a handler")
    return tuple(t for t in flatten_union(annotation) if t not in (Never, NoReturn))


def _hints(fn: Callable[..., Any]) -> dict[str, Any]:
    try:
        return typing.get_type_hints(fn, include_extras=True)
    except Exception as exc:
        raise WorkflowValidationError(
            f"cannot resolve the annotations of {fn.__qualname__} ({exc}); pass the types "
            "explicitly, e.g. @handler(input=..., output=...)"
        ) from exc


def _check_type(annotation: Any, what: str) -> Any:
    if isinstance(annotation, TypeVar):
        raise WorkflowValidationError(f"{what} is an unresolved type variable {annotation}")
    if typing.get_origin(annotation) is Union or isinstance(annotation, types.UnionType):
        for member in typing.get_args(annotation):
            _check_type(member, what)
    return annotation


def _explicit_types(value: Any) -> tuple[Any, ...] | None:
    return None if value is _UNSET else _declared(value)


def _resolve_handler(name: str, fn: Callable[..., Any], skip_self: bool = True) -> HandlerSpec:
    explicit = getattr(fn, _HANDLER_MARK, None)
    params = list(inspect.signature(fn).parameters.values())[1 if skip_self else 0 :]
    if explicit is not None:
        message_type, output, workflow_output = explicit
        return HandlerSpec(
            name,
            _check_type(message_type, f"{fn.__qualname__} input"),
            _explicit_types(output),
            _explicit_types(workflow_output),
        )
    if len(params) not in (1, 2):
        raise WorkflowValidationError(
            f"handler {fn.__qualname__} must take (message, ctx), got {len(params)} parameters"
        )
    hints = _hints(fn)
    message_param = params[0].name
    if message_param not in hints:
        raise WorkflowValidationError(
            f"handler {fn.__qualname__} must annotate its message parameter {message_param!r}"
        )
    outs, wouts = (None, None)
    if len(params) == 2:
        outs, wouts = parse_context_annotation(hints.get(params[1].name, inspect.Parameter.empty))
    return HandlerSpec(name, _check_type(hints[message_param], fn.__qualname__), outs, wouts)


def _resolve_response_handler(name: str, fn: Callable[..., Any]) -> ResponseHandlerSpec:
    explicit = getattr(fn, _RESPONSE_MARK, None)
    if explicit is not None:
        request, response, output, workflow_output = explicit
        return ResponseHandlerSpec(
            name, request, response, _explicit_types(output), _explicit_types(workflow_output)
        )
    params = list(inspect.signature(fn).parameters.values())[1:]
    if len(params) != 3:
        raise WorkflowValidationError(
            f"response handler {fn.__qualname__} must take (original_request, response, ctx)"
        )
    hints = _hints(fn)
    missing = [p.name for p in params[:2] if p.name not in hints]
    if missing:
        raise WorkflowValidationError(
            f"response handler {fn.__qualname__} must annotate {', '.join(missing)}"
        )
    outs, wouts = parse_context_annotation(hints.get(params[2].name, inspect.Parameter.empty))
    return ResponseHandlerSpec(
        name,
        _check_type(hints[params[0].name], fn.__qualname__),
        _check_type(hints[params[1].name], fn.__qualname__),
        outs,
        wouts,
    )


def _dispatch_is_cacheable(types_: list[Any]) -> bool:
    """A handler table whose types are all plain classes (or unions of them) picks its handler
    from ``type(message)`` alone, so the choice can be cached per message class."""
    return all(
        all(isinstance(t, type) and not typing.get_args(t) for t in flatten_union(tp))
        or tp is Any
        for tp in types_
    )


# ------------------------------------------------------------------------------------- Executor


class Executor:
    """A node of a workflow graph.

    Subclass it and mark ``async`` methods with ``@handler``; the message annotation decides which
    messages a handler receives (the most specific matching type wins). Override
    ``on_checkpoint_save`` / ``on_checkpoint_restore`` to keep instance state across restarts.

    Args:
        id: unique within a workflow; it names the executor in events, checkpoints and the UI.
        type: an optional display name for the kind of executor.

    Raises:
        WorkflowValidationError: an empty id, no handlers, or two handlers for the same type.
    """

    def __init__(self, id: str, *, type: str | None = None, **_: Any) -> None:
        if not isinstance(id, str) or not id.strip():
            raise WorkflowValidationError(f"an executor id must be a non-empty string, not {id!r}")
        self.id = id
        self.type = type or self.__class__.__name__
        self._handlers: list[tuple[HandlerSpec, Callable[..., Awaitable[Any]]]] = []
        self._response_handlers: list[tuple[ResponseHandlerSpec, Callable[..., Awaitable[Any]]]] = []
        self._discover()
        self._cacheable = _dispatch_is_cacheable([s.message_type for s, _ in self._handlers])
        self._dispatch: dict[builtins.type, tuple[HandlerSpec, Callable[..., Awaitable[Any]]] | None] = {}

    def _discover(self) -> None:
        seen: set[str] = set()
        for klass in type(self).__mro__:
            for name, member in vars(klass).items():
                if name in seen or not callable(member):
                    continue
                if hasattr(member, _HANDLER_MARK):
                    seen.add(name)
                    self._add_handler(_resolve_handler(name, member), getattr(self, name))
                elif hasattr(member, _RESPONSE_MARK):
                    seen.add(name)
                    spec = _resolve_response_handler(name, member)
                    self._add_response_handler(spec, getattr(self, name))
        if not self._handlers and not self._response_handlers:
            raise WorkflowValidationError(
                f"executor {self.id!r} ({type(self).__name__}) has no @handler methods"
            )

    def _add_handler(self, spec: HandlerSpec, bound: Callable[..., Awaitable[Any]]) -> None:
        for other, _ in self._handlers:
            if other.message_type == spec.message_type:
                raise WorkflowValidationError(
                    f"executor {self.id!r} has two handlers for {spec.message_type!r}: "
                    f"{other.name} and {spec.name}"
                )
        self._handlers.append((spec, bound))

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
        return [spec for spec, _ in self._handlers]

    @property
    def response_handler_specs(self) -> list[ResponseHandlerSpec]:
        return [spec for spec, _ in self._response_handlers]

    @property
    def input_types(self) -> list[Any]:
        return [spec.message_type for spec, _ in self._handlers]

    @property
    def output_types(self) -> list[Any] | None:
        """Everything the handlers declare they send; None if any handler declares nothing."""
        out: list[Any] = []
        specs: list[HandlerSpec | ResponseHandlerSpec] = [*self.handler_specs]
        specs.extend(self.response_handler_specs)
        for spec in specs:
            if spec.output_types is None:
                return None
            out.extend(t for t in spec.output_types if t not in out)
        return out

    @property
    def workflow_output_types(self) -> list[Any]:
        out: list[Any] = []
        specs: list[HandlerSpec | ResponseHandlerSpec] = [*self.handler_specs]
        specs.extend(self.response_handler_specs)
        for spec in specs:
            out.extend(t for t in spec.workflow_output_types or () if t not in out)
        return out

    def find_handler(
        self, message: Any
    ) -> tuple[HandlerSpec, Callable[..., Awaitable[Any]]] | None:
        """The handler for ``message``: the most specific declared type that accepts it."""
        if self._cacheable:
            cls = message.__class__
            if cls in self._dispatch:
                return self._dispatch[cls]
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
        return self.find_handler(message) is not None

    def find_response_handler(
        self, request: Any, response: Any
    ) -> tuple[ResponseHandlerSpec, Callable[..., Awaitable[Any]]] | None:
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
        for spec, _ in self._response_handlers:
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

    def response_type_for(self, request: Any) -> Any:
        for spec, _ in self._response_handlers:
            if is_instance_of(request, spec.request_type):
                return spec.response_type
        return None

    # ------------------------------------------------------------------------- checkpoint hooks

    async def on_checkpoint_save(self) -> dict[str, Any]:
        """Return the instance state to keep in checkpoints (a dict with string keys)."""
        return {}

    async def on_checkpoint_restore(self, state: dict[str, Any]) -> None:
        """Put back what ``on_checkpoint_save`` returned; called before any handler on resume."""

    def signature_type(self) -> str:
        """What the graph signature records for this executor: its class."""
        cls = type(self)
        return f"{cls.__module__}.{cls.__qualname__}"

    def __repr__(self) -> str:
        return f"<{type(self).__name__} id={self.id!r}>"


class FunctionExecutor(Executor):
    """An executor made from one ``async def f(message: T, ctx: WorkflowContext[...])``."""

    def __init__(
        self,
        func: Callable[..., Awaitable[Any]],
        id: str | None = None,
        *,
        input: Any = _UNSET,
        output: Any = _UNSET,
        workflow_output: Any = _UNSET,
    ) -> None:
        if isinstance(func, (staticmethod, classmethod)):
            raise WorkflowValidationError("@executor takes a plain function, not a static/class method")
        if not inspect.iscoroutinefunction(func):
            raise WorkflowValidationError(f"@executor function {func.__qualname__} must be async")
        self._func = func
        self._explicit = None if input is _UNSET else (input, output, workflow_output)
        self._takes_ctx = len(inspect.signature(func).parameters) >= 2
        super().__init__(id or func.__name__, type=func.__name__)

    def _discover(self) -> None:
        if self._explicit is not None:
            setattr(self._func, _HANDLER_MARK, self._explicit)
            spec = _resolve_handler(self._func.__name__, self._func, skip_self=False)
        else:
            spec = _resolve_handler(self._func.__name__, self._func, skip_self=False)
        self._add_handler(spec, self._call)

    async def _call(self, message: Any, ctx: WorkflowContext[Any, Any]) -> Any:
        if self._takes_ctx:
            return await self._func(message, ctx)
        return await self._func(message)

    def signature_type(self) -> str:
        return f"function:{self._func.__module__}.{self._func.__qualname__}"


def executor(
    func: Callable[..., Awaitable[Any]] | None = None,
    *,
    id: str | None = None,
    input: Any = _UNSET,
    output: Any = _UNSET,
    workflow_output: Any = _UNSET,
) -> Any:
    """Turn an async function into an executor: ``@executor`` or ``@executor(id="upper")``.

    The function takes ``(message: T)`` or ``(message: T, ctx: WorkflowContext[...])``; its id
    defaults to the function's name.
    """

    def wrap(fn: Callable[..., Awaitable[Any]]) -> FunctionExecutor:
        return FunctionExecutor(fn, id, input=input, output=output, workflow_output=workflow_output)

    return wrap(func) if func is not None else wrap
