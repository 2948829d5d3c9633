"""The behaviour every ``CheckpointStorage`` must have, as a reusable pytest suite.

Bind it to a storage in a few lines; pytest collects the inherited tests::

    from workflows.testing import CheckpointStorageContract

    class TestMyStorage(CheckpointStorageContract):
        @pytest.fixture
        def storage(self, tmp_path):          # may be async, may take any fixture (db, ...)
            return MyStorage(tmp_path)

or, when no other fixture is needed, override ``make_storage()`` (sync or async) instead.

The suite checks: round trips of every codec type, typed errors for missing and impossible ids,
caller-owned copies, filtering and ordering of listings, ``get_latest``, ``delete`` (other
checkpoints stay loadable), ``CheckpointEncodeError`` at save time naming the bad value,
``list_summaries`` (when the storage has it) agreeing with ``list_checkpoints``, unchanged large
state stored once and a growing conversation costing each save only what it added (when the
storage counts ``bytes_written``), agent messages in state and in flight, and a real workflow
that runs and resumes on the storage.

This module imports pytest, so the engine itself never imports it; importing it registers a few
sample types (``Contract*``) in the process-wide type registry.
"""

from __future__ import annotations

import copy
import dataclasses
import datetime as dt
import enum
import inspect
import math
import uuid
from decimal import Decimal
from typing import Any

import pytest

from .builder import WorkflowBuilder
from .checkpoint import WorkflowCheckpoint, WorkflowMessage
from .context import WorkflowContext
from .events import RequestInfoEvent
from .exceptions import CheckpointEncodeError, CheckpointNotFoundError
from .executor import Executor, handler
from .registry import register_type
from .storage.protocol import SummaryStorage

__all__ = [
    "CheckpointStorageContract",
    "ContractCustomer",
    "ContractItem",
    "ContractOrder",
    "ContractPriority",
    "assert_identical",
    "counting_workflow",
    "make_checkpoint",
    "sample_values",
]


# ------------------------------------------------------------------------------- sample types


class ContractPriority(enum.Enum):
    LOW = "low"
    HIGH = "high"


@dataclasses.dataclass(frozen=True)
class ContractItem:
    sku: str
    quantity: int


@dataclasses.dataclass
class ContractOrder:
    order_id: uuid.UUID
    items: list[ContractItem]
    placed_at: dt.datetime
    total: Decimal
    tags: frozenset[str]
    priority: ContractPriority
    notes: dict[int, str] = dataclasses.field(default_factory=dict)


register_type(ContractOrder)  # registers ContractItem and ContractPriority through its fields


@dataclasses.dataclass
class ContractBufferDoc:
    """A registered model that also exposes its body as a buffer, as Python 3.12+ allows."""

    body: str
    version: int

    def __buffer__(self, flags: int) -> memoryview:
        return memoryview(self.body.encode())


class ContractToken(bytes, enum.Enum):
    A = b"a"


register_type(ContractBufferDoc)
register_type(ContractToken)

try:
    import pydantic
except ImportError:  # pragma: no cover - pydantic is a test dependency
    ContractCustomer: Any = None
else:

    class ContractCustomer(pydantic.BaseModel):  # type: ignore[no-redef]
        name: str
        since: dt.date
        balance: Decimal
        favourite: ContractItem | None = None

    register_type(ContractCustomer)


