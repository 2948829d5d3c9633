"""Structural diff of two JSON values, by JSON path, for the checkpoint inspector.

Operators choose where to resume by comparing checkpoints, so the diff must be exact (no fuzzy
list matching that could pair the wrong items), stable (same input, same order, so a reload or a
screenshot does not shuffle), and bounded (a state with 100k items must not produce a 100k-row
page). Lists are compared by index on purpose: checkpoint lists are positional (queues, message
batches), and an index diff says precisely what a resumed run will see.

Paths use the notation the JSON tree in ``static/js/app.js`` copies to the clipboard:
``$.executors.worker.results["3"]``, ``$.items[2]``, ``$["key with spaces"]``.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any, Literal

DiffKind = Literal["added", "removed", "changed"]

DEFAULT_MAX_ENTRIES = 500
# Nesting deeper than the codec allows (64) is not real checkpoint data; stop rather than recurse.
MAX_DEPTH = 128
PREVIEW_CHARS = 160

_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")


@dataclass(frozen=True, slots=True)
class DiffEntry:
    """One difference. ``old`` is ``None`` for "added" and ``new`` is ``None`` for "removed".

    ``length_change`` marks the entry on a list whose length changed (``old``/``new`` are the
    lengths); its items have entries of their own, so summaries do not count it twice.
    """

    path: str
    kind: DiffKind
    old: Any = None
    new: Any = None
    note: str = ""
    length_change: bool = False

    @property
    def old_text(self) -> str:
        """``old`` as compact JSON for a table cell; "" when added or for a length note."""
        return "" if self.kind == "added" or self.length_change else preview(self.old)

    @property
    def new_text(self) -> str:
        return "" if self.kind == "removed" or self.length_change else preview(self.new)


@dataclass(frozen=True, slots=True)
class JsonDiff:
    entries: list[DiffEntry] = field(default_factory=list)
    truncated: bool = False

    def __iter__(self) -> Iterator[DiffEntry]:
        return iter(self.entries)

    def __len__(self) -> int:
        return len(self.entries)

    @property
    def counts(self) -> dict[str, int]:
        """Entries per kind, for the "3 added · 1 removed · 7 changed" summary line."""
        totals = {"added": 0, "removed": 0, "changed": 0}
        for entry in self.entries:
            if not entry.length_change:
                totals[entry.kind] += 1
        return totals


def diff_json(a: Any, b: Any, *, max_entries: int = DEFAULT_MAX_ENTRIES) -> JsonDiff:
    """Differences that turn ``a`` into ``b``, in document order, at most ``max_entries``.

    Dicts are compared by key (keys of ``a`` in their order, then keys only in ``b``), lists by
    index; a list whose length changed also gets a "changed" entry on the list itself with a
    ``note`` such as "length 3 → 5", so the change is visible even when the entries are cut off.
    A value whose JSON type changed (``1`` → ``"1"``, ``{}`` → ``[]``) is one "changed" entry, not a
    recursive diff. ``True`` and ``1`` differ, as they do in JSON.
    """
    if max_entries < 0:
        raise ValueError("max_entries must be >= 0")
    out: list[DiffEntry] = []
    try:
        _walk(a, b, "$", out, max_entries, 0)
    except _Full:
        return JsonDiff(out, truncated=True)
    return JsonDiff(out, truncated=False)


class _Full(Exception):
    """Raised to unwind the walk as soon as the entry budget is spent."""


def _emit(out: list[DiffEntry], limit: int, entry: DiffEntry) -> None:
    if len(out) >= limit:
        raise _Full
    out.append(entry)


def _walk(a: Any, b: Any, path: str, out: list[DiffEntry], limit: int, depth: int) -> None:
    if _same_scalar(a, b):
        return
    if depth >= MAX_DEPTH:
        _emit(out, limit, DiffEntry(path, "changed", a, b, note="nested too deeply to compare"))
        return
    if isinstance(a, dict) and isinstance(b, dict):
        for key in a:
            child = join_path(path, str(key))
            if key in b:
                _walk(a[key], b[key], child, out, limit, depth + 1)
            else:
                _emit(out, limit, DiffEntry(child, "removed", old=a[key]))
        for key in b:
            if key not in a:
                _emit(out, limit, DiffEntry(join_path(path, str(key)), "added", new=b[key]))
        return
    if isinstance(a, list | tuple) and isinstance(b, list | tuple):
        if len(a) != len(b):
            note = f"length {len(a)} → {len(b)}"
            entry = DiffEntry(path, "changed", len(a), len(b), note=note, length_change=True)
            _emit(out, limit, entry)
        for i in range(max(len(a), len(b))):
            child = join_path(path, i)
            if i >= len(b):
                _emit(out, limit, DiffEntry(child, "removed", old=a[i]))
            elif i >= len(a):
                _emit(out, limit, DiffEntry(child, "added", new=b[i]))
            else:
                _walk(a[i], b[i], child, out, limit, depth + 1)
        return
    _emit(out, limit, DiffEntry(path, "changed", a, b))


def _same_scalar(a: Any, b: Any) -> bool:
    if isinstance(a, dict | list | tuple) or isinstance(b, dict | list | tuple):
        return False  # containers are compared element by element
    # Python says True == 1 and 1 == 1.0; a reader of the JSON sees different values, so do we.
    return _scalar_type(a) == _scalar_type(b) and (a is b or bool(a == b))


def _scalar_type(value: Any) -> str:
    for kind in (bool, int, float, str):
        if isinstance(value, kind):
            return kind.__name__
    return type(value).__name__


def preview(value: Any, *, limit: int = PREVIEW_CHARS) -> str:
    """Compact JSON of ``value``, cut to ``limit`` characters with an ellipsis.

    Templates escape it; non-JSON values (a datetime that slipped through) show via ``str``
    rather than failing the whole page.
    """
    text = json.dumps(value, ensure_ascii=False, separators=(",", ": "), default=str)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def join_path(parent: str, key: str | int) -> str:
    """Append a list index (``int``) or an object key (``str``) to a JSON path.

    Object keys that are not plain identifiers are quoted JSON-style, so ``"3"`` (a key) and
    ``3`` (an index) never look alike: ``$.results["3"]`` versus ``$.items[3]``.
    """
    if isinstance(key, int) and not isinstance(key, bool):
        return f"{parent}[{key}]"
    text = str(key)
    if _IDENTIFIER.match(text):
        return f"{parent}.{text}"
    return f"{parent}[{json.dumps(text, ensure_ascii=False)}]"


def flatten(
    value: Any, *, path: str = "$", max_entries: int = DEFAULT_MAX_ENTRIES
) -> list[tuple[str, Any]]:
    """Leaf values of ``value`` as ``(path, leaf)`` pairs in document order.

    Empty containers count as leaves so they stay visible. Useful for search boxes and for the
    download of a diff as a flat table; stops after ``max_entries`` pairs.
    """
    pairs: list[tuple[str, Any]] = []
    stack: list[tuple[str, Any, int]] = [(path, value, 0)]
    while stack and len(pairs) < max_entries:
        here, item, depth = stack.pop()
        if isinstance(item, dict) and item and depth < MAX_DEPTH:
            entries = reversed(list(item.items()))
            stack.extend((join_path(here, str(k)), v, depth + 1) for k, v in entries)
        elif isinstance(item, list | tuple) and item and depth < MAX_DEPTH:
            indexed = reversed(list(enumerate(item)))
            stack.extend((join_path(here, i), v, depth + 1) for i, v in indexed)
        else:
            pairs.append((here, item))
    return pairs
