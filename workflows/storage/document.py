"""Splitting a checkpoint document into a small record and content-addressed blobs.

Consecutive checkpoints of a run mostly repeat themselves: the same executor state, the same
shared-state values. Each sizeable value (an executor's state key, a shared-state key, the
message list...) is stored once under the sha256 of its JSON text, and a checkpoint's record
refers to it. A value that did not change in a superstep is therefore not written again.
"""

from __future__ import annotations

import dataclasses
import hashlib
import marshal
from collections import OrderedDict
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from .. import codec
from ..checkpoint import WorkflowCheckpoint
from ..exceptions import CheckpointDecodeError
from ..registry import TypeRegistry, default_registry
from . import chunks
from .protocol import CheckpointSummary

__all__ = [
    "CHANGING_INLINE_LIMIT",
    "INLINE_LIMIT",
    "KnownPart",
    "PartCache",
    "SplitCheckpoint",
    "join_checkpoint",
    "join_document",
    "record_digests",
    "split_checkpoint",
    "summarize_record",
]

# Values shorter than this stay inside the record: a blob costs a lookup on every load.
INLINE_LIMIT = 512
# A value that changed since its run's last save, or is new, stays inside the record up to this
# size: it shares nothing with the checkpoint before, and as a blob it would cost the database
# two more rows (the blob and its lineage's use) on every superstep that changes it. Once it
# repeats, it becomes a blob, shared by the checkpoints that follow.
CHANGING_INLINE_LIMIT = 4096
Path = tuple[str, ...]


@dataclass
class SplitCheckpoint:
    record: dict[str, Any]
    record_text: str
    blobs: dict[str, str]  # digest -> JSON text, every blob the record refers to
    size_bytes: int  # the whole checkpoint, as if written in one piece

    @property
    def refs(self) -> list[str]:
        return record_digests(self.record)


@dataclass(frozen=True)
class KnownPart:
    fingerprint: bytes | None  # of the live value, when it can be trusted (see _fingerprint)
    text: str
    digest: str
    changed: bool = False  # its text differed from the one before
    # Its conversations' chunks (workflows.storage.chunks): the blob_refs entries, and the
    # (digest, text) of every chunk in them, in order.
    chunk_entries: tuple[list[Any], ...] = ()
    chunk_blobs: tuple[tuple[str, str], ...] = ()


class PartCache:
    """Remembers, per (run, part), the last stored JSON text, its digest and a fingerprint of
    the live value, so a part that did not change is neither encoded, hashed nor stored again.
    Bounded: the least recently used runs are forgotten."""

    def __init__(self, max_runs: int = 256) -> None:
        self._runs: OrderedDict[str, dict[Path, KnownPart]] = OrderedDict()
        self._max = max_runs

    def for_run(self, run_id: str) -> dict[Path, KnownPart]:
        parts = self._runs.get(run_id)
        if parts is None:
            parts = self._runs[run_id] = {}
            while len(self._runs) > self._max:
                self._runs.popitem(last=False)
        else:
            self._runs.move_to_end(run_id)
        return parts


def _live_parts(checkpoint: WorkflowCheckpoint) -> Iterator[tuple[Path, Any]]:
    """The parts a fingerprint can stand for, in document order."""
    for key, value in checkpoint.state.items():
        yield ("state", key), value
    for executor_id, state in checkpoint.executor_states.items():
        for key, value in state.items():
            yield ("executor_states", executor_id, key), value


_FIXED_PARTS: tuple[Path, ...] = (
    ("messages",),
    ("pending_request_info_events",),
    ("edge_states",),
    ("graph_signature",),
)
# marshal writes any object that exposes a buffer as plain bytes: bytes, bytearray,
# memoryview, array, but also a bytes-mixin Enum or a registered model with __buffer__. Such
# values are stored under one of these tags. A part whose text has none of them held no
# buffer, so a buffer appearing in it changes the fingerprint; the others are always encoded.
_BUFFER_TAGS = ('"$t":"bytes"', '"$t":"enum"', '"$t":"model"')


