"""Events a run emits, and the states a run can be in.

Events are small dataclasses with a ``type`` discriminator, open to subclassing as in MAF.
``to_dict()`` gives a JSON-safe form (payloads through the checkpoint codec) so events cross
Celery and websockets unchanged.
"""

from __future__ import annotations

import enum
import traceback as traceback_module
from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, Generic, Literal

from typing_extensions import TypeVar

from . import codec
from .exceptions import CheckpointDecodeError
from .registry import AllowedTypes, TypeRegistry, default_registry, resolve_type_name

__all__ = [
    "EVENT_KINDS",
    "ErrorDetails",
    "EventKind",
    "RequestInfoEvent",
    "WorkflowErrorDetails",
    "WorkflowEvent",
    "WorkflowEventSource",
    "WorkflowEventType",
    "WorkflowRunState",
    "describe_type",
]

DataT = TypeVar("DataT", default=Any)


@dataclass(frozen=True, slots=True)
class EventKind:
    """One entry of the event catalogue: what an event of this type means and carries.

    Attributes:
        type: the ``WorkflowEvent.type`` string.
        summary: one line saying what happened, for documentation and the dashboard.
        data: what ``data`` holds ("" when nothing).
        fields: the other attributes it sets (``executor_id``, ``iteration``, ``state``...).
        reserved: only the engine may emit it; ``ctx.add_event`` turns a forged one into a
            ``warning``.
    """

    type: str
    summary: str
    data: str = ""
    fields: tuple[str, ...] = ()
    reserved: bool = True


_KINDS = (
    EventKind("started", "the run began (streams only; results leave it out)"),
    EventKind("status", "the run changed state", fields=("state",)),
    EventKind("failed", "the run failed; the exception is re-raised", "ErrorDetails", ("details",)),
    EventKind(
        "output", "a designated executor yielded a workflow output", "the output", ("executor_id",)
    ),
    EventKind(
        "intermediate", "an intermediate executor yielded a value", "the value", ("executor_id",)
    ),
    EventKind(
        "request_info",
        "an executor asked for outside input (RequestInfoEvent)",
        "the request",
        (
            "executor_id",
            "iteration",
            "request_id",
            "source_executor_id",
            "request_type",
            "response_type",
        ),
    ),
    EventKind("superstep_started", "a superstep began", fields=("iteration",)),
    EventKind(
        "superstep_completed",
        "a superstep ended and its checkpoint was saved",
        fields=("iteration", "checkpoint_id"),
    ),
    EventKind(
        "executor_invoked",
        "a handler was called",
        "the message it got",
        ("executor_id", "iteration"),
    ),
    EventKind(
        "executor_completed",
        "a handler returned",
        "what it sent then yielded (None if nothing)",
        ("executor_id", "iteration"),
    ),
    EventKind(
        "executor_failed",
        "a handler raised",
        "ErrorDetails",
        ("executor_id", "iteration", "details"),
    ),
    EventKind("executor_bypassed", "an executor was skipped", "", ("executor_id",)),
    EventKind(
        "warning",
        "something was dropped or looks wrong; the run goes on",
        "the text",
        reserved=False,
    ),
    EventKind("error", "a non-fatal error", "the exception", reserved=False),
    EventKind(
        "data", "MAF's deprecated executor data event", "the data", ("executor_id",), reserved=False
    ),
)

EVENT_KINDS: Mapping[str, EventKind] = MappingProxyType({k.type: k for k in _KINDS})
"""The engine's event types, declared once; executors may add types of their own."""

WorkflowEventType = Literal[
    "started",
    "status",
    "failed",
    "output",
    "intermediate",
    "request_info",
    "superstep_started",
    "superstep_completed",
    "executor_invoked",
    "executor_completed",
    "executor_failed",
    "executor_bypassed",
    "warning",
    "error",
    "data",
]

