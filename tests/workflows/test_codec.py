"""The typed JSON codec: exact round trips of arbitrary values, and hostile input that only ever
raises ``CheckpointDecodeError`` (``codec.py``, and ``WorkflowCheckpoint.from_dict`` on top)."""

from __future__ import annotations

import base64
import dataclasses
import datetime as dt
import enum
import json
import pickle
import sys
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from workflows import (
    CheckpointDecodeError,
    CheckpointEncodeError,
    TypeRegistry,
    WorkflowCheckpoint,
    codec,
    register_type,
)
from workflows.storage import decode, encode
from workflows.testing import assert_identical


class Colour(enum.Enum):
    RED = "red"
    GREEN = 2


@dataclasses.dataclass(frozen=True)
class Point:
    x: int
    y: float
    label: str = ""


register_type(Colour)
register_type(Point)


def round_trip(value: Any, registry: TypeRegistry | None = None) -> Any:
    kwargs = {"registry": registry} if registry is not None else {}
    text = codec.dumps(encode(value, **kwargs))
    return decode(codec.loads(text), **kwargs)


# ---------------------------------------------------------------------------------- property

finite_or_special_floats = st.floats(allow_nan=True, allow_infinity=True)
texts = st.text(alphabet=st.characters(codec="utf-8"), max_size=20) | st.sampled_from(
    ["\x00", "a\x00", "$t", "v", "", "\ufeff", "😀"]
)
offsets = st.integers(min_value=-23 * 60, max_value=23 * 60).map(
    lambda minutes: dt.timezone(dt.timedelta(minutes=minutes))
)
hashable_scalars = (
    st.none()
    | st.booleans()
    | st.integers()
    | texts
    | st.binary(max_size=20)
    | st.dates()
    | st.datetimes(timezones=st.none() | offsets)
    | st.times()
    | st.timedeltas()
    | st.decimals(allow_nan=False, allow_infinity=True)
    | st.uuids()
    | st.sampled_from(list(Colour))
    | st.builds(Point, st.integers(), st.floats(allow_nan=False), texts)
)
scalars = hashable_scalars | finite_or_special_floats | st.decimals(allow_nan=True)
hashables = st.recursive(
    hashable_scalars,
    lambda inner: st.tuples(inner, inner) | st.frozensets(inner, max_size=3),
    max_leaves=6,
)
tag_shaped_dicts = st.fixed_dictionaries(
    {"$t": st.sampled_from(["datetime", "model", "dict", "bogus", "tuple"]), "v": texts}
)


