"""Checkpoints as Microsoft Agent Framework code uses them: allow-lists of types on storages and
on decoding, ``messages`` keyed by source executor, and MAF's names beside ours.

Each type below is used by one test only: a listed type joins the process-wide registry (as
``register_type`` does), so a type shared between tests would hide a refusal.

No ``from __future__ import annotations``: handler annotations must be real objects.
"""

import dataclasses
import datetime
import enum
import inspect
import sys
import types
from pathlib import Path
from typing import Any, Never

import pytest

from workflows import (
    CheckpointDecodeError,
    CheckpointEncodeError,
    CheckpointID,
    CheckpointNotFoundError,
    CheckpointTypeError,
    Executor,
    FileCheckpointStorage,
    InMemoryCheckpointStorage,
    RequestInfoEvent,
    TypeRegistry,
    WorkflowBuilder,
    WorkflowCheckpoint,
    WorkflowCheckpointException,
    WorkflowContext,
    WorkflowEvent,
    WorkflowMessage,
    handler,
    register_checkpoint_type,
)
from workflows.checkpoint import MessageType
from workflows.codec import decode_checkpoint_value, encode_checkpoint_value

HERE = __name__


@dataclasses.dataclass
class Ledger:
    """Kept in shared state only: no handler names it, so nothing registers it by itself."""

    entries: list[int]


@dataclasses.dataclass
class LedgerInMemory:
    total: int


@dataclasses.dataclass
class ListedAsClass:
    note: str


@dataclasses.dataclass
class NeverListed:
    secret: str


@dataclasses.dataclass
class DecodedWhenListed:
    amount: int


@dataclasses.dataclass
class AskedAbout:
    question: str


@dataclasses.dataclass
class NotAllowedInRequest:
    question: str


class Colour(enum.Enum):
    RED = "red"


@dataclasses.dataclass
class RegisteredTheMafWay:
    n: int


class PlainThing:
    """Not a dataclass, model or Enum: MAF would pickle it; our typed JSON cannot restore it."""


def not_a_class() -> None:
    pass


class Bookkeeper(Executor):
    """Adds each number to a ``Ledger`` kept in shared state and passes the number on."""

    @handler
    async def book(self, n: int, ctx: WorkflowContext[int]) -> None:
        ledger = ctx.get_state("ledger", None) or Ledger([])
        ctx.set_state("ledger", Ledger([*ledger.entries, n]))
        await ctx.send_message(n * 10)


class Printer(Executor):
    @handler
    async def show(self, n: int, ctx: WorkflowContext[Never, int]) -> None:
        await ctx.yield_output(n)


class Doubler(Executor):
    @handler
    async def double(self, n: int, ctx: WorkflowContext[int]) -> None:
        await ctx.send_message(n * 2)


def doubling(storage: Any) -> Any:
    doubler, printer = Doubler(id="doubler"), Printer(id="printer")
    return (
        WorkflowBuilder(start_executor=doubler, checkpoint_storage=storage, name="doubling")
        .add_edge(doubler, printer)
        .build()
    )


def bookkeeping(storage: Any) -> Any:
    keeper, printer = Bookkeeper(id="keeper"), Printer(id="printer")
    return (
        WorkflowBuilder(start_executor=keeper, checkpoint_storage=storage, name="books")
        .add_edge(keeper, printer)
        .build()
    )


# ------------------------------------------------------------------ allowed_checkpoint_types


async def test_file_storage_restores_a_type_listed_as_module_and_qualname(tmp_path: Path) -> None:
    storage = FileCheckpointStorage(tmp_path, allowed_checkpoint_types=[f"{HERE}:Ledger"])
    result = await bookkeeping(storage).run(4)
    assert result.get_outputs() == [40]

    reopened = FileCheckpointStorage(tmp_path, allowed_checkpoint_types=[f"{HERE}:Ledger"])
    latest = await reopened.get_latest(workflow_name="books")
    assert latest is not None and latest.state["ledger"] == Ledger([4])


async def test_in_memory_storage_takes_the_same_allow_list() -> None:
    storage = InMemoryCheckpointStorage(allowed_checkpoint_types=[f"{HERE}:LedgerInMemory"])
    checkpoint = WorkflowCheckpoint("books", "hash", state={"ledger": LedgerInMemory(3)})
    await storage.save(checkpoint)
    assert (await storage.load(checkpoint.checkpoint_id)).state["ledger"] == LedgerInMemory(3)


