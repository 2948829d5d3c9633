"""``@handler`` and ``@response_handler``, and how a handler's types are found.

A handler's types come from one of two places, never a mix (MAF's rule):

- its annotations: ``async def h(self, message: T, ctx: WorkflowContext[OutT, WorkflowOutT])``;
- or, as soon as any type keyword is given, the decorator alone: ``@handler(input=T,
  output=OutT, workflow_output=WorkflowOutT)``, where ``input=`` is then required and an
  omitted ``output=`` declares nothing (and nothing is checked).

Types may be written as text (``input="Order | int"``). The text is resolved against the
function's module, and, for a name not defined yet when the decorator runs, again when the
executor is built, then also against the executor's class namespace. Resolving parses the text;
it never evaluates it.
"""

from __future__ import annotations

import inspect
import typing
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Never, NoReturn

from .context import WorkflowContext
from .exceptions import WorkflowValidationError
from .typecheck import contains_typevar, flatten_union, resolve_type_name

__all__ = [
    "HandlerSpec",
    "ResponseHandlerSpec",
    "handler",
    "resolve_function_handler",
    "resolve_handler",
    "resolve_response_handler",
    "response_handler",
]

HANDLER_MARK = "__superstep_handler__"
RESPONSE_MARK = "__superstep_response_handler__"

Types = tuple[Any, ...] | None


@dataclass(frozen=True, slots=True)
class HandlerSpec:
    """A resolved handler: the message type it takes and what it declares it sends and yields.

    ``output_types`` is None when the handler declares nothing (a bare ``WorkflowContext``, or
    explicit types without ``output=``): nothing is checked then. ``()`` declares it sends
    nothing (``WorkflowContext[Never]``)."""

    name: str
    message_type: Any
    output_types: Types
    workflow_output_types: Types


@dataclass(frozen=True, slots=True)
class ResponseHandlerSpec:
    name: str
    request_type: Any
    response_type: Any
    output_types: Types
    workflow_output_types: Types


# ------------------------------------------------------------------------------------ decorators


def handler[F: Callable[..., Any]](
    func: F | None = None,
    *,
    input: Any = None,
    output: Any = None,
    workflow_output: Any = None,
) -> Any:
    """Mark ``async def h(self, message: T, ctx: WorkflowContext[OutT, WorkflowOutT])`` as a
    message handler of its executor.

    Args:
        input: the message type, when annotations cannot say it (a type, a union, or its text).
            Giving any of the three keywords switches the annotations off entirely.
        output: what the handler sends with ``ctx.send_message``.
        workflow_output: what it yields with ``ctx.yield_output``.

    Raises:
        WorkflowValidationError: not an ``async def``; not ``(self, message, ctx)``; explicit
            types without ``input=``; an unresolved type variable; a malformed type text.
    """

    def mark(fn: F) -> F:
        where = f"handler {fn.__qualname__}"
        _require_async(fn, where)
        params = _require_params(fn, 3, where, "(self, message, ctx)")
        explicit = _given(input=input, output=output, workflow_output=workflow_output)
        if explicit and "input" not in explicit:
            raise WorkflowValidationError(
                f"{where} gives explicit types, so it must give input= as well: "
                "annotations are not read once any of input=/output=/workflow_output= is given"
            )
        if not explicit and params[1].annotation is inspect.Parameter.empty:
            raise WorkflowValidationError(
                f"{where} must annotate its message parameter {params[1].name!r} "
                "or give @handler(input=...)"
            )
        setattr(fn, HANDLER_MARK, _resolve_early(explicit, fn, where))
        return fn

    return mark(func) if func is not None else mark


