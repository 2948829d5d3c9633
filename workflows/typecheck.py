"""Runtime checks of values against handler annotations, and how specific a match is.

Handlers are chosen by the most specific declared type that accepts a message (an ``int`` handler
beats an ``object`` handler whatever the method names), so this module answers two questions:
does a value fit an annotation, and how close is the fit.
"""

from __future__ import annotations

import ast
import builtins
import dataclasses
import enum
import types
import typing
from collections.abc import Mapping
from typing import Any, Literal, TypeVar, Union

__all__ = [
    "coerce",
    "contains_typevar",
    "flatten_union",
    "is_compatible",
    "is_instance_of",
    "match_distance",
    "resolve_type_name",
]

_NONE_TYPE = type(None)
_FAR = 1_000.0


def flatten_union(annotation: object) -> tuple[object, ...]:
    """``int | str`` -> (int, str); ``None`` -> (NoneType,); anything else -> (annotation,)."""
    if annotation is None:
        return (_NONE_TYPE,)
    if typing.get_origin(annotation) is Union or isinstance(annotation, types.UnionType):
        out: list[object] = []
        for arg in typing.get_args(annotation):
            out.extend(flatten_union(arg))
        return tuple(out)
    return (annotation,)


def _strip_annotated(annotation: object) -> object:
    while typing.get_origin(annotation) is typing.Annotated:
        annotation = typing.get_args(annotation)[0]
    return annotation


def is_instance_of(value: object, annotation: object) -> bool:
    """Whether ``value`` fits ``annotation``; containers are checked element by element."""
    annotation = _strip_annotated(annotation)
    if annotation is Any or annotation is object:
        return True
    if annotation is None or annotation is _NONE_TYPE:
        return value is None
    origin = typing.get_origin(annotation)
    if origin is Union or isinstance(annotation, types.UnionType):
        return any(is_instance_of(value, arg) for arg in typing.get_args(annotation))
    if origin is Literal:
        return any(value == arg and type(value) is type(arg) for arg in typing.get_args(annotation))
    if origin is None:
        if isinstance(annotation, type):
            if annotation is float and type(value) is int:
                return True  # the numeric tower of PEP 484: an int is acceptable as a float
            return isinstance(value, annotation)
        return False
    if not isinstance(origin, type) or not isinstance(value, origin):
        return False
    args = typing.get_args(annotation)
    if not args:
        return True
    if issubclass(origin, tuple):
        if len(args) == 2 and args[1] is Ellipsis:
            return all(is_instance_of(v, args[0]) for v in value)  # type: ignore[attr-defined]
        return len(value) == len(args) and all(  # type: ignore[arg-type]
            is_instance_of(v, a)
            for v, a in zip(value, args)  # type: ignore[call-overload]
        )
    if issubclass(origin, Mapping):
        key_t, val_t = args if len(args) == 2 else (args[0], Any)
        return all(
            is_instance_of(k, key_t) and is_instance_of(v, val_t)
            for k, v in value.items()  # type: ignore[attr-defined]
        )
    if len(args) == 1:
        return all(is_instance_of(v, args[0]) for v in value)  # type: ignore[attr-defined]
    return True


def match_distance(value: object, annotation: object) -> float:
    """How far ``annotation`` is from ``type(value)``: 0 for the exact class, more for bases,
    ``Any``/``object`` farthest. Only meaningful when ``is_instance_of`` holds."""
    annotation = _strip_annotated(annotation)
    if annotation is Any or annotation is object:
        return _FAR
    origin = typing.get_origin(annotation)
    if origin is Union or isinstance(annotation, types.UnionType):
        members = [a for a in typing.get_args(annotation) if is_instance_of(value, a)]
        # A union is a little less specific than the member it matched through.
        return min(match_distance(value, m) for m in members) + 0.25 if members else _FAR
    if origin is Literal:
        return -0.5
    if annotation is None or annotation is _NONE_TYPE:
        return 0.0
    cls = origin if isinstance(origin, type) else annotation
    if not isinstance(cls, type):
        return _FAR
    mro = type(value).__mro__
    base = float(mro.index(cls)) if cls in mro else _FAR / 2
    # list[int] says more than list.
    return base - 0.5 if origin is not None and typing.get_args(annotation) else base


def is_compatible(source: object, target: object) -> bool:
    """Build-time check: can every value of declared type ``source`` be accepted by ``target``?"""
    source, target = _strip_annotated(source), _strip_annotated(target)
    if target is Any or target is object or source is Any:
        return True
    if target is source:
        return True
    target_members = flatten_union(target)
    if len(target_members) > 1:
        return all(any(is_compatible(s, t) for t in target_members) for s in flatten_union(source))
    source_members = flatten_union(source)
    if len(source_members) > 1:
        return all(is_compatible(s, target) for s in source_members)
    s_origin = typing.get_origin(source) or source
    t_origin = typing.get_origin(target) or target
    if typing.get_origin(target) is Literal or typing.get_origin(source) is Literal:
        if typing.get_origin(source) is Literal:
            return all(is_instance_of(v, target) for v in typing.get_args(source))
        return False
    if not (isinstance(s_origin, type) and isinstance(t_origin, type)):
        return False
    if not issubclass(s_origin, t_origin):
        return False
    t_args, s_args = typing.get_args(target), typing.get_args(source)
    if not t_args or not s_args:
        return True
    if len(t_args) != len(s_args):
        return True  # shapes differ (tuple[int, ...] vs tuple[int]); trust the runtime check
    return all(is_compatible(s, t) for s, t in zip(s_args, t_args) if s is not Ellipsis)


