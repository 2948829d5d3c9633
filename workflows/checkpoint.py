"""``WorkflowCheckpoint``: everything needed to carry a run on in another process."""

from __future__ import annotations

import datetime as dt
import enum
import threading
import uuid
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from . import codec
from .events import RequestInfoEvent, describe_type, request_from_record
from .exceptions import CheckpointDecodeError
from .registry import TypeRegistry, default_registry, resolve_type_name

__all__ = [
    "CHECKPOINT_FORMAT_VERSION",
    "CheckpointID",
    "CheckpointKind",
    "MessageType",
    "WorkflowCheckpoint",
    "WorkflowMessage",
    "resolve_type_name",
]

# MAF's default; documents written as "1" before it was adopted read the same.
CHECKPOINT_FORMAT_VERSION = "1.0"
_READABLE_VERSIONS = frozenset({"1", CHECKPOINT_FORMAT_VERSION})

# MAF's name for a checkpoint id, for annotations.
type CheckpointID = str
_clock_lock = threading.Lock()
_last_timestamp = dt.datetime.min.replace(tzinfo=dt.UTC)


def now_timestamp() -> str:
    """A timezone-aware ISO timestamp, strictly increasing within the process, so "latest by
    timestamp" never ties between two checkpoints written in the same microsecond."""
    global _last_timestamp
    with _clock_lock:
        now = dt.datetime.now(dt.UTC)
        if now <= _last_timestamp:
            now = _last_timestamp + dt.timedelta(microseconds=1)
        _last_timestamp = now
    return now.isoformat()


class MessageType(str, enum.Enum):
    """A message's kind under MAF's name (``WorkflowMessage.type``); equal to its text."""

    STANDARD = "standard"
    RESPONSE = "response"


class CheckpointKind(enum.StrEnum):
    """Why a checkpoint was written (``metadata["kind"]``): before the first superstep, after a
    superstep, when answers were delivered, when a lineage was forked, when a checkpoint was
    moved onto a changed graph (``migrate_checkpoint``), or the in-memory snapshot of a
    sub-workflow inside its parent's checkpoint. Functional workflows write one after each step
    that computed its result (``step``) and one when a run call ends, finished or waiting for
    answers (``idle``)."""

    ENTRY = "entry"
    SUPERSTEP = "superstep"
    RESPONSES = "responses"
    FORK = "fork"
    MIGRATION = "migration"
    SUB_WORKFLOW = "sub_workflow"
    STEP = "step"
    IDLE = "idle"


@dataclass(slots=True, repr=False)
class WorkflowMessage:
    """A message in flight: sent in one superstep, delivered in the next.

    ``kind`` is ``standard`` for ``send_message`` traffic (and the run's input, whose source is
    ``internal:<start executor>``) and ``response`` for an answer to a request, which carries the
    request it answers. MAF spells these ``type`` (a ``MessageType``) and
    ``original_request_info_event``; both names work here.
    """

    data: Any
    source_id: str
    target_id: str | None = None
    kind: str = "standard"
    request: RequestInfoEvent | None = None

    @property
    def type(self) -> MessageType:
        return MessageType(self.kind)

    @property
    def original_request_info_event(self) -> RequestInfoEvent | None:
        return self.request

    def __repr__(self) -> str:
        # MAF's text, with its field names (samples print checkpoints' messages); the trace
        # context travels in the checkpoint's metadata here, not on each message.
        return (
            f"WorkflowMessage(data={self.data!r}, source_id={self.source_id!r}, "
            f"target_id={self.target_id!r}, type={self.type!r}, trace_contexts=None, "
            f"source_span_ids=None, original_request_info_event={self.request!r})"
        )

    def to_dict(self, *, registry: TypeRegistry = default_registry) -> dict[str, Any]:
        """JSON-safe form with MAF's keys (``data`` and the request through the codec)."""
        return {
            "data": codec.encode(
                self.data, registry=registry, where=f"message from {self.source_id!r}"
            ),
            "source_id": self.source_id,
            "target_id": self.target_id,
            "type": self.kind,
            "original_request_info_event": (
                _request_to_dict(self.request, registry) if self.request is not None else None
            ),
        }

    @classmethod
    def from_dict(
        cls, data: dict[str, Any], *, registry: TypeRegistry = default_registry
    ) -> WorkflowMessage:
        """Rebuild a message from ``to_dict()`` output (or a checkpoint document's message).

        Raises:
            CheckpointDecodeError: a key is missing or a value cannot be restored.
        """
        try:
            return _message_from_dict(data, registry)
        except CheckpointDecodeError:
            raise
        except (KeyError, TypeError, ValueError, AttributeError) as exc:
            raise CheckpointDecodeError(f"malformed message: {exc!r}") from exc


