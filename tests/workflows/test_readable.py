"""workflows.readable: the codec's JSON made readable without losing information."""

from __future__ import annotations

import datetime as dt
import decimal
import enum
import uuid
from dataclasses import dataclass

import pytest

from workflows import TypeRegistry
from workflows.readable import readable, readable_checkpoint
from workflows.storage import encode


class Colour(enum.Enum):
    RED = "red"


@dataclass
class Parcel:
    weight: float
    sent: dt.datetime


@pytest.fixture
def types() -> TypeRegistry:
    registry = TypeRegistry()
    registry.register(Parcel)
    registry.register(Colour)
    return registry


def name(cls: type) -> str:
    return f"{cls.__module__}.{cls.__qualname__}"


def show(value: object, registry: TypeRegistry) -> object:
    return readable(encode(value, registry=registry))


def test_readable_shows_a_model_as_its_fields_and_names_the_class(types: TypeRegistry) -> None:
    when = dt.datetime(2026, 8, 21, 14, 3, tzinfo=dt.UTC)
    assert show(Parcel(2.5, when), types) == {
        "$model": name(Parcel),
        "weight": 2.5,
        "sent": {"$datetime": "2026-08-21T14:03:00+00:00"},
    }


def test_readable_shows_int_keyed_dicts_as_objects_and_other_keys_as_pairs(
    types: TypeRegistry,
) -> None:
    assert show({1: 1, 2: 4}, types) == {"$keys": "int", "1": 1, "2": 4}
    assert show({(1, 2): "a"}, types) == {"$dict": [[{"$tuple": [1, 2]}, "a"]]}
    assert show({1.5: "x"}, types) == {"$dict": [[1.5, "x"]]}


def test_readable_tags_scalars_the_codec_tags(types: TypeRegistry) -> None:
    value = {
        "d": decimal.Decimal("1.10"),
        "u": uuid.UUID(int=1),
        "b": b"hi",
        "t": dt.timedelta(days=1, seconds=3),
        "s": {3, 1},
        "e": Colour.RED,
        "n": "a\x00b",
        "f": float("nan"),
    }
    shown = show(value, types)
    assert shown == {
        "d": {"$decimal": "1.10"},
        "u": {"$uuid": "00000000-0000-0000-0000-000000000001"},
        "b": {"$bytes": "aGk=", "$length": 2},
        "t": {"$timedelta": "1 day, 0:00:03"},
        "s": {"$set": [1, 3]},
        "e": {"$enum": f"{name(Colour)}.RED"},
        "n": "a\x00b",
        "f": {"$float": "nan"},
    }


def test_user_keys_that_look_like_markers_are_escaped_so_values_never_collide(
    types: TypeRegistry,
) -> None:
    # A user dict holding "$t" is wrapped by the codec; one holding "$model" is not. Both read
    # back with an extra "$", so neither can pass for a tag or a model.
    assert show({"$t": "model", "v": 1}, types) == {"$$t": "model", "v": 1}
    assert show({"$model": "x"}, types) == {"$$model": "x"}
    assert show({"$model": "x"}, types) != show(Parcel(1.0, dt.datetime(2026, 1, 1)), types)


def test_readable_leaves_malformed_and_unknown_tags_visible_as_data() -> None:
    assert readable({"$t": "pickle", "v": "..."}) == {"$$t": "pickle", "v": "..."}
    assert readable({"$t": "model", "v": {}}) == {"$$t": "model", "v": {}}
    assert readable([1, "x", None, True]) == [1, "x", None, True]


def test_readable_checkpoint_collects_the_parts_an_operator_reads() -> None:
    document = {
        "state": {"k": {"$t": "tuple", "v": [1]}},
        "executor_states": {"worker": {"results": {"$t": "dict", "v": [[1, 1]]}}},
        "messages": [{"source": "a", "target": None, "kind": "standard", "data": 3}],
        "pending_request_info_events": {
            "r1": {"source_executor_id": "gate", "data": {"q": 1}, "response_type": "bool"}
        },
        "metadata": {"kind": "superstep"},
    }
    parts = readable_checkpoint(document)
    assert parts["state"] == {"k": {"$tuple": [1]}}
    assert parts["executor_states"] == {"worker": {"results": {"$keys": "int", "1": 1}}}
    assert parts["messages"] == [{"from": "a", "to": None, "kind": "standard", "data": 3}]
    assert parts["pending_requests"]["r1"]["executor"] == "gate"
