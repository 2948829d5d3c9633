"""A checkpoint diff as the inspector shows it: grouped by what an operator reads (executor
state, shared state, messages in flight, pending requests, then the checkpoint's own fields),
always from the older checkpoint to the newer one, whichever of the two the operator opened,
and for any two checkpoints, of one run or of a fork and its origin.

Pure functions over checkpoint documents (codec JSON, ``selectors.checkpoint_document``): the
view loads, this compares, the templates show.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterator
from dataclasses import dataclass, field
from difflib import SequenceMatcher
from itertools import zip_longest
from typing import Any, Literal, Protocol

from dashboard.renderers import diff_values
from dashboard.renderers.jsondiff import (
    CHANGE_KINDS,
    DEFAULT_MAX_ENTRIES,
    DiffEntry,
    Section,
    diff_json,
)

__all__ = [
    "SECTIONS",
    "CheckpointDiff",
    "Section",
    "SideBySide",
    "checkpoint_diff",
    "older_first",
    "parts",
    "side_by_side",
    "trees",
]

# (key in ``parts``, title, root of its paths). The last one holds the checkpoint's own fields
# at the top level, where their paths have always been ($.superstep, $.edge_states...).
SECTIONS = (
    ("executor_states", "Executor state", "$.executor_states"),
    ("state", "Shared state", "$.state"),
    ("messages", "Messages in flight", "$.messages"),
    ("pending_requests", "Pending requests", "$.pending_requests"),
    ("checkpoint", "Checkpoint", "$"),
)


def parts(document: dict[str, Any], *, superstep: int) -> dict[str, Any]:
    """What the diff compares, by section: codec JSON inside plain wrappers (messages and
    requests keep only the fields an operator reads; ids and timestamps of the checkpoint
    itself are left out, they always differ)."""
    messages = []
    for message in document.get("messages") or []:
        shown = {
            "from": message.get("source"),
            "to": message.get("target"),
            "kind": message.get("kind"),
            "data": message.get("data"),
        }
        if message.get("request"):
            shown["answers"] = _request(message["request"])
        messages.append(shown)
    pending = document.get("pending_request_info_events") or {}
    return {
        "executor_states": document.get("executor_states") or {},
        "state": document.get("state") or {},
        "messages": messages,
        "pending_requests": {rid: _request(event) for rid, event in pending.items()},
        "checkpoint": {
            "superstep": superstep,
            "edge_states": document.get("edge_states") or {},
            "answered_request_ids": list(document.get("answered_request_ids") or []),
            "metadata": document.get("metadata") or {},
        },
    }


def _request(event: dict[str, Any]) -> dict[str, Any]:
    return {
        "executor": event.get("source_executor_id"),
        "request_type": event.get("request_type"),
        "response_type": event.get("response_type"),
        "created_at": event.get("created_at"),
        "data": event.get("data"),
    }


def trees(checkpoint_parts: dict[str, Any]) -> dict[str, Any]:
    """The sections as the JSON trees show them: no codec tag anywhere."""
    return {key: diff_values.tree(value) for key, value in checkpoint_parts.items()}


@dataclass(frozen=True, slots=True)
class CheckpointDiff:
    sections: list[Section] = field(default_factory=list)
    truncated: bool = False

    @property
    def entries(self) -> list[DiffEntry]:
        """Every change, section after section."""
        return [entry for section in self.sections for entry in section.diff.entries]

    def __iter__(self) -> Iterator[DiffEntry]:
        return iter(self.entries)

    @property
    def counts(self) -> dict[str, int]:
        totals = dict.fromkeys((*CHANGE_KINDS, "unchanged"), 0)
        for section in self.sections:
            for kind, count in section.counts.items():
                totals[kind] += count
        return totals

    def entry(self, number: int) -> DiffEntry | None:
        """The change row numbered ``number`` (the side-by-side view's link names it)."""
        return next((e for e in self.entries if e.number == number), None)


def checkpoint_diff(
    older: dict[str, Any], newer: dict[str, Any], *, max_entries: int = DEFAULT_MAX_ENTRIES
) -> CheckpointDiff:
    """Section by section, ``older`` → ``newer`` (both from ``parts``), at most
    ``max_entries`` rows in all; change rows are numbered across sections."""
    sections: list[Section] = []
    left, number = max_entries, 1
    for key, title, root in SECTIONS:
        diff = diff_json(older[key], newer[key], path=root, max_entries=left, first_number=number)
        sections.append(Section(key, title, diff))
        left -= len(diff.rows)
        number += len(diff.entries)
        if diff.truncated:
            return CheckpointDiff(sections, truncated=True)
    return CheckpointDiff(sections)


class Dated(Protocol):
    @property
    def created_at(self) -> dt.datetime: ...

    @property
    def superstep(self) -> int: ...


def older_first[D: Dated](a: D, b: D) -> tuple[D, D]:
    """The two checkpoints, older first: by when they were written, then by superstep (a fork
    and its origin may have been written in the same instant of a test)."""
    return (a, b) if (a.created_at, a.superstep) <= (b.created_at, b.superstep) else (b, a)


# ---------------------------------------------------------------------------- side by side

LineKind = Literal["same", "changed", "removed", "added", "skipped"]
CONTEXT_LINES = 3


@dataclass(frozen=True, slots=True)
class SideLine:
    old: str | None
    new: str | None
    kind: LineKind
    skipped: int = 0  # "skipped": how many unchanged lines the row stands for


@dataclass(frozen=True, slots=True)
class SideBySide:
    entry: DiffEntry
    path: str  # of the value shown: the entry's, or a container it is in
    up: int  # how many containers above the entry
    lines: list[SideLine]
    old_cut: bool
    new_cut: bool

    @property
    def has_old(self) -> bool:
        return self.up > 0 or self.entry.has_old

    @property
    def has_new(self) -> bool:
        return self.up > 0 or self.entry.has_new

    @property
    def wider(self) -> list[tuple[int, str]]:
        """``(up, path)`` of every value this view can show instead, outermost first."""
        paths = [path for path, _, _ in self.entry.context] + [self.entry.path]
        return [(len(paths) - 1 - level, path) for level, path in enumerate(paths)]


def side_by_side(entry: DiffEntry, *, up: int = 0) -> SideBySide:
    """One value before and after, line against line, in the notation of ``diff_values``: the
    entry's own value, or with ``up`` the container that many levels above it (the record a
    changed field belongs to). Long runs of equal lines fold to ``CONTEXT_LINES`` at each end."""
    up = max(0, min(up, len(entry.context)))
    if up:
        path, before, after = entry.context[-up]
        old, old_cut = diff_values.pretty(before)
        new, new_cut = diff_values.pretty(after)
    else:
        path = entry.path
        old, old_cut = diff_values.pretty(entry.old) if entry.has_old else ([], False)
        new, new_cut = diff_values.pretty(entry.new) if entry.has_new else ([], False)
    lines: list[SideLine] = []
    matcher = SequenceMatcher(None, old, new, autojunk=False)
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag == "equal":
            lines.extend(_fold([SideLine(old[i], old[i], "same") for i in range(i1, i2)]))
        elif tag == "delete":
            lines.extend(SideLine(old[i], None, "removed") for i in range(i1, i2))
        elif tag == "insert":
            lines.extend(SideLine(None, new[j], "added") for j in range(j1, j2))
        else:
            pairs = zip_longest(old[i1:i2], new[j1:j2])
            lines.extend(SideLine(o, n, "changed") for o, n in pairs)
    return SideBySide(entry, path, up, lines, old_cut, new_cut)


def _fold(same: list[SideLine]) -> list[SideLine]:
    if len(same) <= 2 * CONTEXT_LINES + 1:
        return same
    hidden = len(same) - 2 * CONTEXT_LINES
    gap = SideLine(None, None, "skipped", skipped=hidden)
    return [*same[:CONTEXT_LINES], gap, *same[-CONTEXT_LINES:]]