# Executors may not forge these through ctx.add_event. MAF guards only started/status/failed/
# output/intermediate; the others are guarded too because the dashboard trusts them (a forged
# superstep_completed would point operators at a checkpoint that does not exist).
RESERVED_EVENT_TYPES = frozenset(k.type for k in _KINDS if k.reserved)


class WorkflowEventSource(str, enum.Enum):
    """Who emitted an event: the engine itself, or an executor through ``ctx.add_event``."""

    FRAMEWORK = "FRAMEWORK"
    EXECUTOR = "EXECUTOR"


class WorkflowRunState(str, enum.Enum):
    """Where a run stands. ``IDLE`` means finished with nothing left to do.

    ``STARTED`` is declared for compatibility; runs report ``IN_PROGRESS`` from their start.
    """

    STARTED = "STARTED"
    IN_PROGRESS = "IN_PROGRESS"
    IN_PROGRESS_PENDING_REQUESTS = "IN_PROGRESS_PENDING_REQUESTS"
    IDLE = "IDLE"
    IDLE_WITH_PENDING_REQUESTS = "IDLE_WITH_PENDING_REQUESTS"
    FAILED = "FAILED"
    CANCELLED = "CANCELLED"


@dataclass(frozen=True, slots=True)
class ErrorDetails:
    """What went wrong: the exception's type and message, its traceback and where it happened."""

    error_type: str
    message: str
    traceback: str = ""
    executor_id: str | None = None
    extra: dict[str, Any] | None = None

    @classmethod
    def from_exception(
        cls,
        exc: BaseException,
        *,
        executor_id: str | None = None,
        extra: dict[str, Any] | None = None,
    ) -> ErrorDetails:
        return cls(
            error_type=type(exc).__name__,
            message=str(exc),
            traceback="".join(traceback_module.format_exception(exc)),
            executor_id=executor_id,
            extra=extra,
        )

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "error_type": self.error_type,
            "message": self.message,
            "traceback": self.traceback,
            "executor_id": self.executor_id,
        }
        if self.extra:
            out["extra"] = self.extra
        return out


WorkflowErrorDetails = ErrorDetails  # MAF's name for the same record


