"""Checkpoint values as the operator thinks of them: int keys as ints, dates as dates, models by
class name, never the codec's tags.

Checkpoints hold codec JSON (``workflows.codec``): ``{"$t": "dict", "v": [[1, 1]]}`` is the dict
``{1: 1}`` and ``{"$t": "model", "name": "pkg.Task", "v": {...}}`` a dataclass. The diff walks
values through ``shape`` (a map of keys, a sequence, or a leaf), and the pages show them with
``text`` (one line: scalars in JSON's notation, as the trees show them, a model by its class
name), ``pretty`` (the same over several lines, for the side-by-side view) and ``tree`` (JSON
without tags, for the JSON trees, which show a model's class as a badge). This reads codec JSON
rather than ``workflows.readable``'s marker form because a diff needs the exact key types
(``1`` and ``"1"`` are different keys) that the markers flatten.

Nothing here decodes a type or imports a name, so it reads checkpoints of any run, even those
naming classes that are gone. A malformed or unknown tag is shown as unreadable, not guessed at.
"""

from __future__ import annotations

import base64
import binascii
import datetime as dt
import json
from dataclasses import dataclass, field
from typing import Any, Literal

__all__ = ["Shape", "Shown", "pretty", "shape", "text", "tree"]

TAG = "$t"
MAX_DEPTH = 128
PREVIEW_CHARS = 160
PRETTY_WIDTH = 72
PRETTY_LINES = 400

_SCALAR_TAGS = frozenset({"datetime", "date", "time", "decimal", "uuid", "float", "int", "bytes"})
_SEQUENCE_BRACKETS = {"": ("[", "]"), "tuple": ("(", ")"), "set": ("{", "}")}


@dataclass(frozen=True, slots=True)
class Shown:
    """A dict key that is neither a string nor an int (a tuple, a float...), by its text."""

    text: str


Key = str | int | Shown


@dataclass(frozen=True, slots=True)
class Shape:
    """How the diff and the views walk a value. ``type`` is "" for JSON objects and lists (and
    dicts with int keys: they are still dicts), "tuple"/"set"/"frozenset", or a model's class
    name. ``pairs`` are ``(identity, key, value)``: the identity tells ``1`` from ``"1"``."""

    kind: Literal["map", "seq", "leaf"]
    type: str = ""
    pairs: list[tuple[object, Key, Any]] = field(default_factory=list)
    items: list[Any] = field(default_factory=list)


_LEAF = Shape("leaf")


def shape(value: Any) -> Shape:
    kind = type(value)
    if kind is list:
        return Shape("seq", items=value)
    if kind is not dict:
        return _LEAF
    if TAG not in value:
        return Shape("map", pairs=[(k, k, v) for k, v in value.items()])
    tag = value.get(TAG)
    inner = value.get("v")
    named = tag in ("model", "enum", "agent")
    if value.keys() != ({TAG, "name", "v"} if named else {TAG, "v"}):
        return _LEAF
    if tag == "dict" and isinstance(inner, list) and all(_is_pair(p) for p in inner):
        return Shape("map", pairs=[(_key_identity(k), _shown_key(k), v) for k, v in inner])
    if tag in ("tuple", "set", "frozenset") and isinstance(inner, list):
        return Shape("seq", type=tag, items=inner)
    # A MAF value (a Message, an AgentResponse...) is MAF's own dict of fields: read as a model.
    if tag in ("model", "agent") and isinstance(value["name"], str):
        fields = shape(inner)
        if fields.kind == "map":
            return Shape("map", type=value["name"], pairs=fields.pairs)
    return _LEAF


def _is_pair(item: Any) -> bool:
    return type(item) is list and len(item) == 2


def _key_identity(key: Any) -> object:
    if type(key) is str:
        return key
    if type(key) is int:
        return ("int", key)
    return ("key", json.dumps(key, sort_keys=True, ensure_ascii=False))


def _shown_key(key: Any) -> Key:
    if type(key) is str or type(key) is int:
        return key
    return Shown(text(key, limit=80))


def short_name(name: str) -> str:
    return name.rsplit(".", 1)[-1]


# ---------------------------------------------------------------------------------- leaves