def group_by_source(messages: Iterable[WorkflowMessage]) -> dict[str, list[WorkflowMessage]]:
    """Messages keyed by source executor id (MAF's shape), each source's in send order."""
    grouped: dict[str, list[WorkflowMessage]] = {}
    for message in messages:
        grouped.setdefault(message.source_id, []).append(message)
    return grouped


@dataclass
class WorkflowCheckpoint:
    """A snapshot taken at a superstep boundary.

    Attributes:
        workflow_name: the workflow's name (stable across processes).
        graph_signature_hash: sha256 of the graph's topology; resume refuses a different graph.
        checkpoint_id: unique id.
        run_id: the lineage: a fresh run gets a new one, resuming keeps it.
        previous_checkpoint_id: the checkpoint this one follows.
        timestamp: timezone-aware ISO 8601.
        iteration_count: supersteps completed in this lineage.
        messages: messages to deliver in the next superstep, keyed by source executor id (the
            run's input and answers to requests come from ``internal:<executor id>``). Given a
            flat list, the constructor groups it. ``message_list()`` flattens it back.
        state: committed shared state.
        executor_states: what each executor's ``on_checkpoint_save()`` returned.
        edge_states: fan-in buffers, by edge group, by source.
        pending_request_info_events: unanswered requests by id.
        answered_request_ids: requests answered before in this lineage (a second answer is refused).
        graph_signature: the topology itself, so a mismatch can say what changed.
        metadata: free-form, JSON-friendly notes (the engine records the superstep's kind).
        version: checkpoint format version.
    """

    workflow_name: str
    graph_signature_hash: str
    checkpoint_id: str = field(default_factory=lambda: str(uuid.uuid4()))
    run_id: str = ""
    previous_checkpoint_id: str | None = None
    timestamp: str = field(default_factory=now_timestamp)
    iteration_count: int = 0
    messages: dict[str, list[WorkflowMessage]] = field(default_factory=dict)
    state: dict[str, Any] = field(default_factory=dict)
    executor_states: dict[str, dict[str, Any]] = field(default_factory=dict)
    edge_states: dict[str, dict[str, list[Any]]] = field(default_factory=dict)
    pending_request_info_events: dict[str, RequestInfoEvent] = field(default_factory=dict)
    answered_request_ids: list[str] = field(default_factory=list)
    graph_signature: dict[str, Any] = field(default_factory=dict)
    metadata: dict[str, Any] = field(default_factory=dict)
    version: str = CHECKPOINT_FORMAT_VERSION

    def __post_init__(self) -> None:
        # Code written before messages were keyed by source still passes a list.
        messages: Any = self.messages
        if isinstance(messages, list):
            self.messages = group_by_source(messages)

    def message_list(self) -> list[WorkflowMessage]:
        """Every message, source by source, in the order they were sent."""
        return [message for queue in self.messages.values() for message in queue]

    # ------------------------------------------------------------------------------- encoding

    def to_dict(self, *, registry: TypeRegistry = default_registry) -> dict[str, Any]:
        """The checkpoint as JSON-safe data (every value through the typed codec).

        Raises:
            CheckpointEncodeError: naming the executor or state key whose value cannot be
                restored (an unregistered class, a function, a lone surrogate...).
        """

        def enc(value: Any, where: str) -> Any:
            return codec.encode(value, registry=registry, where=where)

        return {
            "version": self.version,
            "checkpoint_id": self.checkpoint_id,
            "workflow_name": self.workflow_name,
            "run_id": self.run_id,
            "previous_checkpoint_id": self.previous_checkpoint_id,
            "timestamp": self.timestamp,
            "iteration_count": self.iteration_count,
            "graph_signature_hash": self.graph_signature_hash,
            "graph_signature": self.graph_signature,
            # A flat list in the document (each message names its source), as it always was:
            # stored documents and the dashboard's JSON views read it that way.
            "messages": [_message_to_dict(m, registry) for m in self.message_list()],
            "state": {k: enc(v, f"shared state key {k!r}") for k, v in self.state.items()},
            "executor_states": {
                eid: {k: enc(v, f"executor {eid!r} state key {k!r}") for k, v in st.items()}
                for eid, st in self.executor_states.items()
            },
            "edge_states": enc(self.edge_states, "fan-in buffers"),
            "pending_request_info_events": {
                rid: _request_to_dict(ev, registry)
                for rid, ev in self.pending_request_info_events.items()
            },
            "answered_request_ids": list(self.answered_request_ids),
            "metadata": enc(self.metadata, "checkpoint metadata"),
        }

    @classmethod
    def from_dict(
        cls, data: dict[str, Any], *, registry: TypeRegistry = default_registry
    ) -> WorkflowCheckpoint:
        """Rebuild a checkpoint from ``to_dict()`` output.

        Raises:
            CheckpointDecodeError: the data is not a checkpoint of a known format version, or a
                value in it cannot be restored (for instance a type not registered here).
        """
        if not isinstance(data, dict):
            raise CheckpointDecodeError("a checkpoint must be a JSON object")
        if data.get("version") not in _READABLE_VERSIONS:
            raise CheckpointDecodeError(
                f"unsupported checkpoint format version {data.get('version')!r}"
            )
        _check_shapes(data)
        try:
            return cls(
                workflow_name=_str(data, "workflow_name"),
                graph_signature_hash=_str(data, "graph_signature_hash"),
                checkpoint_id=_str(data, "checkpoint_id"),
                run_id=_str(data, "run_id"),
                previous_checkpoint_id=data.get("previous_checkpoint_id"),
                timestamp=_str(data, "timestamp"),
                iteration_count=data["iteration_count"],
                messages=group_by_source(
                    _message_from_dict(m, registry) for m in _document_messages(data)
                ),
                state=codec.decode(data.get("state", {}), registry=registry),
                executor_states=codec.decode(data.get("executor_states", {}), registry=registry),
                edge_states=codec.decode(data.get("edge_states", {}), registry=registry),
                pending_request_info_events={
                    rid: _request_from_dict(ev, registry)
                    for rid, ev in data.get("pending_request_info_events", {}).items()
                },
                answered_request_ids=list(data.get("answered_request_ids", [])),
                graph_signature=data.get("graph_signature") or {},
                metadata=codec.decode(data.get("metadata", {}), registry=registry),
                version=data["version"],
            )
        except CheckpointDecodeError:
            raise
        except (KeyError, TypeError, ValueError, AttributeError, OverflowError) as exc:
            raise CheckpointDecodeError(f"malformed checkpoint: {exc!r}") from exc

    @property
    def pending_request_ids(self) -> list[str]:
        return list(self.pending_request_info_events)


