"""Fingerprints that let a resumed functional run pair each step call with its saved result.

Three things identify a call, as in Microsoft Agent Framework 1.23:

- the step's *code*: its module, qualified name, first line and compiled code (constants and
  nested code objects included), plus its defaults and the values its closure captured;
- its *arguments*, bound to the signature (so ``f(1)`` and ``f(x=1)`` agree) and reduced to a
  canonical, type-preserving JSON form: ``True`` is not ``1``, ``(1,)`` is not ``[1]``;
- how many calls with the same code and arguments came before it in the run (the occurrence).

Arguments of other types (an agent, a lock, an open file) have no canonical form: such a call
falls back to its place among the calls of that step, which is safe only when calls do not run
concurrently (the step wrapper refuses concurrent ones). Beyond MAF, values the checkpoint codec
can store (registered dataclasses, pydantic models and enums, MAF's ``Message`` and other chat
types, datetimes, ``Decimal``...) are fingerprinted by their codec form, so agent steps taking
messages keep a stable identity.

A fingerprint is the SHA-256 of canonical JSON: the same source on the same Python gives the same
fingerprint in any process, which is what a resume after a crash needs.
"""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Callable, Mapping
from types import CodeType
from typing import Any

from .. import codec
from ..exceptions import CheckpointEncodeError

__all__ = [
    "argument_digest",
    "code_digest",
    "defaults_digest",
    "digest",
    "function_digest",
]

# The marker for "this value has no canonical form".
_OPAQUE = object()


def digest(data: Any) -> str:
    """SHA-256 of ``data``'s canonical JSON text (keys sorted, no spaces)."""
    text = json.dumps(data, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


# ------------------------------------------------------------------------------- arguments


def argument_digest(arguments: Mapping[str, Any]) -> str | None:
    """The fingerprint of bound arguments, or None when one of them has no canonical form."""
    form = _canonical(dict(arguments), set())
    return None if form is _OPAQUE else digest(form)


def _canonical(value: Any, seen: set[int]) -> Any:
    kind = type(value)
    simple = _SCALARS.get(kind)
    if simple is not None:
        return simple(value)
    if kind is float:
        return ["float", value.hex()] if math.isfinite(value) else _OPAQUE
    if kind is complex:
        parts = (value.real, value.imag)
        return ["complex", *(p.hex() for p in parts)] if all(map(math.isfinite, parts)) else _OPAQUE
    if kind in (list, tuple, set, frozenset, dict) or isinstance(value, Mapping):
        if id(value) in seen:  # a value that contains itself has no finite form
            return _OPAQUE
        seen.add(id(value))
        try:
            return _canonical_container(value, seen)
        finally:
            seen.discard(id(value))
    return _canonical_stored(value)


_SCALARS: dict[type, Callable[[Any], Any]] = {
    type(None): lambda v: ["none"],
    bool: lambda v: ["bool", v],
    int: lambda v: ["int", v],
    str: lambda v: ["str", v],
    bytes: lambda v: ["bytes", v.hex()],
}


def _canonical_container(value: Any, seen: set[int]) -> Any:
    if isinstance(value, Mapping):
        pairs = []
        for key, item in value.items():
            form = _canonical(item, seen)
            if type(key) is not str or form is _OPAQUE:
                return _OPAQUE
            pairs.append([key, form])
        return ["mapping", f"{type(value).__module__}.{type(value).__qualname__}", pairs]
    items = [_canonical(item, seen) for item in value]
    if any(item is _OPAQUE for item in items):
        return _OPAQUE
    if isinstance(value, (set, frozenset)):  # no order of their own: sort the forms
        items.sort(key=lambda item: json.dumps(item, sort_keys=True))
    return [type(value).__name__, items]


def _canonical_stored(value: Any) -> Any:
    """Values the checkpoint codec stores exactly are identified by what it stores."""
    try:
        stored = codec.encode(value, where="step argument")
    except CheckpointEncodeError:
        return _OPAQUE
    return ["stored", f"{type(value).__module__}.{type(value).__qualname__}", stored]


# ------------------------------------------------------------------------------------ code


def code_digest(func: Callable[..., Any]) -> str:
    """The fingerprint of a function's source identity: module, name, first line and code
    (defaults and closure not included)."""
    code = getattr(func, "__code__", None)
    return digest(
        {
            "module": getattr(func, "__module__", None),
            "qualname": getattr(func, "__qualname__", None),
            "line": code.co_firstlineno if code is not None else None,
            "code": _code_form(code) if code is not None else None,
        }
    )


def _code_form(code: CodeType) -> dict[str, Any]:
    return {
        "args": [code.co_argcount, code.co_posonlyargcount, code.co_kwonlyargcount],
        "flags": code.co_flags,
        "bytes": code.co_code.hex(),
        "consts": [_constant_form(c) for c in code.co_consts],
        "names": list(code.co_names),
        "locals": list(code.co_varnames),
        "free": list(code.co_freevars),
        "cells": list(code.co_cellvars),
    }


def _constant_form(value: Any) -> Any:
    if isinstance(value, CodeType):
        return ["code", _code_form(value)]
    if value is Ellipsis:
        return ["ellipsis"]
    if type(value) in (tuple, frozenset):
        items = [_constant_form(item) for item in value]
        if type(value) is frozenset:
            items.sort(key=lambda item: json.dumps(item, sort_keys=True))
        return [type(value).__name__, items]
    if type(value) in (float, complex):
        return [type(value).__name__, repr(value)]
    if value is None or type(value) in (bool, int, str):
        return [type(value).__name__, value]
    if type(value) is bytes:
        return ["bytes", value.hex()]
    return ["other", f"{type(value).__module__}.{type(value).__qualname__}"]


def defaults_digest(func: Callable[..., Any]) -> tuple[str, bool]:
    """The fingerprint of a function's default values, and whether they are durable (immutable
    values only, so the fingerprint taken now still describes them later)."""
    form, durable = _defaults_form(func)
    return digest(form), durable


def _defaults_form(func: Callable[..., Any]) -> tuple[dict[str, Any], bool]:
    positional = getattr(func, "__defaults__", None) or ()
    keywords = getattr(func, "__kwdefaults__", None) or {}
    form = {"defaults": _state_form(positional), "kwdefaults": _state_form(keywords)}
    durable = _immutable(positional) and all(_immutable(v) for v in keywords.values())
    return form, durable


def function_digest(func: Callable[..., Any]) -> tuple[str, bool]:
    """The fingerprint of a function as a step: its source identity, defaults and captured
    closure values; and whether it is durable. A closure makes it not durable: what it captured
    may change, or hold what no fingerprint describes (the step then needs ``replay_key``)."""
    defaults, defaults_durable = _defaults_form(func)
    closure = getattr(func, "__closure__", None) or ()
    code = getattr(func, "__code__", None)
    names = code.co_freevars if code is not None else ()
    captured = []
    for name, cell in zip(names, closure, strict=False):
        try:
            captured.append([name, _state_form(cell.cell_contents)])
        except ValueError:  # a cell not filled yet
            captured.append([name, ["empty"]])
    form = {"source": code_digest(func), **defaults, "closure": captured}
    return digest(form), defaults_durable and not closure


def _state_form(value: Any) -> Any:
    form = _canonical(value, set())
    if form is _OPAQUE:
        return ["opaque", f"{type(value).__module__}.{type(value).__qualname__}"]
    return form


def _immutable(value: Any) -> bool:
    if value is None or type(value) in (bool, int, float, complex, str, bytes):
        return True
    if type(value) in (tuple, frozenset):
        return all(_immutable(item) for item in value)
    return False