def _fingerprint(value: Any) -> bytes | None:
    """A type-exact serialization of a live value made only of builtin types, or None.

    Encoding a large unchanged state through the codec just to learn that it did not change
    costs far more than the write it saves; marshal does the same walk in C. It is exact for
    int/float/bool/str/None/list/tuple/dict/set/frozenset (1, 1.0 and True differ, so do
    -0.0 and 0.0), refuses every other type (subclasses included) except buffers (see
    ``_BUFFER_TAGS``), and is never loaded back: it is only compared. Back-references make
    the bytes depend on how objects are shared; that can only make an unchanged value look
    changed (it is then encoded again), never hide a change.
    """
    try:
        return marshal.dumps(value)
    except ValueError:  # a type marshal does not know (dataclass, datetime...) or too deep
        return None


def _surely_inline(value: Any) -> bool:
    """A part (live or encoded) whose JSON is certainly shorter than ``INLINE_LIMIT``, known
    without writing it: most parts of most checkpoints (an empty dict, a counter) are."""
    kind = type(value)
    if value is None or kind is bool or kind is float:
        return True  # a float's repr is at most 24 characters
    if kind is int:
        return bool(-(10**18) < value < 10**18)
    if kind is dict or kind is list:
        return not value
    return False


def split_checkpoint(
    checkpoint: WorkflowCheckpoint,
    *,
    cache: PartCache | None = None,
    registry: TypeRegistry = default_registry,
) -> SplitCheckpoint:
    """Encode ``checkpoint`` and cut its large values out into blobs.

    Raises:
        CheckpointEncodeError: from the codec, naming the value that cannot be stored.
    """
    known = cache.for_run(checkpoint.run_id) if cache is not None else {}
    # Every fingerprint is taken before encoding: the encoded copy shares objects with the
    # live value, which would change marshal's back-references and so the bytes.
    live = list(_live_parts(checkpoint))
    # A part that changed at its last save is not fingerprinted: it most likely changed again,
    # and marshal would cost a third of writing it. Its text tells; once the text repeats,
    # fingerprints are taken again and an unchanged part is skipped from the save after.
    fingerprints = (
        {
            path: _fingerprint(value)
            for path, value in live
            if path not in known or not known[path].changed
        }
        if cache is not None
        else {}
    )
    unchanged = {
        path: last
        for path, last in known.items()
        if last.fingerprint is not None and fingerprints.get(path) == last.fingerprint
    }
    # Large live parts are written straight to text (one pass, no encoded copy, see
    # codec.encode_text); a placeholder keeps each one's place, so a part that turns out short
    # goes back inline where it was.
    large = {
        path: value for path, value in live if path not in unchanged and not _surely_inline(value)
    }
    doc = _without(checkpoint, unchanged, large).to_dict(registry=registry)

    digests = {path: kept.digest for path, kept in unchanged.items()}
    blobs = {kept.digest: kept.text for kept in unchanged.values()}
    size = sum(len(kept.text) for kept in unchanged.values())
    chunk_refs: dict[Path, tuple[list[Any], ...]] = {}
    for path, kept in unchanged.items():
        if kept.chunk_entries:
            chunk_refs[path] = kept.chunk_entries
            blobs.update(kept.chunk_blobs)
            size += sum(len(text) for _, text in kept.chunk_blobs)
    for path, value, text in _texts(doc, large, registry):
        if len(text) < INLINE_LIMIT:
            if path in large:
                _put(doc, path, codec.encode(value, registry=registry, where=_describe(path)))
            continue
        previous = known.get(path)
        cut = _cut(path, value, text, large, previous, registry)
        if cut is not None:
            text = cut.text
            chunk_refs[path] = cut.entries
            blobs.update(cut.blobs)
            size += sum(len(text) for _, text in cut.blobs)
            if path in large:  # the part as stored is the cut copy, not the live value
                large[path] = cut.tree
        # Compared as JSON text, not with ==: in Python 1 == 1.0 == True, and a part whose
        # number changed type must not be stored as the old one.
        repeated = previous is not None and previous.text == text
        if repeated:
            assert previous is not None
            digest = previous.digest
        else:
            digest = hashlib.sha256(codec.check_text(text, _describe(path))).hexdigest()
        fingerprint = fingerprints.get(path)
        if fingerprint is not None and any(tag in text for tag in _BUFFER_TAGS):
            fingerprint = None
        if cache is not None:
            changed = previous is not None and not repeated
            entries, chunk_blobs = (cut.entries, cut.blobs) if cut is not None else ((), ())
            known[path] = KnownPart(fingerprint, text, digest, changed, entries, chunk_blobs)
        if not repeated and len(text) < CHANGING_INLINE_LIMIT:
            if cut is not None and path in large:
                _put(doc, path, cut.tree)
            elif path in large:
                _put(doc, path, codec.encode(value, registry=registry, where=_describe(path)))
            continue
        digests[path] = digest
        blobs[digest] = text
        size += len(text)
        _remove(doc, path)
    # In document order whatever the cache knew, so a load rebuilds the same key order.
    order = [path for path, _ in live] + list(_FIXED_PARTS)
    refs: list[list[Any]] = []
    for path in order:
        if path in digests:
            refs.append([list(path), digests[path]])
        refs.extend(chunk_refs.get(path, ()))
    doc["blob_refs"] = refs
    doc["pending_request_ids"] = list(checkpoint.pending_request_info_events)
    record_text = codec.dumps(doc)
    codec.check_text(record_text, "checkpoint")
    return SplitCheckpoint(doc, record_text, blobs, size + len(record_text))