async def test_classes_may_be_listed_as_well_as_names(tmp_path: Path) -> None:
    storage = FileCheckpointStorage(tmp_path, allowed_checkpoint_types=[ListedAsClass])
    checkpoint = WorkflowCheckpoint("notes", "hash", state={"n": ListedAsClass("hi")})
    await storage.save(checkpoint)
    assert (await storage.load(checkpoint.checkpoint_id)).state["n"] == ListedAsClass("hi")


async def test_a_type_nobody_listed_or_registered_is_still_refused(tmp_path: Path) -> None:
    storage = FileCheckpointStorage(tmp_path, allowed_checkpoint_types=[f"{HERE}:Ledger"])
    checkpoint = WorkflowCheckpoint("secrets", "hash", state={"s": NeverListed("x")})
    with pytest.raises(CheckpointEncodeError, match="NeverListed"):
        await storage.save(checkpoint)
    hostile = {"$t": "model", "name": f"{HERE}.NeverListed", "v": {"secret": "x"}}
    with pytest.raises(CheckpointDecodeError, match="not registered"):
        decode_checkpoint_value(hostile, allowed_types=frozenset({f"{HERE}:Ledger"}))


async def test_the_safe_types_maf_always_allows_may_be_listed_and_change_nothing(
    tmp_path: Path,
) -> None:
    storage = FileCheckpointStorage(
        tmp_path,
        allowed_checkpoint_types=[
            "datetime:datetime",
            "uuid:UUID",
            "decimal:Decimal",
            "builtins:set",
        ],
    )
    when = datetime.datetime(2025, 1, 2, tzinfo=datetime.UTC)
    checkpoint = WorkflowCheckpoint("dates", "hash", state={"when": when, "tags": {"a"}})
    await storage.save(checkpoint)
    assert (await storage.load(checkpoint.checkpoint_id)).state == {"when": when, "tags": {"a"}}


@pytest.mark.parametrize(
    "entry",
    [
        f"{HERE}:PlainThing",
        f"{HERE}:not_a_class",
        "no_module_separator",
        "a:not valid",
        42,
        PlainThing,
    ],
)
def test_an_entry_that_cannot_be_restored_is_refused_with_a_typed_error(
    tmp_path: Path, entry: Any
) -> None:
    with pytest.raises(CheckpointTypeError) as caught:
        FileCheckpointStorage(tmp_path, allowed_checkpoint_types=[entry])
    assert isinstance(caught.value, TypeError)  # MAF's own refusals are TypeErrors too


def test_a_single_name_instead_of_a_list_is_refused(tmp_path: Path) -> None:
    with pytest.raises(CheckpointTypeError, match="list"):
        FileCheckpointStorage(tmp_path, allowed_checkpoint_types=f"{HERE}:Ledger")


async def test_a_name_whose_module_is_not_imported_yet_works_once_it_is() -> None:
    module_name = "compat_checkpoints_not_yet_imported"
    entry = f"{module_name}:Parcel.Label"
    assert module_name not in sys.modules
    writer, reader = TypeRegistry(), TypeRegistry()
    storage = InMemoryCheckpointStorage(allowed_checkpoint_types=[entry], registry=writer)
    reader.allow([entry])
    assert module_name not in sys.modules  # listing a name never imports its module

    module = types.ModuleType(module_name)
    exec(  # noqa: S102 - a literal: the module the application imports later
        "import dataclasses\n"
        "class Parcel:\n"
        "    @dataclasses.dataclass\n"
        "    class Label:\n"
        "        text: str\n",
        module.__dict__,
    )
    label = module.Parcel.Label("fragile")
    sys.modules[module_name] = module
    try:
        # The writer meets the class in the state it saves; the reader finds it by its name.
        checkpoint = WorkflowCheckpoint("parcels", "hash", state={"label": label})
        await storage.save(checkpoint)
        assert (await storage.load(checkpoint.checkpoint_id)).state["label"] == label
        stored = checkpoint.to_dict(registry=writer)
        assert WorkflowCheckpoint.from_dict(stored, registry=reader).state["label"] == label
    finally:
        del sys.modules[module_name]


def test_a_listed_name_that_is_not_loaded_says_so_when_a_checkpoint_needs_it() -> None:
    registry = TypeRegistry()
    registry.allow(["compat_checkpoints_never_imported:Thing"])
    stored = {"$t": "model", "name": "compat_checkpoints_never_imported.Thing", "v": {}}
    with pytest.raises(CheckpointDecodeError, match="never import"):
        decode_checkpoint_value(stored, registry=registry)


