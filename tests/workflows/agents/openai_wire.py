"""The JSON an OpenAI-compatible service answers with, for one resolved model turn.

``openai_server`` decides *what* the model says; this module says it the way the two HTTP APIs
that MAF's OpenAI clients call do, so the openai SDK's parsers and MAF's converters run on
exactly the shapes a hosted service sends:

- the Responses API (``POST /v1/responses``, MAF's ``OpenAIChatClient``): a ``response``
  object, or the server-sent events ``response.created`` .. ``response.completed`` with text
  deltas and function-call argument deltas in between;
- Chat Completions (``POST /v1/chat/completions``, ``OpenAIChatCompletionClient``): a
  ``chat.completion`` object, or ``chat.completion.chunk`` events ending with a usage chunk
  (when asked for) and ``[DONE]``.

Ids come from the server's call number, so two runs of one script see the same ids.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

__all__ = [
    "SseEvent",
    "breaking_event",
    "error_body",
    "is_text_delta",
    "WireCall",
    "WireTurn",
    "completion_body",
    "completion_chunks",
    "encode_sse",
    "output_items",
    "response_body",
    "response_events",
    "text_pieces",
]

# A fixed epoch: the SDK and MAF turn created_at into timestamps; a constant keeps runs equal.
_EPOCH = 1_750_000_000


@dataclass(frozen=True)
class WireCall:
    """One function call the model makes: its call id, tool name and JSON arguments."""

    call_id: str
    name: str
    arguments: str


@dataclass(frozen=True)
class WireTurn:
    """One model answer, resolved: what it says, the calls it makes and the tokens counted."""

    number: int
    model: str
    text: str
    calls: tuple[WireCall, ...]
    input_tokens: int
    output_tokens: int
    previous_response_id: str | None = None

    @property
    def response_id(self) -> str:
        return f"resp_{self.number:04d}"

    @property
    def message_id(self) -> str:
        return f"msg_{self.number:04d}"

    @property
    def created(self) -> int:
        return _EPOCH + self.number

    def item_id(self, index: int) -> str:
        return f"fc_{self.number:04d}_{index}"


@dataclass(frozen=True)
class SseEvent:
    """One server-sent event: its ``event:`` name (None for Chat Completions) and data."""

    name: str | None
    data: str


def encode_sse(event: SseEvent) -> bytes:
    head = f"event: {event.name}\n" if event.name else ""
    return f"{head}data: {event.data}\n\n".encode()


def is_text_delta(event: SseEvent) -> bool:
    """Whether the event carries a piece of the answer's text (either API)."""
    if event.name is not None:
        return event.name == "response.output_text.delta"
    return '"content": "' in event.data and '"content": ""' not in event.data


def error_body(status: int, message: str, code: str | None, param: str | None) -> dict[str, Any]:
    """OpenAI's error body, for a refused or failed HTTP call."""
    kind = "server_error" if status >= 500 else "invalid_request_error"
    return {"error": {"message": message, "type": kind, "param": param, "code": code}}


def breaking_event(endpoint: str, how: str, sequence_number: int) -> SseEvent:
    """The event that breaks a stream: data that is not JSON (``"malformed"``), or the API's
    own error event (``"error"``: an ``error`` event for the Responses API, a chunk holding an
    ``error`` object for Chat Completions)."""
    responses = endpoint == "responses"
    if how == "malformed":
        name = "response.output_text.delta" if responses else None
        return SseEvent(name, '{"type": "response.output_text.delta", "delta": "x')
    message, code = "The model crashed mid-answer.", "server_error"
    if responses:
        payload = {"type": "error", "code": code, "message": message, "param": None}
        return SseEvent("error", json.dumps({**payload, "sequence_number": sequence_number}))
    return SseEvent(None, json.dumps(error_body(500, message, code, None)))


def text_pieces(text: str) -> list[str]:
    """The text as a model streams it: one word (with its trailing space) per delta."""
    return re.findall(r"\s*\S+\s*", text) if text.strip() else ([text] if text else [])


# region Responses API


def _usage(turn: WireTurn) -> dict[str, Any]:
    return {
        "input_tokens": turn.input_tokens,
        "input_tokens_details": {"cached_tokens": 0},
        "output_tokens": turn.output_tokens,
        "output_tokens_details": {"reasoning_tokens": 0},
        "total_tokens": turn.input_tokens + turn.output_tokens,
    }


def _text_part(text: str) -> dict[str, Any]:
    return {"type": "output_text", "text": text, "annotations": [], "logprobs": []}


def _message_item(turn: WireTurn, *, done: bool) -> dict[str, Any]:
    return {
        "type": "message",
        "id": turn.message_id,
        "role": "assistant",
        "status": "completed" if done else "in_progress",
        "content": [_text_part(turn.text)] if done else [],
    }


def _call_item(turn: WireTurn, index: int, call: WireCall, *, done: bool) -> dict[str, Any]:
    return {
        "type": "function_call",
        "id": turn.item_id(index),
        "call_id": call.call_id,
        "name": call.name,
        "arguments": call.arguments if done else "",
        "status": "completed" if done else "in_progress",
    }


def output_items(turn: WireTurn) -> list[dict[str, Any]]:
    """The items a completed response holds (what a later ``previous_response_id`` recalls)."""
    items = [_message_item(turn, done=True)] if turn.text else []
    items += [_call_item(turn, i, call, done=True) for i, call in enumerate(turn.calls)]
    return items