def sample_values() -> dict[str, Any]:
    """One value of every kind the codec promises to restore exactly, by a readable name."""
    order = ContractOrder(
        order_id=uuid.UUID("12345678-1234-5678-1234-567812345678"),
        items=[ContractItem("apple", 3), ContractItem("pear", 1)],
        placed_at=dt.datetime(2024, 2, 29, 23, 59, 58, 123456, tzinfo=dt.UTC),
        total=Decimal("12.30"),
        tags=frozenset({"gift", "express"}),
        priority=ContractPriority.HIGH,
        notes={1: "first", 2: "second"},
    )
    values: dict[str, Any] = {
        "none": None,
        "bool": True,
        "int": -(2**63),
        "float": 0.1,
        "negative_zero": -0.0,
        "nan": math.nan,
        "infinity": -math.inf,
        "text": "héllo ✓ 𝄞",
        "text_with_nul": "a\x00b",
        "empty_list": [],
        "empty_dict": {},
        "int_keyed_dict": {1: 1, 2: 4, 3: 9},
        "mixed_key_dict": {1: "int", "1": "str", None: "none", (1, 2): "tuple"},
        "tuple": (1, "two", (3.0, None)),
        "empty_tuple": (),
        "set": {1, 2, 3},
        "frozenset": frozenset({"a", "b"}),
        "aware_datetime": dt.datetime(
            2024, 1, 1, 12, 30, tzinfo=dt.timezone(dt.timedelta(hours=5))
        ),
        "naive_datetime": dt.datetime(1999, 12, 31, 23, 59, 59),
        "date": dt.date(2024, 2, 29),
        "time": dt.time(7, 8, 9, 10),
        "timedelta": dt.timedelta(days=-1, seconds=5, microseconds=7),
        "decimal": Decimal("-1234567890.0987654321"),
        "uuid": uuid.UUID("00000000-0000-4000-8000-000000000001"),
        "bytes": b"\x00\xffbinary\x80",
        "enum": ContractPriority.LOW,
        "dataclass": order,
        "tag_shaped_user_dict": {"$t": "datetime", "v": "2024-01-01T00:00:00"},
        "nested": {"orders": [order, order], "by_id": {7: (order.items[0], {b"k"})}},
        "large": {"blob": "x" * 70_000, "numbers": list(range(2_000))},
    }
    if ContractCustomer is not None:
        values["pydantic_model"] = ContractCustomer(
            name="Ada",
            since=dt.date(2020, 5, 17),
            balance=Decimal("0.01"),
            favourite=ContractItem("fig", 2),
        )
    return values


def assert_identical(
    actual: Any, expected: Any, path: str = "value", *, ordered: bool = False
) -> None:
    """Equal, and of exactly the same types all the way down (NaN equals NaN, -0.0 is not 0.0).

    With ``ordered``, dicts must also keep their key order (storages may reorder the top level
    of ``state`` when they split large values out, so the contract does not demand it)."""
    assert type(actual) is type(expected), f"{path}: {type(actual)!r} != {type(expected)!r}"
    if isinstance(expected, float):
        assert repr(actual) == repr(expected), f"{path}: {actual!r} != {expected!r}"
    elif isinstance(expected, Decimal) and expected.is_nan():
        assert actual.is_nan() and str(actual) == str(expected), f"{path}: {actual!r}"
    elif isinstance(expected, (list, tuple)):
        assert len(actual) == len(expected), f"{path}: length {len(actual)} != {len(expected)}"
        for index, (a, e) in enumerate(zip(actual, expected)):
            assert_identical(a, e, f"{path}[{index}]", ordered=ordered)
    elif isinstance(expected, dict):
        keys, wanted = list(actual), list(expected)
        if not ordered:
            assert len(keys) == len(wanted) and set(keys) == set(wanted), f"{path}: keys {keys}"
        else:
            assert keys == wanted, f"{path}: keys {keys} != {wanted}"
        for key in expected:
            assert_identical(actual[key], expected[key], f"{path}[{key!r}]", ordered=ordered)
    elif dataclasses.is_dataclass(expected):
        for f in dataclasses.fields(expected):
            assert_identical(
                getattr(actual, f.name),
                getattr(expected, f.name),
                f"{path}.{f.name}",
                ordered=ordered,
            )
    elif isinstance(expected, dt.datetime | dt.time):
        assert actual == expected and actual.utcoffset() == expected.utcoffset(), path
    else:
        assert actual == expected, f"{path}: {actual!r} != {expected!r}"


_BASE_TIME = dt.datetime(2030, 1, 1, tzinfo=dt.UTC)


def _message(role: str, turn: int) -> dict[str, Any]:
    """A chat message as MAF's session history serializes one (plain JSON)."""
    text = f"{role} turn {turn}: " + "words of the conversation " * 6
    return {"type": "message", "role": role, "contents": [{"type": "text", "text": text}]}


def make_checkpoint(
    *,
    workflow_name: str = "contract-workflow",
    run_id: str = "run-1",
    seconds: float | None = None,
    **fields: Any,
) -> WorkflowCheckpoint:
    """A checkpoint for storage tests; ``seconds`` sets its timestamp relative to a fixed base."""
    if seconds is not None:
        fields["timestamp"] = (_BASE_TIME + dt.timedelta(seconds=seconds)).isoformat()
    fields.setdefault("graph_signature_hash", "0" * 64)
    return WorkflowCheckpoint(workflow_name=workflow_name, run_id=run_id, **fields)


