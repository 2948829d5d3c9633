"""The codec's JSON made readable, for people: the dashboard's JSON trees and diffs, logs.

Checkpoints store every value through the typed codec (``workflows.codec``): a dataclass is
``{"$t": "model", "name": "pkg.ReturnState", "v": {...}}``, a dict with int keys is
``{"$t": "dict", "v": [[1, 1], [2, 4]]}``, a datetime ``{"$t": "datetime", "v": "..."}``. That is
exact but hard to read, and a diff of it reports paths such as ``$.state.order.v.total``.

``readable(value)`` rewrites it so the tree shows what the program holds, and loses nothing:

* a model becomes its fields plus a ``"$model"`` key naming the class, and one of Microsoft Agent
  Framework's chat types (a message, a content, a response...) its own fields plus an
  ``"$agent"`` key naming the type (``{"$agent": "Message", "role": "user", "contents": [...]}``);
* a dict with non-string keys becomes an object: int keys as their digits plus ``"$keys": "int"``;
  any other keys (floats, tuples, mixed) as ``{"$dict": [[key, value], ...]}``;
* scalars the codec tags become one-key objects: ``{"$datetime": "2026-08-21T14:03:22+00:00"}``,
  ``{"$decimal": "1.10"}``, ``{"$uuid": ...}``, ``{"$bytes": base64}``, ``{"$timedelta": "1 day,
  2:03:04"}``, ``{"$float": "nan"}``, ``{"$enum": "pkg.Colour.RED"}``;
* tuples, sets and frozensets become ``{"$tuple": [...]}``, ``{"$set": [...]}``...;
* a string with NUL characters becomes the string itself (plain strings never hold NUL);
* a key of a user's own dict that starts with ``$`` gets one more ``$`` (``"$ref"`` shows as
  ``"$$ref"``), so user data can never pass for one of the markers above.

Different codec values therefore always read differently. Nothing here decodes a type or
imports a name: it is a pure rewrite of JSON, safe on data from any run. Unknown or malformed
tags stay visible as data (their ``$t`` key shows as ``$$t``).
"""

from __future__ import annotations

import base64
import binascii
import datetime as dt
from typing import Any

__all__ = ["MARKER", "readable", "readable_checkpoint"]

TAG = "$t"
MARKER = "$"
MAX_DEPTH = 200

_SCALAR_TAGS = ("datetime", "date", "time", "decimal", "uuid", "float")
_CONTAINER_TAGS = ("tuple", "set", "frozenset")


def readable(value: Any, *, _depth: int = 0) -> Any:
    """``value`` (codec JSON) as readable JSON; see the module docstring for the forms."""
    if _depth > MAX_DEPTH:
        return {"$truncated": "nested too deeply to show"}
    if isinstance(value, list):
        return [readable(item, _depth=_depth + 1) for item in value]
    if not isinstance(value, dict):
        return value
    if TAG in value:
        shown = _tagged(value, _depth)
        if shown is not _UNKNOWN:
            return shown
    return {_escape(key): readable(item, _depth=_depth + 1) for key, item in value.items()}


_UNKNOWN = object()


def _escape(key: Any) -> str:
    text = str(key)
    return MARKER + text if text.startswith(MARKER) else text