def coerce(value: object, annotation: object) -> object:
    """Turn JSON-like input (from an HTTP form, a queue) into ``annotation`` where it is
    unambiguous: dict -> dataclass / pydantic model, list -> tuple/set, int -> float,
    str/int -> Enum. Returns ``value`` unchanged when no rule applies."""
    annotation = _strip_annotated(annotation)
    if is_instance_of(value, annotation):
        return value
    for member in flatten_union(annotation):
        converted = _coerce_one(value, member)
        if converted is not _NO and is_instance_of(converted, annotation):
            return converted
    return value


_NO = object()


def _coerce_one(value: object, target: object) -> object:
    origin = typing.get_origin(target) or target
    if not isinstance(origin, type):
        return _NO
    try:
        if origin is float and type(value) is int:
            return float(value)
        if issubclass(origin, enum.Enum):
            if isinstance(value, str) and value in origin.__members__:
                return origin[value]
            return origin(value)
        if isinstance(value, dict):
            if hasattr(origin, "model_validate"):
                return origin.model_validate(value)
            if dataclasses.is_dataclass(origin):
                hints = typing.get_type_hints(origin)
                return origin(**{k: coerce(v, hints.get(k, Any)) for k, v in value.items()})
        if isinstance(value, list):
            args = typing.get_args(target)
            item_t = args[0] if args else Any
            if origin in (tuple, set, frozenset, list):
                return origin(coerce(v, item_t) for v in value)
    except Exception:  # noqa: BLE001 - any failure to build the target means "not coercible"
        return _NO
    return _NO


# ------------------------------------------------------------------------------ type names


def contains_typevar(annotation: object) -> bool:
    """Whether an unresolved ``TypeVar`` hides anywhere in ``annotation`` (``list[T]`` too)."""
    if isinstance(annotation, TypeVar):
        return True
    return any(contains_typevar(arg) for arg in typing.get_args(annotation))


# What MAF's resolution adds to a module's names; builtins come after both.
_TYPE_NAME_EXTRAS: dict[str, object] = {"Union": Union, "Optional": typing.Optional}


def resolve_type_name(text: str, *namespaces: Mapping[str, Any]) -> Any:
    """Turn a type written as text (``"int | Order"``, ``"list[Order]"``, ``"models.Order"``)
    into the type it names, looking names up in ``namespaces`` in order, then ``Union`` and
    ``Optional``, then the builtins.

    The text is parsed, never evaluated: only names, dotted attributes, ``|``, subscripts and
    literal constants are allowed, so a type name cannot run code.

    Raises:
        NameError: a name is in none of the namespaces (the caller may retry with more).
        ValueError: the text is not a type expression.
    """
    try:
        tree = ast.parse(text.strip(), mode="eval")
    except SyntaxError as exc:
        raise ValueError(f"{text!r} is not a type expression: {exc.msg}") from exc
    return _build_type(tree.body, namespaces, text)


def _build_type(node: ast.expr, namespaces: tuple[Mapping[str, Any], ...], text: str) -> Any:
    if isinstance(node, ast.Name):
        for namespace in (*namespaces, _TYPE_NAME_EXTRAS, vars(builtins)):
            if node.id in namespace:
                return namespace[node.id]
        raise NameError(f"name {node.id!r} in the type {text!r} is not defined", name=node.id)
    if isinstance(node, ast.Attribute):
        owner = _build_type(node.value, namespaces, text)
        try:
            return getattr(owner, node.attr)
        except AttributeError as exc:
            raise NameError(f"{ast.unparse(node)!r} in the type {text!r} does not exist") from exc
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.BitOr):
        left = _build_type(node.left, namespaces, text)
        right = _build_type(node.right, namespaces, text)
        try:
            return left | right  # the same object an annotation ``A | B`` gives
        except TypeError:  # ``None | int``, string forward references
            return typing.Union[left, right]  # noqa: UP007 (the | operator is what failed)
    if isinstance(node, ast.Subscript):
        origin = _build_type(node.value, namespaces, text)
        return origin[_build_type(node.slice, namespaces, text)]
    if isinstance(node, ast.Tuple):
        return tuple(_build_type(item, namespaces, text) for item in node.elts)
    if isinstance(node, ast.List):
        return [_build_type(item, namespaces, text) for item in node.elts]
    if isinstance(node, ast.Constant):
        return node.value  # None, ``...`` and the values of a Literal[...]
    raise ValueError(f"{text!r} is not a type expression ({ast.unparse(node)!r} is not allowed)")
