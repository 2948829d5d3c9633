"""Conversations in the fork editor: an agent's messages as messages, not as a JSON tree.

A checkpoint holds conversations in a few shapes: a message in flight that is a list of MAF
``Message`` values (the prompt an orchestration hands its first agent), an
``AgentExecutorResponse`` whose ``full_conversation`` and ``agent_response`` hold the reply the
next agent reads, and an agent executor's own ``cache``, ``full_conversation`` and session
memory. Wherever one is, the editor shows each message's text as a field of its own, labelled
with who said it; what is not text (tool calls and their results, approvals) is shown beside
it and kept as it is. The newest ``EDITABLE`` messages are editable, so that a long thread
stays a short form; the earlier ones are kept as they are and counted.

Pure: paths and texts only; ``fork_form`` makes the fields and reads them back.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Iterator, Mapping
from typing import Any

from dashboard.renderers.conversation import is_conversation, located_message

__all__ = ["EDITABLE", "Chat", "ChatLine", "chat_of", "same_message_paths"]

EDITABLE = 20
TAG = "$t"
Path = tuple[str | int, ...]


@dataclasses.dataclass(frozen=True)
class ChatLine:
    """One part of one message: its text (editable at ``path``), or a note on what it is."""

    path: Path
    author: str
    role: str
    text: str
    editable: bool
    message_id: str = ""


@dataclasses.dataclass(frozen=True)
class Chat:
    lines: tuple[ChatLine, ...]
    earlier: int  # messages before the editable ones, kept as they are


def _messages_at(value: Any) -> tuple[Path, list[Any]] | None:
    """Where a value keeps a list of messages: itself, an ``AgentResponse``'s ``messages``, or
    a session's memory."""
    if isinstance(value, list):
        return ((), value) if is_conversation(value) else None
    if not isinstance(value, Mapping):
        return None
    if value.get(TAG) == "agent" and value.get("name") == "AgentResponse":
        inner = value.get("v")
        if isinstance(inner, Mapping) and isinstance(inner.get("messages"), list):
            found = _messages_at(inner["messages"])
            return (("v", "messages"), found[1]) if found else None
        return None
    if value.get("type") == "session" and isinstance(value.get("state"), Mapping):
        memory = value["state"].get("in_memory")
        if isinstance(memory, Mapping) and isinstance(memory.get("messages"), list):
            found = _messages_at(memory["messages"])
            return (("state", "in_memory", "messages"), found[1]) if found else None
    return None


def _note(content: Mapping[str, Any]) -> str:
    kind = str(content.get("type") or "content")
    if kind == "function_call":
        arguments = content.get("arguments")
        shown = arguments if isinstance(arguments, str) else json.dumps(arguments, default=str)
        return f"calls {content.get('name') or 'a tool'}({shown[:200]})"
    if kind == "function_result":
        result = content.get("result")
        shown = result if isinstance(result, str) else json.dumps(result, default=str)
        return f"tool result: {shown[:200]}"
    if kind == "function_approval_request":
        call = content.get("function_call")
        name = call.get("name") if isinstance(call, Mapping) else None
        return f"asks approval for {name or 'a tool'}"
    if kind == "function_approval_response":
        return "approved" if content.get("approved") else "rejected"
    return kind.replace("_", " ")


def _lines(path: Path, message: Mapping[str, Any]) -> Iterator[ChatLine]:
    role = str(message.get("role") or "")
    author = str(message.get("author_name") or role)
    message_id = str(message.get("message_id") or "")
    for index, content in enumerate(message.get("contents") or []):
        if not isinstance(content, Mapping) or content.get("type") in ("usage", "text_reasoning"):
            continue
        if content.get("type") == "text" and isinstance(content.get("text"), str):
            yield ChatLine(
                (*path, "contents", index, "text"),
                author,
                role,
                content["text"],
                editable=True,
                message_id=message_id,
            )
        else:
            yield ChatLine((*path, "contents", index), author, role, _note(content), False)


def chat_of(value: Any, *, editable: int = EDITABLE) -> Chat | None:
    """The messages ``value`` holds, as lines with their paths inside it; None when it holds
    no conversation."""
    found = _messages_at(value)
    if found is None:
        return None
    base, items = found
    earlier = max(0, len(items) - editable)
    lines: list[ChatLine] = []
    for index in range(earlier, len(items)):
        located = located_message(items[index])
        assert located is not None  # _messages_at saw every item is one
        inner, message = located
        lines.extend(_lines((*base, index, *inner), message))
    return Chat(tuple(lines), earlier)


def same_message_paths(value: Any, message_id: str, content: int) -> list[Path]:
    """Inside ``value``, the paths of the text of every copy of message ``message_id``'s
    ``content``-th part: an ``AgentExecutorResponse`` carries the reply in its
    ``agent_response`` and again at the end of its ``full_conversation``, and an edit of one
    is an edit of both."""
    if not message_id:
        return []
    found: list[Path] = []

    def walk(node: Any, path: Path) -> None:
        located = located_message(node)
        if located is not None:
            inner, message = located
            contents = message.get("contents") or []
            if (
                message.get("message_id") == message_id
                and content < len(contents)
                and isinstance(contents[content], Mapping)
                and contents[content].get("type") == "text"
            ):
                found.append((*path, *inner, "contents", content, "text"))
            return
        if (
            isinstance(node, Mapping)
            and node.get(TAG) == "model"
            and isinstance(node.get("v"), Mapping)
        ):
            walk(node["v"], path)  # a model's fields are named without the codec's "v", as
            return  # the editor's fields name them
        if isinstance(node, Mapping):
            for key, child in node.items():
                walk(child, (*path, key))
        elif isinstance(node, list):
            for index, child in enumerate(node):
                walk(child, (*path, index))

    walk(value, ())
    return found