def response_body(turn: WireTurn, *, done: bool = True) -> dict[str, Any]:
    """The ``response`` object: complete, or as ``response.created`` announces it."""
    return {
        "id": turn.response_id,
        "object": "response",
        "created_at": turn.created,
        "completed_at": turn.created if done else None,
        "status": "completed" if done else "in_progress",
        "model": turn.model,
        "output": output_items(turn) if done else [],
        "parallel_tool_calls": True,
        "tool_choice": "auto",
        "tools": [],
        "error": None,
        "incomplete_details": None,
        "instructions": None,
        "metadata": {},
        "temperature": 1.0,
        "top_p": 1.0,
        "previous_response_id": turn.previous_response_id,
        "conversation": None,
        "usage": _usage(turn) if done else None,
    }


def response_events(turn: WireTurn) -> Iterator[SseEvent]:
    """The Responses API's stream for ``turn``, event by event (deltas one word each)."""
    sequence = iter(range(1_000_000))

    def event(kind: str, **fields: Any) -> SseEvent:
        payload = {"type": kind, "sequence_number": next(sequence), **fields}
        return SseEvent(kind, json.dumps(payload))

    yield event("response.created", response=response_body(turn, done=False))
    yield event("response.in_progress", response=response_body(turn, done=False))
    index = 0
    if turn.text:
        where = {"item_id": turn.message_id, "output_index": 0, "content_index": 0}
        yield event(
            "response.output_item.added", output_index=0, item=_message_item(turn, done=False)
        )
        yield event("response.content_part.added", part=_text_part(""), **where)
        for piece in text_pieces(turn.text):
            yield event("response.output_text.delta", delta=piece, logprobs=[], **where)
        yield event("response.output_text.done", text=turn.text, logprobs=[], **where)
        yield event("response.content_part.done", part=_text_part(turn.text), **where)
        yield event(
            "response.output_item.done", output_index=0, item=_message_item(turn, done=True)
        )
        index = 1
    for offset, call in enumerate(turn.calls):
        at = index + offset
        where = {"item_id": turn.item_id(offset), "output_index": at}
        yield event(
            "response.output_item.added",
            output_index=at,
            item=_call_item(turn, offset, call, done=False),
        )
        yield event("response.function_call_arguments.delta", delta=call.arguments, **where)
        yield event("response.function_call_arguments.done", arguments=call.arguments, **where)
        yield event(
            "response.output_item.done",
            output_index=at,
            item=_call_item(turn, offset, call, done=True),
        )
    yield event("response.completed", response=response_body(turn))


# endregion

# region Chat Completions


def _completion_usage(turn: WireTurn) -> dict[str, Any]:
    return {
        "prompt_tokens": turn.input_tokens,
        "completion_tokens": turn.output_tokens,
        "total_tokens": turn.input_tokens + turn.output_tokens,
    }


def _tool_calls(turn: WireTurn) -> list[dict[str, Any]]:
    return [
        {
            "id": call.call_id,
            "type": "function",
            "function": {"name": call.name, "arguments": call.arguments},
        }
        for call in turn.calls
    ]


def _finish_reason(turn: WireTurn) -> str:
    return "tool_calls" if turn.calls else "stop"


def completion_body(turn: WireTurn) -> dict[str, Any]:
    """The ``chat.completion`` object for ``turn``."""
    message: dict[str, Any] = {"role": "assistant", "content": turn.text or None, "refusal": None}
    if turn.calls:
        message["tool_calls"] = _tool_calls(turn)
    return {
        "id": f"chatcmpl-{turn.number:04d}",
        "object": "chat.completion",
        "created": turn.created,
        "model": turn.model,
        "choices": [
            {
                "index": 0,
                "message": message,
                "finish_reason": _finish_reason(turn),
                "logprobs": None,
            }
        ],
        "usage": _completion_usage(turn),
    }


def completion_chunks(turn: WireTurn, *, include_usage: bool) -> Iterator[SseEvent]:
    """The ``chat.completion.chunk`` stream for ``turn``, then ``[DONE]``."""

    def chunk(delta: dict[str, Any] | None, finish: str | None = None, **extra: Any) -> SseEvent:
        choices = (
            []
            if delta is None
            else [{"index": 0, "delta": delta, "finish_reason": finish, "logprobs": None}]
        )
        payload = {
            "id": f"chatcmpl-{turn.number:04d}",
            "object": "chat.completion.chunk",
            "created": turn.created,
            "model": turn.model,
            "choices": choices,
            **extra,
        }
        return SseEvent(None, json.dumps(payload))

    yield chunk({"role": "assistant", "content": ""})
    for piece in text_pieces(turn.text):
        yield chunk({"content": piece})
    for index, call in enumerate(turn.calls):
        opened = {"index": index, "id": call.call_id, "type": "function"}
        yield chunk({"tool_calls": [{**opened, "function": {"name": call.name, "arguments": ""}}]})
        yield chunk({"tool_calls": [{"index": index, "function": {"arguments": call.arguments}}]})
    yield chunk({}, _finish_reason(turn))
    if include_usage:
        yield chunk(None, usage=_completion_usage(turn))
    yield SseEvent(None, "[DONE]")


# endregion
