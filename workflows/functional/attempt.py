"""One call of ``FunctionalWorkflow.run``: where its run comes from, and its checkpoints.

A call is a fresh run (a message), a resume from a checkpoint (in any process), or a resume of
the run this workflow object paused last (answers only, MAF's "response-only replay"). Each
builds a ``RunContext`` holding the saved results, state, pending requests and answers it goes
on from, and writes checkpoints after each computed step and when the call ends.
"""

from __future__ import annotations

import asyncio
import copy
import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from .. import codec, tracing
from ..checkpoint import CheckpointKind, WorkflowCheckpoint
from ..events import RequestInfoEvent
from ..exceptions import CheckpointEncodeError, RunArgumentsError, StepMismatchError
from ..registry import default_registry, is_restorable_class
from .book import StepBook
from .context import RunContext
from .discovery import Signature, describe_changes
from .layout import STATE_KEY, read_records, write_records

if TYPE_CHECKING:
    from ..storage.protocol import CheckpointStorage

__all__ = ["Attempt", "Held", "begin"]

FORMAT = 1


@dataclass
class Held:
    """What a paused run keeps in memory, so ``run(responses=...)`` can resume it."""

    run_id: str
    message: Any
    book: StepBook
    state: dict[str, Any]
    pending: dict[str, RequestInfoEvent]
    answers: dict[str, Any]
    signature_hash: str
    last_checkpoint_id: str | None = None
    trace_carrier: dict[str, str] | None = None


@dataclass
class Origin:
    """Where a run call goes on from, and what it was given."""

    message: Any = None
    responses: Mapping[str, Any] | None = None
    checkpoint_id: str | None = None
    run_id: str | None = None
    held: Held | None = None


@dataclass
class Attempt:
    """A run call under way: its context, lineage and checkpoint chain."""

    name: str
    signature: Signature
    ctx: RunContext
    storage: CheckpointStorage | None
    run_id: str
    message: Any
    last_checkpoint_id: str | None = None
    trace_carrier: dict[str, str] | None = None
    # What the function is called with; ``message`` is a copy taken first, kept for resumes
    # (the function may change what it is given).
    given: Any = None
    _lock: asyncio.Lock = field(default_factory=asyncio.Lock)

    async def save(self, kind: CheckpointKind) -> str | None:
        """Write a checkpoint of the run as it is now (none without a storage).

        Raises:
            StepReplayError: a saved result cannot be replayed (MAF refuses it too).
            CheckpointEncodeError: a value the checkpoint codec cannot store.
        """
        if self.storage is None:
            return None
        async with self._lock:  # one chain: each checkpoint follows the one saved before it
            checkpoint = self.checkpoint(kind)
            try:
                self.last_checkpoint_id = await self.storage.save(checkpoint)
            except CheckpointEncodeError as error:
                raise self._named(error) from error
        return self.last_checkpoint_id

    def _named(self, error: CheckpointEncodeError) -> CheckpointEncodeError:
        """The codec's refusal, naming the step whose result it refused when one did."""
        for saved in self.ctx._book.saved.values():
            try:
                codec.encode(saved.value, where="result")
            except CheckpointEncodeError as refused:
                return CheckpointEncodeError(
                    f"the result of @step {saved.step!r} cannot be stored in a checkpoint: "
                    f"{refused}. Return JSON values, datetimes, Decimals..., MAF chat types, or a "
                    "dataclass, pydantic model or Enum (named in the step's annotations or "
                    "registered with workflows.register_type)"
                )
        return error

    def checkpoint(self, kind: CheckpointKind) -> WorkflowCheckpoint:
        ctx = self.ctx
        state = dict(ctx._state)
        header: dict[str, Any] = {
            "format": FORMAT,
            "input": self.message,
            "answers": dict(ctx._responses),
        }
        write_records(state, header, "cache", ctx._book.export())
        write_records(state, header, "steps", ctx._journal.export())
        state[STATE_KEY] = header
        metadata: dict[str, Any] = {"kind": kind.value}
        if self.trace_carrier is not None:
            metadata[tracing.TRACE_KEY] = self.trace_carrier
        return WorkflowCheckpoint(
            workflow_name=self.name,
            graph_signature_hash=self.signature.hash,
            graph_signature=self.signature.document,
            run_id=self.run_id,
            previous_checkpoint_id=self.last_checkpoint_id,
            iteration_count=len(ctx._book.saved),
            state=state,
            pending_request_info_events=dict(ctx._pending),
            metadata=metadata,
        )

    def hold(self) -> Held:
        """The paused run, kept for a response-only resume.

        Raises:
            StepReplayError: a saved result cannot be replayed.
        """
        self.ctx._book.export()  # refuses results that could not be replayed
        book = StepBook(self.name)
        book.copy_from(self.ctx._book)
        return Held(
            run_id=self.run_id,
            message=self.message,
            book=book,
            state=dict(self.ctx._state),
            pending=dict(self.ctx._pending),
            answers=dict(self.ctx._responses),
            signature_hash=self.signature.hash,
            last_checkpoint_id=self.last_checkpoint_id,
            trace_carrier=self.trace_carrier,
        )