def _full_checkpoint() -> WorkflowCheckpoint:
    request = RequestInfoEvent(
        "request_info",
        data=ContractItem("approve-me", 1),
        executor_id="reviewer",
        request_id="req-1",
        source_executor_id="reviewer",
        request_type=ContractItem,
        response_type=bool,
        created_at="2030-01-01T00:00:00+00:00",
    )
    values = sample_values()
    del values["nan"]  # NaN != NaN would defeat == on the whole checkpoint; tested on its own
    return make_checkpoint(
        previous_checkpoint_id="parent-id",
        iteration_count=7,
        messages={
            "intake": [WorkflowMessage(values["dataclass"], "intake", "reviewer")],
            "internal:intake": [WorkflowMessage({1: (2, 3)}, "internal:intake", "intake")],
            "internal:reviewer": [
                WorkflowMessage(
                    True, "internal:reviewer", "reviewer", kind="response", request=request
                )
            ],
        },
        state={"everything": values, "counter": 3},
        executor_states={"reviewer": {"seen": [1, 2], "last": values["dataclass"]}},
        edge_states={"fan_in:a,b->c": {"a": [1, (2,)]}},
        pending_request_info_events={"req-1": request},
        answered_request_ids=["req-0"],
        graph_signature={"start": "intake", "executors": {"intake": "x.Intake"}, "edge_groups": []},
        metadata={"kind": "superstep", "note": "contract"},
    )


# ----------------------------------------------------------------- a tiny workflow to run on it


class _ContractCounter(Executor):
    """Counts to a limit in a self-loop, keeping its history in executor state."""

    def __init__(self, id: str = "counter") -> None:
        super().__init__(id=id)
        self.history: list[int] = []

    @handler
    async def count(self, n: int, ctx: WorkflowContext[int, list[int]]) -> None:
        self.history.append(n)
        ctx.set_state("last", n)
        if n >= 3:
            await ctx.yield_output(list(self.history))
        else:
            await ctx.send_message(n + 1)

    async def on_checkpoint_save(self) -> dict[str, Any]:
        return {"history": list(self.history)}

    async def on_checkpoint_restore(self, state: dict[str, Any]) -> None:
        self.history = list(state.get("history", []))


def counting_workflow(storage: Any) -> Any:
    """A self-loop counting 1, 2, 3 (four checkpoints), named ``contract-counter``."""
    counter = _ContractCounter()
    return (
        WorkflowBuilder(start_executor=counter, checkpoint_storage=storage, name="contract-counter")
        .add_edge(counter, counter)
        .build()
    )


# ---------------------------------------------------------------------------------- the suite


