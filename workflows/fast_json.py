"""orjson where its bytes are the ``json`` module's bytes; the standard library everywhere else.

The codec's text must not depend on whether orjson is installed: stored texts are hashed into
content addresses and signatures, and compared to tell a changed value from an unchanged one.
orjson and ``json.dumps(..., ensure_ascii=False, separators=(",", ":"))`` write the same bytes
for dicts with str keys, lists, tuples, str, bool, None, ints of up to 64 bits, zero and finite
floats from 1e-4 to 1e16 in magnitude (tests/workflows/test_fast_json.py compares them). They
differ on other floats (``1e-05`` against ``0.00001``, ``1e+16`` against ``1e16``, NaN written
as ``null`` where ``json`` refuses it) and on objects ``json`` refuses but orjson writes (enums,
UUIDs, dataclasses, datetimes). So ``dumps`` first scans the value and hands it to orjson only
when it holds nothing but the first group. The scan takes whole lists, and whole lists of
records, at a time with C-level builtins (``map``, ``set``, ``chain``): a Python call per value
would cost more than ``json.dumps`` itself.

Parsing goes the other way round: a text that orjson parses and writes back to the very same
bytes is canonical JSON without repeated keys, NaN or lone surrogates, so ``json`` would have
parsed it to the same value; any other text is left to ``json`` and its error messages.
"""

from __future__ import annotations

import math
from itertools import chain
from typing import Any

try:
    import orjson
except ImportError:  # optional: the engine runs on the standard library alone
    orjson = None  # type: ignore[assignment]

__all__ = ["NOT_CANONICAL", "dumps", "enabled", "loads"]

NOT_CANONICAL: Any = object()
# orjson refuses to write deeper than 255 levels; the scan stops well before.
_MAX_DEPTH = 200
_SCALARS = frozenset({str, int, bool, type(None), float})
_DICT_ONLY = frozenset({dict})
_is_float = float.__instancecheck__


def enabled() -> bool:
    """Whether orjson is there to be used."""
    return orjson is not None


def dumps(value: Any, *, encoding: bool) -> bytes | None:
    """orjson's text of ``value`` when it is exactly ``json``'s, else None.

    With ``encoding`` the value is a live one about to be encoded: tuples and -0.0, which the
    codec tags, are refused too, so the text equals that of ``encode(value)`` as long as it
    holds no NUL character and no "$t" (the caller checks the text for those).
    """
    if orjson is None or not _native(value, encoding):
        return None
    try:
        return orjson.dumps(value)
    except TypeError:  # ints beyond 64 bits, lone surrogates
        return None


def loads(raw: bytes) -> Any:
    """The value of canonical JSON ``raw``, or ``NOT_CANONICAL`` (left to ``json``)."""
    if orjson is None:
        return NOT_CANONICAL
    try:
        data = orjson.loads(raw)
        again = orjson.dumps(data)
    except (TypeError, ValueError):  # orjson's errors subclass these
        return NOT_CANONICAL
    return data if again == raw else NOT_CANONICAL


def _native(value: Any, encoding: bool) -> bool:
    """True when ``value`` holds only the types and floats both libraries write alike. Dict
    keys are not looked at: orjson refuses any key that is not exactly a str, as the caller
    needs (``json`` would write an int key as a string; the codec tags it)."""
    containers = frozenset({dict, list}) if encoding else frozenset({dict, list, tuple})
    allowed = _SCALARS | containers
    stack: list[tuple[Any, int]] = [(value, 0)]
    while stack:
        item, depth = stack.pop()
        if depth > _MAX_DEPTH:
            return False
        kind = type(item)
        values: Any = item.values() if kind is dict else item if kind in containers else (item,)
        kinds = set(map(type, values))
        if kinds == _DICT_ONLY:  # a list of records: all their values at once
            records = values
            kinds = set(map(type, chain.from_iterable(map(dict.values, records))))
            if float not in kinds and kinds.isdisjoint(containers):
                if not kinds <= allowed:
                    return False
                continue
            values = list(chain.from_iterable(map(dict.values, records)))
            depth += 1
        if not kinds <= allowed:
            return False
        if float in kinds and not _same_floats(list(filter(_is_float, values)), encoding):
            return False
        if not kinds.isdisjoint(containers):
            stack.extend((v, depth + 1) for v in values if type(v) in containers)
    return True


def _same_floats(floats: list[float], encoding: bool) -> bool:
    """Floats both libraries write alike (and, when ``encoding``, the codec leaves untagged)."""
    if not all(map(math.isfinite, floats)):
        return False
    sizes = list(map(abs, floats))
    if max(sizes) >= 1e16:
        return False
    if min(sizes) >= 1e-4:
        return True
    if any(0.0 < size < 1e-4 for size in sizes):
        return False
    return not encoding or all(math.copysign(1.0, f) > 0 for f in floats if f == 0.0)
