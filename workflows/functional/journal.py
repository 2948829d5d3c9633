"""The step journal: what each ``@step`` call of a run attempt did, in call order.

Every functional checkpoint carries it (the ``steps`` records, see ``layout`` and the package
docstring), so an operator page can list a run's steps from the checkpoint alone:
``read_steps(checkpoint)`` returns them as ``StepRecord`` objects, with each result taken from
the checkpoint's saved results.
"""

from __future__ import annotations

import reprlib
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from .. import codec
from ..checkpoint import WorkflowCheckpoint, now_timestamp
from ..exceptions import CheckpointEncodeError
from .layout import read_records

__all__ = ["StepJournal", "StepRecord", "read_steps"]

_REPR = reprlib.Repr(maxstring=200, maxother=200)


@dataclass(slots=True)
class StepRecord:
    """One step call of a run attempt.

    Attributes:
        step: the step's name.
        key: the key its result is saved under (see ``workflows.functional.book``).
        status: ``running``, ``computed``, ``replayed`` (returned from a saved result without
            calling the step) or ``failed``.
        input: the call's arguments as the checkpoint codec's JSON
            (``{"args": [...], "kwargs": {...}}``; ``workflows.codec.decode`` rebuilds them), or
            ``{"repr": text}`` when they cannot be stored.
        started_at: when the call was made (ISO 8601).
        duration_ms: how long the step's function ran; for a replayed step, when it was
            computed. None while it runs.
        error: ``Type: message`` of a failed call.
        result: the saved result (``read_steps`` fills it in; None when there is none yet).
        has_result: whether ``result`` holds a saved result.
    """

    step: str
    key: str
    status: str
    input: Any
    started_at: str
    duration_ms: float | None = None
    error: str | None = None
    result: Any = None
    has_result: bool = False
    _clock: float = field(default=0.0, repr=False, compare=False)

    @property
    def replayed(self) -> bool:
        """Whether the result came from a checkpoint instead of a call of the step."""
        return self.status == "replayed"

    def finished(self) -> None:
        self.status = "computed"
        self.duration_ms = round((time.perf_counter() - self._clock) * 1000, 3)

    def failed(self, error: BaseException) -> None:
        self.status = "failed"
        self.duration_ms = round((time.perf_counter() - self._clock) * 1000, 3)
        self.error = f"{type(error).__name__}: {error}"

    def to_record(self) -> dict[str, Any]:
        record: dict[str, Any] = {
            "step": self.step,
            "key": self.key,
            "status": self.status,
            "replayed": self.replayed,
            "input": self.input,
            "started_at": self.started_at,
            "duration_ms": self.duration_ms,
        }
        if self.error is not None:
            record["error"] = self.error
        return record


class StepJournal:
    """The step calls of one run attempt, in the order they were made.

    Inputs are stored (encoded as they are at the call) only when ``keep_inputs`` is set: a run
    without a checkpoint storage writes no checkpoint to show them in.
    """

    def __init__(self) -> None:
        self.records: list[StepRecord] = []
        self.keep_inputs = False

    def _input(self, args: tuple[Any, ...], kwargs: Mapping[str, Any]) -> Any:
        return stored_input(args, kwargs) if self.keep_inputs else None

    def called(
        self, step: str, key: str, args: tuple[Any, ...], kwargs: Mapping[str, Any]
    ) -> StepRecord:
        record = StepRecord(step, key, "running", self._input(args, kwargs), now_timestamp())
        record._clock = time.perf_counter()
        self.records.append(record)
        return record

    def replayed(
        self,
        step: str,
        key: str,
        args: tuple[Any, ...],
        kwargs: Mapping[str, Any],
        duration_ms: float | None,
    ) -> None:
        record = StepRecord(step, key, "replayed", self._input(args, kwargs), now_timestamp())
        record.duration_ms = duration_ms
        self.records.append(record)

    def export(self) -> list[dict[str, Any]]:
        return [record.to_record() for record in self.records]


def stored_input(args: tuple[Any, ...], kwargs: Mapping[str, Any]) -> Any:
    """A call's arguments in a form any checkpoint can hold (the caller leaves the run's
    context handle out)."""
    given = {"args": list(args), "kwargs": dict(kwargs)}
    try:
        return codec.encode(given, where="step input")
    except CheckpointEncodeError:
        return {"repr": _REPR.repr(given)}


def read_steps(checkpoint: WorkflowCheckpoint | Mapping[str, Any]) -> list[StepRecord]:
    """The step calls recorded in a functional run's checkpoint, in call order, each with its
    saved result.

    Args:
        checkpoint: a checkpoint a ``FunctionalWorkflow`` wrote, or its ``state``: decoded, or
            as the codec's JSON (then each result stays in that form too, for a reader that
            shows values without their classes).

    Returns:
        The records of the attempt that wrote it (empty for a checkpoint of a graph workflow).
    """
    state = checkpoint.state if isinstance(checkpoint, WorkflowCheckpoint) else checkpoint
    cache = read_records(state, "cache")
    results = {r["key"]: r for r in cache if isinstance(r, dict) and "key" in r}
    out = []
    for raw in read_records(state, "steps"):
        saved = results.get(raw.get("key"))
        out.append(
            StepRecord(
                step=raw["step"],
                key=raw["key"],
                status=raw["status"],
                input=raw.get("input"),
                started_at=raw.get("started_at", ""),
                duration_ms=raw.get("duration_ms"),
                error=raw.get("error"),
                result=saved["result"] if saved is not None else None,
                has_result=saved is not None,
            )
        )
    return out
