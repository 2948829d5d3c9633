"""``WorkflowCheckpoint``: everything needed to carry a run on in another process."""

from __future__ import annotations

import datetime as dt
import threading
import uuid
from dataclasses import dataclass, field
from typing import Any

from . import codec
from .events import RequestInfoEvent, describe_type
from .exceptions import CheckpointDecodeError
from .registry import TypeRegistry, default_registry

__all__ = ["CHECKPOINT_FORMAT_VERSION", "WorkflowCheckpoint", "WorkflowMessage", "resolve_type_name"]

CHECKPOINT_FORMAT_VERSION = "1"

_BUILTIN_TYPES: dict[str, type] = {
    t.__qualname__: t
    for t in (str, int, float, bool, bytes, dict, list, tuple, set, frozenset, type(None))
}
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


def resolve_type_name(name: str | None, registry: TypeRegistry = default_registry) -> Any:
    """The type a checkpoint names (``describe_type``'s inverse): a builtin or a registered
    class; None when it is neither."""
    if name is None:
        return None
    return _BUILTIN_TYPES.get(name) or registry.resolve(name)


@dataclass(slots=True)
class WorkflowMessage:
    """A message in flight: sent in one superstep, delivered in the next.

    ``kind`` is ``standard`` for ``send_message`` traffic (and the run's input, whose source is
    ``internal:<start executor>``) and ``response`` for an answer to a request, which carries the
    request it answers.
    """

    data: Any
    source_id: str
    target_id: str | None = None
    kind: str = "standard"
    request: RequestInfoEvent | None = None


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
        messages: messages to deliver in the next superstep.
        state: committed shared state.
        executor_states: what each executor's ``on_checkpoint_save()`` returned.
        edge_states: fan-in buffers, by edge group, by source.
        pending_request_info_events: unanswered requests by id.
        answered_request_ids: requests answered earlier in this lineage (answering twice is refused).
        graph_signature: the topology itself, so a mismatch can say what changed.
        metadata: free-form, JSON-friendly notes (the engine records the superstep's kind).
        version: checkpoint format version.
    """

    workflow_name: str
    graph_signature_hash: str
    checkpoint_id: str = field(default_factory=lambda: uuid.uuid4().hex)
    run_id: str = ""
    previous_checkpoint_id: str | None = None
    timestamp: str = field(default_factory=now_timestamp)
    iteration_count: int = 0
    messages: list[WorkflowMessage] = field(default_factory=list)
    state: dict[str, Any] = field(default_factory=dict)
    executor_states: dict[str, dict[str, Any]] = field(default_factory=dict)
    edge_states: dict[str, dict[str, list[Any]]] = field(default_factory=dict)
    pending_request_info_events: dict[str, RequestInfoEvent] = field(default_factory=dict)
    answered_request_ids: list[str] = field(default_factory=list)
    graph_signature: dict[str, Any] = field(default_factory=dict)
    metadata: dict[str, Any] = field(default_factory=dict)
    version: str = CHECKPOINT_FORMAT_VERSION

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
            "messages": [_message_to_dict(m, registry) for m in self.messages],
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
        if data.get("version") != CHECKPOINT_FORMAT_VERSION:
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
                messages=[_message_from_dict(m, registry) for m in data.get("messages", [])],
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


_SHAPES: dict[str, type] = {
    "messages": list,
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
        raise CheckpointDecodeError("checkpoint field 'iteration_count' must be a non-negative integer")
    for key, kind in _SHAPES.items():
        if key in data and not isinstance(data[key], kind):
            raise CheckpointDecodeError(f"checkpoint field {key!r} must be a JSON {kind.__name__}")
    if not all(isinstance(v, dict) for v in data.get("executor_states", {}).values()):
        raise CheckpointDecodeError("every executor state must be a JSON object")
    if not all(isinstance(m, dict) for m in data.get("messages", [])):
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
    payload = codec.decode(data["data"], registry=registry)
    return RequestInfoEvent(
        "request_info",
        data=payload,
        executor_id=data["source_executor_id"],
        request_id=data["request_id"],
        source_executor_id=data["source_executor_id"],
        request_type=type(payload),
        # Unresolvable names (generic aliases) fall back to the executor's declaration on resume.
        response_type=resolve_type_name(data.get("response_type"), registry)
        or data.get("response_type"),
        created_at=data.get("created_at", ""),
    )


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
    request = data.get("request")
    return WorkflowMessage(
        data=codec.decode(data["data"], registry=registry),
        source_id=data["source"],
        target_id=data.get("target"),
        kind=data.get("kind", "standard"),
        request=_request_from_dict(request, registry) if request else None,
    )