def leaf_text(value: Any) -> str:
    """A scalar (or a tagged scalar): ``null``, ``true``, ``false``, numbers and strings as the
    JSON trees beside the diff write them, so one value never reads two ways on a page."""
    if value is None or isinstance(value, bool):
        return json.dumps(value)
    if isinstance(value, int | float):
        return repr(value)
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)
    shown = _tagged_leaf(value)
    if shown is None:
        return "<unreadable " + json.dumps(value, ensure_ascii=False, default=str)[:60] + ">"
    kind, plain = shown
    if kind in ("decimal", "uuid", "timedelta"):
        return f"{_TYPE_NAMES[kind]}({json.dumps(plain)})"
    if kind == "str":
        return json.dumps(plain, ensure_ascii=False)
    return plain


_TYPE_NAMES = {"decimal": "Decimal", "uuid": "UUID", "timedelta": "timedelta"}


def _tagged_leaf(value: Any) -> tuple[str, str] | None:
    """``(kind, plain text)`` of a tagged scalar, or None when ``value`` is not one."""
    if type(value) is not dict or shape(value) is not _LEAF:
        return None
    tag, inner = value.get(TAG), value.get("v", "")
    if tag == "enum" and value.keys() == {TAG, "name", "v"} and isinstance(value["name"], str):
        return "enum", f"{short_name(value['name'])}.{inner}"
    if value.keys() != {TAG, "v"}:
        return None
    if tag in _SCALAR_TAGS and isinstance(inner, str):
        return tag, _scalar(tag, inner)
    if tag == "timedelta" and _is_int_triple(inner):
        days, seconds, micros = inner
        return tag, str(dt.timedelta(days=days, seconds=seconds, microseconds=micros))
    if tag == "str" and type(inner) is list and all(type(p) is str for p in inner):
        return tag, "\x00".join(inner)
    return None


def _is_int_triple(value: Any) -> bool:
    return type(value) is list and len(value) == 3 and all(type(p) is int for p in value)


def _scalar(tag: str, inner: str) -> str:
    if tag == "datetime":
        return inner.replace("T", " ", 1)
    if tag == "int":
        sign, digits = ("-", inner[1:]) if inner.startswith("-") else ("", inner)
        return f"{sign}0x{digits}"
    if tag == "bytes":
        try:
            size = len(base64.b64decode(inner.encode("ascii"), validate=True))
        except (binascii.Error, ValueError, UnicodeEncodeError):
            return f"bytes(base64 {inner[:40]!r})"
        return f"bytes({size}): {inner[:40]}{'…' if len(inner) > 40 else ''}"
    return inner


# ---------------------------------------------------------------------------------- one line


class _Cut(Exception):
    """The text reached its limit; unwinds the writer."""


class _Writer:
    def __init__(self, limit: int | None) -> None:
        self.parts: list[str] = []
        self.size = 0
        self.limit = limit

    def add(self, piece: str) -> None:
        self.parts.append(piece)
        self.size += len(piece)
        if self.limit is not None and self.size > self.limit:
            raise _Cut


def text(value: Any, *, limit: int | None = PREVIEW_CHARS) -> str:
    """``value`` on one line, e.g. ``Task(remaining=[2, 3], due=2026-08-21 14:03:22+00:00)`` or
    ``{1: 1, 2: 4}``, cut to ``limit`` characters with an ellipsis (``None``: whole)."""
    writer = _Writer(limit)
    try:
        _write(value, writer, 0)
    except _Cut:
        return "".join(writer.parts)[: max((limit or 1) - 1, 0)] + "…"
    return "".join(writer.parts)


def _fit(value: Any, limit: int | None) -> str | None:
    """The whole one-line text when it fits in ``limit``, else None."""
    writer = _Writer(limit)
    try:
        _write(value, writer, 0)
    except _Cut:
        return None
    return "".join(writer.parts)


def _write(value: Any, out: _Writer, depth: int) -> None:
    found = shape(value)
    if found.kind == "leaf":
        out.add(leaf_text(value))
        return
    if depth >= MAX_DEPTH:
        out.add("…")
        return
    opening, closing = _brackets(found)
    out.add(opening)
    children = _children(found)
    for index, (label, child) in enumerate(children):
        if index:
            out.add(", ")
        out.add(label)
        _write(child, out, depth + 1)
    if found.type == "tuple" and len(children) == 1:
        out.add(",")
    out.add(closing)


def _brackets(found: Shape) -> tuple[str, str]:
    if found.kind == "map":
        return ("{", "}") if not found.type else (short_name(found.type) + "(", ")")
    if not found.items and found.type in ("set", "frozenset"):
        return found.type + "(", ")"
    if found.type == "frozenset":
        return "frozenset({", "})"
    return _SEQUENCE_BRACKETS[found.type]