async def begin(
    name: str,
    signature: Signature,
    ctx: RunContext,
    storage: CheckpointStorage | None,
    origin: Origin,
) -> Attempt:
    """Set ``ctx`` up for the run call ``origin`` describes.

    Raises:
        RunArgumentsError: a checkpoint id without a checkpoint storage.
        StepMismatchError: the checkpoint (or the paused run) was written by other code.
        CheckpointNotFoundError: the storage has no such checkpoint.
    """
    ctx._book.expected_code = signature.expected_code()
    attempt = Attempt(name, signature, ctx, storage, origin.run_id or "", origin.message)
    carried: dict[str, Any] = {}
    if origin.checkpoint_id is not None:
        carried = await _from_checkpoint(attempt, origin.checkpoint_id)
    elif origin.responses and origin.held is not None:
        carried = _from_held(attempt, origin.held)
    if not attempt.run_id:
        attempt.run_id = uuid.uuid4().hex
    attempt.given = origin.message if origin.message is not None else attempt.message
    attempt.message = _copy_or_same(attempt.given)
    if is_restorable_class(type(attempt.message)):
        default_registry.register(type(attempt.message))
    ctx._responses.update(carried)  # answers given before in the lineage: no second warning
    ctx._answer(dict(origin.responses or {}))
    return attempt


async def _from_checkpoint(attempt: Attempt, checkpoint_id: str) -> dict[str, Any]:
    if attempt.storage is None:
        raise RunArgumentsError(
            f"resuming from checkpoint {checkpoint_id!r} needs a checkpoint_storage; pass one to "
            "build(checkpoint_storage=...) or to run(checkpoint_storage=...)"
        )
    checkpoint = await attempt.storage.load(checkpoint_id)
    _check_signature(attempt, checkpoint)
    record = checkpoint.state.get(STATE_KEY)
    record = record if isinstance(record, dict) else {}
    ctx = attempt.ctx
    ctx._book.load(read_records(checkpoint.state, "cache"))
    ctx._state = {k: v for k, v in checkpoint.state.items() if not k.startswith("_")}
    ctx._pending = dict(checkpoint.pending_request_info_events)
    attempt.message = record.get("input")
    attempt.run_id = attempt.run_id or checkpoint.run_id
    attempt.last_checkpoint_id = checkpoint.checkpoint_id
    attempt.trace_carrier = _carrier(checkpoint.metadata.get(tracing.TRACE_KEY))
    answers = record.get("answers")
    return dict(answers) if isinstance(answers, dict) else {}


def _from_held(attempt: Attempt, held: Held) -> dict[str, Any]:
    if held.signature_hash != attempt.signature.hash:
        raise StepMismatchError(
            f"the paused run of workflow {attempt.name!r} was made by a different version of "
            "its code and is not compatible with this one: its saved steps no longer pair with "
            "this code's calls; start a new run",
            workflow_name=attempt.name,
        )
    attempt.ctx._book.copy_from(held.book)
    attempt.ctx._state = dict(held.state)
    attempt.message = held.message
    attempt.run_id = attempt.run_id or held.run_id
    attempt.last_checkpoint_id = held.last_checkpoint_id
    attempt.trace_carrier = held.trace_carrier
    return dict(held.answers)


def _check_signature(attempt: Attempt, checkpoint: WorkflowCheckpoint) -> None:
    if checkpoint.graph_signature_hash == attempt.signature.hash:
        return
    changes = describe_changes(checkpoint.graph_signature, attempt.signature.document)
    detail = f": {'; '.join(changes)}" if changes else ""
    raise StepMismatchError(
        f"checkpoint {checkpoint.checkpoint_id!r} was written by a different version of workflow "
        f"{checkpoint.workflow_name!r} and is not compatible with this one{detail}; its saved "
        "steps would not pair with this code's calls. Start a new run, or resume it with the "
        "code that wrote it",
        workflow_name=attempt.name,
        changed=changes,
    )


def _copy_or_same(value: Any) -> Any:
    try:
        return copy.deepcopy(value)
    except Exception:  # noqa: BLE001 - an input that cannot be copied is kept as it is
        return value


def _carrier(value: Any) -> dict[str, str] | None:
    if (
        isinstance(value, dict)
        and value
        and all(isinstance(k, str) and isinstance(v, str) for k, v in value.items())
    ):
        return dict(value)
    return None