def test_a_listed_name_missing_from_its_loaded_module_says_so() -> None:
    registry = TypeRegistry()
    registry.allow([f"{HERE}:Ledgr"])  # a typo: the module is loaded, the class is not there
    stored = {"$t": "model", "name": f"{HERE}.Ledgr", "v": {}}
    with pytest.raises(CheckpointDecodeError, match="does not exist"):
        decode_checkpoint_value(stored, registry=registry)


# ------------------------------------------------------------------------- allowed_types=


def test_decode_checkpoint_value_takes_maf_allowed_types() -> None:
    writer = TypeRegistry()
    writer.register(DecodedWhenListed)
    stored = encode_checkpoint_value({"due": [DecodedWhenListed(5)]}, registry=writer)

    with pytest.raises(CheckpointDecodeError, match="DecodedWhenListed"):
        decode_checkpoint_value(stored)
    value = decode_checkpoint_value(stored, allowed_types=frozenset({f"{HERE}:DecodedWhenListed"}))
    assert value == {"due": [DecodedWhenListed(5)]}


def test_request_info_events_round_trip_through_to_dict_and_from_dict() -> None:
    writer = TypeRegistry()
    writer.register(AskedAbout)
    event = WorkflowEvent.request_info("req-1", "reviewer", AskedAbout("ship it?"), bool)
    stored = event.to_dict(registry=writer)

    with pytest.raises(CheckpointDecodeError):
        WorkflowEvent.from_dict(stored, registry=TypeRegistry())
    # MAF's form: the serialized name mapped to the trusted class.
    again = WorkflowEvent.from_dict(stored, allowed_types={f"{HERE}.AskedAbout": AskedAbout})
    assert isinstance(again, RequestInfoEvent)
    assert (again.request_id, again.source_executor_id) == ("req-1", "reviewer")
    assert again.data == AskedAbout("ship it?")
    assert (again.request_type, again.response_type) == (AskedAbout, bool)


def test_from_dict_refuses_an_allowed_types_entry_that_names_another_class() -> None:
    event = WorkflowEvent.request_info("req-2", "reviewer", "text", str)
    with pytest.raises(CheckpointTypeError):
        WorkflowEvent.from_dict(
            event.to_dict(), allowed_types={f"{HERE}.NotAllowedInRequest": AskedAbout}
        )


def test_from_dict_rebuilds_only_requests() -> None:
    with pytest.raises(CheckpointDecodeError, match="request_info"):
        WorkflowEvent.from_dict({"type": "output", "data": 1})


def test_register_checkpoint_type_allows_a_type_process_wide() -> None:
    assert register_checkpoint_type(RegisteredTheMafWay) is RegisteredTheMafWay
    stored = encode_checkpoint_value(RegisteredTheMafWay(2))
    assert decode_checkpoint_value(stored, allowed_types=frozenset()) == RegisteredTheMafWay(2)
    assert register_checkpoint_type(Colour) is Colour
    with pytest.raises(TypeError):
        register_checkpoint_type(PlainThing)


# ------------------------------------------------------------------------------- messages


async def test_checkpoint_messages_are_keyed_by_source_executor() -> None:
    storage = InMemoryCheckpointStorage()
    await doubling(storage).run(2)
    entry, after_first, *_ = await storage.list_checkpoints(workflow_name="doubling")

    assert list(entry.messages) == ["internal:doubler"]
    (start,) = entry.messages["internal:doubler"]
    assert (start.data, start.source_id, start.target_id) == (2, "internal:doubler", "doubler")
    assert {source: [m.data for m in queue] for source, queue in after_first.messages.items()} == {
        "doubler": [4]
    }


async def test_resuming_from_a_keyed_checkpoint_delivers_its_messages(tmp_path: Path) -> None:
    storage = FileCheckpointStorage(tmp_path)
    await doubling(storage).run(3)
    entry, after_first, *_ = await storage.list_checkpoints(workflow_name="doubling")
    assert (await doubling(storage).run(checkpoint_id=entry.checkpoint_id)).get_outputs() == [6]
    assert (await doubling(storage).run(checkpoint_id=after_first.checkpoint_id)).get_outputs() == [
        6
    ]