def response_handler[F: Callable[..., Any]](
    func: F | None = None,
    *,
    request: Any = None,
    response: Any = None,
    output: Any = None,
    workflow_output: Any = None,
) -> Any:
    """Mark ``async def h(self, original_request: ReqT, response: RespT, ctx)`` as the receiver
    of answers to this executor's ``ctx.request_info(ReqT(...), RespT)`` requests.

    Giving any type keyword switches the annotations off; ``request=`` and ``response=`` are then
    both required.

    Raises:
        WorkflowValidationError: not an ``async def``; not ``(self, original_request, response,
            ctx)``; explicit types without ``request=`` or ``response=``.
    """

    def mark(fn: F) -> F:
        where = f"response handler {fn.__qualname__}"
        _require_async(fn, where)
        params = _require_params(fn, 4, where, "(self, original_request, response, ctx)")
        explicit = _given(
            request=request, response=response, output=output, workflow_output=workflow_output
        )
        for needed in ("request", "response") if explicit else ():
            if needed not in explicit:
                raise WorkflowValidationError(
                    f"{where} gives explicit types, so it must give {needed}= as well"
                )
        missing = [p.name for p in params[1:3] if p.annotation is inspect.Parameter.empty]
        if not explicit and missing:
            raise WorkflowValidationError(
                f"{where} must annotate {', '.join(missing)} or give "
                "@response_handler(request=..., response=...)"
            )
        setattr(fn, RESPONSE_MARK, _resolve_early(explicit, fn, where))
        return fn

    return mark(func) if func is not None else mark


def _given(**types: Any) -> dict[str, Any]:
    # None means "not given", as in MAF: ``output=None`` declares nothing.
    return {key: value for key, value in types.items() if value is not None}


def _require_async(fn: Callable[..., Any], where: str) -> None:
    if not inspect.iscoroutinefunction(fn):
        # MAF accepts it here and fails when the first message arrives; we say so up front.
        raise WorkflowValidationError(f"{where} must be an async def")


def _require_params(
    fn: Callable[..., Any], count: int, where: str, shape: str
) -> list[inspect.Parameter]:
    params = list(inspect.signature(fn).parameters.values())
    if len(params) != count:
        raise WorkflowValidationError(f"{where} must take {shape}, got {len(params)} parameters")
    return params


# ----------------------------------------------------------------------------- type resolution


def _resolve_early(explicit: dict[str, Any], fn: Callable[..., Any], where: str) -> dict[str, Any]:
    """Resolve what can be resolved when the decorator runs; a name not defined yet stays text
    until the executor is built."""
    out: dict[str, Any] = {}
    for key, value in explicit.items():
        try:
            out[key] = _resolve_one(value, key, where, _module_of(fn))
        except NameError:
            out[key] = value
    return out


def _resolve_explicit(
    explicit: dict[str, Any], fn: Callable[..., Any], owner: type | None, where: str
) -> dict[str, Any]:
    namespaces = (_module_of(fn), *_class_namespaces(owner))
    out: dict[str, Any] = {}
    for key, value in explicit.items():
        try:
            out[key] = _resolve_one(value, key, where, *namespaces)
        except NameError as exc:
            raise WorkflowValidationError(
                f"{where}: cannot resolve {key}={value!r}: {exc}; define or import it in "
                f"{getattr(fn, '__module__', 'its module')}"
            ) from exc
    return out


def _resolve_one(value: Any, key: str, where: str, *namespaces: Mapping[str, Any]) -> Any:
    if isinstance(value, str):
        try:
            value = resolve_type_name(value, *namespaces)
        except ValueError as exc:
            raise WorkflowValidationError(f"{where}: {key}= {exc}") from exc
    if contains_typevar(value):
        raise WorkflowValidationError(
            f"{where}: its {key} type {value!r} is an unresolved type variable; give concrete types"
        )
    return value


def _module_of(fn: Callable[..., Any]) -> Mapping[str, Any]:
    return getattr(fn, "__globals__", None) or {}


def _class_namespaces(owner: type | None) -> list[Mapping[str, Any]]:
    return [vars(klass) for klass in owner.__mro__] if owner is not None else []


def _hints(fn: Callable[..., Any], owner: type | None, where: str) -> dict[str, Any]:
    # The module's names come first, as for type names given as text; the class namespace
    # only fills in what the module lacks (a class nested in the executor).
    module = _module_of(fn)
    localns: dict[str, Any] = {}
    for namespace in reversed(_class_namespaces(owner)):
        localns.update((k, v) for k, v in namespace.items() if k not in module)
    try:
        return typing.get_type_hints(fn, localns=localns, include_extras=True)
    except Exception as exc:
        raise WorkflowValidationError(
            f"cannot resolve the annotations of {where} ({exc}); define the types at module "
            "level or pass them explicitly, e.g. @handler(input=..., output=...)"
        ) from exc


def parse_context_annotation(annotation: Any) -> tuple[Types, Types]:
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
    outs = declared_types(args[0]) if args else ()
    wouts = declared_types(args[1]) if len(args) > 1 else ()
    return outs, wouts


