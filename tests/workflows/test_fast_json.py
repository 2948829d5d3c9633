"""orjson in the codec (``fast_json.py``): the same bytes, values and errors as the ``json`` module,
with orjson installed and without it."""

from __future__ import annotations

import datetime as dt
import enum
import json
import math
import subprocess
import sys
import uuid
from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from workflows import CheckpointDecodeError, codec, fast_json

pytestmark = pytest.mark.skipif(fast_json.orjson is None, reason="orjson is not installed")


def stdlib_dumps(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"), allow_nan=False)


@pytest.fixture
def without_orjson(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.setattr(fast_json, "orjson", None)
    yield


def outcome(func: Any, *args: Any) -> tuple[str, Any]:
    try:
        return "ok", func(*args)
    except (TypeError, ValueError) as exc:  # the type is what must match
        return "error", type(exc)


# Floats where the two libraries' formats meet and part: tiny, huge, signed zero, not finite.
edge_floats = st.sampled_from(
    [
        0.0,
        -0.0,
        1e-4,
        9.99e-5,
        1e-5,
        2.5e-7,
        5e-324,
        1e15,
        9999999999999998.0,
        1e16,
        1e300,
        math.nan,
        math.inf,
        -math.inf,
        0.1,
        -123.456,
    ]
)
scalars = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**70), max_value=2**70)
    | st.floats(allow_nan=True, allow_infinity=True)
    | edge_floats
    | st.text(alphabet=st.characters(codec="utf-8"), max_size=12)
    | st.sampled_from(["\x00", "a\x00b", "$t", "\x1f\x7f\u2028\ufeff", "😀", '"\\'])
)
values = st.recursive(
    scalars,
    lambda inner: (
        st.lists(inner, max_size=6)
        | st.tuples(inner, inner)
        | st.dictionaries(
            st.text(max_size=4) | st.sampled_from(["$t", "v", "a\x00"]), inner, max_size=5
        )
        | st.lists(st.fixed_dictionaries({"id": st.integers(), "x": inner}), max_size=5)
    ),
    max_leaves=30,
)


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(values)
def test_dumps_writes_what_json_writes_or_fails_as_it_fails(value: Any) -> None:
    expected = outcome(stdlib_dumps, value)
    assert outcome(codec.dumps, value) == expected


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(values)
def test_encode_text_is_dumps_of_encode(value: Any) -> None:
    assert codec.encode_text(value) == codec.dumps(codec.encode(value))


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(values)
def test_loads_gives_json_s_value_for_the_codec_s_own_text(value: Any) -> None:
    text = codec.dumps(codec.encode(value))
    parsed = codec.loads(text)
    assert codec.dumps(parsed) == text
    assert parsed == codec.loads(text.encode()) == json.loads(text)


def test_encode_text_without_orjson_is_the_same_text(without_orjson: None) -> None:
    state = {"items": [{"id": i, "q": i * 0.5, "s": f"{i:x}"} for i in range(500)], "n": None}
    assert codec.encode_text(state) == stdlib_dumps(state)


@pytest.mark.parametrize(
    "value",
    [
        [1, (2, 3)],  # a tuple needs the tuple tag
        {"a": -0.0},  # -0.0 needs the float tag
        {"s": "a\x00b"},  # NUL needs the str tag
        {"$t": "set", "v": []},  # a user dict that looks like a tag stays data
        [{"id": 1, "at": dt.datetime(2030, 1, 1, tzinfo=dt.UTC)}],
        [{"id": 1, "u": uuid.UUID(int=5)}],
        {"k": 1e-5},
        {1: "int key"},
        [2**64],
    ],
)
def test_encode_text_of_values_that_need_tags_is_the_tagged_text(value: Any) -> None:
    text = codec.encode_text(value)
    assert text == codec.dumps(codec.encode(value))
    assert codec.decode(codec.loads(text)) == value or value == {"a": -0.0}


def test_dumps_refuses_what_json_refuses() -> None:
    class Colour(enum.Enum):
        RED = 1

    for bad, error in (
        (Colour.RED, TypeError),
        (uuid.UUID(int=1), TypeError),
        (math.nan, ValueError),
    ):
        with pytest.raises(error):
            codec.dumps([bad])


@pytest.mark.parametrize(
    "text",
    [
        b'{"a":1,"a":2}',  # repeated key
        b"[NaN]",
        b'{"x":Infinity}',
        b'"\\ud800"',  # lone surrogate escape
        b'"\xff"',  # not UTF-8
    ],
)
def test_loads_refuses_what_it_refused_before(text: bytes) -> None:
    with pytest.raises(CheckpointDecodeError):
        codec.loads(text)


@pytest.mark.parametrize(
    "text",
    [
        b"18446744073709551616",
        b"123456789012345678901234567890",
        b"-0",
        b"[1e-05, 1.0]",
        b'{ "a" : 1 }',
        b'"\\u00e9"',
        b"[" * 5000 + b"]" * 5000,
    ],
)
def test_loads_of_text_orjson_would_change_gives_json_s_value(text: bytes) -> None:
    value = codec.loads(text)
    assert value == json.loads(text)
    assert type(value) is type(json.loads(text))


def test_decode_copies_records_and_keeps_tags() -> None:
    data = [{"id": 1, "s": "x"}, {"id": 2, "s": "y"}]
    decoded = codec.decode(data)
    assert decoded == data and decoded[0] is not data[0]
    decoded[0]["id"] = 99
    assert data[0]["id"] == 1
    tagged = [{"id": 1}, {"$t": "tuple", "v": [1, 2]}]
    assert codec.decode(tagged) == [{"id": 1}, (1, 2)]
    with pytest.raises(CheckpointDecodeError):
        codec.decode([[{"a": 1}]], max_depth=2)


def test_the_engine_runs_without_orjson() -> None:
    script = (
        "import sys; sys.modules['orjson'] = None\n"
        "import workflows\n"
        "from workflows import codec, fast_json\n"
        "assert fast_json.orjson is None\n"
        "value = {'items': [{'id': i, 'f': i / 3} for i in range(50)], 't': (1, 2)}\n"
        "print(codec.encode_text(value))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, check=True
    )
    value = {"items": [{"id": i, "f": i / 3} for i in range(50)], "t": (1, 2)}
    assert done.stdout.strip() == codec.encode_text(value)