def _tagged(data: dict[str, Any], depth: int) -> Any:
    tag = data.get(TAG)
    inner: Any = data.get("v")
    keys = set(data)
    if not isinstance(tag, str):
        return _UNKNOWN
    if tag == "agent":
        return _chat_value(data, inner)
    if tag in ("model", "enum"):
        if keys != {TAG, "name", "v"} or not isinstance(data["name"], str):
            return _UNKNOWN
        if tag == "enum":
            return {"$enum": f"{data['name']}.{inner}"}
        if not isinstance(inner, dict):
            return _UNKNOWN
        fields = {_escape(k): readable(v, _depth=depth + 1) for k, v in inner.items()}
        return {"$model": data["name"], **fields}
    if keys != {TAG, "v"}:
        return _UNKNOWN
    if tag in _SCALAR_TAGS and isinstance(inner, str):
        return {"$" + tag: inner}
    if tag == "bytes" and isinstance(inner, str):
        return {"$bytes": inner, "$length": _byte_length(inner)}
    if tag == "timedelta" and _is_int_triple(inner):
        days, seconds, micros = inner
        return {"$timedelta": str(dt.timedelta(days=days, seconds=seconds, microseconds=micros))}
    if tag == "str" and isinstance(inner, list) and all(isinstance(p, str) for p in inner):
        return "\x00".join(inner)
    if tag in _CONTAINER_TAGS and isinstance(inner, list):
        return {"$" + tag: [readable(item, _depth=depth + 1) for item in inner]}
    if tag == "dict" and isinstance(inner, list) and all(_is_pair(p) for p in inner):
        return _readable_dict(inner, depth)
    return _UNKNOWN


def _chat_value(data: dict[str, Any], fields: Any) -> Any:
    if set(data) != {TAG, "name", "v"} or not isinstance(data["name"], str):
        return _UNKNOWN
    if not isinstance(fields, dict):
        return _UNKNOWN
    # MAF's own "type" key repeats the name ("message" for a Message); contents keep theirs.
    shown = {_escape(k): readable(v) for k, v in fields.items() if k != "type"}
    return {"$agent": data["name"], **shown}


def _readable_dict(pairs: list[list[Any]], depth: int) -> Any:
    keys = [key for key, _ in pairs]
    if all(isinstance(k, str) for k in keys):
        # A user dict the codec wrapped because it holds a "$t" key: escaping shows it as is.
        return {_escape(k): readable(v, _depth=depth + 1) for k, v in pairs}
    if all(type(k) is int for k in keys) and len(set(keys)) == len(keys):
        # Digits never start with "$", so "$keys" cannot collide with a key.
        shown: dict[str, Any] = {"$keys": "int"}
        shown.update((str(k), readable(v, _depth=depth + 1)) for k, v in pairs)
        return shown
    return {
        "$dict": [[readable(k, _depth=depth + 1), readable(v, _depth=depth + 1)] for k, v in pairs]
    }


def _is_pair(item: Any) -> bool:
    return isinstance(item, list) and len(item) == 2


def _is_int_triple(value: Any) -> bool:
    return isinstance(value, list) and len(value) == 3 and all(type(p) is int for p in value)


def _byte_length(text: str) -> int | None:
    try:
        return len(base64.b64decode(text.encode("ascii"), validate=True))
    except (binascii.Error, ValueError, UnicodeEncodeError):
        return None


def readable_checkpoint(document: dict[str, Any]) -> dict[str, Any]:
    """The parts of a decoded checkpoint document (``WorkflowCheckpoint.to_dict()``) an operator
    reads, each made readable: executor states, shared state, in-flight messages, pending
    requests, fan-in buffers and metadata."""
    messages = []
    for message in document.get("messages") or []:
        shown = {
            "from": message.get("source"),
            "to": message.get("target"),
            "kind": message.get("kind"),
            "data": readable(message.get("data")),
        }
        if message.get("request"):
            shown["answers"] = _request(message["request"])
        messages.append(shown)
    return {
        "executor_states": readable(document.get("executor_states") or {}),
        "state": readable(document.get("state") or {}),
        "messages": messages,
        "pending_requests": {
            rid: _request(event)
            for rid, event in (document.get("pending_request_info_events") or {}).items()
        },
        "edge_states": readable(document.get("edge_states") or {}),
        "answered_request_ids": list(document.get("answered_request_ids") or []),
        "metadata": readable(document.get("metadata") or {}),
    }


def _request(event: dict[str, Any]) -> dict[str, Any]:
    return {
        "executor": event.get("source_executor_id"),
        "request_type": event.get("request_type"),
        "response_type": event.get("response_type"),
        "created_at": event.get("created_at"),
        "data": readable(event.get("data")),
    }