class CheckpointStorageContract:
    """Inherit it in a ``Test...`` class and provide the ``storage`` fixture (or ``make_storage``).

    Each test gets a fresh, empty storage.
    """

    def make_storage(self) -> Any:
        raise NotImplementedError(
            f"{type(self).__name__}: override the `storage` fixture or make_storage()"
        )

    @pytest.fixture
    async def storage(self) -> Any:
        made = self.make_storage()
        return await made if inspect.isawaitable(made) else made

    # ---------------------------------------------------------------------------- round trips

    async def test_save_returns_the_checkpoint_id(self, storage: Any) -> None:
        checkpoint = make_checkpoint()
        assert await storage.save(checkpoint) == checkpoint.checkpoint_id

    async def test_save_then_load_restores_every_field(self, storage: Any) -> None:
        checkpoint = _full_checkpoint()
        await storage.save(checkpoint)
        loaded = await storage.load(checkpoint.checkpoint_id)
        assert loaded == checkpoint
        assert_identical(loaded.state, checkpoint.state, "state")
        assert_identical(loaded.executor_states, checkpoint.executor_states, "executor_states")
        assert_identical(loaded.edge_states, checkpoint.edge_states, "edge_states")
        assert list(loaded.messages) == list(checkpoint.messages)  # sources, in order
        loaded_data = [m.data for m in loaded.message_list()]
        assert loaded_data == [m.data for m in checkpoint.message_list()]
        request = loaded.pending_request_info_events["req-1"]
        assert (request.request_type, request.response_type) == (ContractItem, bool)

    @pytest.mark.parametrize("name", sorted(sample_values()))
    async def test_round_trip_keeps_each_codec_type_exactly(self, storage: Any, name: str) -> None:
        value = sample_values()[name]
        checkpoint = make_checkpoint(
            state={"value": value}, executor_states={"worker": {"value": value}}
        )
        await storage.save(checkpoint)
        loaded = await storage.load(checkpoint.checkpoint_id)
        assert_identical(loaded.state["value"], value, f"state[{name!r}]")
        assert_identical(loaded.executor_states["worker"]["value"], value, f"executor[{name!r}]")

    async def test_int_keyed_dicts_come_back_with_int_keys(self, storage: Any) -> None:
        checkpoint = make_checkpoint(executor_states={"worker": {"results": {1: 1, 2: 4, 10: 100}}})
        await storage.save(checkpoint)
        results = (await storage.load(checkpoint.checkpoint_id)).executor_states["worker"][
            "results"
        ]
        assert results == {1: 1, 2: 4, 10: 100}
        assert all(type(key) is int for key in results)

    # --------------------------------------------------------------------------------- errors

    async def test_load_of_a_missing_id_raises_checkpoint_not_found(self, storage: Any) -> None:
        await storage.save(make_checkpoint())
        with pytest.raises(CheckpointNotFoundError):
            await storage.load(uuid.uuid4().hex)

    @pytest.mark.parametrize(
        "bad_id", ["../x", "a/b", "", "..", ".", "/etc/passwd", "..\\x", "a\\b", "x\x00y", " "]
    )
    async def test_load_of_an_id_that_could_never_exist_raises_not_found(
        self, storage: Any, bad_id: str
    ) -> None:
        await storage.save(make_checkpoint())
        with pytest.raises(CheckpointNotFoundError):
            await storage.load(bad_id)

    @pytest.mark.parametrize("bad_id", ["../x", "a/b", "", ".."])
    async def test_delete_of_an_id_that_could_never_exist_returns_false(
        self, storage: Any, bad_id: str
    ) -> None:
        await storage.save(make_checkpoint())
        assert await storage.delete(bad_id) is False
        assert len(await storage.list_checkpoint_ids()) == 1

    async def test_saving_an_unstorable_shared_state_value_names_the_key(
        self, storage: Any
    ) -> None:
        checkpoint = make_checkpoint(state={"fine": 1, "connection": object()})
        with pytest.raises(CheckpointEncodeError, match="connection"):
            await storage.save(checkpoint)
        assert await storage.list_checkpoint_ids() == []

    async def test_saving_an_unstorable_executor_state_names_the_executor_and_key(
        self, storage: Any
    ) -> None:
        @dataclasses.dataclass
        class NeverRegistered:
            x: int

        checkpoint = make_checkpoint(
            executor_states={"worker": {"ok": 1, "pending_job": [NeverRegistered(1)]}}
        )
        with pytest.raises(CheckpointEncodeError) as caught:
            await storage.save(checkpoint)
        assert "worker" in str(caught.value) and "pending_job" in str(caught.value)
        assert await storage.list_checkpoint_ids() == []

    async def test_saving_an_unstorable_message_names_its_sender(self, storage: Any) -> None:
        checkpoint = make_checkpoint(
            messages={"producer": [WorkflowMessage(lambda: None, "producer", None)]}
        )
        with pytest.raises(CheckpointEncodeError, match="producer"):
            await storage.save(checkpoint)

    # ----------------------------------------------------------------------------- ownership

    async def test_mutating_a_loaded_checkpoint_changes_nothing_stored(self, storage: Any) -> None:
        checkpoint = _full_checkpoint()
        await storage.save(checkpoint)
        loaded = await storage.load(checkpoint.checkpoint_id)
        loaded.state["counter"] = 999
        loaded.state["everything"]["int_keyed_dict"][4] = 16
        loaded.executor_states["reviewer"]["seen"].append(3)
        loaded.messages.clear()
        loaded.pending_request_info_events.clear()
        loaded.metadata["note"] = "changed"
        again = await storage.load(checkpoint.checkpoint_id)
        assert again == checkpoint
        assert again is not loaded

    async def test_mutating_the_saved_object_after_save_changes_nothing_stored(
        self, storage: Any
    ) -> None:
        checkpoint = make_checkpoint(
            state={"items": [1, 2]}, executor_states={"w": {"seen": {"a"}}}, metadata={"k": 1}
        )
        expected = make_checkpoint(
            checkpoint_id=checkpoint.checkpoint_id,
            timestamp=checkpoint.timestamp,
            state={"items": [1, 2]},
            executor_states={"w": {"seen": {"a"}}},
            metadata={"k": 1},
        )
        await storage.save(checkpoint)
        checkpoint.state["items"].append(3)
        checkpoint.executor_states["w"]["seen"].add("b")
        checkpoint.metadata["k"] = 2
        checkpoint.iteration_count = 42
        assert await storage.load(checkpoint.checkpoint_id) == expected

    async def test_listings_hand_out_caller_owned_checkpoints(self, storage: Any) -> None:
        checkpoint = make_checkpoint(state={"items": [1]})
        await storage.save(checkpoint)
        (await storage.list_checkpoints())[0].state["items"].append(2)
        latest = await storage.get_latest(workflow_name="contract-workflow")
        assert latest is not None and latest.state == {"items": [1]}
        latest.state["items"].append(3)
        assert (await storage.load(checkpoint.checkpoint_id)).state == {"items": [1]}

    # ------------------------------------------------------------------------------- listing

    async def _save_grid(self, storage: Any) -> list[WorkflowCheckpoint]:
        """Two workflows x two runs, saved in an order unrelated to their timestamps; returns
        them oldest first."""
        made = []
        for seconds in [5, 1, 7, 3, 0, 6, 2, 4]:
            name = "alpha" if seconds % 2 == 0 else "beta"
            run = "run-a" if seconds < 4 else "run-b"
            made.append(make_checkpoint(workflow_name=name, run_id=run, seconds=seconds))
        for checkpoint in made:
            await storage.save(checkpoint)
        return sorted(made, key=lambda c: c.timestamp)

    @staticmethod
    def _ids(made: list[WorkflowCheckpoint], **filters: str) -> list[str]:
        return [
            c.checkpoint_id
            for c in made
            if all(getattr(c, field) == value for field, value in filters.items())
        ]

    async def test_list_checkpoints_filters_by_workflow_name(self, storage: Any) -> None:
        made = await self._save_grid(storage)
        listed = await storage.list_checkpoints(workflow_name="alpha")
        assert [c.checkpoint_id for c in listed] == self._ids(made, workflow_name="alpha")
        assert await storage.list_checkpoints(workflow_name="gamma") == []

    async def test_list_checkpoints_filters_by_run_id_and_by_both(self, storage: Any) -> None:
        made = await self._save_grid(storage)
        by_run = await storage.list_checkpoints(run_id="run-b")
        assert [c.checkpoint_id for c in by_run] == self._ids(made, run_id="run-b")
        both = await storage.list_checkpoints(workflow_name="beta", run_id="run-a")
        assert [c.checkpoint_id for c in both] == self._ids(
            made, workflow_name="beta", run_id="run-a"
        )
        assert await storage.list_checkpoints(workflow_name="alpha", run_id="nope") == []

    async def test_listings_are_oldest_first_whatever_the_save_order(self, storage: Any) -> None:
        await self._save_grid(storage)
        listed = await storage.list_checkpoints()
        assert len(listed) == 8
        stamps = [dt.datetime.fromisoformat(c.timestamp) for c in listed]
        assert stamps == sorted(stamps)

    @pytest.mark.parametrize(
        "filters",
        [
            {},
            {"workflow_name": "alpha"},
            {"run_id": "run-a"},
            {"workflow_name": "beta", "run_id": "run-b"},
            {"workflow_name": "none"},
        ],
    )
    async def test_list_checkpoint_ids_agrees_with_list_checkpoints(
        self, storage: Any, filters: dict[str, str]
    ) -> None:
        await self._save_grid(storage)
        ids = await storage.list_checkpoint_ids(**filters)
        assert ids == [c.checkpoint_id for c in await storage.list_checkpoints(**filters)]

    async def test_list_summaries_agree_with_list_checkpoints(self, storage: Any) -> None:
        if not isinstance(storage, SummaryStorage):
            pytest.skip("this storage has no list_summaries")
        await self._save_grid(storage)
        request = RequestInfoEvent(
            "request_info",
            data="ok?",
            request_id="q",
            source_executor_id="w",
            request_type=str,
            response_type=bool,
        )
        await storage.save(
            make_checkpoint(
                workflow_name="alpha",
                run_id="run-c",
                seconds=9,
                iteration_count=4,
                previous_checkpoint_id="p",
                pending_request_info_events={"q": request},
                answered_request_ids=["old"],
                metadata={"kind": "superstep"},
            )
        )
        for filters in ({}, {"workflow_name": "alpha"}, {"run_id": "run-c"}):
            summaries = await storage.list_summaries(**filters)
            checkpoints = await storage.list_checkpoints(**filters)
            assert len(summaries) == len(checkpoints)
            for summary, checkpoint in zip(summaries, checkpoints):
                assert summary.checkpoint_id == checkpoint.checkpoint_id
                assert summary.workflow_name == checkpoint.workflow_name
                assert summary.run_id == checkpoint.run_id
                assert summary.timestamp == checkpoint.timestamp
                assert summary.iteration_count == checkpoint.iteration_count
                assert summary.previous_checkpoint_id == checkpoint.previous_checkpoint_id
                assert summary.graph_signature_hash == checkpoint.graph_signature_hash
                assert list(summary.pending_request_ids) == checkpoint.pending_request_ids
                assert list(summary.answered_request_ids) == checkpoint.answered_request_ids

    # ---------------------------------------------------------------------------- get_latest

    async def test_get_latest_returns_none_when_nothing_matches(self, storage: Any) -> None:
        assert await storage.get_latest(workflow_name="contract-workflow") is None
        await storage.save(make_checkpoint())
        assert await storage.get_latest(workflow_name="unknown") is None
        assert await storage.get_latest(workflow_name="contract-workflow", run_id="other") is None

    async def test_get_latest_returns_the_newest_by_timestamp(self, storage: Any) -> None:
        made = await self._save_grid(storage)
        for filters in (
            {},
            {"workflow_name": "alpha"},
            {"workflow_name": "beta", "run_id": "run-a"},
            {"run_id": "run-a"},
        ):
            latest = await storage.get_latest(**filters)
            assert latest is not None and latest.checkpoint_id == self._ids(made, **filters)[-1]

    async def test_get_latest_compares_timestamps_as_instants_not_text(self, storage: Any) -> None:
        # 10:00 UTC written with a +02:00 offset is older than 11:00 UTC.
        older = make_checkpoint(timestamp="2030-05-01T12:00:00+02:00")
        newer = make_checkpoint(timestamp="2030-05-01T11:00:00+00:00")
        await storage.save(newer)
        await storage.save(older)
        latest = await storage.get_latest(workflow_name="contract-workflow")
        assert latest is not None and latest.checkpoint_id == newer.checkpoint_id
        listed = await storage.list_checkpoint_ids(workflow_name="contract-workflow")
        assert listed == [older.checkpoint_id, newer.checkpoint_id]

    async def test_a_timestamp_without_an_offset_is_read_as_utc(self, storage: Any) -> None:
        # As ``instant`` reads it, so every storage orders (and prunes) it at the same moment.
        first = make_checkpoint(timestamp="2030-05-01T12:00:00+01:00")
        naive = make_checkpoint(timestamp="2030-05-01T11:30:00")
        last = make_checkpoint(timestamp="2030-05-01T12:00:00+00:00")
        for checkpoint in (last, naive, first):
            await storage.save(checkpoint)
        listed = await storage.list_checkpoint_ids(workflow_name="contract-workflow")
        assert listed == [first.checkpoint_id, naive.checkpoint_id, last.checkpoint_id]
        assert (await storage.load(naive.checkpoint_id)).timestamp == "2030-05-01T11:30:00"

    # -------------------------------------------------------------------------------- delete

    async def test_delete_returns_true_once_then_false(self, storage: Any) -> None:
        first, second = make_checkpoint(seconds=1), make_checkpoint(seconds=2)
        await storage.save(first)
        await storage.save(second)
        assert await storage.delete(second.checkpoint_id) is True
        assert await storage.delete(second.checkpoint_id) is False
        assert await storage.delete(uuid.uuid4().hex) is False
        with pytest.raises(CheckpointNotFoundError):
            await storage.load(second.checkpoint_id)
        assert await storage.list_checkpoint_ids() == [first.checkpoint_id]
        latest = await storage.get_latest(workflow_name="contract-workflow")
        assert latest is not None and latest.checkpoint_id == first.checkpoint_id

    @pytest.mark.parametrize("delete_first", ["oldest", "newest"])
    async def test_deleting_a_checkpoint_keeps_others_that_share_its_values_loadable(
        self, storage: Any, delete_first: str
    ) -> None:
        shared = {"document": "y" * 50_000, "rows": list(range(5_000))}
        made = [
            make_checkpoint(
                seconds=i, state={"shared": shared, "i": i}, executor_states={"w": {"same": shared}}
            )
            for i in range(3)
        ]
        for checkpoint in made:
            await storage.save(checkpoint)
        order = made if delete_first == "oldest" else made[::-1]
        assert await storage.delete(order[0].checkpoint_id)
        assert await storage.delete(order[1].checkpoint_id)
        survivor = await storage.load(order[2].checkpoint_id)
        assert survivor.state["shared"] == shared
        assert survivor.executor_states["w"]["same"] == shared

    # ------------------------------------------------------------------------------ efficiency

    async def test_unchanged_large_state_is_stored_once(self, storage: Any) -> None:
        if not hasattr(storage, "bytes_written"):
            pytest.skip("this storage does not count bytes_written")
        big = {"payload": "z" * 64 * 1024}
        await storage.save(
            make_checkpoint(seconds=1, executor_states={"w": {"big": big}}, state={"big": big})
        )
        before = storage.bytes_written
        await storage.save(
            make_checkpoint(
                seconds=2,
                iteration_count=1,
                executor_states={"w": {"big": big}},
                state={"big": big},
            )
        )
        assert storage.bytes_written - before <= 0.10 * 64 * 1024

    async def test_a_large_state_changed_in_place_is_stored_with_each_change(
        self, storage: Any
    ) -> None:
        # The same list object, mutated between saves: whatever tells unchanged from changed
        # must look at the contents, not at the object.
        records: list[dict[str, Any]] = [{"id": i, "qty": 1} for i in range(200)]
        saved = []
        for step in range(3):
            records[step]["qty"] = 1.0 if step == 1 else True if step == 2 else 1
            records.append({"id": 1000 + step, "qty": step})
            checkpoint = make_checkpoint(
                seconds=step, iteration_count=step, executor_states={"w": {"records": records}}
            )
            await storage.save(checkpoint)
            saved.append((checkpoint.checkpoint_id, copy.deepcopy(records)))
        for checkpoint_id, expected in saved:
            loaded = (await storage.load(checkpoint_id)).executor_states["w"]["records"]
            assert loaded == expected
            assert [type(r["qty"]) for r in loaded] == [type(r["qty"]) for r in expected]

    async def test_a_number_that_changes_type_in_a_large_state_keeps_its_new_type(
        self, storage: Any
    ) -> None:
        padding = list(range(300))  # 1 == 1.0 == True in Python; stored, they must differ
        ids = []
        for step, first in enumerate([1, 1.0, True, 1]):
            checkpoint = make_checkpoint(seconds=step, state={"values": [first, *padding]})
            await storage.save(checkpoint)
            ids.append(checkpoint.checkpoint_id)
        kinds = [type((await storage.load(i)).state["values"][0]) for i in ids]
        assert kinds == [int, float, bool, int]

    async def test_an_unstorable_buffer_where_equal_bytes_were_is_still_refused(
        self, storage: Any
    ) -> None:
        data = b"x" * 2048
        await storage.save(make_checkpoint(seconds=1, state={"blob": [data]}))
        with pytest.raises(CheckpointEncodeError, match="blob"):
            await storage.save(make_checkpoint(seconds=2, state={"blob": [memoryview(data)]}))

    async def test_a_registered_value_exposing_a_buffer_is_stored_with_each_change(
        self, storage: Any
    ) -> None:
        doc = ContractBufferDoc("same body", 1)
        padding = list(range(300))
        first = make_checkpoint(seconds=1, state={"docs": [doc, *padding]})
        await storage.save(first)
        doc.version = 2  # the buffer it exposes is unchanged
        second = make_checkpoint(seconds=2, state={"docs": [doc, *padding]})
        await storage.save(second)
        assert (await storage.load(first.checkpoint_id)).state["docs"][0].version == 1
        assert (await storage.load(second.checkpoint_id)).state["docs"][0].version == 2

    async def test_a_buffer_where_an_equal_bytes_enum_was_is_still_refused(
        self, storage: Any
    ) -> None:
        padding = list(range(300))
        await storage.save(make_checkpoint(seconds=1, state={"k": [ContractToken.A, *padding]}))
        with pytest.raises(CheckpointEncodeError, match="'k'"):
            await storage.save(
                make_checkpoint(seconds=2, state={"k": [memoryview(b"a"), *padding]})
            )
        plain = make_checkpoint(seconds=3, state={"k": [b"a", *padding]})
        await storage.save(plain)
        assert type((await storage.load(plain.checkpoint_id)).state["k"][0]) is bytes

    async def test_large_values_come_back_in_their_key_order_whichever_changed(
        self, storage: Any
    ) -> None:
        first, second = ["a" * 600], ["b" * 600]
        await storage.save(
            make_checkpoint(seconds=1, executor_states={"w": {"x": first, "y": second}})
        )
        changed = make_checkpoint(seconds=2, executor_states={"w": {"x": ["c" * 600], "y": second}})
        await storage.save(changed)
        loaded = (await storage.load(changed.checkpoint_id)).executor_states["w"]
        assert list(loaded) == ["x", "y"]

    # ---------------------------------------------------------------------- long conversations

    async def test_a_growing_conversation_costs_each_save_only_what_it_added(
        self, storage: Any
    ) -> None:
        if not hasattr(storage, "bytes_written"):
            pytest.skip("this storage does not count bytes_written")
        history: list[dict[str, Any]] = []
        added: list[int] = []
        saved: list[tuple[str, list[dict[str, Any]]]] = []
        for turn in range(120):
            history.extend([_message("user", turn), _message("assistant", turn)])
            checkpoint = make_checkpoint(
                seconds=turn,
                iteration_count=turn,
                executor_states={"agent": {"session": {"messages": history}, "turn": turn}},
            )
            before = storage.bytes_written
            await storage.save(checkpoint)
            added.append(storage.bytes_written - before)
            saved.append((checkpoint.checkpoint_id, copy.deepcopy(history)))
        # Whole, the 240-message history would be 12x the 20-message one at every save.
        late, early = sum(added[100:110]), sum(added[10:20])
        assert late <= 1.6 * early, (early, late)
        for checkpoint_id, expected in saved[::17] + saved[-1:]:
            loaded = (await storage.load(checkpoint_id)).executor_states["agent"]
            assert loaded["session"]["messages"] == expected

    async def test_a_conversation_outlives_the_checkpoint_that_first_stored_its_start(
        self, storage: Any
    ) -> None:
        history = [_message("user", i) for i in range(80)]
        first = make_checkpoint(seconds=1, executor_states={"agent": {"history": list(history)}})
        await storage.save(first)
        history.extend(_message("assistant", i) for i in range(40))
        second = make_checkpoint(seconds=2, executor_states={"agent": {"history": history}})
        await storage.save(second)
        assert await storage.delete(first.checkpoint_id)
        assert (await storage.load(second.checkpoint_id)).executor_states["agent"] == {
            "history": history
        }

    async def test_agent_messages_in_state_and_in_flight_round_trip(self, storage: Any) -> None:
        agent_framework = pytest.importorskip("agent_framework")
        conversation = [
            agent_framework.Message("user" if i % 2 else "assistant", [f"turn {i} " * 20])
            for i in range(70)
        ]
        checkpoint = make_checkpoint(
            executor_states={"agent": {"full_conversation": conversation}},
            messages=[WorkflowMessage({"conversation": conversation}, "agent", "next")],
        )
        await storage.save(checkpoint)
        loaded = await storage.load(checkpoint.checkpoint_id)
        texts = [m.text for m in conversation]
        assert [m.text for m in loaded.executor_states["agent"]["full_conversation"]] == texts
        in_flight = loaded.message_list()[0].data["conversation"]
        assert [(m.role, m.text) for m in in_flight] == [(m.role, m.text) for m in conversation]

    # ------------------------------------------------------------------------- a real workflow

    async def test_a_workflow_runs_and_resumes_from_every_checkpoint_on_this_storage(
        self, storage: Any
    ) -> None:
        result = await counting_workflow(storage).run(1)
        assert result.get_outputs() == [[1, 2, 3]]
        checkpoints = await storage.list_checkpoints(workflow_name="contract-counter")
        assert [c.iteration_count for c in checkpoints] == [0, 1, 2, 3]
        assert [c.previous_checkpoint_id for c in checkpoints[1:]] == [
            c.checkpoint_id for c in checkpoints[:-1]
        ]
        for checkpoint in checkpoints[:-1]:
            resumed = await counting_workflow(storage).run(checkpoint_id=checkpoint.checkpoint_id)
            assert resumed.get_outputs() == [[1, 2, 3]], checkpoint.iteration_count