def containers(inner: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    return (
        st.lists(inner, max_size=4)
        | st.tuples(inner, inner)
        | st.lists(inner, max_size=3).map(tuple)
        | st.sets(hashables, max_size=3)
        | st.frozensets(hashables, max_size=3)
        | st.dictionaries(texts, inner, max_size=4)
        | st.dictionaries(st.integers(), inner, max_size=4)
        | st.dictionaries(hashables, inner, max_size=3)
        | tag_shaped_dicts
    )


values = st.recursive(scalars, containers, max_leaves=25)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(values)
def test_any_nested_value_round_trips_with_exact_types(value: Any) -> None:
    assert_identical(round_trip(value), value, ordered=True)


@settings(max_examples=100, deadline=None)
@given(st.dictionaries(texts, values, max_size=4))
def test_encoded_values_are_plain_json(value: dict[str, Any]) -> None:
    encoded = encode(value)
    assert json.loads(json.dumps(encoded, allow_nan=False)) == encoded


# --------------------------------------------------------------------------- specific shapes


def test_int_keyed_dicts_come_back_with_int_keys() -> None:
    squares = {n: n * n for n in range(1, 11)}
    back = round_trip(squares)
    assert back == squares and all(type(k) is int for k in back)


def test_a_user_dict_shaped_like_a_tag_stays_data() -> None:
    for shaped in [
        {"$t": "datetime", "v": "2024-01-01T00:00:00"},
        {"$t": "model", "name": "os.system", "v": {}},
        {"$t": "bytes", "v": "AAAA"},
        {"$t": 1},
    ]:
        back = round_trip(shaped)
        assert back == shaped and type(back) is dict


def test_sets_with_the_same_members_encode_to_the_same_bytes() -> None:
    one = codec.dumps(encode({"s": {3, 1, 2}, "f": frozenset("cab")}))
    two = codec.dumps(encode({"s": {2, 3, 1}, "f": frozenset("bca")}))
    assert one == two


def test_a_registered_pydantic_model_round_trips() -> None:
    pydantic = pytest.importorskip("pydantic")

    class Invoice(pydantic.BaseModel):
        number: int
        issued: dt.date
        total: Decimal
        lines: list[tuple[str, int]]

    register_type(Invoice)
    invoice = Invoice(number=7, issued=dt.date(2024, 1, 2), total=Decimal("9.99"), lines=[("a", 1)])
    assert round_trip(invoice) == invoice


def test_a_private_registry_resolves_only_its_own_types() -> None:
    @dataclasses.dataclass
    class Secret:
        value: int

    private = TypeRegistry()
    private.register(Secret)
    assert round_trip(Secret(1), private) == Secret(1)
    with pytest.raises(CheckpointEncodeError):
        encode(Secret(1))
    with pytest.raises(CheckpointDecodeError, match="not registered"):
        decode(encode(Secret(1), registry=private))


# ---------------------------------------------------------------------------------- encoding


def test_encoding_an_unregistered_dataclass_names_the_path_to_it() -> None:
    @dataclasses.dataclass
    class Unregistered:
        x: int

    value = {"orders": [1, {"open": (2, Unregistered(3))}]}
    with pytest.raises(CheckpointEncodeError) as caught:
        encode(value, where="executor 'worker' state key 'jobs'")
    message = str(caught.value)
    assert "executor 'worker' state key 'jobs'" in message
    assert "['orders'][1]['open'][1]" in message
    assert "Unregistered" in message and "register_type" in message


@pytest.mark.parametrize(
    "unstorable",
    [object(), len, lambda: 1, open, iter([]), Path("."), range(3), type],
    ids=["object", "builtin", "lambda", "function", "iterator", "path", "range", "class"],
)
def test_encoding_values_the_codec_cannot_restore_raises_encode_error(unstorable: Any) -> None:
    with pytest.raises(CheckpointEncodeError, match="state key 'x'"):
        encode({"y": [unstorable]}, where="state key 'x'")


def test_encoding_a_self_referencing_value_raises_encode_error() -> None:
    loop: list[Any] = []
    loop.append(loop)
    with pytest.raises(CheckpointEncodeError, match="nested too deeply"):
        encode(loop)


def test_an_int_too_long_for_json_text_round_trips_or_is_refused_by_name() -> None:
    # str(int) refuses more than 4300 digits, so json.dumps raises a bare ValueError at save time
    # unless the codec tags such ints or refuses them itself, naming the key.
    big = 10**5000
    try:
        text = codec.dumps(encode(big, where="state key 'big'"))
    except CheckpointEncodeError as refused:
        assert "state key 'big'" in str(refused)
    else:
        assert decode(codec.loads(text)) == big


# --------------------------------------------------------------------------- hostile input

EVIL_NAMES = [
    "os.system",
    "subprocess.Popen",
    "builtins.eval",
    "posix.system",
    "http.server.HTTPServer",
    "antigravity.Thing",
]

HOSTILE_DOCUMENTS: dict[str, Any] = {
    "unknown_tag": {"$t": "pickle", "v": "gASVBAAAAAAAAACMAWGULg=="},
    "non_string_tag": {"$t": ["datetime"], "v": "x"},
    "tag_with_extra_key": {"$t": "datetime", "v": "2024-01-01", "extra": 1},
    "tag_without_value": {"$t": "uuid"},
    "bad_datetime": {"$t": "datetime", "v": "yesterday"},
    "datetime_not_a_string": {"$t": "datetime", "v": 1700000000},
    "bad_decimal": {"$t": "decimal", "v": "one"},
    "bad_uuid": {"$t": "uuid", "v": "not-a-uuid"},
    "bad_base64": {"$t": "bytes", "v": "***"},
    "bad_float": {"$t": "float", "v": "1e999"},
    "bad_timedelta": {"$t": "timedelta", "v": [10**12, 0, 0]},
    "bad_str_parts": {"$t": "str", "v": ["a", 1]},
    "unhashable_set_member": {"$t": "set", "v": [[1, 2]]},
    "unhashable_dict_key": {"$t": "dict", "v": [[[1], "x"]]},
    "dict_pairs_malformed": {"$t": "dict", "v": [[1, 2, 3]]},
    "tuple_not_a_list": {"$t": "tuple", "v": "abc"},
    "enum_without_member": {"$t": "enum", "name": f"{Colour.__module__}.Colour", "v": "BLUE"},
    "enum_dunder_member": {"$t": "enum", "name": f"{Colour.__module__}.Colour", "v": "__class__"},
    "enum_name_on_a_model": {"$t": "enum", "name": f"{Point.__module__}.Point", "v": "x"},
    "model_name_on_an_enum": {"$t": "model", "name": f"{Colour.__module__}.Colour", "v": {}},
    "model_unknown_field": {
        "$t": "model",
        "name": f"{Point.__module__}.Point",
        "v": {"x": 1, "y": 2.0, "__class__": 3},
    },
    "model_missing_field": {"$t": "model", "name": f"{Point.__module__}.Point", "v": {"x": 1}},
    "model_fields_not_a_dict": {"$t": "model", "name": f"{Point.__module__}.Point", "v": [1, 2]},
    "model_name_not_a_string": {"$t": "model", "name": {"$t": "str", "v": ["os"]}, "v": {}},
    **{
        f"unregistered_{name}": {"$t": "model", "name": name, "v": {"args": ["touch /tmp/x"]}}
        for name in EVIL_NAMES
    },
    **{f"unregistered_enum_{name}": {"$t": "enum", "name": name, "v": "x"} for name in EVIL_NAMES},
    "nested_evil": {"ok": [1, 2, {"deep": {"$t": "model", "name": "os.system", "v": {}}}]},
}


@pytest.mark.parametrize("name", sorted(HOSTILE_DOCUMENTS))
def test_a_hostile_document_raises_only_decode_error_and_imports_nothing(name: str) -> None:
    text = json.dumps(HOSTILE_DOCUMENTS[name])
    modules_before = set(sys.modules)
    with pytest.raises(CheckpointDecodeError):
        decode(codec.loads(text))
    assert set(sys.modules) == modules_before


def _nested(depth: int) -> str:
    return "[" * depth + "]" * depth


HOSTILE_TEXTS: dict[str, str | bytes] = {
    "deeply_nested_lists": _nested(100_000),
    "deeply_nested_objects": '{"a":' * 100_000 + "1" + "}" * 100_000,
    "deeply_nested_tags": '{"$t":"tuple","v":[' * 5_000 + "]}" * 5_000,
    "nan_token": '{"x": NaN}',
    "infinity_token": "[Infinity]",
    "negative_infinity_token": "[-Infinity]",
    "lone_surrogate_escaped": '{"x": "\\ud800"}',
    "lone_low_surrogate_escaped": '["\\udfff tail"]',
    "lone_surrogate_as_key": '{"\\ud83d": 1}',
    "duplicate_keys": '{"a": 1, "a": 2}',
    "duplicate_tag_keys": '{"$t": "uuid", "$t": "pickle", "v": "x"}',
    "invalid_utf8": b'{"x": "\xff\xfe"}',
    "overlong_utf8": b'["\xc0\xaf"]',
    "encoded_surrogate_bytes": b'["\xed\xa0\x80"]',
    "pickle_payload": pickle.dumps({"a": 1}),
    "truncated": '{"$t": "datetime", "v": "2024',
    "trailing_garbage": '{"a": 1} {"b": 2}',
    "empty": "",
    "int_too_long": "1" * 5_000,
    "utf16_bom": "\ufeff{}".encode("utf-16"),
}


@pytest.mark.parametrize("name", sorted(HOSTILE_TEXTS))
def test_hostile_checkpoint_text_raises_only_decode_error(name: str) -> None:
    with pytest.raises(CheckpointDecodeError):
        decode(codec.loads(HOSTILE_TEXTS[name]))


def test_a_raw_lone_surrogate_in_text_is_refused() -> None:
    with pytest.raises(CheckpointDecodeError, match="surrogate"):
        codec.loads('["\ud800"]')


def test_a_valid_escaped_surrogate_pair_is_accepted() -> None:
    assert codec.loads('["\\ud83d\\ude00"]') == ["😀"]


def test_documents_over_max_bytes_are_refused_before_parsing() -> None:
    document = json.dumps({"payload": "x" * 2_000})
    with pytest.raises(CheckpointDecodeError, match="exceeds"):
        codec.loads(document, max_bytes=1_000)
    with pytest.raises(CheckpointDecodeError, match="exceeds"):
        codec.loads(document.encode(), max_bytes=1_000)
    assert codec.loads(document, max_bytes=10_000) == {"payload": "x" * 2_000}


def test_max_bytes_counts_bytes_not_characters() -> None:
    document = json.dumps({"payload": "é" * 600}, ensure_ascii=False)  # 600 chars, 1200+ bytes
    assert len(document.encode()) > 1_000 > len(document)
    with pytest.raises(CheckpointDecodeError, match="exceeds"):
        codec.loads(document, max_bytes=1_000)


def test_decode_refuses_python_data_nested_deeper_than_max_depth() -> None:
    deep: Any = 1
    for _ in range(100_000):
        deep = [deep]
    with pytest.raises(CheckpointDecodeError, match="deeply"):
        decode(deep)
    shallow: Any = 1
    for _ in range(50):
        shallow = [shallow]
    with pytest.raises(CheckpointDecodeError):
        decode(shallow, max_depth=10)
    assert decode(shallow) == shallow


def test_decode_refuses_values_json_cannot_produce() -> None:
    for alien in [(1, 2), {1, 2}, b"raw", object(), [1, (2,)]]:
        with pytest.raises(CheckpointDecodeError):
            decode(alien)


def test_a_pickle_envelope_from_another_framework_stays_inert_data(tmp_path: Path) -> None:
    marker = tmp_path / "pwned"

    class Boom:
        def __reduce__(self) -> tuple[Any, ...]:
            return (marker.write_text, ("pwned",))

    envelope = {
        "__pickled__": base64.b64encode(pickle.dumps(Boom())).decode(),
        "__type__": "os:system",
    }
    back = decode(codec.loads(json.dumps({"state": envelope})))
    assert back == {"state": envelope}
    assert not marker.exists()


# ------------------------------------------------------------- hostile whole checkpoints


def _valid_checkpoint_dict() -> dict[str, Any]:
    return WorkflowCheckpoint(workflow_name="w", graph_signature_hash="h", run_id="r").to_dict()


HOSTILE_CHECKPOINT_FIELDS: dict[str, tuple[str, Any]] = {
    "wrong_version": ("version", "999"),
    "missing_name": ("workflow_name", None),
    "name_not_a_string": ("workflow_name", ["w"]),
    "iteration_not_a_number": ("iteration_count", "many"),
    "messages_not_a_list": ("messages", "abc"),
    "message_without_data": ("messages", [{"source": "a"}]),
    "pending_not_a_dict": ("pending_request_info_events", [1, 2]),
    "pending_event_malformed": ("pending_request_info_events", {"r": {"data": 1}}),
    "state_evil_model": ("state", {"k": {"$t": "model", "name": "os.system", "v": {}}}),
    "edge_states_unknown_tag": ("edge_states", {"$t": "pickle", "v": ""}),
}


@pytest.mark.parametrize("name", sorted(HOSTILE_CHECKPOINT_FIELDS))
def test_a_hostile_checkpoint_dict_raises_only_decode_error(name: str) -> None:
    field, value = HOSTILE_CHECKPOINT_FIELDS[name]
    data = _valid_checkpoint_dict()
    if value is None:
        del data[field]
    else:
        data[field] = value
    with pytest.raises(CheckpointDecodeError):
        WorkflowCheckpoint.from_dict(data)


def test_a_checkpoint_dict_with_wrongly_shaped_fields_is_refused() -> None:
    wrong_shapes = [
        ("state", [1, 2]),
        ("executor_states", [1]),
        ("executor_states", {"worker": 5}),
        ("edge_states", ["x"]),
        ("answered_request_ids", "abc"),
        ("metadata", []),
    ]
    accepted = []
    for field, value in wrong_shapes:
        data = _valid_checkpoint_dict()
        data[field] = value
        try:
            WorkflowCheckpoint.from_dict(data)
        except CheckpointDecodeError:
            continue
        accepted.append(f"{field}={value!r}")
    assert accepted == [], f"from_dict accepted malformed fields: {accepted}"


def test_json_numbers_too_large_for_a_float_never_leak_from_the_parser() -> None:
    # "1e400" is not a NaN/Infinity token, but it parses to inf: it must not escape as such
    # into fields that need a finite number.
    data = codec.loads(
        json.dumps(_valid_checkpoint_dict())
        .replace('"iteration_count":0', '"iteration_count":1e400')
        .replace('"iteration_count": 0', '"iteration_count": 1e400')
    )
    with pytest.raises(CheckpointDecodeError):
        WorkflowCheckpoint.from_dict(data)
