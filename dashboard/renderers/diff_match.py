"""Who each item of a list is, and where it went: the matching under the checkpoint diff.

An item's identity is the value of an identity key (``id``, ``request_id``, ``message_id``,
``key``, ``name``) when every record in both lists has a unique one, else a fingerprint of the
whole item (canonical JSON). Two lists of identities are aligned with difflib's matching
blocks after trimming their common ends (the usual case is one change in a long list, and the
ends are matched in linear time); an identity that left one block and arrived in another moved.
Values are codec JSON, read through ``diff_values.shape`` so a model's fields count as a record.
"""

from __future__ import annotations

import json
from collections import defaultdict, deque
from difflib import SequenceMatcher
from typing import Any

__all__ = ["IDENTITY_KEYS", "Step", "fingerprint", "identities", "match", "moves", "same"]

IDENTITY_KEYS = ("id", "request_id", "message_id", "key", "name")
# Above this many item pairs left after trimming the common ends, difflib's search for matching
# blocks may get slow on lists full of duplicates; its junk heuristic then keeps it linear.
_EXACT_MATCH_PAIRS = 4_000_000
_ABSENT: Any = object()

_CANONICAL = json.JSONEncoder(sort_keys=True, ensure_ascii=False, separators=(",", ":"))
_CONTAINERS = (dict, list)


def fingerprint(value: Any) -> str:
    """Canonical JSON: equal exactly when the values are (``true`` is not ``1``, ``1`` is not
    ``1.0``, key order does not matter)."""
    return _CANONICAL.encode(value)


def same(a: Any, b: Any) -> bool:
    if a is b:
        return True
    if type(a) is not type(b):
        return False  # also keeps True from 1 and 1 from 1.0
    if type(a) not in _CONTAINERS:
        return bool(a == b)
    # Python's == is the fast filter: containers it calls different are different in JSON
    # too; equal ones may still hide a True where the other has 1.
    return a == b and fingerprint(a) == fingerprint(b)


def identities(old: list[Any], new: list[Any]) -> tuple[bool, list[object], list[object]]:
    """Who each item is: ``(keyed, identities of old, identities of new)``. Keyed when the
    lists' dicts and models all carry one of ``IDENTITY_KEYS`` with a string or int value,
    unique on each side; items that are not dicts then stand for their whole content."""
    key = _identity_key(old, new)
    if key is None:
        return False, [fingerprint(item) for item in old], [fingerprint(item) for item in new]

    def identity(item: Any) -> object:
        fields = _fields(item)
        return (key, fields[key]) if fields is not None else fingerprint(item)

    return True, [identity(item) for item in old], [identity(item) for item in new]


def _fields(item: Any) -> dict[str, Any] | None:
    """A record's fields: a plain dict, or a model's (``{"$t": "model", ..., "v": {...}}``)."""
    if type(item) is not dict:
        return None
    if "$t" not in item:
        return item
    fields = item.get("v")
    well_formed = item.get("$t") == "model" and len(item) == 3 and type(item.get("name")) is str
    return fields if well_formed and type(fields) is dict and "$t" not in fields else None


def _identity_key(old: list[Any], new: list[Any]) -> str | None:
    records = [[f for f in map(_fields, side) if f is not None] for side in (old, new)]
    if not records[0] and not records[1]:
        return None
    for key in IDENTITY_KEYS:
        usable = True
        for side in records:
            values = [fields.get(key, _ABSENT) for fields in side]
            if any(type(v) not in (str, int) for v in values) or len(set(values)) < len(values):
                usable = False
                break
        if usable:
            return key
    return None


Step = tuple[str, int, int, int, int]


def match(ids_a: list[object], ids_b: list[object]) -> list[Step]:
    """difflib's opcodes, after trimming the common ends (the usual case is one change in a
    long list, and the ends are matched in linear time)."""
    start = 0
    limit = min(len(ids_a), len(ids_b))
    while start < limit and ids_a[start] == ids_b[start]:
        start += 1
    end = 0
    while end < limit - start and ids_a[-1 - end] == ids_b[-1 - end]:
        end += 1
    mid_a, mid_b = ids_a[start : len(ids_a) - end], ids_b[start : len(ids_b) - end]
    steps: list[Step] = [("equal", 0, start, 0, start)] if start else []
    exact = len(mid_a) * len(mid_b) <= _EXACT_MATCH_PAIRS
    matcher = SequenceMatcher(None, mid_a, mid_b, autojunk=not exact)
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        steps.append((tag, i1 + start, i2 + start, j1 + start, j2 + start))
    if end:
        steps.append(("equal", len(ids_a) - end, len(ids_a), len(ids_b) - end, len(ids_b)))
    return steps


def moves(steps: list[Step], ids_a: list[object], ids_b: list[object]) -> list[tuple[int, int]]:
    """``(old index, new index)`` of items that left one place and arrived at another (an item
    paired with itself inside one changed block has not moved)."""
    gone: defaultdict[object, deque[tuple[int, int]]] = defaultdict(deque)
    for number, (tag, i1, i2, _, _) in enumerate(steps):
        if tag in ("delete", "replace"):
            for i in range(i1, i2):
                gone[ids_a[i]].append((i, number))
    moves = []
    for number, (tag, _, _, j1, j2) in enumerate(steps):
        if tag in ("insert", "replace"):
            for j in range(j1, j2):
                waiting = gone.get(ids_b[j])
                if waiting and waiting[0][1] != number:
                    moves.append((waiting.popleft()[0], j))
    return moves
