"""The closed set of user types the checkpoint codec may rebuild.

A stored checkpoint names a type only as a key into this registry; the decoder never imports a
module. The registry is filled from the handler annotations of every workflow that is built (so
the types a graph exchanges restore without ceremony), by explicit ``register_type(cls)`` for
anything else kept in state, and by the allow-lists Microsoft Agent Framework code passes
(``allowed_checkpoint_types=["my_app.models:MyState"]``). A listed name is looked up only among
modules that are already imported (``sys.modules``); one whose module is not imported yet is
remembered and looked up again when a checkpoint first needs it.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import decimal
import enum
import sys
import threading
import types
import typing
import uuid
from collections.abc import Iterable, Mapping
from typing import Any

from .chat_types import CHAT_TYPE_NAMES, chat_class, chat_type_name
from .exceptions import CheckpointTypeError

__all__ = [
    "AllowedTypes",
    "TypeRegistry",
    "default_registry",
    "register_checkpoint_type",
    "register_type",
    "resolve_type_name",
    "type_name",
]


# What callers may pass as an allow-list: names (``"module:qualname"``, or MAF's event form
# ``"module.qualname"``), classes, or MAF's ``{serialized name: class}`` mapping.
AllowedTypes = Iterable[str | type] | Mapping[str, type]

# Types the codec stores with its own tags: listing them is accepted and changes nothing.
_NATIVE_TYPES: frozenset[type] = frozenset(
    {
        str,
        int,
        float,
        bool,
        type(None),
        bytes,
        bytearray,
        list,
        dict,
        tuple,
        set,
        frozenset,
        dt.datetime,
        dt.date,
        dt.time,
        dt.timedelta,
        dt.timezone,
        decimal.Decimal,
        uuid.UUID,
        # Annotations such as list[Message] (a request's response type): stored as type
        # descriptions. MAF 1.23 code lists "types:GenericAlias" to resume HITL requests.
        types.GenericAlias,
        types.UnionType,
    }
)


def _is_native(cls: type) -> bool:
    """Stored by the codec's own tags (MAF's chat types included): nothing to register."""
    return cls in _NATIVE_TYPES or chat_type_name(cls) is not None


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
    return dataclasses.is_dataclass(cls) or issubclass(cls, enum.Enum) or is_pydantic_model(cls)


class TypeRegistry:
    """Maps stored type names to classes, and classes back to names."""

    def __init__(self) -> None:
        self._by_name: dict[str, type] = {}
        # Bumped by every change, so a reader can cache what it derived from the classes.
        self.generation = 0
        # Listed names not found yet: stored key -> the (module, qualname) splits to try.
        self._pending: dict[str, list[tuple[str, str]]] = {}
        self._lock = threading.RLock()

    def register[T: type](self, cls: T, *, name: str | None = None) -> T:
        """Allow ``cls`` (a dataclass, pydantic model or Enum) and the types of its fields.

        Re-registering a name replaces the earlier class: a module that is reloaded, or a class
        defined again inside a function, must restore as the class that exists now.

        MAF's chat types (``Message``, ``Content``...) are accepted and change nothing: the
        codec stores them with a tag of their own.

        Raises:
            CheckpointTypeError: ``cls`` is not a kind of class the codec can rebuild.
        """
        if isinstance(cls, type) and chat_type_name(cls) is not None:
            return cls
        if not is_restorable_class(cls):
            raise CheckpointTypeError(
                f"register_type() takes a dataclass, a pydantic model or an Enum, not {cls!r}"
            )
        key = name or type_name(cls)
        with self._lock:
            if self._by_name.get(key) is cls:
                return cls
            self._by_name[key] = cls
            self.generation += 1
        for nested in _field_types(cls):
            self.register_annotation(nested)
        return cls

    def register_annotation(self, annotation: object) -> None:
        """Register every restorable class mentioned in a type annotation."""
        for cls in iter_annotation_classes(annotation):
            if is_restorable_class(cls):
                self.register(cls)

    def allow(self, entries: AllowedTypes | None) -> None:
        """Allow every listed type, the way MAF's ``allowed_checkpoint_types`` reads.

        Classes are registered at once. A ``"module:qualname"`` name is looked up in modules
        already imported, never importing one; if its module is not imported yet, the name is
        kept and looked up again when a checkpoint first stores or restores that type. Types the
        codec handles natively (datetime, Decimal, UUID, set...) are accepted and ignored.

        Raises:
            CheckpointTypeError: an entry is neither a class nor a well-formed name, or names
                something that is not a dataclass, pydantic model or Enum.
        """
        if entries is None:
            return
        if isinstance(entries, (str, bytes)):
            raise CheckpointTypeError(
                f"allowed types must be a list of names or classes, not the single {entries!r}"
            )
        if isinstance(entries, Mapping):
            for key, cls in entries.items():
                if not isinstance(cls, type) or key not in _names_for(cls):
                    raise CheckpointTypeError(
                        f"allowed types entry {key!r} must map to the class of that name, "
                        f"not {cls!r}"
                    )
                self._allow_class(cls)
            return
        for entry in entries:
            if isinstance(entry, type):
                self._allow_class(entry)
            elif isinstance(entry, str):
                self._allow_name(entry)
            else:
                raise CheckpointTypeError(
                    f"an allowed type is a class or a 'module:qualname' name, not {entry!r}"
                )

    def _allow_class(self, cls: type) -> None:
        if not _is_native(cls):
            self.register(cls)

    def _allow_name(self, entry: str) -> None:
        splits = _splits(entry)
        if not splits:
            raise CheckpointTypeError(
                f"allowed type {entry!r} is not a 'module:qualname' name (for example "
                "'my_app.models:MyState')"
            )
        found = _find_loaded(splits)
        if found is None:
            with self._lock:
                self._pending[_stored_key(entry)] = splits
            return
        if not isinstance(found, type):
            raise CheckpointTypeError(
                f"allowed type {entry!r} names {found!r}, which is not a class"
            )
        if not is_restorable_class(found) and not _is_native(found):
            raise CheckpointTypeError(
                f"allowed type {entry!r} is a plain class; checkpoints store dataclasses, "
                "pydantic models and Enums (there is no pickle), so make it one of those"
            )
        self._allow_class(found)

    def registered(self) -> dict[str, type]:
        """Every class registered so far, by stored name (a snapshot)."""
        with self._lock:
            return dict(self._by_name)

    def resolve(self, name: str) -> type | None:
        found = self._by_name.get(name)
        if found is None and name in self._pending:
            found = self._resolve_pending(name)
        return found

    def _resolve_pending(self, name: str) -> type | None:
        with self._lock:
            splits = self._pending.get(name)
        found = _find_loaded(splits) if splits else None
        if not is_restorable_class(found):
            return None
        assert isinstance(found, type)
        self.register(found)
        if type_name(found) != name:  # listed under another name (an alias): keep both
            self.register(found, name=name)
        with self._lock:
            self._pending.pop(name, None)
        return found

    def name_of(self, cls: type) -> str | None:
        key = type_name(cls)
        if self._by_name.get(key) is cls:
            return key
        if key in self._pending and is_restorable_class(cls):
            # Listed by name before its module was imported: the class in hand is the one meant.
            self.register(cls)
            with self._lock:
                self._pending.pop(key, None)
            return key
        return None

    def why_unknown(self, name: str) -> str:
        """Why ``resolve(name)`` finds nothing, for error messages."""
        with self._lock:
            splits = self._pending.get(name)
        if splits is None:
            return "which is not registered in this process"
        found = _find_loaded(splits)
        loaded = [f"{m}:{q}" for m, q in splits if m in sys.modules]
        if found is None and loaded:
            return f"which is listed as an allowed type, but {' or '.join(loaded)} does not exist"
        if found is None:
            modules = sorted({module for module, _ in splits})
            return (
                f"which is listed as an allowed type but not loaded: import "
                f"{' or '.join(modules)} before restoring (checkpoints never import modules)"
            )
        return (
            f"which is listed as an allowed type but is {found!r}, not a dataclass, a pydantic "
            "model or an Enum"
        )

    def __contains__(self, cls: object) -> bool:
        return isinstance(cls, type) and self.name_of(cls) is not None


def _names_for(cls: type) -> set[str]:
    return {type_name(cls), f"{cls.__module__}:{cls.__qualname__}"}


def _stored_key(entry: str) -> str:
    """The registry key a listed name stands for (``module.QualName``)."""
    return entry.replace(":", ".", 1)


def _splits(entry: str) -> list[tuple[str, str]]:
    """The (module, qualname) pairs a listed name may mean, most specific module first.

    ``"a.b:C.D"`` is exact. A dotted name without a colon (MAF's serialized event types) could
    split anywhere, so each split is tried.
    """
    module, colon, qualname = entry.partition(":")
    if colon:
        pairs = [(module, qualname)]
    else:
        parts = entry.split(".")
        pairs = [(".".join(parts[:i]), ".".join(parts[i:])) for i in range(len(parts) - 1, 0, -1)]
    return [
        (m, q)
        for m, q in pairs
        if all(p.isidentifier() for p in m.split("."))
        and all(p.isidentifier() for p in q.split("."))
    ]


def _find_loaded(splits: list[tuple[str, str]]) -> object | None:
    """The object a name refers to among already imported modules, or None. Reads namespaces
    directly: ``getattr`` on a module may run a lazy ``__getattr__`` that imports."""
    for module_name, qualname in splits:
        module = sys.modules.get(module_name)
        if not isinstance(module, types.ModuleType):
            continue
        found: object = module
        for part in qualname.split("."):
            namespace = getattr(found, "__dict__", None)
            if not isinstance(namespace, Mapping) or part not in namespace:
                found = None
                break
            found = namespace[part]
        if found is not None:
            return found
    return None


def iter_annotation_classes(annotation: object) -> Iterable[type]:
    """Yield the classes in an annotation (``list[Order] | None`` yields list, Order, NoneType)."""
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
    except Exception:  # noqa: BLE001 - unresolvable forward references: the nested types can be registered by hand
        return []
    return []


default_registry = TypeRegistry()

_BUILTIN_TYPES: dict[str, type] = {
    t.__qualname__: t
    for t in (str, int, float, bool, bytes, dict, list, tuple, set, frozenset, type(None))
}


def resolve_type_name(name: str | None, registry: TypeRegistry = default_registry) -> Any:
    """The type a checkpoint names (``describe_type``'s inverse): a builtin (``"str"``, or MAF's
    ``"builtins.str"``), a registered class or one of MAF's chat types (an agent's request
    answered with a ``Content``); None when it is none of them."""
    if name is None:
        return None
    return (
        _BUILTIN_TYPES.get(name.removeprefix("builtins."))
        or registry.resolve(name)
        or _chat_type(name)
    )


def _chat_type(name: str) -> type | None:
    """MAF's chat type of that full name, once MAF is loaded (a name never imports it)."""
    module, _, short = name.rpartition(".")
    if short not in CHAT_TYPE_NAMES or "agent_framework" not in sys.modules:
        return None
    cls = chat_class(short)
    return cls if f"{cls.__module__}.{cls.__qualname__}" == f"{module}.{short}" else None


def register_type[T: type](cls: T, *, name: str | None = None) -> T:
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
        CheckpointTypeError: ``cls`` is not a kind of class the codec can rebuild (a
            ``TypeError`` too).
    """
    return default_registry.register(cls, name=name)


def register_checkpoint_type[C: type](cls: C) -> C:
    """MAF's name for ``register_type``: allow ``cls`` in every checkpoint of this process.

    Raises:
        CheckpointTypeError: ``cls`` is not a dataclass, pydantic model or Enum (MAF pickles any
            class; our checkpoints are typed JSON).
    """
    return default_registry.register(cls)
