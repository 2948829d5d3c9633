"""Typed JSON for checkpoints: a closed set of tags, never pickle.

Plain JSON values stay as they are. Everything else becomes a tagged object ``{"$t": tag, ...}``:

    datetime, date, time, timedelta, decimal, uuid, bytes, tuple, set, frozenset, float (NaN/inf),
    str (with NUL characters, which PostgreSQL's jsonb refuses), dict (non-string keys, or a user
    dict that itself holds "$t"), enum and model (dataclasses and pydantic models), and agent
    (Microsoft Agent Framework's chat types, a closed list: ``workflows.chat_types``)

Enums and models are looked up by name in a ``TypeRegistry``; the decoder never imports anything.
Because a user dict containing "$t" is always wrapped in the "dict" tag, data cannot turn into a
type on the way back. Decoding is bounded (size, depth) and every failure is one
``CheckpointDecodeError``.

The text is the standard library's ``json`` output, byte for byte: stored texts are hashed into
content addresses and signatures, so they must not depend on what is installed. When ``orjson``
is importable it writes and parses the text instead, but only where its output is provably the
same (see ``workflows.fast_json``): otherwise, and without it, the ``json`` module does the work.
"""

from __future__ import annotations

import base64
import dataclasses
import datetime as dt
import decimal
import enum
import json
import math
import re
import uuid
from collections.abc import Callable
from itertools import chain, repeat
from typing import Any

from . import chat_types, fast_json
from .exceptions import CheckpointDecodeError, CheckpointEncodeError, UnregisteredTypeError
from .registry import (
    AllowedTypes,
    TypeRegistry,
    default_registry,
    is_pydantic_model,
    is_restorable_class,
)

__all__ = [
    "DEFAULT_MAX_BYTES",
    "DEFAULT_MAX_DEPTH",
    "decode",
    "decode_checkpoint_value",
    "dumps",
    "encode",
    "encode_checkpoint_value",
    "encode_text",
    "loads",
]

TAG = "$t"
DEFAULT_MAX_BYTES = 64 * 1024 * 1024
DEFAULT_MAX_DEPTH = 200

_PLAIN_SCALARS = (type(None), bool)
# Python refuses to turn ints of more than 4300 digits into text; such ints get a hex tag.
_BIG_INT = 10**4000
_MAYBE_SURROGATE = re.compile(r"\\[uU][dD][89a-fA-F]")
_SURROGATE = re.compile("[\ud800-\udfff]")


