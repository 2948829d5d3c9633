"""The HTTP side of the local OpenAI server: one scripted answer per call, faults included.

``ScriptedService`` takes each call to ``/v1/responses`` or ``/v1/chat/completions``, records
it, takes the next script entry and answers it: JSON or server-sent events (``openai_wire``),
an HTTP error, a stall, a hang-up or a broken stream (``openai_script``). It runs in the
server's own event loop; what it records is read from other threads under its lock, and every
change is announced to ``on_change`` so waiters can look again.
"""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import json
import math
import threading
import time
from collections.abc import Callable, Sequence
from typing import Any

from aiohttp import web
from openai_script import (
    BrokenStream,
    HttpError,
    RecordedRequest,
    Reply,
    ScriptEntry,
    Stall,
    as_reply,
    count_words,
)
from openai_wire import (
    SseEvent,
    WireCall,
    WireTurn,
    breaking_event,
    completion_body,
    completion_chunks,
    encode_sse,
    error_body,
    is_text_delta,
    output_items,
    response_body,
    response_events,
)

__all__ = ["ScriptedService"]

# How often a held streamed answer checks that its client is still there.
_WATCH_INTERVAL = 0.02


class _HangUp(Exception):
    """Close the connection without answering."""


class ScriptedService:
    """Answers OpenAI API calls from a script (see the module docstring).

    Args:
        script: the entries, one per call, in order.
        api_key: the bearer key a call must carry (401 otherwise).
        model: the model answers report when a call names none.
        on_change: called, in the service's loop, after every recorded change.
    """

    def __init__(
        self,
        script: Sequence[ScriptEntry],
        *,
        api_key: str,
        model: str,
        on_change: Callable[[], None],
    ) -> None:
        self.lock = threading.Lock()
        self.script: list[ScriptEntry] = list(script)
        self.requests: list[RecordedRequest] = []
        self.holds: set[asyncio.Event] = set()
        self.closing = False
        self._api_key = api_key
        self._model = model
        self._changed = on_change
        self._stored: dict[str, list[dict[str, Any]]] = {}

    def release_all(self) -> None:
        """Let every call stalled or held right now go on (call in the service's loop)."""
        with self.lock:
            holds = list(self.holds)
        for hold in holds:
            hold.set()

    # ----------------------------------------------------------------------------- one call

    async def handle(self, request: web.Request) -> web.StreamResponse:
        """The aiohttp handler of both endpoints."""
        if request.headers.get("Authorization") != f"Bearer {self._api_key}":
            return _error(401, "Incorrect API key provided.", "invalid_api_key")
        try:
            body = await request.json()
        except ValueError:
            return _error(400, "We could not parse the JSON body of your request.")
        record, entry, refusal = self._take(request.path.removeprefix("/v1/"), body)
        if refusal is not None:
            return self._finish(record, "refused", refusal)
        try:
            return await self._answer(request, record, entry)
        except _HangUp:
            self._finish(record, record.outcome if record.outcome != "pending" else "hung up")
        except ConnectionResetError:
            self._finish(record, "client gone")
        # aiohttp takes a cancelled handler for a client that went away: it closes the socket
        # without an answer and without logging an error.
        if request.transport is not None:
            request.transport.abort()
        raise asyncio.CancelledError

    def _take(
        self, endpoint: str, body: dict[str, Any]
    ) -> tuple[RecordedRequest, ScriptEntry | None, web.Response | None]:
        """Record the call and take its script entry, under one lock (calls may race)."""
        with self.lock:
            record = RecordedRequest(
                number=len(self.requests) + 1,
                endpoint=endpoint,
                body=body,
                received_at=time.monotonic(),
            )
            self.requests.append(record)
            previous = record.previous_response_id
            refusal = None
            if previous is not None and previous not in self._stored:
                message = f"Previous response with id '{previous}' not found."
                refusal = _error(
                    400, message, "previous_response_not_found", "previous_response_id"
                )
            elif previous is not None:
                record.history = list(self._stored[previous])
            entry = self.script.pop(0) if self.script and refusal is None else None
            if entry is None and refusal is None:
                refusal = _error(400, f"script exhausted at call {record.number}", "exhausted")
        self._changed()
        return record, entry, refusal

    def _finish(
        self, record: RecordedRequest, outcome: str, response: web.StreamResponse | None = None
    ) -> Any:
        record.outcome = outcome
        self._changed()
        return response

    async def _answer(
        self, request: web.Request, record: RecordedRequest, entry: Any
    ) -> web.StreamResponse:
        while callable(entry):
            produced = entry(record)
            entry = await produced if inspect.isawaitable(produced) else produced
        if isinstance(entry, Stall):
            record.outcome = "stalled"
            await self._hold(entry.seconds)
            if entry.then is None or self.closing:
                raise _HangUp
            return await self._answer(request, record, entry.then)
        if isinstance(entry, HttpError):
            return self._finish(record, f"http {entry.status}", _http_error(entry))
        if isinstance(entry, BrokenStream):
            return await self._break(request, record, entry)
        reply = as_reply(entry)
        turn = self._turn(record, reply)
        if record.stream:
            return await self._stream(request, record, turn, hold_after=reply.hold_after)
        self._remember(record, turn)
        body = response_body(turn) if record.endpoint == "responses" else completion_body(turn)
        return self._finish(record, "answered", web.json_response(body))

    def _turn(self, record: RecordedRequest, reply: Reply) -> WireTurn:
        calls = tuple(
            WireCall(
                call_id=call.call_id or f"call_{record.number:04d}_{index}",
                name=call.name,
                arguments=json.dumps(dict(call.arguments)),
            )
            for index, call in enumerate(reply.tool_calls)
        )
        turn = WireTurn(
            number=record.number,
            model=str(record.body.get("model") or self._model),
            text=reply.text,
            calls=calls,
            input_tokens=count_words(record.conversation),
            output_tokens=count_words(reply.text) + sum(count_words(c.arguments) for c in calls),
            previous_response_id=record.previous_response_id,
        )
        record.usage = (turn.input_tokens, turn.output_tokens)
        return turn

    def _events(self, record: RecordedRequest, turn: WireTurn) -> list[SseEvent]:
        if record.endpoint == "responses":
            return list(response_events(turn))
        options = record.body.get("stream_options") or {}
        return list(completion_chunks(turn, include_usage=bool(options.get("include_usage"))))

    def _remember(self, record: RecordedRequest, turn: WireTurn) -> None:
        """Keep a stored response's conversation for a later ``previous_response_id``."""
        if record.endpoint == "responses" and record.body.get("store") is not False:
            with self.lock:
                self._stored[turn.response_id] = [*record.conversation, *output_items(turn)]

    # ---------------------------------------------------------------------------- streaming

    async def _stream(
        self,
        request: web.Request,
        record: RecordedRequest,
        turn: WireTurn,
        *,
        hold_after: int | None,
    ) -> web.StreamResponse:
        response = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
        await response.prepare(request)
        events = self._events(record, turn)
        deltas = 0
        for position, event in enumerate(events, start=1):
            if position == len(events):
                # Stored before the last event leaves: the client may chain on it at once.
                self._remember(record, turn)
            await response.write(encode_sse(event))
            if is_text_delta(event):
                deltas += 1
                if deltas == hold_after:
                    record.outcome = "held"
                    await self._hold(None, watch=request)
        await response.write_eof()
        return self._finish(record, "answered", response)

    async def _break(
        self, request: web.Request, record: RecordedRequest, broken: BrokenStream
    ) -> web.StreamResponse:
        turn = self._turn(record, as_reply(broken.reply))
        if not record.stream:
            if broken.how == "drop":
                record.outcome = "broken: drop"
                raise _HangUp
            whole = response_body(turn) if record.endpoint == "responses" else completion_body(turn)
            text = json.dumps(whole)
            cut = web.Response(text=text[: len(text) // 2], content_type="application/json")
            return self._finish(record, f"broken: {broken.how}", cut)
        response = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
        await response.prepare(request)
        for event in self._events(record, turn)[: broken.after]:
            await response.write(encode_sse(event))
        if broken.how == "drop":
            record.outcome = "broken: drop"
            raise _HangUp
        await response.write(encode_sse(breaking_event(record.endpoint, broken.how, broken.after)))
        await response.write_eof()
        return self._finish(record, f"broken: {broken.how}", response)

    async def _hold(self, seconds: float | None, watch: web.Request | None = None) -> None:
        """Wait for ``release_all()``, the service's closing or ``seconds``; while ``watch``'s
        answer is under way, a client that hangs up ends the wait (``ConnectionResetError``)."""
        if self.closing:
            return
        released = asyncio.Event()
        with self.lock:
            self.holds.add(released)
        self._changed()
        loop = asyncio.get_running_loop()
        deadline = None if seconds is None else loop.time() + seconds
        try:
            while not released.is_set():
                if watch is not None and _client_left(watch):
                    raise ConnectionResetError("the client hung up while the answer was held")
                left = None if deadline is None else deadline - loop.time()
                if left is not None and left <= 0:
                    return
                # Unwatched, only the release or the deadline can end the wait.
                step = left if watch is None else min(_WATCH_INTERVAL, left or _WATCH_INTERVAL)
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(released.wait(), step)
        finally:
            with self.lock:
                self.holds.discard(released)
            self._changed()


def _client_left(request: web.Request) -> bool:
    transport = request.transport
    return transport is None or transport.is_closing()


def _http_error(entry: HttpError) -> web.Response:
    headers = {}
    if entry.retry_after is not None:
        # Both, as OpenAI's service sends them; the SDK prefers the milliseconds.
        headers["retry-after"] = str(math.ceil(entry.retry_after))
        headers["retry-after-ms"] = str(round(entry.retry_after * 1000))
    return _error(entry.status, entry.message, f"http_{entry.status}", headers=headers)


def _error(
    status: int,
    message: str,
    code: str | None = None,
    param: str | None = None,
    *,
    headers: dict[str, str] | None = None,
) -> web.Response:
    body = error_body(status, message, code, param)
    return web.json_response(body, status=status, headers=headers)