@dataclass(frozen=True)
class _Cut:
    tree: Any  # the part as stored: encoded, each conversation holding only its tail
    text: str
    entries: tuple[list[Any], ...]
    blobs: tuple[tuple[str, str], ...]


def _cut(
    path: Path,
    value: Any,
    text: str,
    large: dict[Path, Any],
    previous: KnownPart | None,
    registry: TypeRegistry,
) -> _Cut | None:
    """The part with its long conversations cut into chunks, or None when it has none."""
    if len(text) < CHANGING_INLINE_LIMIT or not chunks.may_hold_conversation(text):
        return None
    # A fixed part is the document's own encoded value, cut in place; a live one is encoded.
    tree = codec.encode(value, registry=registry, where=_describe(path)) if path in large else value
    cuts = chunks.cut_conversations(tree)
    if not cuts:
        return None
    # A closed chunk is the same text save after save: the last save's digest is reused.
    known = dict(previous.chunk_blobs) if previous is not None else {}
    by_text = {chunk_text: digest for digest, chunk_text in known.items()}
    entries: list[list[Any]] = []
    chunk_blobs: list[tuple[str, str]] = []
    for inner, closed in cuts:
        entry: list[Any] = [[*path, *inner, chunks.MARK]]
        for chunk in closed:
            chunk_text = codec.dumps(chunk)
            digest = by_text.get(chunk_text)
            if digest is None:
                digest = hashlib.sha256(codec.check_text(chunk_text, _describe(path))).hexdigest()
            entry.append(digest)
            chunk_blobs.append((digest, chunk_text))
        entries.append(entry)
    return _Cut(tree, codec.dumps(tree), tuple(entries), tuple(chunk_blobs))


def _texts(
    doc: dict[str, Any], large: dict[Path, Any], registry: TypeRegistry
) -> Iterator[tuple[Path, Any, str]]:
    """(path, value, JSON text) of every part that may be a blob, in document order: the
    large live parts, then the fixed parts as ``to_dict`` encoded them."""
    for path, value in large.items():
        yield path, value, codec.encode_text(value, registry=registry, where=_describe(path))
    for path in _FIXED_PARTS:
        value = doc[path[0]]
        if not _surely_inline(value):
            yield path, value, codec.dumps(value)


def _without(
    checkpoint: WorkflowCheckpoint, dropped: dict[Path, KnownPart], placeholders: dict[Path, Any]
) -> WorkflowCheckpoint:
    """``checkpoint`` minus the ``dropped`` state and executor-state parts, with None in place
    of the ``placeholders`` ones (a shallow copy)."""
    if not dropped and not placeholders:
        return checkpoint

    return dataclasses.replace(
        checkpoint,
        state={
            k: None if ("state", k) in placeholders else v
            for k, v in checkpoint.state.items()
            if ("state", k) not in dropped
        },
        executor_states={
            eid: {
                k: None if ("executor_states", eid, k) in placeholders else v
                for k, v in st.items()
                if ("executor_states", eid, k) not in dropped
            }
            for eid, st in checkpoint.executor_states.items()
        },
    )


