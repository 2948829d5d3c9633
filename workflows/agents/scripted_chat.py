"""``ScriptedChatClient``: replies from a script, one entry per model call, recording each call."""

from __future__ import annotations

import copy
import inspect
import json
from collections.abc import Mapping, Sequence
from typing import Any

from agent_framework import (
    ChatMiddlewareLayer,
    FunctionInvocationConfiguration,
    FunctionInvocationLayer,
    Message,
)
from agent_framework.observability import ChatTelemetryLayer
from pydantic import BaseModel

from .offline_chat import (
    Options,
    RawOfflineChatClient,
    Reply,
    ScriptEntry,
    ScriptExhaustedError,
    ScriptReply,
    ToolCall,
)

# region Scripted client


class _RawScriptedChatClient(RawOfflineChatClient):
    """Replies from a script, one entry per call, recording what each call received."""

    def __init__(self, *, script: Sequence[ScriptEntry], **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self._script: list[ScriptEntry] = list(script)
        self._next_entry = 0
        self.calls: list[list[Message]] = []
        self.options_seen: list[dict[str, Any]] = []

    @property
    def remaining(self) -> int:
        """How many script entries are still unused."""
        return len(self._script) - self._next_entry

    def _take_entry(self, messages: Sequence[Message], options: Mapping[str, Any]) -> ScriptEntry:
        # Recording and taking the entry under one lock keeps `calls[i]` paired with entry i
        # when concurrent agents share the client.
        with self._lock:
            self.calls.append(copy.deepcopy(list(messages)))
            self.options_seen.append(dict(options))
            made = len(self.calls)
            if self._next_entry >= len(self._script):
                raise ScriptExhaustedError(
                    f"{type(self).__name__} {self.name!r} got model call {made}, but its script "
                    f"has only {len(self._script)} entries ({made} calls made)"
                )
            entry = self._script[self._next_entry]
            self._next_entry += 1
            return entry

    async def _reply(
        self, messages: Sequence[Message], options: Mapping[str, Any], number: int
    ) -> Reply:
        entry = self._take_entry(messages, options)
        if callable(entry):
            produced = entry(list(messages), options)
            entry = await produced if inspect.isawaitable(produced) else produced
        return _scripted_reply(entry)


def _scripted_reply(entry: ScriptReply) -> Reply:
    """A script entry as a reply; an exception entry is raised."""
    if isinstance(entry, Exception):
        raise entry
    if isinstance(entry, str):
        return Reply(text=entry)
    if isinstance(entry, ToolCall):
        return Reply(calls=[entry])
    if isinstance(entry, BaseModel):
        return Reply(text=entry.model_dump_json())
    if isinstance(entry, Mapping):
        return Reply(text=json.dumps(dict(entry)))
    if isinstance(entry, Sequence):
        calls = [item for item in entry if isinstance(item, ToolCall)]
        if entry and len(calls) == len(entry):
            return Reply(calls=calls)
    raise TypeError(f"not a script entry: {entry!r}")


class ScriptedChatClient(
    FunctionInvocationLayer[Options],
    ChatMiddlewareLayer[Options],
    ChatTelemetryLayer[Options],
    _RawScriptedChatClient,
):
    """A chat client that replies from ``script``, deterministically, one entry per call.

    Entries: a ``str`` (text), a ``ToolCall`` or a list of them (parallel calls), a ``dict`` or
    pydantic model (structured output, sent as its JSON), an ``Exception`` (the call raises it),
    or a callable ``(messages, options)`` returning one of those (it may be async). A call past
    the end raises ``ScriptExhaustedError``. ``calls`` holds a copy of the messages each call
    received and ``options_seen`` its options.
    """

    def __init__(
        self,
        script: Sequence[ScriptEntry],
        *,
        name: str = "scripted",
        chunk_words: int = 1,
        usage: bool = True,
        middleware: Sequence[Any] | None = None,
        function_invocation_configuration: FunctionInvocationConfiguration | None = None,
        additional_properties: dict[str, Any] | None = None,
    ) -> None:
        super().__init__(
            script=script,
            name=name,
            chunk_words=chunk_words,
            usage=usage,
            middleware=middleware,
            function_invocation_configuration=function_invocation_configuration,
            additional_properties=additional_properties,
        )


# endregion
