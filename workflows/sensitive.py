"""Fields that hold sensitive data, declared on the type: ``Annotated[str, Sensitive()]``.

The engine stores and restores such a field like any other (a run needs its real data to go
on); the marker is for whatever shows checkpoints to people. The dashboard masks a marked
field wherever a value of that class travels: the run's input and output, shared and executor
state, in-flight messages, pending requests and their answers, and the event log::

    @dataclass
    class Customer:
        name: str
        email: Annotated[str, Sensitive()]
        card_last4: Annotated[str, Sensitive("payment card")]

It works for dataclasses and pydantic models alike, since both keep ``Annotated`` metadata in
their type hints. ``sensitive_fields`` reads it once per class.
"""

from __future__ import annotations

import dataclasses
import functools
import typing
from typing import Any

__all__ = ["Sensitive", "sensitive_fields"]


@dataclasses.dataclass(frozen=True, slots=True)
class Sensitive:
    """Marks a field as sensitive in ``Annotated[T, Sensitive()]``; ``reason`` is shown beside
    the mask ("payment card"), so a viewer knows what is hidden without seeing it."""

    reason: str = ""


@functools.cache
def sensitive_fields(cls: type) -> typing.Mapping[str, Sensitive]:
    """The fields of ``cls`` marked ``Sensitive``, by name; empty for any other type.

    Type hints that do not resolve (a forward reference to a name the module lacks) leave the
    class unmarked rather than failing: the marker must never stop a run or a page.
    """
    if not isinstance(cls, type):
        return {}
    try:
        hints = typing.get_type_hints(cls, include_extras=True)
    except (NameError, TypeError, AttributeError):  # a forward reference that does not resolve
        return {}
    found: dict[str, Sensitive] = {}
    for name, hint in hints.items():
        marker = _marker(hint)
        if marker is not None:
            found[name] = marker
    return found


def _marker(hint: Any) -> Sensitive | None:
    """The ``Sensitive`` in ``Annotated[...]`` metadata, also under ``Optional``/``|``."""
    if typing.get_origin(hint) is typing.Annotated:
        for extra in hint.__metadata__:
            if isinstance(extra, Sensitive):
                return extra
            if extra is Sensitive:
                return Sensitive()
        return _marker(typing.get_args(hint)[0])
    for arg in typing.get_args(hint):
        if typing.get_origin(arg) is typing.Annotated:
            found = _marker(arg)
            if found is not None:
                return found
    return None
