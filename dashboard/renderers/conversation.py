"""An agent executor's conversation read as a chat, from a checkpoint's JSON: who said what,
the tools it called with their arguments and results, the approvals it asked for and how
they were answered. Pure: no Django, nothing decoded (the types a checkpoint names need not
be importable to read it).

Where the conversation comes from: the agent's session keeps every message it saw and said
(``agent_session.state.in_memory.messages``, MAF's own dicts); an agent whose history lives
with its service has none there, and then the executor's ``full_conversation`` and ``cache``
(codec-tagged ``Message`` values) are what the checkpoint knows. Long threads are read a page
at a time: the newest ``PAGE`` turns, and a count of the earlier ones.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Mapping, Sequence
from typing import Any, Literal

__all__ = [
    "PAGE",
    "Conversation",
    "Part",
    "Turn",
    "conversation_of",
    "conversations_of",
    "folded",
    "is_conversation",
    "located_message",
]

PAGE = 50
_TEXT_LIMIT = 4000  # characters of one part shown; the state tree has the rest

PartKind = Literal["text", "call", "result", "approval_request", "approval_response", "other"]


@dataclasses.dataclass(frozen=True)
class Part:
    """One piece of a message: its text, or a tool call, a result, an approval..."""

    kind: PartKind
    text: str = ""
    name: str = ""  # the function a call, result or approval is about
    arguments: str = ""  # a call's arguments as indented JSON
    approved: bool | None = None


@dataclasses.dataclass(frozen=True)
class Turn:
    role: str
    author: str
    parts: tuple[Part, ...]


@dataclasses.dataclass(frozen=True)
class Conversation:
    """One agent executor's conversation: its newest turns, and how many came before."""

    executor_id: str
    turns: tuple[Turn, ...]
    earlier: int

    @property
    def total(self) -> int:
        return self.earlier + len(self.turns)


def located_message(value: Any) -> tuple[tuple[str, ...], Mapping[str, Any]] | None:
    """A MAF message, tagged by the codec (``{"$t": "agent", "name": "Message", "v": ...}``)
    or as MAF's own dict (a session's memory), with the path from ``value`` to its fields;
    None for anything else."""
    if not isinstance(value, Mapping):
        return None
    if value.get("$t") == "agent" and value.get("name") == "Message":
        inner = value.get("v")
        return (("v",), inner) if isinstance(inner, Mapping) and _is_message(inner) else None
    return ((), value) if "$t" not in value and _is_message(value) else None


def _is_message(value: Mapping[str, Any]) -> bool:
    return (
        value.get("type") == "message"
        and isinstance(value.get("role"), str)
        and isinstance(value.get("contents"), list)
    )


def is_conversation(items: Sequence[Any]) -> bool:
    """Whether a list is messages, every one of them."""
    return bool(items) and all(located_message(item) is not None for item in items)


# A conversation longer than this is folded in the state trees: the chat reads it, page by page.
FOLD_AFTER = 20


def folded(value: Any) -> Any:
    """``value`` with every conversation of more than ``FOLD_AFTER`` messages replaced by a
    sentence saying how many messages it holds: a tree of 2,000 messages is a megabyte of
    page that nobody reads, and the conversation card shows them as a chat."""
    if isinstance(value, list):
        if len(value) > FOLD_AFTER and is_conversation(value):
            return f"{len(value):,} messages: the conversation card reads them as a chat"
        return [folded(item) for item in value]
    if isinstance(value, Mapping):
        return {key: folded(item) for key, item in value.items()}
    return value


def _untagged(value: Any) -> Any:
    """A codec-tagged MAF value (``{"$t": "agent", "v": ...}``) as MAF's own dict."""
    if isinstance(value, Mapping) and value.get("$t") == "agent":
        return value.get("v")
    return value