# Not frozen, compared by identity: as in MAF, an event is an object its subclasses may extend
# (``super().__init__("progress", data=...)`` then ``self.pct = ...``), and a frozen slotted
# dataclass both refuses that and costs a slow ``object.__setattr__`` per field per event.
@dataclass(slots=True, repr=False, eq=False)
class WorkflowEvent(Generic[DataT]):
    """One thing that happened in a run (``WorkflowEvent[T]`` names the type of its ``data``).

    Attributes:
        type: the discriminator: ``started``, ``status``, ``superstep_started``,
            ``superstep_completed``, ``executor_invoked``, ``executor_completed``,
            ``executor_failed``, ``output``, ``request_info``, ``warning``, ``failed`` or a
            custom type added by an executor.
        data: the payload (an output value, a warning text, a custom event's data).
        executor_id: the executor it concerns, if any.
        iteration: the superstep number (1-based) for superstep and executor events.
        checkpoint_id: on ``superstep_completed``, the checkpoint written after the superstep.
        state: on ``status``, the run state.
        details: on ``failed`` and ``executor_failed``, what went wrong.
        origin: ``FRAMEWORK`` for the engine's events, ``EXECUTOR`` for those an executor added.
    """

    type: str
    data: DataT | None = None
    executor_id: str | None = None
    iteration: int | None = None
    checkpoint_id: str | None = None
    state: WorkflowRunState | None = None
    details: ErrorDetails | None = None
    origin: WorkflowEventSource = WorkflowEventSource.FRAMEWORK

    def __repr__(self) -> str:
        # MAF's text, field for field: samples print events, and must print the same.
        parts = [f"type={self.type!r}"]
        if self.state is not None:
            parts.append(f"state={self.state.value}")
        if self.executor_id is not None:
            parts.append(f"executor_id={self.executor_id!r}")
        if self.iteration is not None:
            parts.append(f"iteration={self.iteration}")
        request_id = getattr(self, "request_id", None)
        if request_id is not None:
            parts.append(f"request_id={request_id!r}")
        if self.data is not None:
            parts.append(f"data={self.data!r}")
        return f"WorkflowEvent({', '.join(parts)})"

    # ------------------------------------------------------------------ factories (MAF's names)

    @classmethod
    def started(cls, data: Any = None) -> WorkflowEvent[Any]:
        return cls("started", data=data)

    @classmethod
    def status(cls, state: WorkflowRunState, data: Any = None) -> WorkflowEvent[Any]:
        return cls("status", data=data, state=state)

    @classmethod
    def failed(cls, details: ErrorDetails, data: Any = None) -> WorkflowEvent[Any]:
        return cls("failed", data=data, details=details)

    @classmethod
    def warning(cls, message: str) -> WorkflowEvent[str]:
        return WorkflowEvent("warning", data=message)

    @classmethod
    def error(cls, exception: Exception) -> WorkflowEvent[Exception]:
        """A non-fatal error (a sub-workflow that failed inside a parent that goes on)."""
        return WorkflowEvent("error", data=exception)

    @classmethod
    def emit(cls, executor_id: str, data: Any) -> WorkflowEvent[Any]:
        """MAF's deprecated ``data`` event; prefer ``ctx.yield_output``."""
        return cls("data", data=data, executor_id=executor_id)

    @classmethod
    def request_info(
        cls, request_id: str, source_executor_id: str, request_data: Any, response_type: Any
    ) -> RequestInfoEvent:
        return RequestInfoEvent(
            "request_info",
            data=request_data,
            executor_id=source_executor_id,
            request_id=request_id,
            source_executor_id=source_executor_id,
            request_type=type(request_data),
            response_type=response_type,
        )

    @classmethod
    def superstep_started(cls, iteration: int, data: Any = None) -> WorkflowEvent[Any]:
        return cls("superstep_started", data=data, iteration=iteration)

    @classmethod
    def superstep_completed(cls, iteration: int, data: Any = None) -> WorkflowEvent[Any]:
        return cls("superstep_completed", data=data, iteration=iteration)

    @classmethod
    def executor_invoked(cls, executor_id: str, data: Any = None) -> WorkflowEvent[Any]:
        return cls("executor_invoked", data=data, executor_id=executor_id)

    @classmethod
    def executor_completed(cls, executor_id: str, data: Any = None) -> WorkflowEvent[Any]:
        return cls("executor_completed", data=data, executor_id=executor_id)

    @classmethod
    def executor_failed(cls, executor_id: str, details: ErrorDetails) -> WorkflowEvent[Any]:
        return WorkflowEvent(
            "executor_failed", data=details, executor_id=executor_id, details=details
        )

    @classmethod
    def executor_bypassed(cls, executor_id: str, data: Any = None) -> WorkflowEvent[Any]:
        return cls("executor_bypassed", data=data, executor_id=executor_id)

    def to_dict(self, *, registry: TypeRegistry = default_registry) -> dict[str, Any]:
        """JSON-safe form; ``data`` goes through the checkpoint codec."""
        out: dict[str, Any] = {"type": self.type}
        if isinstance(self.data, BaseException):
            # An ``error`` event carries the exception itself; across a wire it is its description.
            out["data"] = f"{type(self.data).__name__}: {self.data}"
        elif self.data is not None:
            out["data"] = codec.encode(self.data, registry=registry, where=f"{self.type} event")
        if self.origin is WorkflowEventSource.EXECUTOR:
            out["origin"] = self.origin.value
        for name in ("executor_id", "iteration", "checkpoint_id"):
            value = getattr(self, name)
            if value is not None:
                out[name] = value
        if self.state is not None:
            out["state"] = self.state.value
        if self.details is not None:
            out["details"] = self.details.to_dict()
        return out

    @classmethod
    def from_dict(
        cls,
        data: dict[str, Any],
        *,
        allowed_types: AllowedTypes | None = None,
        registry: TypeRegistry = default_registry,
    ) -> RequestInfoEvent:
        """Rebuild a request from ``to_dict()`` output; MAF serializes only requests too.

        ``allowed_types`` lists types the payload may hold besides registered ones (MAF passes
        ``{"module.qualname": cls}``; names and classes work as well); they join ``registry``.

        Raises:
            CheckpointDecodeError: not a request, a key missing, a payload that cannot be
                restored, or a payload whose type is not the recorded ``request_type``.
        """
        registry.allow(allowed_types)
        if not isinstance(data, dict) or data.get("type", "request_info") != "request_info":
            raise CheckpointDecodeError("from_dict() rebuilds request_info events only")
        keys = ("data", "request_id", "source_executor_id", "request_type", "response_type")
        missing = [key for key in keys if key not in data]
        if missing:
            raise CheckpointDecodeError(f"request_info event is missing {missing}")
        event = request_from_record(data, registry)
        request_type = resolve_type_name(data["request_type"], registry)
        if request_type is not None and type(event.data) is not request_type:
            raise CheckpointDecodeError(
                f"request {data['request_id']!r} holds a {type(event.data).__qualname__}, but its "
                f"request_type is {data['request_type']!r}"
            )
        return event