def test_documents_written_with_a_flat_message_list_still_load() -> None:
    # The shape every checkpoint stored before this change has (databases hold many).
    old_document = {
        "version": "1",
        "checkpoint_id": "old",
        "workflow_name": "books",
        "run_id": "r",
        "previous_checkpoint_id": None,
        "timestamp": "2025-01-01T00:00:00+00:00",
        "iteration_count": 1,
        "graph_signature_hash": "hash",
        "graph_signature": {},
        "messages": [
            {"source": "a", "target": "b", "kind": "standard", "data": 1},
            {"source": "b", "target": "c", "kind": "standard", "data": 2},
            {"source": "a", "target": "c", "kind": "standard", "data": 3},
        ],
        "state": {},
        "executor_states": {},
        "edge_states": {},
        "pending_request_info_events": {},
        "answered_request_ids": [],
        "metadata": {},
    }
    checkpoint = WorkflowCheckpoint.from_dict(old_document)
    assert {s: [m.data for m in q] for s, q in checkpoint.messages.items()} == {
        "a": [1, 3],
        "b": [2],
    }
    # and the document keeps its list, which the dashboard's JSON views read
    assert [m["data"] for m in checkpoint.to_dict()["messages"]] == [1, 3, 2]


def test_a_flat_list_given_to_the_constructor_is_grouped_by_source() -> None:
    checkpoint = WorkflowCheckpoint(
        "books",
        "hash",
        messages=[WorkflowMessage(1, "a"), WorkflowMessage(2, "b")],  # type: ignore[arg-type]
    )
    assert list(checkpoint.messages) == ["a", "b"]
    assert [m.data for m in checkpoint.message_list()] == [1, 2]


# -------------------------------------------------------------------------- MAF's names


def test_workflow_message_answers_to_maf_field_names() -> None:
    request = WorkflowEvent.request_info("req-9", "reviewer", "approve?", bool)
    answer = WorkflowMessage(
        True, "internal:reviewer", "reviewer", kind="response", request=request
    )
    assert answer.type is MessageType.RESPONSE and answer.type == "response"
    assert answer.original_request_info_event is request
    assert WorkflowMessage(1, "a").type is MessageType.STANDARD

    stored = answer.to_dict()
    assert {"data", "source_id", "target_id", "type", "original_request_info_event"} <= set(stored)
    again = WorkflowMessage.from_dict(stored)
    assert (again.data, again.source_id, again.target_id, again.kind) == (
        True,
        "internal:reviewer",
        "reviewer",
        "response",
    )
    assert again.request is not None and again.request.request_id == "req-9"


async def test_maf_exception_name_catches_a_missing_checkpoint(tmp_path: Path) -> None:
    storage = FileCheckpointStorage(tmp_path)
    with pytest.raises(WorkflowCheckpointException):
        await storage.load("missing")
    assert issubclass(CheckpointNotFoundError, WorkflowCheckpointException)


def test_file_storage_exposes_storage_path(tmp_path: Path) -> None:
    assert FileCheckpointStorage(tmp_path).storage_path == tmp_path.resolve()


def test_checkpoint_id_is_an_annotation_for_str() -> None:
    def remember(checkpoint_id: CheckpointID) -> CheckpointID:
        return checkpoint_id

    assert remember("abc") == "abc"
    assert CheckpointID.__value__ is str


@pytest.mark.parametrize("storage_kind", ["memory", "file"])
@pytest.mark.parametrize("method", ["list_checkpoints", "list_checkpoint_ids", "get_latest"])
def test_storage_filters_are_keyword_only_as_in_maf(
    tmp_path: Path, storage_kind: str, method: str
) -> None:
    storage = (
        InMemoryCheckpointStorage() if storage_kind == "memory" else FileCheckpointStorage(tmp_path)
    )
    parameter = inspect.signature(getattr(storage, method)).parameters["workflow_name"]
    assert parameter.kind is inspect.Parameter.KEYWORD_ONLY


async def test_storage_calls_written_for_maf_work_unchanged() -> None:
    storage = InMemoryCheckpointStorage()
    checkpoint = WorkflowCheckpoint("maf-calls", "hash")
    assert await storage.save(checkpoint) == checkpoint.checkpoint_id
    assert await storage.list_checkpoint_ids(workflow_name="maf-calls") == [
        checkpoint.checkpoint_id
    ]
    assert [c.checkpoint_id for c in await storage.list_checkpoints(workflow_name="maf-calls")] == [
        checkpoint.checkpoint_id
    ]
    latest = await storage.get_latest(workflow_name="maf-calls")
    assert latest is not None and latest.checkpoint_id == checkpoint.checkpoint_id
    assert await storage.delete(checkpoint.checkpoint_id) is True
    assert await storage.get_latest(workflow_name="maf-calls") is None
