"""What the offline chat clients share: MAF's raw ``BaseChatClient`` answering from a reply
each subclass makes, with streaming, usage and ids from a per-client counter (``local_chat``)."""

from __future__ import annotations

import asyncio
import json
import re
import threading
from abc import abstractmethod
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar, cast

from agent_framework import (
    BaseChatClient,
    ChatOptions,
    ChatResponse,
    ChatResponseUpdate,
    Content,
    Message,
    ResponseStream,
    UsageDetails,
)
from pydantic import BaseModel

Options = ChatOptions[Any]


@dataclass(frozen=True)
class ToolCall:
    """A scripted request to call the tool ``name`` with ``arguments``.

    ``call_id`` defaults to one derived from the client's call counter, so it is stable too.
    """

    name: str
    arguments: Mapping[str, Any] = field(default_factory=dict)
    call_id: str | None = None


# One model reply: text, tool call(s), structured output (dict or pydantic model), or an
# exception the call raises.
ScriptReply = str | ToolCall | Sequence[ToolCall] | Mapping[str, Any] | BaseModel | Exception
ScriptEntry = (
    ScriptReply | Callable[[list[Message], Mapping[str, Any]], ScriptReply | Awaitable[ScriptReply]]
)


class ScriptExhaustedError(AssertionError):
    """The scripted client was called more times than its script has entries.

    An ``AssertionError`` because it means the test's expectation about the number of model
    calls was wrong, not that the code under test failed.
    """


@dataclass
class Reply:
    """What the model says in one call: text and/or tool calls (as ``ToolCall``)."""

    text: str = ""
    calls: list[ToolCall] = field(default_factory=list)


@dataclass
class Turn:
    """One model call, resolved: ids, contents and usage, shared by both response modes."""

    response_id: str
    message_id: str
    text: str
    calls: list[Content]
    usage: UsageDetails | None

    @property
    def finish_reason(self) -> str:
        return "tool_calls" if self.calls else "stop"


# region Shared raw client