def _children(found: Shape) -> list[tuple[str, Any]]:
    """``(label, value)`` per child: ``"key": `` in a dict, ``field=`` in a model, "" in a list."""
    if found.kind == "seq":
        return [("", item) for item in found.items]
    if found.type:
        return [(f"{key}=", value) for _, key, value in found.pairs]
    return [(f"{key_text(key)}: ", value) for _, key, value in found.pairs]


def key_text(key: Key) -> str:
    if isinstance(key, Shown):
        return key.text
    if isinstance(key, str):
        return json.dumps(key, ensure_ascii=False)
    return str(key)


# -------------------------------------------------------------------------------- several lines


def pretty(
    value: Any, *, width: int = PRETTY_WIDTH, max_lines: int = PRETTY_LINES
) -> tuple[list[str], bool]:
    """``value`` over lines of at most ``width`` characters where it can (a long string stays one
    line), children indented by four spaces; at most ``max_lines`` lines. Returns the lines
    and whether some were left out."""
    lines: list[str] = []
    try:
        _pretty(value, "", "", "", lines, width, max_lines, 0)
    except _Cut:
        return lines, True
    return lines, False


def _pretty(
    value: Any,
    indent: str,
    label: str,
    end: str,
    lines: list[str],
    width: int,
    most: int,
    depth: int,
) -> None:
    if len(lines) >= most:
        raise _Cut
    found = shape(value)
    room = width - len(indent) - len(label) - len(end)
    one = _fit(value, max(room, 20))
    if one is not None or found.kind == "leaf" or depth >= MAX_DEPTH:
        lines.append(f"{indent}{label}{one if one is not None else text(value, limit=None)}{end}")
        return
    opening, closing = _brackets(found)
    lines.append(f"{indent}{label}{opening}")
    if found.kind == "seq" and all(shape(item).kind == "leaf" for item in found.items):
        _pack([leaf_text(item) for item in found.items], indent + "    ", lines, width, most)
    else:
        for child_label, child in _children(found):
            _pretty(child, indent + "    ", child_label, ",", lines, width, most, depth + 1)
    if len(lines) >= most:
        raise _Cut
    lines.append(f"{indent}{closing}{end}")


def _pack(texts: list[str], indent: str, lines: list[str], width: int, most: int) -> None:
    """Scalars several to a line, as a person would write a long list of numbers."""
    line = ""
    for piece in texts:
        if line and len(indent) + len(line) + len(piece) + 2 > width:
            if len(lines) >= most:
                raise _Cut
            lines.append(indent + line.rstrip())
            line = ""
        line += piece + ", "
    if line:
        lines.append(indent + line.rstrip())


# ------------------------------------------------------------------------------------ trees


def tree(value: Any, *, _depth: int = 0) -> Any:
    """JSON for the pages' JSON trees, with no tag in it: int keys as their digits, dates,
    decimals and enums as their text, tuples and sets as lists, a model as its fields after a
    ``"$model"`` key naming its class (a key of the data that starts with "$" gets another "$",
    as in ``workflows.readable``, so data cannot pass for that marker)."""
    kind = type(value)
    if kind is list:
        return [tree(item, _depth=_depth + 1) for item in value] if _depth < MAX_DEPTH else "…"
    if kind is not dict:
        return value
    if _depth >= MAX_DEPTH:
        return "…"
    if TAG not in value:  # the common case, kept quick: most state is plain JSON
        return {_tree_key(k): tree(v, _depth=_depth + 1) for k, v in value.items()}
    found = shape(value)
    if found.kind == "leaf":
        shown = _tagged_leaf(value)
        return shown[1] if shown else leaf_text(value)
    if found.kind == "seq":
        return [tree(item, _depth=_depth + 1) for item in found.items]
    out: dict[str, Any] = {"$model": found.type} if found.type else {}
    mixed = any(not isinstance(key, str) for _, key, _ in found.pairs)
    for _, key, child in found.pairs:
        if isinstance(key, str):
            name = _tree_key(json.dumps(key, ensure_ascii=False) if mixed else key)
        else:
            name = key_text(key)
        out[name] = tree(child, _depth=_depth + 1)
    return out


def _tree_key(key: str) -> str:
    return "$" + key if key.startswith("$") else key