def join_checkpoint(
    record: dict[str, Any],
    blob: Callable[[str], Any],
    *,
    registry: TypeRegistry = default_registry,
) -> WorkflowCheckpoint:
    """Rebuild a checkpoint from its record; ``blob(digest)`` returns a blob's parsed JSON.

    Raises:
        CheckpointDecodeError: the record or a blob is malformed, or a blob is missing.
    """
    return WorkflowCheckpoint.from_dict(join_document(record, blob), registry=registry)


def join_document(record: dict[str, Any], blob: Callable[[str], Any]) -> dict[str, Any]:
    """The whole checkpoint document (the codec's JSON, nothing decoded) from its record:
    every part put back from its blob, every long conversation from its chunks. The record
    and the blobs are not changed.

    Raises:
        CheckpointDecodeError: the record is malformed, or ``blob`` raises it.
    """
    if not isinstance(record, dict) or not isinstance(record.get("blob_refs"), list):
        raise CheckpointDecodeError("malformed checkpoint record")
    doc = dict(record)
    doc["state"] = dict(doc.get("state", {}))
    doc["executor_states"] = {k: dict(v) for k, v in doc.get("executor_states", {}).items()}
    conversations = []
    for entry in record["blob_refs"]:
        if not (
            isinstance(entry, list)
            and len(entry) >= 2
            and isinstance(entry[0], list)
            and all(isinstance(digest, str) for digest in entry[1:])
        ):
            raise CheckpointDecodeError("malformed blob reference in checkpoint record")
        if chunks.is_chunk_entry(entry):
            conversations.append(entry)
        elif len(entry) == 2:
            _put(doc, tuple(entry[0]), blob(entry[1]))
        else:
            raise CheckpointDecodeError("malformed blob reference in checkpoint record")
    # After the parts: a conversation's tail lives in its part, which may be a blob itself.
    for path, *digests in conversations:
        chunks.put_back(doc, path, [blob(digest) for digest in digests])
    doc.pop("blob_refs", None)
    doc.pop("pending_request_ids", None)
    return doc


def record_digests(record: dict[str, Any]) -> list[str]:
    """Every blob digest a record refers to, in order: each part's, then each conversation
    chunk's (an entry is ``[path, digest]`` or ``[path + ["*"], digest, ...]``)."""
    return [digest for entry in record["blob_refs"] for digest in entry[1:]]


def summarize_record(record: dict[str, Any], size_bytes: int) -> CheckpointSummary:
    """The ``CheckpointSummary`` of a stored record (a split checkpoint's small part), read
    without decoding any value: what a listing shows and what retention decides on."""
    metadata = record.get("metadata") or {}
    return CheckpointSummary(
        checkpoint_id=record["checkpoint_id"],
        workflow_name=record["workflow_name"],
        run_id=record["run_id"],
        timestamp=record["timestamp"],
        iteration_count=record["iteration_count"],
        previous_checkpoint_id=record.get("previous_checkpoint_id"),
        graph_signature_hash=record["graph_signature_hash"],
        pending_request_ids=tuple(record.get("pending_request_ids", ())),
        answered_request_ids=tuple(record.get("answered_request_ids", ())),
        size_bytes=size_bytes,
        kind=str(metadata.get("kind", "")) if isinstance(metadata, dict) else "",
    )


def _describe(path: Path) -> str:
    if path[0] == "state":
        return f"shared state key {path[1]!r}"
    if path[0] == "executor_states":
        return f"executor {path[1]!r} state key {path[2]!r}"
    return path[0].replace("_", " ")


def _remove(doc: dict[str, Any], path: Path) -> None:
    if path[0] == "state":
        del doc["state"][path[1]]
    elif path[0] == "executor_states":
        del doc["executor_states"][path[1]][path[2]]
    else:
        del doc[path[0]]


def _put(doc: dict[str, Any], path: Path, value: Any) -> None:
    if len(path) == 2 and path[0] == "state":
        doc["state"][path[1]] = value
    elif len(path) == 3 and path[0] == "executor_states":
        doc["executor_states"].setdefault(path[1], {})[path[2]] = value
    elif len(path) == 1 and path[0] in (
        "messages",
        "pending_request_info_events",
        "edge_states",
        "graph_signature",
    ):
        doc[path[0]] = value
    else:
        raise CheckpointDecodeError(f"malformed blob path {list(path)!r}")
