"""A checkpoint value read back from what the fork editor showed, as codec JSON.

The editor (``fork_form``) shows values as the operator thinks of them (``diff_values``): a
scalar as plain text (``2026-08-21 14:03:22+00:00``, ``12.50``, an enum member's name), a
container as JSON without codec tags (``diff_values.tree``: int keys as their digits, tuples and
sets as lists, a nested model as its fields after ``"$model"``). This is the inverse, guided by
the value the text replaces: digits become int keys again where the keys were ints, text
becomes a date where there was a date, a list becomes a tuple or a set where there was one, a
new item of a list of dates is a date, a new key of an int-keyed dict an int. What the operator
left alone comes back exactly as it was (so a display that shortens, such as bytes, loses
nothing). The codec itself (``workflows.storage.encode``) writes every tag.

What the text cannot mean raises ``Invalid``, saying where inside the value. Whether a value
fits its types (a dataclass's field types, the handler a message goes to) is the service's to
say (``services.runs.fork_check``, again in ``run_fork``), after this.
"""

from __future__ import annotations

import base64
import binascii
import datetime as dt
import decimal
import json
import re
import uuid
from collections.abc import Callable
from typing import Any

from dashboard.renderers.diff_values import shape, short_name, text, tree
from dashboard.services import validation
from workflows.storage import encode

__all__ = [
    "TAG",
    "Invalid",
    "canon",
    "leaf_kind",
    "parse_json",
    "raw_pairs",
    "rebuild",
    "value_from_text",
    "value_from_tree",
]

TAG = "$t"

_SCALAR_TAGS = frozenset({"datetime", "date", "time", "decimal", "uuid", "bytes", "int", "float"})
_EXAMPLES = {
    "int": "a whole number, such as 42",
    "float": "a number, such as 2.5",
    "datetime": "a date and time, such as 2026-08-21 14:03:22+00:00",
    "date": "a date, such as 2026-08-21",
    "time": "a time, such as 14:03:22",
    "decimal": "a decimal number, such as 12.50",
    "uuid": "a UUID, such as 6f1c2a0e-8d7b-4c1e-9a51-2b3c4d5e6f70",
    "timedelta": "a duration, such as 1 day, 2:03:04 or 0:05:00",
    "bytes": "bytes as base64, such as aGVsbG8=",
}
_DURATION = re.compile(r"(?:(-?\d+) days?, )?(\d+):(\d\d):(\d\d)(?:\.(\d{1,6}))?")