def declared_types(annotation: Any) -> tuple[Any, ...]:
    """The members a declared output type stands for: ``A | B`` -> (A, B); ``Never`` -> ()."""
    if annotation in (Never, NoReturn, None, type(None)):
        return ()
    if contains_typevar(annotation):
        raise WorkflowValidationError(f"unresolved type variable in {annotation!r} in a handler")
    return tuple(t for t in flatten_union(annotation) if t not in (Never, NoReturn))


def _optional_types(explicit: dict[str, Any], key: str) -> Types:
    return declared_types(explicit[key]) if key in explicit else None


def _message_type(annotation: Any, where: str) -> Any:
    if contains_typevar(annotation):
        raise WorkflowValidationError(
            f"{where}: its message type {annotation!r} is an unresolved type variable; "
            "give concrete types, e.g. @handler(input=...)"
        )
    return annotation


# ---------------------------------------------------------------------------------- resolvers


def resolve_handler(name: str, fn: Callable[..., Any], owner: type | None) -> HandlerSpec:
    """The spec of a ``@handler`` method of class ``owner``."""
    where = f"handler {fn.__qualname__}"
    explicit: dict[str, Any] | None = getattr(fn, HANDLER_MARK)
    if explicit:
        types = _resolve_explicit(explicit, fn, owner, where)
        return HandlerSpec(
            name,
            types["input"],
            _optional_types(types, "output"),
            _optional_types(types, "workflow_output"),
        )
    params = list(inspect.signature(fn).parameters.values())
    hints = _hints(fn, owner, where)
    outs, wouts = parse_context_annotation(hints.get(params[2].name, inspect.Parameter.empty))
    return HandlerSpec(name, _message_type(hints[params[1].name], where), outs, wouts)


def resolve_response_handler(
    name: str, fn: Callable[..., Any], owner: type | None
) -> ResponseHandlerSpec:
    """The spec of a ``@response_handler`` method of class ``owner``."""
    where = f"response handler {fn.__qualname__}"
    explicit: dict[str, Any] | None = getattr(fn, RESPONSE_MARK)
    if explicit:
        types = _resolve_explicit(explicit, fn, owner, where)
        return ResponseHandlerSpec(
            name,
            types["request"],
            types["response"],
            _optional_types(types, "output"),
            _optional_types(types, "workflow_output"),
        )
    params = list(inspect.signature(fn).parameters.values())
    hints = _hints(fn, owner, where)
    outs, wouts = parse_context_annotation(hints.get(params[3].name, inspect.Parameter.empty))
    return ResponseHandlerSpec(
        name,
        _message_type(hints[params[1].name], where),
        _message_type(hints[params[2].name], where),
        outs,
        wouts,
    )


def resolve_function_handler(
    fn: Callable[..., Any], *, input: Any = None, output: Any = None, workflow_output: Any = None
) -> HandlerSpec:
    """The spec of an ``@executor`` function ``(message)`` or ``(message, ctx)``.

    Unlike ``@handler``, each keyword given overrides only its own annotation (MAF's rule for
    function executors): ``@executor(output=float)`` keeps the annotated message type.
    """
    where = f"@executor function {getattr(fn, '__qualname__', fn)!r}"
    params = list(inspect.signature(fn).parameters.values())
    if len(params) not in (1, 2):
        raise WorkflowValidationError(
            f"{where} must take (message) or (message, ctx), got {len(params)} parameters"
        )
    given = _resolve_explicit(
        _given(input=input, output=output, workflow_output=workflow_output), fn, None, where
    )
    needs_hints = "input" not in given or (
        len(params) == 2 and not {"output", "workflow_output"} <= given.keys()
    )
    hints = _hints(fn, None, where) if needs_hints else {}
    if "input" in given:
        message_type = given["input"]
    elif params[0].name in hints:
        message_type = _message_type(hints[params[0].name], where)
    else:
        raise WorkflowValidationError(
            f"{where} must annotate its message parameter {params[0].name!r} "
            "or give @executor(input=...)"
        )
    outs: Types = ()
    wouts: Types = ()
    if len(params) == 2:
        outs, wouts = parse_context_annotation(hints.get(params[1].name, inspect.Parameter.empty))
    if "output" in given:
        outs = declared_types(given["output"])
    if "workflow_output" in given:
        wouts = declared_types(given["workflow_output"])
    return HandlerSpec(getattr(fn, "__name__", "function"), message_type, outs, wouts)
