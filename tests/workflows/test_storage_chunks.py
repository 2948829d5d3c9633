"""workflows/storage/chunks.py: long conversations stored as closed chunks plus a tail."""

from __future__ import annotations

import copy
from typing import Any

import pytest
from agent_framework import Message

from workflows import CheckpointDecodeError, WorkflowMessage
from workflows.codec import loads
from workflows.storage import PartCache, join_checkpoint, record_digests, split_checkpoint
from workflows.storage.chunks import CHUNK_ITEMS, MARK
from workflows.testing import make_checkpoint


def history(count: int) -> list[dict[str, Any]]:
    return [
        {"type": "message", "role": "user", "contents": [{"type": "text", "text": f"m{i} " * 30}]}
        for i in range(count)
    ]


def stored(piece: Any) -> Any:
    """What a storage hands back: the record and each blob parsed from their text."""
    blobs = {digest: loads(text) for digest, text in piece.blobs.items()}
    return loads(piece.record_text), blobs.__getitem__


def test_a_long_conversation_becomes_closed_chunks_and_a_tail() -> None:
    checkpoint = make_checkpoint(executor_states={"agent": {"history": history(70)}})
    piece = split_checkpoint(checkpoint)
    entries = [e for e in piece.record["blob_refs"] if e[0][-1] == MARK]
    assert entries == [[["executor_states", "agent", "history", MARK], *entries[0][1:]]]
    assert len(entries[0]) - 1 == 70 // CHUNK_ITEMS
    assert set(entries[0][1:]) <= set(record_digests(piece.record))
    record, blob = stored(piece)
    assert join_checkpoint(record, blob).executor_states["agent"]["history"] == history(70)


def test_chunks_a_conversation_already_had_are_not_written_again() -> None:
    cache = PartCache()
    first = split_checkpoint(
        make_checkpoint(executor_states={"agent": {"history": history(70)}}), cache=cache
    )
    second = split_checkpoint(
        make_checkpoint(executor_states={"agent": {"history": history(72)}}), cache=cache
    )
    assert set(first.refs) <= set(second.refs)
    added = len(second.record_text) + sum(
        len(second.blobs[d]) for d in set(second.refs) - set(first.refs)
    )
    assert added < len(str(history(72))) / 4


def test_a_conversation_in_a_message_in_flight_is_cut_too() -> None:
    conversation = [Message("user", [f"turn {i} " * 20]) for i in range(40)]
    checkpoint = make_checkpoint(messages=[WorkflowMessage({"c": conversation}, "a", "b")])
    piece = split_checkpoint(checkpoint)
    assert any(e[0][:1] == ["messages"] and e[0][-1] == MARK for e in piece.record["blob_refs"])
    record, blob = stored(piece)
    restored = join_checkpoint(record, blob).message_list()[0].data["c"]
    assert [m.text for m in restored] == [m.text for m in conversation]


def test_lists_that_are_not_conversations_are_never_cut() -> None:
    records = [{"id": i, "type": "order", "qty": i} for i in range(500)]
    piece = split_checkpoint(make_checkpoint(state={"orders": records, "notes": ["x" * 50] * 200}))
    assert not [e for e in piece.record["blob_refs"] if e[0][-1] == MARK]


def test_joining_leaves_the_stored_record_and_blobs_as_they_were() -> None:
    piece = split_checkpoint(make_checkpoint(state={"history": history(100)}))
    record, blob = stored(piece)
    parsed = {d: blob(d) for d in piece.refs}
    before = copy.deepcopy((record, parsed))
    join_checkpoint(record, parsed.__getitem__)
    join_checkpoint(record, parsed.__getitem__)
    assert (record, parsed) == before


@pytest.mark.parametrize(
    "path",
    [
        ["state", "nowhere", MARK],
        ["state", "history", 3, MARK],
        ["executor_states", "agent", "turn", MARK],
    ],
)
def test_a_chunk_path_that_leads_to_no_conversation_is_a_decode_error(path: list[Any]) -> None:
    piece = split_checkpoint(
        make_checkpoint(
            state={"history": history(40)}, executor_states={"agent": {"turn": 3, "x": "y" * 600}}
        )
    )
    record, blob = stored(piece)
    chunk = next(e for e in record["blob_refs"] if e[0][-1] == MARK)
    record["blob_refs"].append([path, chunk[1]])
    with pytest.raises(CheckpointDecodeError, match="chunk path"):
        join_checkpoint(record, blob)
