"""The closed set of user types the checkpoint codec may rebuild.

A stored checkpoint names a type only as a key into this registry; the decoder never imports a
module or looks a name up anywhere else. The registry is filled from the handler annotations of
every workflow that is built (so the types a graph exchanges restore without ceremony) and by
explicit ``register_type(cls)`` for anything else kept in state.
"""

from __future__ import annotations

import dataclasses
import enum
import threading
import types
import typing
from collections.abc import Iterable
from typing import Any, TypeVar

__all__ = ["TypeRegistry", "default_registry", "register_type", "type_name"]

T = TypeVar("T", bound=type)


def type_name(cls: type) -> str:
    """The stable key a class is stored under: ``module.QualifiedName``."""
    return f"{cls.__module__}.{cls.__qualname__}"


def is_pydantic_model(cls: type) -> bool:
    # Duck-typed so the engine does not depend on pydantic being installed.
    return isinstance(cls, type) and hasattr(cls, "model_validate") and hasattr(cls, "model_dump")


def is_restorable_class(cls: object) -> bool:
    """Classes the codec knows how to take apart and rebuild."""
    if not isinstance(cls, type):
        return False
    return (
        dataclasses.is_dataclass(cls)
        or issubclass(cls, enum.Enum)
        or is_pydantic_model(cls)
    )


class TypeRegistry:
    """Maps stored type names to classes, and classes back to names."""

    def __init__(self) -> None:
        self._by_name: dict[str, type] = {}
        self._lock = threading.Lock()

    def register(self, cls: T, *, name: str | None = None) -> T:
        """Allow ``cls`` (a dataclass, pydantic model or Enum) and the types of its fields.

        Re-registering a name replaces the earlier class: a module that is reloaded, or a class
        defined again inside a function, must restore as the class that exists now.
        """
        if not is_restorable_class(cls):
            raise TypeError(
                f"register_type() takes a dataclass, a pydantic model or an Enum, not {cls!r}"
            )
        key = name or type_name(cls)
        with self._lock:
            if self._by_name.get(key) is cls:
                return cls
            self._by_name[key] = cls
        for nested in _field_types(cls):
            self.register_annotation(nested)
        return cls

    def register_annotation(self, annotation: object) -> None:
        """Register every restorable class mentioned in a type annotation."""
        for cls in iter_annotation_classes(annotation):
            if is_restorable_class(cls):
                self.register(cls)

    def resolve(self, name: str) -> type | None:
        return self._by_name.get(name)

    def name_of(self, cls: type) -> str | None:
        key = type_name(cls)
        return key if self._by_name.get(key) is cls else None

    def __contains__(self, cls: object) -> bool:
        return isinstance(cls, type) and self.name_of(cls) is not None


def iter_annotation_classes(annotation: object) -> Iterable[type]:
    """Yield the classes inside an annotation (``list[Order] | None`` yields list, Order, NoneType)."""
    stack = [annotation]
    seen: set[int] = set()
    while stack:
        item = stack.pop()
        if id(item) in seen:
            continue
        seen.add(id(item))
        if isinstance(item, type) and not typing.get_args(item):
            yield item
            continue
        origin = typing.get_origin(item)
        if origin is not None:
            if isinstance(origin, type):
                yield origin
            stack.extend(a for a in typing.get_args(item) if a is not Ellipsis)
        elif isinstance(item, types.UnionType):
            stack.extend(typing.get_args(item))


def _field_types(cls: type) -> list[object]:
    try:
        if dataclasses.is_dataclass(cls):
            hints = typing.get_type_hints(cls)
            return [hints.get(f.name, Any) for f in dataclasses.fields(cls)]
        if is_pydantic_model(cls):
            fields = getattr(cls, "model_fields", {})
            return [f.annotation for f in fields.values()]
    except Exception:  # unresolvable forward references: the nested types can be registered by hand
        return []
    return []


default_registry = TypeRegistry()


def register_type(cls: T, *, name: str | None = None) -> T:
    """Allow checkpoints to store and restore instances of ``cls``.

    Usable as a decorator. Types named in handler annotations are registered when their workflow
    is built; register anything else you keep in shared or executor state.

    Args:
        cls: a dataclass, a pydantic model class or an Enum.
        name: the key to store it under; defaults to ``module.QualifiedName``. Give a fixed name
            when a class may move between modules.

    Returns:
        ``cls`` unchanged.

    Raises:
        TypeError: ``cls`` is not a kind of class the codec can rebuild.
    """
    return default_registry.register(cls, name=name)