def _messages(state: Mapping[str, Any]) -> list[Mapping[str, Any]] | None:
    session = state.get("agent_session")
    if isinstance(session, Mapping):
        kept = session.get("state")  # a forked state may hold anything here: read, never trust
        memory = kept.get("in_memory") if isinstance(kept, Mapping) else None
        if isinstance(memory, Mapping) and isinstance(memory.get("messages"), list):
            return [m for m in memory["messages"] if isinstance(m, Mapping)]
    if "full_conversation" not in state and "cache" not in state:
        return None  # not an agent executor's state
    # The conversation so far, then what the cache holds beyond it (the cache repeats the
    # conversation's messages it was given): a message said twice in one list is said twice.
    found: list[Mapping[str, Any]] = []
    seen: set[str] = set()
    for key in ("full_conversation", "cache"):
        items = state.get(key)
        for item in items if isinstance(items, list) else []:
            message = _untagged(item)
            if not isinstance(message, Mapping):
                continue
            identity = json.dumps(message, sort_keys=True, default=str)
            if key == "cache" and identity in seen:
                continue
            seen.add(identity)
            found.append(message)
    return found


def _clip(text: str) -> str:
    return text if len(text) <= _TEXT_LIMIT else text[:_TEXT_LIMIT] + "…"


def _json(value: Any) -> str:
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except ValueError:
            return _clip(value)
    return _clip(json.dumps(value, indent=2, ensure_ascii=False, sort_keys=True))


def _part(content: Mapping[str, Any], names: dict[str, str]) -> Part | None:
    kind = content.get("type")
    if kind == "text":
        return Part("text", text=_clip(str(content.get("text") or "")))
    if kind == "function_call":
        name = str(content.get("name") or "")
        names[str(content.get("call_id"))] = name
        return Part("call", name=name, arguments=_json(content.get("arguments")))
    if kind == "function_result":
        result = content.get("result")
        shown = result if isinstance(result, str) else _json(result)
        return Part("result", name=names.get(str(content.get("call_id")), ""), text=_clip(shown))
    if kind in ("function_approval_request", "function_approval_response"):
        call = content.get("function_call") or {}
        call = call if isinstance(call, Mapping) else {}
        name = str(call.get("name") or "")
        arguments = _json(call.get("arguments"))
        asked_key = f"asked:{call.get('call_id')}"
        if kind == "function_approval_request":
            names[asked_key] = arguments
            return Part("approval_request", name=name, arguments=arguments)
        approved = bool(content.get("approved"))
        extra = content.get("additional_properties")
        reason = extra.get("reason") if isinstance(extra, Mapping) else None
        # An approver who changed the arguments: the call ran with these, not the asked ones.
        edited = approved and names.get(asked_key, arguments) != arguments
        return Part(
            "approval_response",
            name=name,
            approved=approved,
            text=_clip(reason) if isinstance(reason, str) and not approved else "",
            arguments=arguments if edited else "",
        )
    if kind in ("usage", "text_reasoning") or kind is None:
        return None  # bookkeeping, not something anyone said
    return Part("other", text=str(kind))


def _turn(message: Mapping[str, Any], names: dict[str, str]) -> Turn | None:
    contents = message.get("contents")
    parts = [
        part
        for content in (contents if isinstance(contents, list) else [])
        if isinstance(content, Mapping) and (part := _part(content, names)) is not None
    ]
    if not parts:
        return None
    return Turn(
        role=str(message.get("role") or ""),
        author=str(message.get("author_name") or message.get("role") or ""),
        parts=tuple(parts),
    )


def conversation_of(
    executor_id: str, state: Any, *, newest: int = PAGE, before: int | None = None
) -> Conversation | None:
    """The conversation in an executor's checkpoint state, None when it is no agent's: its
    newest ``newest`` turns, or with ``before`` the ``newest`` turns before that one (the page
    an operator asks for, reading back through a long thread)."""
    if not isinstance(state, Mapping):
        return None
    messages = _messages(state)
    if messages is None:
        return None
    # call id -> function name, for the results; "asked:<call id>" -> the arguments asked for
    names: dict[str, str] = {}
    turns = [turn for message in messages if (turn := _turn(message, names)) is not None]
    end = len(turns) if before is None else max(0, min(before, len(turns)))
    start = max(0, end - max(newest, 0))
    return Conversation(executor_id, tuple(turns[start:end]), earlier=start)


def conversations_of(executor_states: Any, *, newest: int = PAGE) -> Sequence[Conversation]:
    """Every agent executor's conversation in a checkpoint's ``executor_states``."""
    if not isinstance(executor_states, Mapping):
        return []
    found = [
        conversation_of(str(executor_id), state, newest=newest)
        for executor_id, state in sorted(executor_states.items())
    ]
    return [conversation for conversation in found if conversation is not None]