class _EncodeFailure(Exception):
    """Carries the path to the bad value up the recursion, so the final error can name it."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason
        self.path: list[str] = []


def encode(value: Any, *, registry: TypeRegistry = default_registry, where: str = "value") -> Any:
    """Turn ``value`` into JSON-safe data that ``decode`` restores exactly.

    Raises:
        CheckpointEncodeError: naming ``where`` and the path inside it, for a value of a type the
            codec cannot restore (an unregistered class, a function, a file...).
    """
    try:
        return _encode(value, registry)
    except _EncodeFailure as failure:
        path = "".join(reversed(failure.path))
        raise CheckpointEncodeError(f"{where}{path}: {failure.reason}") from None
    except RecursionError:
        raise CheckpointEncodeError(f"{where}: nested too deeply (or refers to itself)") from None


def _encode(value: Any, registry: TypeRegistry) -> Any:
    kind = type(value)
    if kind is str:
        return value if "\x00" not in value else {TAG: "str", "v": value.split("\x00")}
    if kind in _PLAIN_SCALARS:
        return value
    if kind is int:
        return value if -_BIG_INT < value < _BIG_INT else {TAG: "int", "v": format(value, "x")}
    if kind is float:
        return value if _plain_float(value) else {TAG: "float", "v": repr(value)}
    if kind is list:
        return _encode_items(value, registry)
    if kind is dict:
        return _encode_dict(value, registry)
    encoder = _ENCODERS.get(kind)
    if encoder is not None:
        return encoder(value, registry)
    return _encode_object(value, registry)


_PLAIN_TYPES = frozenset({str, int, bool, type(None)})
_STR_ONLY = {str}
_DICT_ONLY = {dict}


def _plain_float(value: float) -> bool:
    """Floats that survive every JSON store as floats. NaN and infinities are not JSON;
    PostgreSQL's jsonb keeps numbers as decimals, so -0.0 loses its sign and 1e16 comes back
    as the integer 10000000000000000. Those are tagged with their exact text instead."""
    return (
        math.isfinite(value)
        and abs(value) < 1e16
        and not (value == 0.0 and math.copysign(1.0, value) < 0)
    )


def _all_plain(values: Any) -> bool:
    """True when every value is a JSON scalar that encodes as itself. Checked with C-level
    builtins (map/filter/set/join) because large flat lists and records dominate real states."""
    if not isinstance(values, list):
        values = list(values)
    kinds = set(map(type, values))
    if kinds == _STR_ONLY:
        return "\x00" not in "".join(values)
    if not kinds <= _PLAIN_OR_FLOAT:
        return False
    if str in kinds and "\x00" in "".join(filter(_is_str, values)):
        return False
    if int in kinds:
        ints = list(filter(_is_int, values))
        if max(ints) >= _BIG_INT or min(ints) <= -_BIG_INT:
            return False
    return float not in kinds or _plain_floats(list(filter(_is_float, values)))


def _plain_floats(floats: list[float]) -> bool:
    """``_plain_float`` over many floats, with C-level builtins."""
    if not all(map(math.isfinite, floats)) or max(map(abs, floats)) >= 1e16:
        return False
    return 0.0 not in floats or all(math.copysign(1.0, f) > 0 for f in floats if f == 0.0)


def _plain_records(items: list[Any]) -> bool:
    """A list of flat records (dicts of JSON scalars with ordinary string keys), the commonest
    large state, checked in one pass of C-level iteration instead of one call per record."""
    keys = list(chain.from_iterable(items))
    if set(map(type, keys)) - _STR_ONLY or TAG in keys or "\x00" in "".join(keys):
        return False
    return _all_plain(list(chain.from_iterable(map(dict.values, items))))


_PLAIN_OR_FLOAT = frozenset({str, int, bool, type(None), float})
_is_str = str.__instancecheck__
_is_int = int.__instancecheck__
_is_float = float.__instancecheck__


def _encode_items(items: Any, registry: TypeRegistry) -> list[Any]:
    if type(items) is list and items:
        kinds = set(map(type, items))
        if kinds <= _PLAIN_OR_FLOAT and _all_plain(items):
            return list(items)
        if kinds == _DICT_ONLY and _plain_records(items):
            return list(map(dict, items))
    out = []
    for index, item in enumerate(items):
        try:
            out.append(_encode(item, registry))
        except _EncodeFailure as failure:
            failure.path.append(f"[{index}]")
            raise
    return out


def _encode_dict(value: dict[Any, Any], registry: TypeRegistry) -> Any:
    plain = TAG not in value and set(map(type, value)) <= {str} and "\x00" not in "".join(value)
    if plain:
        if _all_plain(value.values()):
            return dict(value)
        out = {}
        for key, item in value.items():
            try:
                out[key] = _encode(item, registry)
            except _EncodeFailure as failure:
                failure.path.append(f"[{key!r}]")
                raise
        return out
    pairs = []
    for key, item in value.items():
        try:
            pairs.append([_encode(key, registry), _encode(item, registry)])
        except _EncodeFailure as failure:
            failure.path.append(f"[{key!r}]")
            raise
    return {TAG: "dict", "v": pairs}


def _encode_set(value: set[Any] | frozenset[Any], registry: TypeRegistry) -> Any:
    items = _encode_items(value, registry)
    # Sorted by canonical text so equal sets always store the same bytes (and share blobs).
    items.sort(key=lambda item: json.dumps(item, sort_keys=True))
    return {TAG: "set" if type(value) is set else "frozenset", "v": items}


def _encode_object(value: Any, registry: TypeRegistry) -> Any:
    cls = type(value)
    if isinstance(value, enum.Enum):
        name = registry.name_of(cls)
        if name is None:
            raise _EncodeFailure(_unregistered(cls))
        return {TAG: "enum", "name": name, "v": value.name}
    if dataclasses.is_dataclass(value) or is_pydantic_model(cls):
        name = registry.name_of(cls)
        if name is None:
            raise _EncodeFailure(_unregistered(cls))
        if is_pydantic_model(cls):
            fields = value.model_dump(mode="python", round_trip=True)
        else:
            fields = {f.name: getattr(value, f.name) for f in dataclasses.fields(value)}
        return {TAG: "model", "name": name, "v": _encode_dict(fields, registry)}
    chat_name = chat_types.chat_type_name(cls)
    if chat_name is not None:
        # Looked up once per class: later values of it go straight through _ENCODERS.
        def encode_chat(value: Any, registry: TypeRegistry) -> Any:
            try:
                return chat_types.encode_chat_value(
                    value,
                    chat_name,
                    lambda fields: _encode_dict(fields, registry),
                    lambda cls: _register_if_restorable(registry, cls),
                )
            except _EncodeFailure:
                raise
            except Exception as exc:  # MAF's to_dict refusing (a session state type, ...)
                raise _EncodeFailure(f"agent {chat_name} could not be stored: {exc}") from exc

        _ENCODERS[cls] = encode_chat
        return encode_chat(value, registry)
    raise _EncodeFailure(
        f"{cls.__module__}.{cls.__qualname__} cannot be stored in a checkpoint; use JSON types, "
        "datetime/Decimal/UUID/bytes/tuple/set, or a registered dataclass, pydantic model or Enum"
    )


def _register_if_restorable(registry: TypeRegistry, cls: type) -> None:
    if is_restorable_class(cls):
        registry.register(cls)


def _unregistered(cls: type) -> str:
    return (
        f"{cls.__module__}.{cls.__qualname__} is not a registered type; name it in a handler "
        "annotation or call workflows.register_type() on it"
    )


_ENCODERS: dict[type, Callable[[Any, TypeRegistry], Any]] = {
    tuple: lambda v, r: {TAG: "tuple", "v": _encode_items(v, r)},
    set: _encode_set,
    frozenset: _encode_set,
    bytes: lambda v, r: {TAG: "bytes", "v": base64.b64encode(v).decode("ascii")},
    bytearray: lambda v, r: {TAG: "bytes", "v": base64.b64encode(bytes(v)).decode("ascii")},
    dt.datetime: lambda v, r: {TAG: "datetime", "v": v.isoformat()},
    dt.date: lambda v, r: {TAG: "date", "v": v.isoformat()},
    dt.time: lambda v, r: {TAG: "time", "v": v.isoformat()},
    dt.timedelta: lambda v, r: {TAG: "timedelta", "v": [v.days, v.seconds, v.microseconds]},
    decimal.Decimal: lambda v, r: {TAG: "decimal", "v": str(v)},
    uuid.UUID: lambda v, r: {TAG: "uuid", "v": str(v)},
}


# ---------------------------------------------------------------------------------------- decode


def decode(
    data: Any, *, registry: TypeRegistry = default_registry, max_depth: int = DEFAULT_MAX_DEPTH
) -> Any:
    """Rebuild the value ``encode`` produced.

    Raises:
        CheckpointDecodeError: for unknown tags, malformed tags, types that are not registered,
            values the registered class refuses, or nesting deeper than ``max_depth``.
    """
    try:
        return _decode(data, registry, max_depth)
    except CheckpointDecodeError:
        raise
    except RecursionError:
        raise CheckpointDecodeError("checkpoint data is nested too deeply") from None
    except Exception as exc:  # a registered class refusing its fields, a bad isoformat, ...
        raise CheckpointDecodeError(f"checkpoint data could not be restored: {exc}") from exc


def _decode(data: Any, registry: TypeRegistry, depth: int) -> Any:
    kind = type(data)
    if kind is str or kind in _PLAIN_SCALARS or kind is int or kind is float:
        return data
    if depth <= 0:
        raise CheckpointDecodeError("checkpoint data is nested too deeply")
    if kind is list:
        kinds = set(map(type, data))
        if kinds <= _PLAIN_OR_FLOAT:
            return list(data)
        if kinds == _DICT_ONLY and depth > 1 and _untagged_records(data):
            return list(map(dict, data))
        return [_decode(item, registry, depth - 1) for item in data]
    if kind is dict:
        if TAG in data:
            return _decode_tag(data, registry, depth - 1)
        if set(map(type, data.values())) <= _PLAIN_OR_FLOAT:
            return dict(data)
        return {key: _decode(item, registry, depth - 1) for key, item in data.items()}
    raise CheckpointDecodeError(f"unexpected {kind.__name__} in checkpoint data")


def _untagged_records(items: list[dict[Any, Any]]) -> bool:
    """Dicts of scalars none of which is a tag, decoded as copies in one C-level pass each
    over all keys and all values (one ``_decode`` call per value costs ten times more)."""
    if any(map(dict.__contains__, items, repeat(TAG))):  # a third of a set of all keys
        return False
    return set(map(type, chain.from_iterable(map(dict.values, items)))) <= _PLAIN_OR_FLOAT


def _decode_tag(data: dict[str, Any], registry: TypeRegistry, depth: int) -> Any:
    tag = data[TAG]
    spec = _TAG_SHAPES.get(tag) if isinstance(tag, str) else None
    if spec is None:
        raise CheckpointDecodeError(f"unknown checkpoint tag {tag!r}")
    if data.keys() != spec:
        raise CheckpointDecodeError(f"malformed {tag!r} tag")
    value = data["v"]
    if tag in _SCALAR_DECODERS:
        if not isinstance(value, str):
            raise CheckpointDecodeError(f"malformed {tag!r} tag")
        return _SCALAR_DECODERS[tag](value)
    if tag == "str":
        if not isinstance(value, list) or not all(type(p) is str for p in value):
            raise CheckpointDecodeError("malformed 'str' tag")
        return "\x00".join(value)
    if tag == "timedelta":
        if not (isinstance(value, list) and len(value) == 3 and all(type(p) is int for p in value)):
            raise CheckpointDecodeError("malformed 'timedelta' tag")
        return dt.timedelta(days=value[0], seconds=value[1], microseconds=value[2])
    if tag in ("tuple", "set", "frozenset"):
        if not isinstance(value, list):
            raise CheckpointDecodeError(f"malformed {tag!r} tag")
        items = [_decode(item, registry, depth - 1) for item in value]
        return {"tuple": tuple, "set": set, "frozenset": frozenset}[tag](items)
    if tag == "dict":
        if not isinstance(value, list) or not all(
            isinstance(pair, list) and len(pair) == 2 for pair in value
        ):
            raise CheckpointDecodeError("malformed 'dict' tag")
        return {_decode(k, registry, depth - 1): _decode(v, registry, depth - 1) for k, v in value}
    if tag == chat_types.TAG_NAME:
        return _decode_chat(data, registry, depth)
    return _decode_named(tag, data, registry, depth)


def _decode_chat(data: dict[str, Any], registry: TypeRegistry, depth: int) -> Any:
    name, value = data["name"], data["v"]
    if not isinstance(name, str) or not isinstance(value, dict):
        raise CheckpointDecodeError("malformed 'agent' tag")
    fields = _decode(value, registry, depth - 1)
    if not isinstance(fields, dict) or not all(isinstance(k, str) for k in fields):
        raise CheckpointDecodeError(f"malformed 'agent' tag for {name!r}")
    return chat_types.decode_chat_value(name, fields)


def _decode_named(tag: str, data: dict[str, Any], registry: TypeRegistry, depth: int) -> Any:
    name = data["name"]
    cls = registry.resolve(name) if isinstance(name, str) else None
    if cls is None:
        reason = registry.why_unknown(name) if isinstance(name, str) else "which is not a name"
        raise UnregisteredTypeError(f"checkpoint names type {name!r}, {reason}")
    value = data["v"]
    if tag == "enum":
        if not (isinstance(cls, type) and issubclass(cls, enum.Enum)) or not isinstance(value, str):
            raise CheckpointDecodeError(f"malformed 'enum' tag for {name!r}")
        try:
            return cls[value]
        except KeyError:
            raise CheckpointDecodeError(f"{name} has no member {value!r}") from None
    if not isinstance(value, dict):
        raise CheckpointDecodeError(f"malformed 'model' tag for {name!r}")
    fields = _decode(value, registry, depth - 1)
    if not isinstance(fields, dict) or not all(isinstance(k, str) for k in fields):
        raise CheckpointDecodeError(f"malformed 'model' tag for {name!r}")
    if is_pydantic_model(cls):
        return cls.model_validate(fields)  # type: ignore[attr-defined]
    if dataclasses.is_dataclass(cls):
        return _build_dataclass(cls, fields)
    raise CheckpointDecodeError(f"{name!r} is registered but is not a model")


def _build_dataclass(cls: type, fields: dict[str, Any]) -> Any:
    known = {f.name: f for f in dataclasses.fields(cls)}
    unknown = set(fields) - set(known)
    if unknown:
        raise CheckpointDecodeError(f"{cls.__qualname__} has no field(s) {sorted(unknown)}")
    init_args = {k: v for k, v in fields.items() if known[k].init}
    obj = cls(**init_args)
    for key, item in fields.items():
        if not known[key].init:
            object.__setattr__(obj, key, item)
    return obj


def _decode_int(text: str) -> int:
    try:
        return int(text, 16)
    except ValueError:
        raise CheckpointDecodeError("malformed 'int' tag") from None


_FLOAT_TEXT = re.compile(r"-?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?|nan|inf|-inf")


def _decode_float(text: str) -> float:
    if len(text) > 40 or not _FLOAT_TEXT.fullmatch(text):
        raise CheckpointDecodeError(f"malformed 'float' tag {text!r}")
    value = float(text)
    if not math.isfinite(value) and text not in ("nan", "inf", "-inf"):
        raise CheckpointDecodeError(f"'float' tag {text!r} overflows")
    return value


_SCALAR_DECODERS: dict[str, Callable[[str], Any]] = {
    "bytes": lambda v: base64.b64decode(v.encode("ascii"), validate=True),
    "datetime": dt.datetime.fromisoformat,
    "date": dt.date.fromisoformat,
    "time": dt.time.fromisoformat,
    "decimal": decimal.Decimal,
    "uuid": uuid.UUID,
    "float": _decode_float,
    "int": _decode_int,
}

_TAG_SHAPES: dict[str, set[str]] = {
    **{tag: {TAG, "v"} for tag in _SCALAR_DECODERS},
    **{tag: {TAG, "v"} for tag in ("str", "timedelta", "tuple", "set", "frozenset", "dict")},
    "enum": {TAG, "name", "v"},
    "model": {TAG, "name", "v"},
    chat_types.TAG_NAME: {TAG, "name", "v"},
}


# ------------------------------------------------------------------- MAF's names for the codec


def encode_checkpoint_value(value: Any, *, registry: TypeRegistry = default_registry) -> Any:
    """``encode`` under the name Microsoft Agent Framework's custom storages call.

    The result is JSON-safe typed data (MAF's is JSON with pickled envelopes); pass it to
    ``decode_checkpoint_value`` to get the value back.

    Raises:
        CheckpointEncodeError: a value of a type the codec cannot restore.
    """
    return encode(value, registry=registry)


def decode_checkpoint_value(
    value: Any,
    *,
    allowed_types: AllowedTypes | None = None,
    registry: TypeRegistry = default_registry,
) -> Any:
    """``decode`` under MAF's name; ``allowed_types`` joins ``registry`` first.

    ``allowed_types`` takes MAF's ``"module:qualname"`` names (or classes). Unlike MAF, leaving
    it out does not lift any restriction: only registered types are ever rebuilt.

    Raises:
        CheckpointTypeError: an allowed type the codec cannot rebuild.
        CheckpointDecodeError: as ``decode``, including a type that is neither registered nor
            allowed.
    """
    registry.allow(allowed_types)
    return decode(value, registry=registry)


# ------------------------------------------------------------------------------------ JSON text


def dumps(data: Any) -> str:
    """Compact JSON text of already-encoded data; refuses NaN (encode tags it instead)."""
    if _large(data):
        fast = fast_json.dumps(data, encoding=False)
        if fast is not None:
            return fast.decode("utf-8")
    return json.dumps(data, ensure_ascii=False, separators=(",", ":"), allow_nan=False)


def _large(data: Any) -> bool:
    """Worth the scan that lets orjson write it (a long list, a big dict): a checkpoint's
    record or its graph signature is written faster by ``json`` alone than scanned first."""
    return type(data) in _CONTAINERS and len(data) >= 64


_CONTAINERS = (list, dict, tuple)


def encode_text(
    value: Any, *, registry: TypeRegistry = default_registry, where: str = "value"
) -> str:
    """``dumps(encode(value))``, the same text, without the encoded copy when ``value`` is
    plain JSON already (the common large state: lists of records of scalars).

    Raises:
        CheckpointEncodeError: as ``encode``.
    """
    fast = fast_json.dumps(value, encoding=True)
    # A NUL character or a "$t" key needs a tag; either shows in the text (conservatively:
    # the same bytes inside a string also send the value the long way).
    if fast is not None and b"\\u0000" not in fast and b'"$t"' not in fast:
        return fast.decode("utf-8")
    return dumps(encode(value, registry=registry, where=where))


def _refuse_constant(name: str) -> Any:
    raise CheckpointDecodeError(f"checkpoint JSON contains {name}, which is not allowed")


def _no_duplicate_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    result = dict(pairs)
    if len(result) != len(pairs):
        raise CheckpointDecodeError("checkpoint JSON repeats a key in one object")
    return result


def loads(text: str | bytes, *, max_bytes: int = DEFAULT_MAX_BYTES) -> Any:
    """Parse checkpoint JSON text with limits; the result still needs ``decode``.

    Raises:
        CheckpointDecodeError: the text is too large, not UTF-8, not JSON, repeats keys, holds
            NaN/Infinity, lone surrogates, or nests deeper than the parser allows.
    """
    size = len(text)
    if isinstance(text, str) and size * 4 > max_bytes and size <= max_bytes:
        size = len(text.encode("utf-8", "surrogatepass"))  # characters may take 4 bytes each
    if size > max_bytes:
        raise CheckpointDecodeError(f"checkpoint document exceeds {max_bytes} bytes")
    raw = None
    if fast_json.enabled():
        raw = bytes(text) if isinstance(text, (bytes, bytearray)) else _utf8(text)
    if raw is not None:
        data = fast_json.loads(raw)
        if data is not fast_json.NOT_CANONICAL:
            return data
    if isinstance(text, (bytes, bytearray)):
        try:
            text = bytes(text).decode("utf-8")
        except UnicodeDecodeError as exc:
            raise CheckpointDecodeError(f"checkpoint document is not UTF-8: {exc}") from None
    try:
        data = json.loads(
            text, parse_constant=_refuse_constant, object_pairs_hook=_no_duplicate_keys
        )
    except CheckpointDecodeError:
        raise
    except RecursionError:
        raise CheckpointDecodeError("checkpoint document is nested too deeply") from None
    except (ValueError, OverflowError) as exc:
        raise CheckpointDecodeError(f"checkpoint document is not valid JSON: {exc}") from None
    if _SURROGATE.search(text) or (_MAYBE_SURROGATE.search(text) and _has_lone_surrogate(data)):
        raise CheckpointDecodeError("checkpoint document contains a lone surrogate")
    return data


def _utf8(text: str) -> bytes | None:
    try:
        return text.encode("utf-8")
    except UnicodeEncodeError:  # a lone surrogate: json's way reports it
        return None


def _has_lone_surrogate(data: Any) -> bool:
    stack = [data]
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            if _SURROGATE.search(item):
                return True
        elif isinstance(item, list):
            stack.extend(item)
        elif isinstance(item, dict):
            stack.extend(item.keys())
            stack.extend(item.values())
    return False


def check_text(text: str, where: str) -> bytes:
    """UTF-8 bytes of encoded JSON text; lone surrogates in the data are refused at save time."""
    try:
        return text.encode("utf-8")
    except UnicodeEncodeError:
        raise CheckpointEncodeError(
            f"{where}: contains a lone surrogate character, which cannot be stored"
        ) from None