class RawOfflineChatClient(BaseChatClient[Options]):
    """The model end shared by both clients: ids, usage, chunking, streaming and delay.

    Subclasses decide the reply (``_reply``); MAF's layers above do everything else.
    """

    OTEL_PROVIDER_NAME: ClassVar[str] = "superstep.local"

    def __init__(
        self,
        *,
        name: str,
        chunk_words: int = 1,
        usage: bool = True,
        delay: float = 0.0,
        **kwargs: Any,
    ) -> None:
        if chunk_words < 1:
            raise ValueError(f"chunk_words must be at least 1, not {chunk_words}")
        if delay < 0:
            raise ValueError(f"delay must not be negative, not {delay}")
        super().__init__(**kwargs)
        self.name = name
        # MAF's Agent and telemetry read the model's name from ``model``.
        self.model = name
        self.chunk_words = chunk_words
        self.usage = usage
        self.delay = delay
        self.agent_name: str | None = None
        # A lock, not just the event loop, so clients shared across threads stay consistent.
        self._lock = threading.Lock()
        self._count = 0

    @property
    def model_id(self) -> str:
        return self.model

    def _update_agent_name_and_description(self, name: str | None, description: str | None) -> None:
        """MAF's ``Agent`` hands its name to its client here; the first agent's name is kept."""
        if self.agent_name is None and name:
            self.agent_name = name

    def _next_number(self) -> int:
        with self._lock:
            self._count += 1
            return self._count

    @abstractmethod
    async def _reply(
        self, messages: Sequence[Message], options: Mapping[str, Any], number: int
    ) -> Reply:
        """The reply to call ``number`` (1-based) of this client."""

    def _inner_get_response(
        self,
        *,
        messages: Sequence[Message],
        stream: bool,
        options: Mapping[str, Any],
        **kwargs: Any,
    ) -> Awaitable[ChatResponse[Any]] | ResponseStream[ChatResponseUpdate, ChatResponse[Any]]:
        if stream:
            return self._build_response_stream(
                self._stream(messages, options), response_format=options.get("response_format")
            )
        return self._respond(messages, options)

    async def _take_turn(self, messages: Sequence[Message], options: Mapping[str, Any]) -> Turn:
        validated = await self._validate_options(options)
        number = self._next_number()
        reply = await self._reply(messages, validated, number)
        calls = [
            Content.from_function_call(
                call_id=call.call_id or f"{self.name}-call-{number}-{index}",
                name=call.name,
                arguments=dict(call.arguments),
                # MAF would otherwise give the occurrence a random id (uuid4).
                id=f"{self.name}-occurrence-{number}-{index}",
            )
            for index, call in enumerate(reply.calls, start=1)
        ]
        usage = usage_of(messages, validated, reply.text, calls) if self.usage else None
        return Turn(
            response_id=f"{self.name}-response-{number}",
            message_id=f"{self.name}-message-{number}",
            text=reply.text,
            calls=calls,
            usage=usage,
        )

    async def _respond(
        self, messages: Sequence[Message], options: Mapping[str, Any]
    ) -> ChatResponse[Any]:
        turn = await self._take_turn(messages, options)
        await self._pause(len(chunks(turn.text, self.chunk_words)) + (1 if turn.calls else 0))
        contents = ([Content.from_text(turn.text)] if turn.text else []) + turn.calls
        return ChatResponse(
            messages=[Message("assistant", contents, message_id=turn.message_id)],
            response_id=turn.response_id,
            model=self.model,
            finish_reason=cast(Any, turn.finish_reason),
            usage_details=turn.usage,
            response_format=options.get("response_format"),
        )

    async def _stream(
        self, messages: Sequence[Message], options: Mapping[str, Any]
    ) -> AsyncIterator[ChatResponseUpdate]:
        turn = await self._take_turn(messages, options)
        for chunk in chunks(turn.text, self.chunk_words):
            await self._pause(1)
            yield self._update(turn, [Content.from_text(chunk)])
        if turn.calls:
            await self._pause(1)
            yield self._update(turn, list(turn.calls))
        # The last update closes the reply: its finish reason, and usage when reported.
        usage = [Content.from_usage(turn.usage)] if turn.usage is not None else []
        yield self._update(turn, usage, finish_reason=turn.finish_reason)

    def _update(
        self, turn: Turn, contents: list[Content], *, finish_reason: str | None = None
    ) -> ChatResponseUpdate:
        return ChatResponseUpdate(
            contents=contents,
            role="assistant",
            response_id=turn.response_id,
            message_id=turn.message_id,
            model=self.model,
            finish_reason=cast(Any, finish_reason),
        )

    async def _pause(self, chunks: int) -> None:
        # asyncio.sleep is a cancellation point, so a cancelled run stops mid-reply.
        if self.delay and chunks:
            await asyncio.sleep(self.delay * chunks)


# endregion

# region Usage


def usage_of(
    messages: Sequence[Message], options: Mapping[str, Any], text: str, calls: Sequence[Content]
) -> UsageDetails:
    """Token counts as word counts: the prompt (instructions and messages) and the reply."""
    instructions = options.get("instructions")
    prompt = [instructions] if isinstance(instructions, str) else list(instructions or ())
    prompt += [content_text(c) for m in messages for c in m.contents]
    prompt_words = sum(len(str(part).split()) for part in prompt)
    reply_words = len(text.split()) + sum(len(content_text(c).split()) for c in calls)
    return UsageDetails(
        input_token_count=prompt_words,
        output_token_count=reply_words,
        total_token_count=prompt_words + reply_words,
    )


def content_text(content: Content) -> str:
    """What of a content a model would read, as text."""
    if content.type == "text":
        return content.text or ""
    if content.type == "function_call":
        arguments = content.arguments
        rendered = arguments if isinstance(arguments, str) else json.dumps(arguments, default=str)
        return f"{content.name} {rendered}"
    if content.type == "function_result":
        return result_text(content.result)
    return ""


def chunks(text: str, words: int) -> list[str]:
    """``text`` in pieces of ``words`` words, spaces kept, so the pieces join back to it."""
    pieces = re.findall(r"\s*\S+\s*", text) if text.strip() else ([text] if text else [])
    return ["".join(pieces[i : i + words]) for i in range(0, len(pieces), words)]


# endregion


def result_text(result: Any) -> str:
    if result is None:
        return ""
    return result if isinstance(result, str) else json.dumps(result, default=str)
