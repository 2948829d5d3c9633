"""Events a run emits, and the states a run can be in.

Events are small frozen dataclasses with a ``type`` discriminator. ``to_dict()`` gives a
JSON-safe form (payloads through the checkpoint codec) so events cross Celery and websockets
unchanged.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field
from typing import Any

from . import codec
from .registry import TypeRegistry, default_registry

__all__ = [
    "ErrorDetails",
    "RequestInfoEvent",
    "WorkflowEvent",
    "WorkflowRunState",
    "describe_type",
]

# Event types the framework emits; executors may not forge these through ctx.add_event.
RESERVED_EVENT_TYPES = frozenset(
    {
        "started",
        "status",
        "failed",
        "output",
        "request_info",
        "superstep_started",
        "superstep_completed",
        "executor_invoked",
        "executor_completed",
        "executor_failed",
    }
)


class WorkflowRunState(str, enum.Enum):
    """Where a run stands. ``IDLE`` means finished with nothing left to do."""

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

    def to_dict(self) -> dict[str, Any]:
        return {
            "error_type": self.error_type,
            "message": self.message,
            "traceback": self.traceback,
            "executor_id": self.executor_id,
        }


@dataclass(frozen=True, slots=True)
class WorkflowEvent:
    """One thing that happened in a run.

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
    """

    type: str
    data: Any = None
    executor_id: str | None = None
    iteration: int | None = None
    checkpoint_id: str | None = None
    state: WorkflowRunState | None = None
    details: ErrorDetails | None = None

    def to_dict(self, *, registry: TypeRegistry = default_registry) -> dict[str, Any]:
        """JSON-safe form; ``data`` goes through the checkpoint codec."""
        out: dict[str, Any] = {"type": self.type}
        if self.data is not None:
            out["data"] = codec.encode(self.data, registry=registry, where=f"{self.type} event")
        for name in ("executor_id", "iteration", "checkpoint_id"):
            value = getattr(self, name)
            if value is not None:
                out[name] = value
        if self.state is not None:
            out["state"] = self.state.value
        if self.details is not None:
            out["details"] = self.details.to_dict()
        return out


@dataclass(frozen=True, slots=True)
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
