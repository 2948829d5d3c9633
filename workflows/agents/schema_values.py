"""Values made up from a JSON schema: what the local model answers when asked for structured output,
and the arguments it passes to a tool."""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from typing import Any, cast

from pydantic import BaseModel

# region Schemas


def response_schema(response_format: Any) -> Mapping[str, Any] | None:
    """The JSON schema a requested ``response_format`` asks for, or None for plain text."""
    if isinstance(response_format, type) and issubclass(response_format, BaseModel):
        return response_format.model_json_schema()
    if not isinstance(response_format, Mapping):
        return None
    kind = response_format.get("type")
    if kind == "text":
        return None
    if kind == "json_object":
        return {"type": "object"}
    if kind == "json_schema":
        section = response_format.get("json_schema", response_format)
        schema = section.get("schema") if isinstance(section, Mapping) else None
        return schema if isinstance(schema, Mapping) else {"type": "object"}
    return response_format


def structured_text(schema: Mapping[str, Any], text: str) -> str:
    return json.dumps(synthesise(schema, text))


def synthesise(schema: Mapping[str, Any], text: str) -> Any:
    """A value valid for ``schema``: only required properties, strings from ``text``.

    Strings are ``text`` cut to 80 characters (or an enum's first value), numbers 1,
    booleans true, arrays one item, objects recursively; ``$ref`` is followed within the
    schema. Length, range and item-count bounds are respected; patterns are not.
    """
    return _value(schema, root=schema, text=text[:80], depth=0)


# Deep enough for real schemas; stops self-referencing models from recursing forever.
_MAX_DEPTH = 12
_FORMATS = {
    "date-time": "1970-01-01T00:00:00Z",
    "date": "1970-01-01",
    "time": "00:00:00",
    "email": "user@example.com",
    "uri": "https://example.com/",
    "uuid": "00000000-0000-0000-0000-000000000000",
}


def _value(schema: Mapping[str, Any], *, root: Mapping[str, Any], text: str, depth: int) -> Any:
    schema = _resolve(schema, root)
    if "const" in schema:
        return schema["const"]
    if schema.get("enum"):
        return schema["enum"][0]
    for key in ("anyOf", "oneOf", "allOf"):
        if options := schema.get(key):
            return _value(_first_non_null(options), root=root, text=text, depth=depth + 1)
    kind = _schema_type(schema)
    if kind == "object" or (kind is None and "properties" in schema):
        return _object(schema, root=root, text=text, depth=depth)
    if kind == "array":
        return _array(schema, root=root, text=text, depth=depth)
    if kind in ("integer", "number"):
        return _number(schema, integer=kind == "integer")
    if kind == "boolean":
        return True
    if kind == "null":
        return None
    return _string(schema, text)


def _resolve(schema: Mapping[str, Any], root: Mapping[str, Any]) -> Mapping[str, Any]:
    """``schema`` with a local ``$ref`` ("#/$defs/Name") replaced by what it points at."""
    ref = schema.get("$ref")
    if not isinstance(ref, str) or not ref.startswith("#"):
        return schema
    target: Any = root
    for part in ref.lstrip("#").strip("/").split("/"):
        if part and isinstance(target, Mapping):
            target = target.get(part.replace("~1", "/").replace("~0", "~"))
    # A reference that leads nowhere constrains nothing, as an empty schema.
    return cast(Mapping[str, Any], target) if isinstance(target, Mapping) else {}


def _first_non_null(options: Sequence[Mapping[str, Any]]) -> Mapping[str, Any]:
    for option in options:
        if option.get("type") != "null":
            return option
    return options[0]


def _schema_type(schema: Mapping[str, Any]) -> str | None:
    kind = schema.get("type")
    if isinstance(kind, list):
        kinds = [k for k in kind if k != "null"] or kind
        return str(kinds[0]) if kinds else None
    return kind if isinstance(kind, str) else None


def _object(schema: Mapping[str, Any], *, root: Mapping[str, Any], text: str, depth: int) -> Any:
    if depth >= _MAX_DEPTH:
        return {}
    properties: Mapping[str, Any] = schema.get("properties") or {}
    return {
        name: _value(properties.get(name) or {}, root=root, text=text, depth=depth + 1)
        for name in schema.get("required") or ()
    }


def _array(schema: Mapping[str, Any], *, root: Mapping[str, Any], text: str, depth: int) -> Any:
    count = max(1, int(schema.get("minItems", 0)))
    if "maxItems" in schema:
        count = min(count, int(schema["maxItems"]))
    if depth >= _MAX_DEPTH or count == 0:
        return []
    items = schema.get("items")
    item_schema: Mapping[str, Any] = items if isinstance(items, Mapping) else {}
    item = _value(item_schema, root=root, text=text, depth=depth + 1)
    # uniqueItems would refuse copies of one item, so ask for one only.
    return [item] if schema.get("uniqueItems") else [item] * count


def _number(schema: Mapping[str, Any], *, integer: bool) -> int | float:
    value: float = 1
    if (low := schema.get("minimum")) is not None and value < low:
        value = low
    if (low := schema.get("exclusiveMinimum")) is not None and value <= low:
        value = low + 1
    if (high := schema.get("maximum")) is not None and value > high:
        value = high
    if (high := schema.get("exclusiveMaximum")) is not None and value >= high:
        value = high - 1
    if integer:
        # Up, so a fractional lower bound still holds.
        return math.ceil(value)
    return int(value) if float(value).is_integer() else value


def _string(schema: Mapping[str, Any], text: str) -> str:
    value = _FORMATS.get(str(schema.get("format")), text)
    if (longest := schema.get("maxLength")) is not None:
        value = value[: int(longest)]
    shortest = int(schema.get("minLength", 0))
    return value + "x" * (shortest - len(value)) if len(value) < shortest else value


# endregion
