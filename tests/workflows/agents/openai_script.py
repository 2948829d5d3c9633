"""What a test tells the local OpenAI server to do, call by call, and what it records.

A script is a list of entries, one per HTTP call the server receives (whatever the endpoint),
in order. An entry is what the model says (``str``, ``ToolCall``, a list of ``ToolCall`` for
parallel calls, or a ``Reply`` for more control), a fault (``Stall``, ``HttpError``,
``BrokenStream``), or a callable that receives the ``RecordedRequest`` and returns one of those
(it may be async). ``ToolCall`` is the one ``ScriptedChatClient`` takes, so a script reads the
same whichever double a test uses.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from workflows.agents.local_chat import ToolCall

__all__ = [
    "BrokenStream",
    "as_reply",
    "count_words",
    "HttpError",
    "RecordedRequest",
    "Reply",
    "ScriptEntry",
    "Stall",
    "ToolCall",
]


@dataclass(frozen=True)
class Reply:
    """A model answer: text and/or tool calls.

    Attributes:
        text: the assistant's text (streamed one word per delta).
        tool_calls: function calls the model makes, after the text.
        hold_after: in a streamed answer, send this many text deltas, then wait until
            ``OpenAIServer.release()`` (or the server stops) before sending the rest.
    """

    text: str = ""
    tool_calls: Sequence[ToolCall] = ()
    hold_after: int | None = None


@dataclass(frozen=True)
class Stall:
    """Answer nothing for ``seconds`` (None: until ``release()`` or the server stops), then
    answer ``then`` (a slow model), or hang up without a response when ``then`` is None."""

    seconds: float | None = None
    then: ScriptEntry | None = None


@dataclass(frozen=True)
class HttpError:
    """Answer with an HTTP error status and OpenAI's error body; ``retry_after`` seconds are
    sent as ``retry-after`` and ``retry-after-ms``, as OpenAI's service does on a 429."""

    status: int = 500
    retry_after: float | None = None
    message: str = "The server had an error while processing your request. Sorry about that!"


@dataclass(frozen=True)
class BrokenStream:
    """Start streaming ``reply`` and break after ``after`` events.

    ``how``: ``"drop"`` closes the connection mid-stream, ``"malformed"`` sends an event whose
    data is not JSON, ``"error"`` sends the API's own error event. A non-streamed call hangs up
    (``"drop"``) or gets a cut-off JSON body (otherwise).
    """

    reply: str | Reply = "this answer never ends because the connection"
    after: int = 4
    how: Literal["drop", "malformed", "error"] = "drop"


ScriptEntry = (
    str
    | ToolCall
    | Sequence[ToolCall]
    | Reply
    | Stall
    | HttpError
    | BrokenStream
    | Callable[["RecordedRequest"], "ScriptEntry | Awaitable[ScriptEntry]"]
)


@dataclass
class RecordedRequest:
    """One HTTP call the server received.

    Attributes:
        number: 1-based, across both endpoints, in arrival order.
        endpoint: ``"responses"`` or ``"chat/completions"``.
        body: the JSON body as sent.
        history: Responses API only: the items recalled through ``previous_response_id``
            (earlier inputs and outputs of the chain), oldest first.
        outcome: what the server did: ``"answered"``, ``"http 500"``, ``"stalled"``,
            ``"held"`` (a streamed answer waiting for ``release()``), ``"hung up"``, ``"broken:
            drop"``, ``"client gone"`` (the client left while it was being answered),
            ``"refused"`` (a 400), or ``"pending"``.
        usage: the (input, output) token counts the answer reported, once it is made.
        received_at: ``time.monotonic()`` when the call arrived.
    """

    number: int
    endpoint: str
    body: dict[str, Any]
    history: list[dict[str, Any]] = field(default_factory=list)
    outcome: str = "pending"
    usage: tuple[int, int] | None = None
    received_at: float = 0.0

    @property
    def instructions(self) -> str | None:
        """The agent's instructions: the Responses ``instructions``, or the system message."""
        if self.endpoint == "responses":
            value = self.body.get("instructions")
            return value if isinstance(value, str) else None
        system = self.texts("system")
        return system[0] if system else None

    @property
    def stream(self) -> bool:
        return bool(self.body.get("stream"))

    @property
    def previous_response_id(self) -> str | None:
        value = self.body.get("previous_response_id")
        return value if isinstance(value, str) else None

    @property
    def items(self) -> list[dict[str, Any]]:
        """What this request sends: Responses input items, or Chat Completions messages."""
        if self.endpoint == "chat/completions":
            return list(self.body.get("messages") or [])
        given = self.body.get("input")
        if isinstance(given, str):
            return [{"type": "message", "role": "user", "content": given}]
        return list(given or [])

    @property
    def conversation(self) -> list[dict[str, Any]]:
        """Everything the model sees: recalled history, then this request's items."""
        return [*self.history, *self.items]

    @property
    def tool_names(self) -> list[str]:
        names = []
        for tool in self.body.get("tools") or []:
            function = tool.get("function") if "function" in tool else tool
            names.append(str(function.get("name")))
        return names

    def texts(self, role: str = "user") -> list[str]:
        """The texts of this request's messages of ``role``."""
        return [
            _text_of(item.get("content"))
            for item in self.items
            if item.get("role") == role and item.get("type", "message") == "message"
        ]

    def tool_results(self) -> dict[str, str]:
        """The function results this request sends, by call id."""
        results: dict[str, str] = {}
        for item in self.items:
            if item.get("type") == "function_call_output":
                results[str(item["call_id"])] = _text_of(item.get("output"))
            elif item.get("role") == "tool":
                results[str(item.get("tool_call_id"))] = _text_of(item.get("content"))
        return results


def _text_of(content: Any) -> str:
    """The text of a message content or tool output: a string, or a list of text parts."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(
            str(part.get("text", "")) if isinstance(part, dict) else str(part) for part in content
        )
    return json.dumps(content)


def count_words(value: Any) -> int:
    """A deterministic token count: the words in every string of a JSON value."""
    if isinstance(value, str):
        return len(value.split())
    if isinstance(value, dict):
        return sum(count_words(v) for k, v in value.items() if k not in ("type", "id", "role"))
    if isinstance(value, list):
        return sum(count_words(v) for v in value)
    return 0


def as_reply(entry: Any) -> Reply:
    """A model-answer entry as a ``Reply``.

    Raises:
        TypeError: the entry is not a model answer (a fault or something else).
    """
    if isinstance(entry, Reply):
        return entry
    if isinstance(entry, str):
        return Reply(text=entry)
    if isinstance(entry, ToolCall):
        return Reply(tool_calls=[entry])
    if isinstance(entry, Sequence) and entry and all(isinstance(c, ToolCall) for c in entry):
        return Reply(tool_calls=list(entry))
    raise TypeError(f"not a script entry: {entry!r}")
