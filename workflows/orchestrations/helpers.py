"""Small functions the orchestrators share: the participant list checks every builder makes, a
conversation fit to hand to another agent, the message an orchestrator ends with, and the JSON a
model wrapped in Markdown fences.
"""

from __future__ import annotations

from collections.abc import Sequence

from agent_framework import Message, SupportsAgentRun

from ..agents.executor import resolve_agent_id
from ..executor import Executor

__all__ = [
    "agent_ids_of",
    "check_participants",
    "clean_conversation_for_handoff",
    "create_completion_message",
    "extract_markdown_fence_bodies",
]


def check_participants(
    participants: Sequence[SupportsAgentRun | Executor], *, strict: bool
) -> list[SupportsAgentRun | Executor]:
    """The participants as a list, refused when empty or when one appears twice.

    Args:
        participants: agents and executors.
        strict: refuse what is neither an agent nor an executor now (Concurrent does; Sequential
            refuses it in ``build()``).

    Raises:
        ValueError: no participants, an agent passed twice, or two executors with one id.
        TypeError: with ``strict``, a participant that is neither an agent nor an executor.
    """
    if not participants:
        raise ValueError("participants cannot be empty")
    agents: set[int] = set()
    executor_ids: set[str] = set()
    for participant in participants:
        if isinstance(participant, Executor):
            if participant.id in executor_ids:
                raise ValueError(f"Duplicate executor participant detected: id '{participant.id}'")
            executor_ids.add(participant.id)
        elif strict and not isinstance(participant, SupportsAgentRun):
            raise TypeError(
                "participants must be SupportsAgentRun or Executor instances; got "
                f"{type(participant).__name__}"
            )
        else:
            if id(participant) in agents:
                raise ValueError(
                    "Duplicate agent participant detected (same agent instance provided twice)"
                )
            agents.add(id(participant))
    return list(participants)


def agent_ids_of(participants: Sequence[SupportsAgentRun | Executor]) -> list[str]:
    """The executor ids the agent participants get."""
    return [resolve_agent_id(p) for p in participants if not isinstance(p, Executor)]


# What a user message keeps when it is handed on: the person's own input, text and media.
# Tool calls, tool results and approval payloads belong to the turn that made them; providers
# refuse them replayed into another agent's turn.
_USER_KEPT_TYPES = frozenset({"text", "data", "uri", "hosted_file", "hosted_vector_store"})
# Other roles keep their text only: media is input, and providers refuse it on assistant turns.
_OTHER_KEPT_TYPES = frozenset({"text"})


def clean_conversation_for_handoff(conversation: list[Message]) -> list[Message]:
    """A copy of ``conversation`` that another agent can be given safely.

    User messages keep their text and media (data, uri, hosted files and vector stores); other
    messages keep their text only. Tool-control contents (function calls and results, approval
    requests and answers) and empty texts are dropped, then messages left with nothing.
    Roles, author names and additional properties are kept.

    Args:
        conversation: the whole conversation, tool traffic included.

    Returns:
        The cleaned messages (new ``Message`` objects; the input is not changed).
    """
    cleaned: list[Message] = []
    for message in conversation:
        kept_types = _USER_KEPT_TYPES if str(message.role).lower() == "user" else _OTHER_KEPT_TYPES
        kept = [
            content
            for content in message.contents
            if content.type in kept_types and (content.type != "text" or content.text)
        ]
        if not kept:
            continue
        properties = message.additional_properties
        cleaned.append(
            Message(
                role=message.role,
                contents=kept,
                author_name=message.author_name,
                additional_properties=dict(properties) if properties else None,
            )
        )
    return cleaned


def create_completion_message(
    *, text: str | None = None, author_name: str, reason: str = "completed"
) -> Message:
    """The assistant message an orchestrator ends a conversation with.

    Args:
        text: its text; by default "Conversation <reason>.".
        author_name: the orchestrator's name.
        reason: why it ends, for the default text.

    Returns:
        The message.
    """
    return Message(
        role="assistant", contents=[text or f"Conversation {reason}."], author_name=author_name
    )


_FENCE = "```"


def extract_markdown_fence_bodies(text: str) -> list[str]:
    """The bodies of the Markdown code fences in ``text``, stripped, in order.

    A fence opens with three or more backticks and an optional info string (``json``); it is
    closed by the next run of at least as many backticks that ends its line, so backticks inside
    a JSON string never close it and an outer fence may use more backticks than an inner one.
    An unclosed fence ends the scan. The scan never steps back, so it is linear in the text.

    Args:
        text: a model's reply.

    Returns:
        The non-empty bodies.
    """
    bodies: list[str] = []
    opening = text.find(_FENCE)
    while opening != -1:
        marker_end = _run_end(text, opening)
        marker = text[opening:marker_end]
        body_start = _after_info_string(text, marker_end)
        closing = _find_closing(text, marker, body_start)
        if closing is None:
            break
        close_start, close_end = closing
        body = text[body_start:close_start].strip()
        if body:
            bodies.append(body)
        opening = text.find(_FENCE, close_end)
    return bodies


def _run_end(text: str, start: int) -> int:
    """Where the run of backticks starting at ``start`` ends."""
    end = start
    while end < len(text) and text[end] == "`":
        end += 1
    return end


def _after_info_string(text: str, start: int) -> int:
    """Where a fence's body starts: after an info string such as ``json`` or
    ``application/json``. Only a word starting with a letter is one, so ``{"a": 1}`` written on
    the fence's own line stays in the body."""
    index = start
    while index < len(text) and text[index] in " \t":
        index += 1
    if index >= len(text) or not text[index].isalpha():
        return start
    while index < len(text) and (text[index].isalnum() or text[index] in "_-+./"):
        index += 1
    return index


def _find_closing(text: str, marker: str, start: int) -> tuple[int, int] | None:
    """(start, end) of the first run of ``marker``'s backticks after ``start`` that ends its
    line, or None."""
    search = start
    while True:
        found = text.find(marker, search)
        if found == -1:
            return None
        run_end = _run_end(text, found)
        line_end = run_end
        while line_end < len(text) and text[line_end] in " \t\r":
            line_end += 1
        if line_end == len(text) or text[line_end] == "\n":
            return found, run_end
        search = line_end