def _document_messages(data: dict[str, Any]) -> list[dict[str, Any]]:
    """A document's messages as a flat list: our documents hold a list; one keyed by source
    (MAF's field shape) is accepted too."""
    messages = data.get("messages", [])
    if isinstance(messages, dict):
        return [m for queue in messages.values() for m in queue]
    return list(messages)


_SHAPES: dict[str, type | tuple[type, ...]] = {
    "messages": (list, dict),
    "state": dict,
    "executor_states": dict,
    "edge_states": dict,
    "pending_request_info_events": dict,
    "answered_request_ids": list,
    "metadata": dict,
}


def _check_shapes(data: dict[str, Any]) -> None:
    """Refuse a document whose fields have the wrong JSON shape before decoding anything."""
    count = data.get("iteration_count")
    if type(count) is not int or count < 0:
        raise CheckpointDecodeError(
            "checkpoint field 'iteration_count' must be a non-negative integer"
        )
    for key, kind in _SHAPES.items():
        if key in data and not isinstance(data[key], kind):
            names = " or ".join(k.__name__ for k in (kind if isinstance(kind, tuple) else (kind,)))
            raise CheckpointDecodeError(f"checkpoint field {key!r} must be a JSON {names}")
    if not all(isinstance(v, dict) for v in data.get("executor_states", {}).values()):
        raise CheckpointDecodeError("every executor state must be a JSON object")
    messages = data.get("messages", [])
    if isinstance(messages, dict) and not all(isinstance(q, list) for q in messages.values()):
        raise CheckpointDecodeError("messages keyed by source must be JSON lists")
    if not all(isinstance(m, dict) for m in _document_messages(data)):
        raise CheckpointDecodeError("every message must be a JSON object")
    if not all(isinstance(e, dict) for e in data.get("pending_request_info_events", {}).values()):
        raise CheckpointDecodeError("every pending request must be a JSON object")
    if not all(isinstance(r, str) for r in data.get("answered_request_ids", [])):
        raise CheckpointDecodeError("answered request ids must be strings")
    previous = data.get("previous_checkpoint_id")
    if previous is not None and not isinstance(previous, str):
        raise CheckpointDecodeError("checkpoint field 'previous_checkpoint_id' must be a string")


