"""The step results a functional run can replay, by the key that identifies each call.

A key is a JSON array naming how the call was identified:

- ``["auto", step, code, arguments, occurrence]``: the step's code fingerprint, its bound
  arguments' fingerprint, and how many identical calls came before in the run;
- ``["explicit", step, source, replay_key]``: the step's source fingerprint and the SHA-256 of
  what its ``replay_key`` returned (the caller's own versioning contract);
- ``["order", step, index]``: the index among the calls of that step whose arguments have no
  fingerprint. Such an entry also keeps the argument types; a call whose types differ is a
  mismatch, not a replay.

The book holds every result the lineage has saved (those of earlier attempts included), so a
checkpoint written mid-resume still carries results this attempt has not reached yet.
"""

from __future__ import annotations

import copy
import json
from dataclasses import dataclass
from typing import Any

from ..exceptions import CheckpointDecodeError, StepMismatchError, StepReplayError

__all__ = ["SavedResult", "StepBook"]


@dataclass(slots=True)
class SavedResult:
    """One saved step result: the step's name, the value, the number of automatic request ids
    the call used (a replay advances the counter by as much), the argument types of an
    ``order`` key, and how long the step ran when it was computed."""

    step: str
    value: Any
    requests: int = 0
    shape: list[str] | None = None
    replayable: bool = True
    duration_ms: float | None = None


class StepBook:
    """Saved results by key, and the counters that make the keys of one run attempt."""

    def __init__(self, workflow_name: str) -> None:
        self.workflow_name = workflow_name
        self.saved: dict[str, SavedResult] = {}
        # Code fingerprints each step name has in the workflow as it is now.
        self.expected_code: dict[str, set[str]] = {}
        self._order: dict[str, int] = {}
        self._occurrences: dict[tuple[str, str, str], int] = {}
        self._explicit: set[str] = set()
        # The code fingerprints saved at each (step, occurrence) place of an ``auto`` key.
        self._places: dict[tuple[str, int], set[str]] = {}

    # ---------------------------------------------------------------------------------- keys

    def order_key(self, step: str) -> str:
        index = self._order.get(step, 0)
        self._order[step] = index + 1
        return json.dumps(["order", step, index], ensure_ascii=False)

    def auto_key(self, step: str, code: str, arguments: str) -> str:
        seen = (step, code, arguments)
        occurrence = self._occurrences.get(seen, 0)
        self._occurrences[seen] = occurrence + 1
        return json.dumps(["auto", step, code, arguments, occurrence], ensure_ascii=False)

    def explicit_key(self, step: str, source: str, replay_key: str) -> str:
        key = json.dumps(["explicit", step, source, replay_key], ensure_ascii=False)
        if key in self._explicit:
            raise StepReplayError(
                f"@step {step!r} got the same replay_key twice in one run (a duplicate replay_key "
                "value): each replay_key must name one logical call",
                step,
            )
        self._explicit.add(key)
        return key

    # ------------------------------------------------------------------------------- lookups

    def find(self, key: str, shape: list[str] | None = None) -> SavedResult | None:
        """The saved result of ``key``, or None.

        Raises:
            StepReplayError: the result was kept only for this process and cannot be replayed.
            StepMismatchError: an ``order`` entry saved for arguments of other types.
        """
        saved = self.saved.get(key)
        if saved is None:
            return None
        if not saved.replayable:
            raise StepReplayError(
                f"the saved result of @step {saved.step!r} cannot be replayed safely", saved.step
            )
        if saved.shape is not None and shape is not None and saved.shape != shape:
            raise StepMismatchError(
                f"the saved call of @step {saved.step!r} at this place took arguments of types "
                f"{saved.shape}, this call takes {shape}: the workflow's code or its inputs "
                "changed, so the saved result is not compatible with this call",
                workflow_name=self.workflow_name,
                changed=(f"step {saved.step!r}",),
            )
        return saved

    def conflicts(self, key: str) -> bool:
        """Whether an ``auto`` key's place (step, occurrence) holds a result saved by code this
        workflow no longer has: the calls no longer pair up."""
        _, step, code, _, occurrence = json.loads(key)
        expected = self.expected_code.get(step, set())
        saved = self._places.get((step, occurrence), set())
        return any(other != code and other not in expected for other in saved)

    def replay_value(self, saved: SavedResult) -> Any:
        """A fresh copy of a saved value: the run may change what it gets back.

        Raises:
            StepReplayError: the value cannot be copied.
        """
        try:
            return copy.deepcopy(saved.value)
        except Exception as exc:
            raise StepReplayError(
                f"the saved result of @step {saved.step!r} cannot be copied for a replay: {exc}",
                saved.step,
            ) from exc

    # --------------------------------------------------------------------------------- store

    def save(self, key: str, result: SavedResult) -> None:
        self.saved[key] = result
        self._index(key)

    def _index(self, key: str) -> None:
        parts = json.loads(key)
        if parts[0] == "auto":
            self._places.setdefault((parts[1], parts[4]), set()).add(parts[2])

    def export(self) -> list[dict[str, Any]]:
        """The saved results as checkpoint records, oldest first.

        Raises:
            StepReplayError: a result cannot be replayed (it could not be copied, or its step's
                identity is not durable); MAF refuses to checkpoint such a run too.
        """
        records = []
        for key, saved in self.saved.items():
            if not saved.replayable:
                raise StepReplayError(
                    f"Cannot checkpoint @step {saved.step!r}: its result could not be copied, or "
                    "the step captures state (a closure) that no fingerprint describes. Give it "
                    "@step(replay_key=...), return a value that can be copied, or run without "
                    "checkpoint storage and human-in-the-loop requests",
                    saved.step,
                )
            record: dict[str, Any] = {"key": key, "step": saved.step, "result": saved.value}
            if saved.requests:
                record["requests"] = saved.requests
            if saved.shape is not None:
                record["shape"] = saved.shape
            if saved.duration_ms is not None:
                record["duration_ms"] = saved.duration_ms
            records.append(record)
        return records

    def load(self, records: Any) -> None:
        """Take saved results from checkpoint records (``export()``'s form).

        Raises:
            CheckpointDecodeError: the records are not what ``export()`` writes.
        """
        try:
            for record in records:
                key = record["key"]
                if not isinstance(key, str) or not isinstance(record["step"], str):
                    raise TypeError("keys and step names are strings")
                shape = record.get("shape")
                requests = int(record.get("requests", 0))
                saved = SavedResult(record["step"], record["result"], requests)
                saved.shape = list(shape) if shape is not None else None
                saved.duration_ms = record.get("duration_ms")
                self.save(key, saved)
        except (KeyError, TypeError, ValueError, IndexError) as exc:
            raise CheckpointDecodeError(
                f"the saved steps of functional workflow {self.workflow_name!r} are malformed "
                f"in this checkpoint: {exc!r}"
            ) from exc

    def copy_from(self, other: StepBook) -> None:
        """Take another attempt's saved results (a response-only resume in this process)."""
        for key, r in other.saved.items():
            self.save(
                key, SavedResult(r.step, r.value, r.requests, r.shape, r.replayable, r.duration_ms)
            )
