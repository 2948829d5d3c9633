"""What a worker keeps of its run's agents: one event per reply, and one per model call.

A streaming agent's reply reaches the worker as one ``output`` event per chunk. Stored as they
come, a reply of 2,000 tokens would be 2,000 event rows, and the run's output its last chunk.
``ReplyJoin`` keeps a reply's chunks in one ``_Reply`` entry of the pending events, turned
into a single ``output`` event holding the whole reply (MAF's ``AgentResponse``) when the
superstep's events are taken for its commit: rows and commits per reply do not depend on its
length.

``ModelCalls`` is the run's ``workflows.AgentObserver``: every finished reply of every agent,
output executor or not, becomes a ``model_call`` event with the tokens its model reported and
their price from the table read when the attempt began. The commit adds them to the run's
totals in the same statement (``services.checkpoint_commit``). While a reply streams, its text
so far goes to the run's pages (``broadcast.broadcast_reply``) at most every
``STREAM_SECONDS`` per reply, its first chunk at once and its end when it is done: a few
chunks per frame, never a database write. A chunk held back by the frame is sent when the
frame ends, even if the model says nothing more meanwhile: held text never waits for the next
chunk, so the page is never more than a frame behind the model.

Nothing here imports ``agent_framework`` unless a run has agents: the classes are recognised
by name and module, and the join imports MAF only to merge chunks it was given.
"""

from __future__ import annotations

import asyncio
import dataclasses
import time
from collections.abc import Callable
from typing import Any

from dashboard import broadcast
from dashboard.core import run_events
from dashboard.selectors import PriceTable
from workflows import WorkflowEvent

__all__ = ["STREAM_SECONDS", "ModelCalls", "Pending", "drain", "is_reply_chunk"]

# How often a streaming reply's pages are told its text so far: 40 frames a second, so a
# chunk reaches a page within a frame plus the trip (the token-to-browser benchmark's p95).
STREAM_SECONDS = 0.025


def is_reply_chunk(data: Any) -> bool:
    """Whether an output is a streamed chunk of an agent's reply (MAF's ``AgentResponseUpdate``)."""
    kind = type(data)
    return kind.__name__ == "AgentResponseUpdate" and kind.__module__.startswith("agent_framework")


@dataclasses.dataclass
class _Reply:
    """The chunks of one reply so far, with the event of its first chunk."""

    first: WorkflowEvent
    chunks: list[Any]

    @property
    def key(self) -> tuple[str | None, str | None]:
        chunk = self.chunks[0]
        return self.first.executor_id, chunk.message_id or chunk.response_id

    def event(self) -> WorkflowEvent:
        """One output event with the whole reply."""
        from agent_framework import AgentResponse

        return dataclasses.replace(self.first, data=AgentResponse.from_updates(self.chunks))


# The events of the superstep under way: event dicts, and replies still being joined.
type Pending = list[dict[str, Any] | _Reply]


class ReplyJoin:
    """Appends a run's events to its pending list, a reply's chunks joined into one entry."""

    def __init__(self, pending: Pending, as_dict: Callable[[WorkflowEvent], dict[str, Any]]):
        self._pending = pending
        self._as_dict = as_dict
        self.last_output: Any = None  # the last output: an event's data, or a _Reply

    def add(self, event: WorkflowEvent) -> None:
        if event.type == "output" and is_reply_chunk(event.data):
            last = self._pending[-1] if self._pending else None
            chunk: Any = event.data
            chunk_key = (event.executor_id, chunk.message_id or chunk.response_id)
            if isinstance(last, _Reply) and last.key == chunk_key:
                last.chunks.append(chunk)
            else:
                last = _Reply(event, [chunk])
                self._pending.append(last)
            self.last_output = last
            return
        self._pending.append(self._as_dict(event))
        if event.type == "output":
            self.last_output = event.data

    def output(self) -> Any:
        """The data of the run's last output (a joined reply's whole response)."""
        if isinstance(self.last_output, _Reply):
            return self.last_output.event().data
        return self.last_output


def drain(
    pending: Pending, as_dict: Callable[[WorkflowEvent], dict[str, Any]]
) -> list[dict[str, Any]]:
    """Take every pending event for a commit, each reply as one event."""
    taken = [as_dict(entry.event()) if isinstance(entry, _Reply) else entry for entry in pending]
    pending.clear()
    return taken


@dataclasses.dataclass
class _Stream:
    """A reply being streamed: its text so far and when its pages were last told."""

    executor_id: str
    parts: list[str]
    told: float
    # The end of the frame, when chunks are held back: it sends them.
    flush: asyncio.TimerHandle | None = None


class ModelCalls:
    """A run's ``workflows.AgentObserver``: a ``model_call`` event per finished reply, and each
    streaming reply's text so far to the run's pages."""

    def __init__(self, run_id: Any, pending: Pending, prices: PriceTable) -> None:
        self._run_id = run_id
        self._pending = pending
        self._prices = prices
        self._streams: dict[str, _Stream] = {}

    def reply_update(self, executor_id: str, update: Any) -> None:
        # Each agent's client numbers its own messages: the executor makes the id the run's.
        reply_id = f"{executor_id}:{update.message_id or update.response_id or ''}"
        stream = self._streams.get(reply_id)
        moment = time.monotonic()
        if stream is None:
            # Never told yet: its first chunk goes out at once.
            stream = self._streams[reply_id] = _Stream(executor_id, [], float("-inf"))
        stream.parts.append(update.text)
        if moment - stream.told >= STREAM_SECONDS:
            self._flush(reply_id)
        elif stream.flush is None:
            try:
                loop = asyncio.get_running_loop()
            except RuntimeError:  # called from no loop (a test's thread): the next chunk tells
                return
            wait = STREAM_SECONDS - (moment - stream.told)
            stream.flush = loop.call_later(wait, self._flush, reply_id)

    def _flush(self, reply_id: str) -> None:
        stream = self._streams.get(reply_id)
        if stream is None:
            return  # done meanwhile: its end was told
        if stream.flush is not None:
            stream.flush.cancel()
            stream.flush = None
        stream.told = time.monotonic()
        self._tell(reply_id, stream, done=False)

    def _tell(self, reply_id: str, stream: _Stream, *, done: bool) -> None:
        broadcast.broadcast_reply(
            self._run_id,
            executor_id=stream.executor_id,
            reply_id=reply_id,
            text="".join(stream.parts),
            done=done,
        )

    def reply_done(self, executor_id: str, response: Any, model: str) -> None:
        for reply_id, stream in list(self._streams.items()):
            if stream.executor_id == executor_id:
                if stream.flush is not None:
                    stream.flush.cancel()
                self._tell(reply_id, stream, done=True)
                del self._streams[reply_id]
        usage = response.usage_details or {}
        input_tokens = int(usage.get("input_token_count") or 0)
        output_tokens = int(usage.get("output_token_count") or 0)
        cost = self._prices.cost(model, input_tokens, output_tokens)
        self._pending.append(
            dict(
                run_events.model_call(
                    executor_id,
                    model,
                    input_tokens,
                    output_tokens,
                    None if cost is None else str(cost),
                    round(time.time(), 4),
                )
            )
        )
