"""Microsoft Agent Framework's chat types in checkpoints: a closed list, stored in their own form.

An agent's conversation is made of MAF's ``Message``, ``Content``, ``AgentResponse`` and the
rest. They are neither dataclasses nor pydantic models, so the codec's ``model`` tag cannot
take them; each is stored instead as ``{"$t": "agent", "name": "Message", "v": {...}}``, where
``v`` is the class's own ``to_dict()`` passed through the codec (so a datetime inside stays a
datetime, and an object MAF would silently leave out is refused, naming where it was).

The names come from ``CHAT_TYPE_NAMES`` below and nowhere else: a stored name outside the list
is refused, and nothing named in the data is ever imported. ``agent_framework`` itself is
imported only when a checkpoint holds such a value or an agent runs: a workflow without agents
never loads it.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import Any

from .exceptions import CheckpointDecodeError, UnregisteredTypeError

__all__ = ["CHAT_TYPE_NAMES", "TAG_NAME", "chat_class", "chat_type_name", "decode_chat_value"]

TAG_NAME = "agent"

# Every MAF type a checkpoint may hold, by the name stored with it. Usage details are a plain
# dict in MAF, so they need no entry.
CHAT_TYPE_NAMES: tuple[str, ...] = (
    "AgentResponse",
    "AgentResponseUpdate",
    "AgentSession",
    "ChatResponse",
    "ChatResponseUpdate",
    "Content",
    "Message",
)

# Responses parse their structured output lazily from text; a parsed value is kept beside
# MAF's own form so a restored response hands back the same object without parsing again.
_VALUE_KEY = "$value"
_WITH_VALUE = frozenset({"AgentResponse", "ChatResponse"})

_classes: dict[str, type] | None = None


def _load() -> dict[str, type]:
    global _classes
    if _classes is None:
        import agent_framework

        _classes = {name: getattr(agent_framework, name) for name in CHAT_TYPE_NAMES}
    return _classes


def chat_type_name(cls: type) -> str | None:
    """The stored name of ``cls`` if it is one of MAF's chat types (exactly; no subclass)."""
    if not cls.__module__.startswith("agent_framework"):
        return None
    if "agent_framework" not in sys.modules:  # a look-alike module name; MAF is not loaded
        return None
    name = cls.__name__
    if name in CHAT_TYPE_NAMES and _load()[name] is cls:
        return name
    return None


def chat_class(name: str) -> type:
    """The class stored under ``name``.

    Raises:
        CheckpointDecodeError: ``name`` is not in the closed list, or MAF is not installed.
    """
    if name not in CHAT_TYPE_NAMES:
        raise CheckpointDecodeError(f"checkpoint names agent type {name!r}, which is not allowed")
    try:
        return _load()[name]
    except ImportError:
        raise UnregisteredTypeError(
            f"checkpoint holds an agent {name}; install agent-framework-core "
            "(superstep[agents]) to restore it"
        ) from None


def encode_chat_value(
    value: Any,
    name: str,
    encode_dict: Callable[[dict[str, Any]], Any],
    register: Callable[[type], None],
) -> dict[str, Any]:
    """``value``'s tagged form. ``encode_dict`` is the codec's own dict encoder; ``register``
    makes a parsed structured output's class restorable (the class is in hand, so it is the
    one meant)."""
    fields = value.to_dict()
    if name in _WITH_VALUE and getattr(value, "_value_parsed", False):
        parsed = getattr(value, "_value", None)
        if parsed is not None:
            register(type(parsed))
            fields[_VALUE_KEY] = parsed
    return {"$t": TAG_NAME, "name": name, "v": encode_dict(fields)}


def decode_chat_value(name: str, fields: dict[str, Any]) -> Any:
    """Rebuild a chat value from its decoded fields (``to_dict()``'s output).

    Raises:
        CheckpointDecodeError: the fields are not what the class makes (MAF refuses them).
    """
    cls = chat_class(name)
    has_value = _VALUE_KEY in fields
    parsed = fields.pop(_VALUE_KEY, None)
    try:
        value = cls.from_dict(fields)  # type: ignore[attr-defined]
    except Exception as exc:  # MAF's own validation: TypeError, ValueError, pydantic's ...
        raise CheckpointDecodeError(f"stored agent {name} could not be restored: {exc}") from exc
    if has_value:
        value._value = parsed
        value._value_parsed = True
    return value
