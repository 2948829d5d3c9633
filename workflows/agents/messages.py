"""Agent inputs as MAF messages: a prompt, a content, a message, or a list of them."""

from __future__ import annotations

from typing import Any

from agent_framework import Content, Message

__all__ = ["normalize_messages"]


def normalize_messages(messages: Any) -> list[Message]:
    """``messages`` as a list of ``Message``: text and contents become user messages.

    Raises:
        TypeError: an item that is none of str, ``Content`` or ``Message``.
    """
    if messages is None:
        return []
    if isinstance(messages, (str, Content)):
        return [Message(role="user", contents=[messages])]
    if isinstance(messages, Message):
        return [messages]
    normalized: list[Message] = []
    for item in messages:
        if isinstance(item, (str, Content)):
            normalized.append(Message(role="user", contents=[item]))
        elif isinstance(item, Message):
            normalized.append(item)
        else:
            raise TypeError(
                "Messages sequence must contain only str, Content, or Message instances; found "
                f"{type(item).__name__}."
            )
    return normalized
