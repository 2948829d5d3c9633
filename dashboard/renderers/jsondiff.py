"""Structural diff of two checkpoint values (codec JSON), for the checkpoint inspector.

It must read like the data. So list items are matched by who they are, not where they sit
(``diff_match``: an id when the records have one, else their content): removing the first of
89 items is one "removed" row, not 89 "changed" ones. An item that left one place and arrived
at another is "moved" (and its changes are listed under it); unmatched items in the same spot
are paired and compared field by field, since that is what a changed list of records usually
is. Unchanged siblings collapse into one row with a count ("88 unchanged items").

The diff stays exact (``True`` is not ``1``, ``1`` is not ``1.0``, the int key ``1`` is not the
string key ``"1"``), stable (same input, same rows) and bounded (at most ``max_entries`` rows).
Values are walked through ``diff_values.shape``, so codec tags never reach a row: a model's
fields are its children, a dict with int keys has int keys.

Paths use the notation the JSON tree in ``static/js/app.js`` copies to the clipboard, with
Python's for keys that are not strings: ``$.executors.worker.results[3]`` (an int key or a list
index), ``$.results["3"]`` (a string key), ``$["key with spaces"]``.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any, Literal

from dashboard.renderers import diff_values
from dashboard.renderers.conversation import is_conversation, located_message
from dashboard.renderers.diff_match import identities, match, moves, same
from dashboard.renderers.diff_values import Key, Shape, Shown, shape

DiffKind = Literal["added", "removed", "changed", "moved", "unchanged"]
CHANGE_KINDS = ("added", "removed", "changed", "moved")

DEFAULT_MAX_ENTRIES = 500
MAX_DEPTH = diff_values.MAX_DEPTH
PREVIEW_CHARS = diff_values.PREVIEW_CHARS
# A table cell holds a glimpse; the side-by-side view shows the whole value.
CELL_CHARS = 100

_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")


@dataclass(frozen=True, slots=True)
class DiffEntry:
    """One row. ``old`` is absent for "added", ``new`` for "removed", both for "unchanged"
    (whose ``count`` says how many siblings the row stands for, under the container ``path``).
    ``number`` (from 1, changes only) names the row for the side-by-side view."""

    path: str
    kind: DiffKind
    old: Any = None
    new: Any = None
    note: str = ""
    count: int = 0
    number: int = 0
    # The containers this row is inside, outermost first, as (path, old, new): the side-by-side
    # view widens to any of them. References into the compared values, not copies.
    context: tuple[tuple[str, Any, Any], ...] = field(default=(), repr=False, compare=False)

    @property
    def old_text(self) -> str:
        """``old`` on one line for the table's "before" cell; "" for rows that show none (a
        moved item shows where it arrived, with "from [i]" in the note)."""
        return (
            diff_values.text(self.old, limit=CELL_CHARS)
            if self.kind in ("changed", "removed")
            else ""
        )

    @property
    def new_text(self) -> str:
        shown = self.kind in ("changed", "added", "moved")
        return diff_values.text(self.new, limit=CELL_CHARS) if shown else ""

    @property
    def has_old(self) -> bool:
        return self.kind not in ("added", "unchanged")

    @property
    def has_new(self) -> bool:
        return self.kind not in ("removed", "unchanged")


@dataclass(frozen=True, slots=True)
class JsonDiff:
    rows: list[DiffEntry] = field(default_factory=list)
    truncated: bool = False

    @property
    def entries(self) -> list[DiffEntry]:
        """The changes, without the "unchanged" rows."""
        return [row for row in self.rows if row.kind != "unchanged"]

    def __iter__(self) -> Iterator[DiffEntry]:
        return iter(self.entries)

    def __len__(self) -> int:
        return len(self.entries)

    @property
    def sections(self) -> list[Section]:
        """The whole diff as one untitled section, for templates that show sections."""
        return [Section("", "", self)]

    @property
    def counts(self) -> dict[str, int]:
        """Changes per kind, and the unchanged values the collapsed rows stand for."""
        totals = dict.fromkeys((*CHANGE_KINDS, "unchanged"), 0)
        for row in self.rows:
            totals[row.kind] += row.count if row.kind == "unchanged" else 1
        return totals


@dataclass(frozen=True, slots=True)
class Section:
    """A titled part of a diff (the checkpoint inspector's executor state, shared state...)."""

    key: str
    title: str
    diff: JsonDiff

    @property
    def rows(self) -> list[DiffEntry]:
        return self.diff.rows

    @property
    def counts(self) -> dict[str, int]:
        return self.diff.counts

    @property
    def changed(self) -> bool:
        return any(row.kind != "unchanged" for row in self.diff.rows)

    @property
    def summary(self) -> str:
        """ "1 removed · 88 unchanged", "12 unchanged keys", or "empty on both sides"."""
        if not self.diff.rows:
            return "empty on both sides"
        if not self.changed:
            return self.diff.rows[0].note
        counts = self.counts
        kinds = (*CHANGE_KINDS, "unchanged")
        return " · ".join(f"{counts[kind]} {kind}" for kind in kinds if counts[kind])


def diff_json(
    a: Any,
    b: Any,
    *,
    path: str = "$",
    max_entries: int = DEFAULT_MAX_ENTRIES,
    first_number: int = 1,
) -> JsonDiff:
    """The rows that turn ``a`` into ``b`` (both codec JSON), in document order, at most
    ``max_entries`` of them (``truncated`` says the walk stopped early).

    Dicts are compared by key (keys of ``a`` in their order, then keys only in ``b``), models
    by field, lists, tuples and sets as sequences (see the module docstring). A value whose
    kind changed (``1`` → ``"1"``, a dict → a list, one model class → another) is one
    "changed" row, not a recursive diff. Change rows are numbered from ``first_number``.
    """
    if max_entries < 0:
        raise ValueError("max_entries must be >= 0")
    walk = _Walk(max_entries, first_number)
    try:
        if not same(a, b) or shape(a).kind != "leaf":
            # Equal containers still get their "N unchanged keys" row.
            walk.value(a, b, path, 0)
    except _Full:
        return JsonDiff(walk.rows, truncated=True)
    return JsonDiff(walk.rows, truncated=False)


class _Full(Exception):
    """Raised to unwind the walk as soon as the row budget is spent."""


class _Walk:
    def __init__(self, limit: int, first_number: int) -> None:
        self.rows: list[DiffEntry] = []
        self.limit = limit
        self.number = first_number
        self.within: list[tuple[str, Any, Any]] = []

    def emit(
        self, path: str, kind: DiffKind, old: Any = None, new: Any = None, **extra: Any
    ) -> None:
        if len(self.rows) >= self.limit:
            raise _Full
        if kind == "unchanged":
            self.rows.append(DiffEntry(path, kind, old, new, **extra))
            return
        number, self.number = self.number, self.number + 1
        context = tuple(self.within)
        self.rows.append(DiffEntry(path, kind, old, new, number=number, context=context, **extra))

    def unchanged(self, path: str, count: int, noun: str) -> None:
        if count:
            note = f"{count} unchanged {noun}{'' if count == 1 else 's'}"
            self.emit(path, "unchanged", note=note, count=count)

    def value(self, a: Any, b: Any, path: str, depth: int) -> None:
        """Rows for ``a`` → ``b``; the caller has checked they differ."""
        if depth >= MAX_DEPTH:
            self.emit(path, "changed", a, b, note="nested too deeply to compare")
            return
        left, right = shape(a), shape(b)
        if left.kind != right.kind or left.type != right.type or left.kind == "leaf":
            self.emit(path, "changed", a, b)
            return
        self.within.append((path, a, b))
        if left.kind == "map":
            self.mapping(left, right, path, depth)
        else:
            self.sequence(left, right, path, depth)
        self.within.pop()

    def mapping(self, a: Shape, b: Shape, path: str, depth: int) -> None:
        noun = "field" if a.type else "key"
        theirs = {identity: value for identity, _, value in b.pairs}
        run = 0
        for identity, key, old in a.pairs:
            if identity in theirs and same(old, new := theirs[identity]):
                run += 1
                continue
            self.unchanged(path, run, noun)
            run = 0
            child = join_path(path, key)
            if identity in theirs:
                self.value(old, new, child, depth + 1)
            else:
                self.emit(child, "removed", old=old)
        ours = {identity for identity, _, _ in a.pairs}
        for identity, key, new in b.pairs:
            if identity not in ours:
                self.unchanged(path, run, noun)
                run = 0
                self.emit(join_path(path, key), "added", new=new)
        self.unchanged(path, run, noun)

    def sequence(self, a: Shape, b: Shape, path: str, depth: int) -> None:
        unordered = a.type in ("set", "frozenset")
        noun = "element" if unordered else "item"
        old, new = a.items, b.items
        if self.messages_added(old, new, path):
            return
        keyed, ids_a, ids_b = identities(old, new)
        steps = match(ids_a, ids_b)
        arrived = {j: i for i, j in moves(steps, ids_a, ids_b)}
        left = set(arrived.values())
        run = 0

        def at(index: int) -> str:
            # Set elements have no place to name: their rows are on the set itself.
            return path if unordered else join_path(path, index)

        for tag, i1, i2, j1, j2 in steps:
            if tag == "equal":
                for i, j in zip(range(i1, i2), range(j1, j2), strict=True):
                    if same(old[i], new[j]):
                        run += 1
                        continue
                    self.unchanged(path, run, noun)
                    run = 0
                    self.value(old[i], new[j], at(j), depth + 1)
                continue
            gone = [i for i in range(i1, i2) if i not in left]
            if gone or j2 > j1:
                self.unchanged(path, run, noun)
                run = 0
            # Unmatched records in the same spot are usually one record edited, so they are
            # compared field by field; keyed items with different keys are different items.
            came = [j for j in range(j1, j2) if j not in arrived]
            pairs = 0 if keyed or unordered else min(len(gone), len(came))
            for i, j in zip(gone[:pairs], came[:pairs], strict=True):
                self.value(old[i], new[j], at(j), depth + 1)
            for i in gone[pairs:]:
                self.emit(at(i), "removed", old=old[i])
            paired = set(came[:pairs])
            for j in range(j1, j2):
                if j in arrived:
                    self.moved(old[arrived[j]], new[j], arrived[j], at(j), depth)
                elif j not in paired:
                    self.emit(at(j), "added", new=new[j])
        self.unchanged(path, run, noun)

    def messages_added(self, old: list[Any], new: list[Any], path: str) -> bool:
        """A conversation that only grew is one row, "3 messages added", with who said them,
        rather than a row per message: an agent's turn adds several, and the operator wants
        to know what was said, which the conversation view shows, not where in the list."""
        if len(new) <= len(old) or not is_conversation(new) or not is_conversation(old or new):
            return False
        if not all(same(before, after) for before, after in zip(old, new, strict=False)):
            return False
        added = new[len(old) :]
        authors = []
        for item in added:
            located = located_message(item)
            assert located is not None
            message = located[1]
            authors.append(str(message.get("author_name") or message.get("role")))
        count = len(added)
        said = ", ".join(dict.fromkeys(authors))
        note = f"{count} message{'' if count == 1 else 's'} added ({said})"
        self.unchanged(path, len(old), "message")
        self.emit(path, "added", new=added, note=note)
        return True

    def moved(self, old: Any, new: Any, was: int, path: str, depth: int) -> None:
        self.emit(path, "moved", old, new, note=f"from [{was}]")
        if not same(old, new):
            self.value(old, new, path, depth + 1)


def preview(value: Any, *, limit: int = PREVIEW_CHARS) -> str:
    """Compact JSON of ``value``, cut to ``limit`` characters with an ellipsis.

    For values that are plain JSON (a request's answer); checkpoint values go through
    ``diff_values.text``. Non-JSON values show via ``str`` rather than failing the page.
    """
    text = json.dumps(value, ensure_ascii=False, separators=(",", ": "), default=str)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def join_path(parent: str, key: Key) -> str:
    """Append a list index or int key (``int``), another key (``Shown``) or an object key
    (``str``) to a JSON path.

    String keys that are not plain identifiers are quoted JSON-style, so ``"3"`` (a key) and
    ``3`` (an index or int key) never look alike: ``$.results["3"]`` versus ``$.items[3]``.
    """
    if isinstance(key, Shown):
        return f"{parent}[{key.text}]"
    if isinstance(key, int) and not isinstance(key, bool):
        return f"{parent}[{key}]"
    text = str(key)
    if _IDENTIFIER.match(text):
        return f"{parent}.{text}"
    return f"{parent}[{json.dumps(text, ensure_ascii=False)}]"