def _str(data: dict[str, Any], key: str) -> str:
    value = data[key]
    if not isinstance(value, str):
        raise CheckpointDecodeError(f"checkpoint field {key!r} must be a string")
    return value


def _request_to_dict(event: RequestInfoEvent, registry: TypeRegistry) -> dict[str, Any]:
    return {
        "request_id": event.request_id,
        "source_executor_id": event.source_executor_id,
        "data": codec.encode(event.data, registry=registry, where=f"request {event.request_id!r}"),
        "request_type": describe_type(event.request_type, registry),
        "response_type": describe_type(event.response_type, registry),
        "created_at": event.created_at,
    }


def _request_from_dict(data: dict[str, Any], registry: TypeRegistry) -> RequestInfoEvent:
    return request_from_record(data, registry)


def _message_to_dict(message: WorkflowMessage, registry: TypeRegistry) -> dict[str, Any]:
    out: dict[str, Any] = {
        "source": message.source_id,
        "target": message.target_id,
        "kind": message.kind,
        "data": codec.encode(
            message.data, registry=registry, where=f"message from {message.source_id!r}"
        ),
    }
    if message.request is not None:
        out["request"] = _request_to_dict(message.request, registry)
    return out


def _message_from_dict(data: dict[str, Any], registry: TypeRegistry) -> WorkflowMessage:
    """A message from our document keys or ``WorkflowMessage.to_dict()``'s (MAF's) keys."""
    request = data.get("request", data.get("original_request_info_event"))
    kind = data.get("kind", data.get("type", "standard"))
    return WorkflowMessage(
        data=codec.decode(data["data"], registry=registry),
        source_id=data["source"] if "source" in data else data["source_id"],
        target_id=data.get("target", data.get("target_id")),
        kind=MessageType(kind).value,
        request=_request_from_dict(request, registry) if request else None,
    )
