"""Long conversations stored in chunks, so a checkpoint costs what the conversation added.

An agent executor's state holds its whole conversation (and its session's history), and so does
every message an agent sends on. Stored whole, a conversation of n messages costs n messages at
every checkpoint: O(n²) bytes over a run. Here each long list of chat messages inside a part is
cut, from its start, into closed chunks of ``CHUNK_ITEMS`` messages; only the tail that does not
fill a chunk stays in the part. A closed chunk never changes while the conversation grows, so
its content address repeats and the storage writes it once; a checkpoint adds the new tail and,
every ``CHUNK_ITEMS`` messages, one new chunk.

In a record, the list's chunks are one ``blob_refs`` entry: ``[path + ["*"], digest, ...]``,
where ``path`` is the part's path followed by the keys (or list positions) down to the list,
and the list in the part holds the tail. Joining puts the chunks back in front of the tail.
Lists that are not conversations are never cut: workflows without agents store as before.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from ..exceptions import CheckpointDecodeError

__all__ = [
    "CHUNK_ITEMS",
    "MARK",
    "cut_conversations",
    "is_chunk_entry",
    "may_hold_conversation",
    "put_back",
]

CHUNK_ITEMS = 32
MARK = "*"
# Lists this short are walked into (a few messages in flight, a tuple of values); longer lists
# that are not conversations are left alone, unread.
_WALKED_LIST_ITEMS = 16
_MAX_DEPTH = 16
# The lengths of a part's own path, by its first key: ("state", key), ("executor_states", id,
# key), or a top-level part such as ("messages",).
_PART_PATH_LENGTHS = {"state": 2, "executor_states": 3}


def may_hold_conversation(text: str) -> bool:
    """Whether a part's JSON text can contain chat messages: MAF messages as the codec tags
    them, or as MAF's own session serialization writes them. A plain-text test, so parts
    without agents cost one scan."""
    return '"$t":"agent"' in text or '"type":"message"' in text


def _is_message(item: Any) -> bool:
    if type(item) is not dict:
        return False
    if item.get("$t") == "agent":
        return item.get("name") == "Message"
    return item.get("type") == "message" and "role" in item and "contents" in item


def _conversation_lists(
    node: Any, path: list[str | int], depth: int
) -> Iterator[tuple[list[str | int], list[Any]]]:
    if depth > _MAX_DEPTH:
        return
    if type(node) is dict:
        for key, value in node.items():
            yield from _conversation_lists(value, [*path, key], depth + 1)
    elif type(node) is list:
        if len(node) >= CHUNK_ITEMS and all(map(_is_message, node)):
            yield path, node
        elif len(node) <= _WALKED_LIST_ITEMS:
            for index, value in enumerate(node):
                yield from _conversation_lists(value, [*path, index], depth + 1)


def cut_conversations(tree: Any) -> list[tuple[list[str | int], list[list[Any]]]]:
    """Cut every long conversation in an encoded part, in place.

    Returns:
        For each list cut: the keys from the part down to it, and its closed chunks in order
        (the list itself now holds only its tail).
    """
    cuts: list[tuple[list[str | int], list[list[Any]]]] = []
    for inner, items in list(_conversation_lists(tree, [], 0)):
        closed = len(items) - len(items) % CHUNK_ITEMS
        chunks = [items[i : i + CHUNK_ITEMS] for i in range(0, closed, CHUNK_ITEMS)]
        del items[:closed]
        cuts.append((inner, chunks))
    return cuts


def is_chunk_entry(entry: list[Any]) -> bool:
    """A ``blob_refs`` entry naming a conversation's chunks (not a whole part)."""
    path = entry[0]
    if not isinstance(path, list) or not path or path[-1] != MARK:
        return False
    return len(path) > _PART_PATH_LENGTHS.get(path[0], 1)


def put_back(doc: dict[str, Any], path: list[Any], chunks: list[Any]) -> None:
    """Put a conversation's chunks (each a list of encoded messages) back in front of the tail
    its part holds at ``path`` (a chunk entry's path, ``MARK`` included). Every container on
    the way is copied first: the record and the blobs may be cached by the storage.

    Raises:
        CheckpointDecodeError: the path leads nowhere, or not to a list.
    """
    node: Any = doc
    for key in path[:-1]:
        try:
            child = node[key]
        except (KeyError, IndexError, TypeError):
            raise CheckpointDecodeError(f"malformed chunk path {path!r}") from None
        if type(child) is dict:
            child = dict(child)
        elif type(child) is list:
            child = list(child)
        else:
            raise CheckpointDecodeError(f"chunk path {path!r} does not lead to a conversation")
        node[key] = child
        node = child
    if type(node) is not list or not all(type(chunk) is list for chunk in chunks):
        raise CheckpointDecodeError(f"chunk path {path!r} does not lead to a conversation")
    node[:0] = [item for chunk in chunks for item in chunk]
