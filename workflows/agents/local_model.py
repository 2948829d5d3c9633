"""``LocalChatClient``: a small deterministic model with generic rules over the conversation."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

from agent_framework import (
    ChatMiddlewareLayer,
    FunctionInvocationConfiguration,
    FunctionInvocationLayer,
    FunctionTool,
    Message,
)
from agent_framework.observability import ChatTelemetryLayer

from .offline_chat import Options, RawOfflineChatClient, Reply, ToolCall, result_text
from .schema_values import response_schema, structured_text, synthesise

# region Local model


class _RawLocalChatClient(RawOfflineChatClient):
    """A deterministic local "model": generic rules over the conversation, no special cases."""

    async def _reply(
        self, messages: Sequence[Message], options: Mapping[str, Any], number: int
    ) -> Reply:
        schema = response_schema(options.get("response_format"))
        results = _answered_results(messages)
        if results:
            summary = "; ".join(f"Based on {name}: {text[:200]}" for name, text in results)
            notes = _notes_since_results(messages)
            if notes:
                summary += f"; noted: {' '.join(notes)[:200]}"
            return Reply(text=structured_text(schema, summary) if schema is not None else summary)
        user_text = _last_user_text(messages)
        if not _called_since_last_user(messages):
            chosen = _pick_tool(options, user_text)
            if chosen is not None:
                arguments = synthesise(chosen.parameters(), user_text)
                return Reply(calls=[ToolCall(chosen.name, arguments)])
        if schema is not None:
            return Reply(text=structured_text(schema, user_text))
        return Reply(text=f"{self.agent_name or 'assistant'}: {_digest(user_text)}")


class LocalChatClient(
    FunctionInvocationLayer[Options],
    ChatMiddlewareLayer[Options],
    ChatTelemetryLayer[Options],
    _RawLocalChatClient,
):
    """A small deterministic local model for demos and tests; its rules, in order:

    1. The messages since its own last turn hold results of tool calls made in this
       conversation: reply "Based on <tool>: <first 200 characters of the result>" (one
       clause per result), then "; noted: <text>" for user text given after the results
       (why a person rejected a call, say).
    2. Tools are offered and none was called since the last user message: call one, the tool
       whose name or description shares most words with that message (ties: the first
       offered), with arguments made from its JSON schema (see ``schema_values.synthesise``).
    3. A ``response_format`` is requested: reply with JSON made from its schema the same way
       (rule 1's summary then supplies the strings, so the answer still parses).
    4. Otherwise "<author>: I read: <first 30 words of the last user message>", where author
       is the name MAF's ``Agent`` gave this client (the first agent built on it), else
       "assistant".

    ``delay`` seconds are awaited per streamed chunk (a slow model); cancelling stops it.
    """

    def __init__(
        self,
        *,
        name: str = "local",
        chunk_words: int = 1,
        usage: bool = True,
        delay: float = 0.0,
        middleware: Sequence[Any] | None = None,
        function_invocation_configuration: FunctionInvocationConfiguration | None = None,
        additional_properties: dict[str, Any] | None = None,
    ) -> None:
        super().__init__(
            name=name,
            chunk_words=chunk_words,
            usage=usage,
            delay=delay,
            middleware=middleware,
            function_invocation_configuration=function_invocation_configuration,
            additional_properties=additional_properties,
        )


# endregion

# region Conversation reading

# Words that say nothing about which tool fits; without them "the" would pick tools. (Written
# as one string of words: a list literal of forty one-word strings would fill forty lines.)
_STOPWORDS = frozenset(
    "a an and are as at be by can do does for from how i in is it me my of on or please "  # noqa: SIM905
    "the this that to was what when where which who why will with you your".split()
)


def _words(text: str) -> set[str]:
    """Lower-case words of ``text``; snake_case and camelCase names split into their words."""
    spaced = re.sub(r"(?<=[a-z0-9])(?=[A-Z])", " ", text)
    return set(re.findall(r"[a-z0-9]+", spaced.lower())) - _STOPWORDS


def _last_user_index(messages: Sequence[Message]) -> int | None:
    """Index of the last user message with text (approval answers carry none)."""
    for index in range(len(messages) - 1, -1, -1):
        if messages[index].role == "user" and messages[index].text.strip():
            return index
    return None


def _last_user_text(messages: Sequence[Message]) -> str:
    index = _last_user_index(messages)
    return "" if index is None else messages[index].text


def _called_since_last_user(messages: Sequence[Message]) -> bool:
    start = _last_user_index(messages)
    later = messages[(start + 1) if start is not None else 0 :]
    return any(content.type == "function_call" for m in later for content in m.contents)


def _since_own_turn(messages: Sequence[Message]) -> Sequence[Message]:
    """The messages after the model's last turn (all of them when it has not spoken)."""
    for index in range(len(messages) - 1, -1, -1):
        if messages[index].role == "assistant":
            return messages[index + 1 :]
    return messages


def _notes_since_results(messages: Sequence[Message]) -> list[str]:
    """User texts that follow the last tool results (the results come first)."""
    tail = _since_own_turn(messages)
    last_result = max(
        (i for i, m in enumerate(tail) if any(c.type == "function_result" for c in m.contents)),
        default=None,
    )
    if last_result is None:
        return []
    later = tail[last_result + 1 :]
    return [m.text.strip() for m in later if m.role == "user" and m.text.strip()]


def _answered_results(messages: Sequence[Message]) -> list[tuple[str, str]]:
    """(tool name, result text) for each result since the model's last turn that answers a
    call made in this conversation."""
    tail = _since_own_turn(messages)
    if not tail or not any(c.type == "function_result" for m in tail for c in m.contents):
        return []
    names = {
        content.call_id: content.name or "tool"
        for message in messages
        for content in message.contents
        if content.type == "function_call" and content.call_id
    }
    return [
        (names[content.call_id], result_text(content.result))
        for message in tail
        for content in message.contents
        if content.type == "function_result" and content.call_id in names
    ]


def _digest(user_text: str) -> str:
    words = user_text.split()
    return f"I read: {' '.join(words[:30])}" if words else "I read nothing."


def _offered_tools(options: Mapping[str, Any]) -> list[FunctionTool]:
    """Function tools the model may call, narrowed by ``tool_choice`` as a real model is."""
    tools = [tool for tool in options.get("tools") or () if isinstance(tool, FunctionTool)]
    choice = options.get("tool_choice")
    if isinstance(choice, str):
        choice = {"mode": choice}
    if not isinstance(choice, Mapping):
        return tools
    if choice.get("mode") == "none":
        return []
    if required := choice.get("required_function_name"):
        return [tool for tool in tools if tool.name == required]
    if (allowed := choice.get("allowed_tools")) is not None:
        return [tool for tool in tools if tool.name in allowed]
    return tools


def _pick_tool(options: Mapping[str, Any], user_text: str) -> FunctionTool | None:
    """The offered tool sharing most words with the user's text; the first one on ties."""
    asked = _words(user_text)
    best: FunctionTool | None = None
    best_score = -1
    for tool in _offered_tools(options):
        score = len(asked & (_words(tool.name) | _words(tool.description or "")))
        if score > best_score:
            best, best_score = tool, score
    return best


# endregion