class Invalid(Exception):
    """What a field's text cannot mean; ``where`` is the place inside its value (``[2].due``)."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message
        self.where: list[str] = []

    @property
    def text(self) -> str:
        return f"{''.join(self.where).lstrip('.')}: {self.message}" if self.where else self.message


def leaf_kind(value: Any) -> str | None:
    """The kind of scalar ``value`` is (a codec tag for tagged ones), None for containers."""
    if value is None:
        return "none"
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, int | float | str):
        return type(value).__name__
    if type(value) is not dict or shape(value).kind != "leaf":
        return None
    tag, inner = value.get(TAG), value.get("v")
    if tag == "enum" and value.keys() == {TAG, "name", "v"} and isinstance(inner, str):
        return "enum"
    if value.keys() != {TAG, "v"}:
        return None
    if tag in _SCALAR_TAGS and isinstance(inner, str):
        return str(tag)
    if tag == "timedelta" and isinstance(inner, list) and len(inner) == 3:
        return "timedelta"
    if tag == "str" and isinstance(inner, list) and all(isinstance(p, str) for p in inner):
        return "strnul"
    return None


def parse_json(source: str) -> Any:
    try:
        parsed = validation.parse_json(source)
    except ValueError as exc:
        raise Invalid(f"Not valid JSON: {exc}.") from None
    except RecursionError:
        raise Invalid("Not valid JSON: nested too deeply.") from None
    found = validation.unstorable(parsed)
    if found is not None:
        where, problem = found
        raise Invalid(f"{where}: {problem}." if where else f"The value {problem}.")
    return parsed


def value_from_text(source: str, original: Any) -> Any:
    """Codec JSON for the plain text of a scalar field, read as the kind ``original`` is.

    Raises:
        Invalid: the text is not a value of that kind (the message shows one that is).
    """
    kind = leaf_kind(original)
    if kind in ("str", "strnul"):
        return encode(source)
    if kind == "none":
        stripped = source.strip()
        if not stripped:
            return None
        try:
            return _plain(parse_json(stripped))
        except Invalid:
            return encode(source)  # not JSON: the operator typed a string
    if kind == "bool":
        if source not in ("true", "false"):
            raise Invalid("Choose true or false.")
        return source == "true"
    if kind is None:
        return value_from_tree(parse_json(source), original)
    return _scalar(kind, source.strip(), original)


def _scalar(kind: str, source: str, original: Any) -> Any:
    """A scalar of ``kind`` (a codec tag, or int/float) from its text, as codec JSON."""
    if kind == "enum":
        member = source.rsplit(".", 1)[-1]
        if not member.isidentifier():
            raise Invalid(
                f"Enter a member of {short_name(original['name'])}, such as {original['v']}."
            )
        return {TAG: "enum", "name": original["name"], "v": member}
    try:
        return encode(_parse_scalar(kind, source, original))
    except (ValueError, ArithmeticError, binascii.Error):
        raise Invalid(f"Enter {_EXAMPLES.get(kind, 'a value of the same kind')}.") from None


def _parse_scalar(kind: str, source: str, original: Any) -> Any:
    if kind == "int":
        return int(source, 0) if source.lower().lstrip("-").startswith("0x") else int(source)
    if kind == "float":
        return float(source)
    if kind == "decimal":
        return decimal.Decimal(source)
    if kind == "uuid":
        return uuid.UUID(source)
    if kind == "bytes":
        return base64.b64decode(source.encode("ascii"), validate=True)
    if kind == "date":
        return dt.date.fromisoformat(source)
    if kind == "time":
        return dt.time.fromisoformat(source)
    if kind == "timedelta":
        return _duration(source)
    if kind == "datetime":
        value = dt.datetime.fromisoformat(source)
        aware = dt.datetime.fromisoformat(original["v"]).tzinfo is not None
        if aware != (value.tzinfo is not None):
            had = (
                "had a time zone: add one, such as +00:00"
                if aware
                else "had no time zone: leave it out"
            )
            raise Invalid(f"The value {had}.")
        return value
    raise ValueError(kind)


def _duration(source: str) -> dt.timedelta:
    match = _DURATION.fullmatch(source)
    if match is None:
        raise ValueError(source)
    days, hours, minutes, seconds, fraction = match.groups()
    return dt.timedelta(
        days=int(days or 0),
        hours=int(hours),
        minutes=int(minutes),
        seconds=int(seconds),
        microseconds=int((fraction or "0").ljust(6, "0")),
    )


def value_from_tree(new: Any, original: Any) -> Any:
    """Codec JSON for ``new`` (JSON in ``diff_values.tree``'s form), read as ``original`` was
    written: its key types, tags, containers and model classes. An unchanged part gives back
    the original as it was.

    Raises:
        Invalid: ``new`` cannot mean a value of that shape; ``where`` says where in it.
    """
    if canon(new) == canon(tree(original)):
        return original
    if new is None:
        return None
    found = shape(original)
    if found.kind == "map":
        return _map(new, original, found.type)
    if found.kind == "seq":
        return _sequence(new, found.items, found.type)
    kind = leaf_kind(original)
    if isinstance(original, dict) and kind not in (None, "strnul"):
        # A tagged scalar: the text says which date, decimal, member... it stays one.
        if isinstance(new, str) or (isinstance(new, int | float) and not isinstance(new, bool)):
            return _scalar(str(kind), str(new).strip(), original)
        raise Invalid(f"Enter {_EXAMPLES.get(str(kind), 'the name of a member')}, as text.")
    # JSON's own scalars take any JSON: what fits is for the declared types to say.
    return _plain(new)


def _map(new: Any, original: Any, model: str) -> Any:
    if not isinstance(new, dict):
        raise Invalid("Expected an object {…}, as the value was.")
    raw = raw_pairs(original)
    mixed = any(type(k) is not str for k, _ in raw)
    known = {_tree_name(k, mixed): (k, child) for k, child in raw}
    items = dict(new)
    if model:
        marker = items.pop("$model", model)
        if marker not in (model, short_name(model)):
            raise Invalid(f"This is a {short_name(model)}; its class cannot be changed here.")
        missing = [name for name in known if name not in items]
        if missing:
            raise Invalid(f"{short_name(model)} needs its field {_unescape(missing[0])!r}.")
    template = _template([child for _, child in raw])
    pairs: list[tuple[Any, Any]] = []
    for name, value in items.items():
        if name in known:
            key, child = known[name]
            pairs.append((key, _inside(_segment(name, model), value_from_tree, value, child)))
        elif model:
            raise Invalid(f"{short_name(model)} has no field {_unescape(name)!r}.")
        else:
            key = _new_key(name, [k for k, _ in raw], mixed)
            pairs.append((key, _inside(_segment(name, model), _guided, value, template)))
    tag = original.get(TAG) if isinstance(original, dict) else None
    return rebuild(pairs, model, "agent" if tag == "agent" else "model")


def _sequence(new: Any, items: list[Any], kind: str) -> Any:
    if not isinstance(new, list):
        raise Invalid("Expected a list […], as the value was.")
    # An item equal to one the value had keeps that item exactly, wherever it moved to.
    unchanged: dict[str, list[Any]] = {}
    for item in items:
        unchanged.setdefault(canon(tree(item)), []).append(item)
    template = _template(items)
    out: list[Any] = []
    for index, value in enumerate(new):
        same = unchanged.get(canon(value))
        if same:
            out.append(same.pop(0))
            continue
        guide = template if template is not None else (items[index] if index < len(items) else None)
        out.append(_inside(f"[{index}]", _guided, value, guide))
    return {TAG: kind, "v": out} if kind else out


def _guided(new: Any, guide: Any) -> Any:
    return value_from_tree(new, guide) if guide is not None else _plain(new)


def _inside(segment: str, read: Callable[[Any, Any], Any], new: Any, guide: Any) -> Any:
    try:
        return read(new, guide)
    except Invalid as exc:
        exc.where.insert(0, segment)
        raise


def _segment(name: str, model: str) -> str:
    return (
        f".{_unescape(name)}"
        if model
        else f"[{name if name.lstrip('-').isdigit() else json.dumps(name)}]"
    )


def _template(values: list[Any]) -> Any:
    """The model for new items: the first value, when all the values are of one kind."""
    kinds = {_kind_of(value) for value in values}
    return values[0] if len(kinds) == 1 else None


def _kind_of(value: Any) -> tuple[str, str]:
    found = shape(value)
    if found.kind != "leaf":
        return found.kind, found.type
    return "leaf", leaf_kind(value) or "?"


def raw_pairs(value: Any) -> list[tuple[Any, Any]]:
    """A map's keys as the codec wrote them (an int, a tagged tuple...) with their values."""
    if TAG not in value:
        return list(value.items())
    if value[TAG] in ("model", "agent"):
        return raw_pairs(value["v"])
    return [(pair[0], pair[1]) for pair in value["v"]]


def _tree_name(key: Any, mixed: bool) -> str:
    """The name ``diff_values.tree`` gives ``key``."""
    if isinstance(key, str):
        name = json.dumps(key, ensure_ascii=False) if mixed else key
        return "$" + name if name.startswith("$") else name
    return str(key) if type(key) is int else text(key, limit=80)


def _new_key(name: str, keys: list[Any], mixed: bool) -> Any:
    if keys and all(type(k) is int for k in keys):
        if re.fullmatch(r"-?\d+", name.strip()):
            return int(name)
        raise Invalid(f"The keys here are integers; {name!r} is not one.")
    if not mixed:
        return _unescape(name)
    if re.fullmatch(r"-?\d+", name):
        return int(name)
    try:
        key = json.loads(name)
    except ValueError:
        key = None
    if not isinstance(key, str):
        raise Invalid(
            f"Write the new key {name!r} as a number or a quoted string, as the others are."
        )
    return key


def rebuild(pairs: list[tuple[Any, Any]], model: str, tag: str = "model") -> Any:
    """A map (or a model's fields) in codec JSON; ``tag`` "agent" for a MAF value, whose
    fields are MAF's own dict."""
    if tag == "agent":
        return {TAG: "agent", "name": model, "v": dict(pairs)}
    keys = [key for key, _ in pairs]
    if all(isinstance(k, str) for k in keys) and TAG not in keys and "\x00" not in "".join(keys):
        mapping: Any = dict(pairs)
    else:
        mapping = {TAG: "dict", "v": [[key, value] for key, value in pairs]}
    return {TAG: "model", "name": model, "v": mapping} if model else mapping


def _unescape(name: str) -> str:
    return name[1:] if name.startswith("$$") else name


def _plain(value: Any) -> Any:
    """Codec JSON for a JSON value nothing guides: plain data (keys unescaped as ``tree``
    escapes them; a user dict holding "$t" gets the codec's wrapping)."""

    def unescaped(item: Any) -> Any:
        if isinstance(item, list):
            return [unescaped(v) for v in item]
        if isinstance(item, dict):
            if "$model" in item:
                raise Invalid(
                    "A new model value can only be added beside one of its kind: copy one."
                )
            return {_unescape(k): unescaped(v) for k, v in item.items()}
        return item

    return encode(unescaped(value))


def canon(value: Any) -> str:
    return json.dumps(value, sort_keys=True, ensure_ascii=False)