@dataclass(slots=True, repr=False)
class RequestInfoEvent(WorkflowEvent):
    """A human-in-the-loop request: the run waits for an answer of ``response_type``.

    Answer it with ``workflow.run(responses={event.request_id: value})``, or in another process
    with ``run(checkpoint_id=..., responses=...)``.
    """

    request_id: str = ""
    source_executor_id: str = ""
    request_type: type | None = None
    response_type: Any = None
    created_at: str = ""
    extra: dict[str, Any] = field(default_factory=dict)

    # A request is data a checkpoint carries: two with the same fields are the same request
    # (a checkpoint restored from storage equals the one saved). Hashed by its id, which equal
    # requests share, so requests still fit in sets as MAF's do.
    def __hash__(self) -> int:
        return hash(("request_info", self.request_id))

    def to_dict(self, *, registry: TypeRegistry = default_registry) -> dict[str, Any]:
        out = WorkflowEvent.to_dict(self, registry=registry)
        out.update(
            request_id=self.request_id,
            source_executor_id=self.source_executor_id,
            request_type=describe_type(self.request_type, registry),
            response_type=describe_type(self.response_type, registry),
            created_at=self.created_at,
        )
        return out


def describe_type(annotation: Any, registry: TypeRegistry = default_registry) -> str | None:
    """A readable, stable name for a type (used in checkpoints and by the dashboard)."""
    if annotation is None:
        return None
    if isinstance(annotation, type):
        if annotation.__module__ == "builtins":
            return annotation.__qualname__
        return registry.name_of(annotation) or f"{annotation.__module__}.{annotation.__qualname__}"
    return repr(annotation).replace("typing.", "")


def request_from_record(data: dict[str, Any], registry: TypeRegistry) -> RequestInfoEvent:
    """A request as checkpoints and ``to_dict()`` store it, rebuilt (its payload through the
    codec)."""
    return request_from_fields(codec.decode(data["data"], registry=registry), data, registry)


def request_from_fields(
    payload: Any, fields: Mapping[str, Any], registry: TypeRegistry = default_registry
) -> RequestInfoEvent:
    """A request rebuilt from its decoded ``payload`` and its stored fields. A response type
    whose name does not resolve here (a generic alias such as ``list[str]``) stays a name; the
    executor's own declaration stands in for it when the answer arrives."""
    name = fields.get("response_type")
    return RequestInfoEvent(
        "request_info",
        data=payload,
        executor_id=fields["source_executor_id"],
        request_id=fields["request_id"],
        source_executor_id=fields["source_executor_id"],
        request_type=type(payload),
        response_type=resolve_type_name(name, registry) or name,
        created_at=fields.get("created_at", ""),
    )
