"""A run's checkpoints as a timeline with branches, for ``dashboard/_timeline.html``.

A run's history is a tree. Each lineage (the engine's ``run_id``, ``Checkpoint.engine_run_id``)
is a column of checkpoints. Resuming from an earlier checkpoint starts a new lineage whose first
checkpoint's ``previous_checkpoint_id`` points into the older one: it is drawn as a branch under
that checkpoint. A fork is another run (``WorkflowRun.parent_run`` / ``origin_checkpoint_id``),
drawn as a branch that links to it.

Long lineages (a 1000-superstep loop) are cut to their first and last checkpoints plus any that
carry a branch or is selected; the gaps say how many were left out.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
from collections.abc import Iterable, Sequence

from dashboard import catalog
from dashboard.models import RunStatus, WorkflowRun
from dashboard.selectors import CheckpointRow
from dashboard.web.timefmt import CreatedAtLabels
from workflows import CheckpointKind

__all__ = ["Branch", "Gap", "Item", "Timeline", "build_timeline", "duration_label"]

KEEP_HEAD = 10
KEEP_TAIL = 40
CUT_ABOVE = KEEP_HEAD + KEEP_TAIL + 10


@dataclasses.dataclass
class Branch:
    kind: str  # "resume" | "fork"
    label: str
    entries: list[Item | Gap] = dataclasses.field(default_factory=list)
    run: WorkflowRun | None = None
    current: bool = False


@dataclasses.dataclass
class Item(CreatedAtLabels):
    checkpoint_id: str
    superstep: int
    kind: str
    created_at: dt.datetime
    size_bytes: int
    pending: int
    duration: dt.timedelta | None
    marker: str
    mismatch: bool
    selected: bool
    branches: list[Branch] = dataclasses.field(default_factory=list)

    is_gap = False

    @property
    def duration_label(self) -> str:
        return duration_label(self.duration)


def duration_label(value: dt.timedelta | None) -> str:
    """ "350 ms", "4.2 s", "3 min 05 s", "2 h 07 min": short enough for a timeline row."""
    if value is None:
        return ""
    seconds = value.total_seconds()
    if seconds < 1:
        return f"{max(0, round(seconds * 1000))} ms"
    if seconds < 60:
        return f"{seconds:.1f} s"
    minutes, secs = divmod(int(seconds), 60)
    if minutes < 60:
        return f"{minutes} min {secs:02d} s"
    hours, minutes = divmod(minutes, 60)
    return f"{hours} h {minutes:02d} min"


@dataclasses.dataclass
class Gap:
    count: int
    is_gap = True


@dataclasses.dataclass
class Timeline:
    entries: list[Item | Gap]
    count: int
    truncated: bool


def build_timeline(
    run: WorkflowRun,
    rows: Sequence[CheckpointRow],
    children: Iterable[WorkflowRun],
    *,
    deployed_hash: str | None,
    selected: str | None = None,
    full: bool = False,
) -> Timeline:
    """The tree of this run's checkpoints (``selectors.run_checkpoint_rows``) and forks."""
    by_id = {row["checkpoint_id"]: row for row in rows}
    lineages: dict[str, list[CheckpointRow]] = {}
    for row in rows:
        lineages.setdefault(row["engine_run_id"], []).append(row)
    forks: dict[str, list[WorkflowRun]] = {}
    for child in children:
        forks.setdefault(child.origin_checkpoint_id or "", []).append(child)
    starts: dict[str, list[str]] = {}  # checkpoint id -> lineages branching off it
    roots: list[str] = []
    for lineage, items in lineages.items():
        base = items[0]["previous_checkpoint_id"]
        if base is not None and base in by_id and by_id[base]["engine_run_id"] != lineage:
            starts.setdefault(base, []).append(lineage)
        else:
            roots.append(lineage)
    # A checkpoint of any registered version can be resumed: only the others differ.
    registered = (
        _registered_versions(run.workflow_name) if deployed_hash is not None else frozenset()
    )
    last_id = rows[-1]["checkpoint_id"] if rows else None
    current = lineages.get(run.engine_run_id)
    current_last = (current[-1]["checkpoint_id"] if current else None) or last_id

    def item(row: CheckpointRow) -> Item:
        previous = by_id.get(row["previous_checkpoint_id"] or "")
        kind = str(row.get("kind") or CheckpointKind.SUPERSTEP)
        duration = None
        if previous is not None and kind == CheckpointKind.SUPERSTEP:
            duration = row["created_at"] - previous["created_at"]
        entry = Item(
            checkpoint_id=row["checkpoint_id"],
            superstep=row["superstep"],
            kind=kind,
            created_at=row["created_at"],
            size_bytes=row["size_bytes"],
            pending=row["pending_request_count"],
            duration=duration,
            marker=_marker(run, row, current_last),
            mismatch=deployed_hash is not None and row["graph_signature_hash"] not in registered,
            selected=row["checkpoint_id"] == selected,
        )
        for lineage in starts.get(row["checkpoint_id"], []):
            label = f"Resumed from superstep {row['superstep']}"
            current = lineage == run.engine_run_id
            branch = Branch("resume", label, column(lineages[lineage]), current=current)
            entry.branches.append(branch)
        for child in forks.get(row["checkpoint_id"], []):
            entry.branches.append(Branch("fork", f"Forked into run {str(child.pk)[:8]}", run=child))
        return entry

    def column(items: list[CheckpointRow]) -> list[Item | Gap]:
        built = [item(row) for row in items]
        if full or len(built) <= CUT_ABOVE:
            return list(built)
        return _cut(built)

    entries: list[Item | Gap] = []
    for lineage in roots:
        entries.extend(column(lineages[lineage]))
    truncated = any(isinstance(e, Gap) for e in entries)
    return Timeline(entries=entries, count=len(rows), truncated=truncated)


def _marker(run: WorkflowRun, row: CheckpointRow, current_last: str | None) -> str:
    """The dot's colour: settled checkpoints are done; the run's latest says what it does."""
    if row["checkpoint_id"] != current_last:
        return "done"
    if run.status == RunStatus.RUNNING or run.status == RunStatus.QUEUED:
        return "running"
    if run.status == RunStatus.WAITING and row["pending_request_count"]:
        return "waiting"
    if run.status == RunStatus.FAILED:
        return "failed"
    if run.status == RunStatus.CANCELLED:
        return "cancelled"
    return "completed"


def _cut(built: list[Item]) -> list[Item | Gap]:
    keep = set(range(KEEP_HEAD)) | set(range(len(built) - KEEP_TAIL, len(built)))
    keep |= {i for i, entry in enumerate(built) if entry.branches or entry.selected}
    out: list[Item | Gap] = []
    skipped = 0
    for index, entry in enumerate(built):
        if index in keep:
            if skipped:
                out.append(Gap(skipped))
                skipped = 0
            out.append(entry)
        else:
            skipped += 1
    if skipped:
        out.append(Gap(skipped))
    return out


def _registered_versions(workflow_name: str) -> frozenset[str]:
    try:
        return frozenset(catalog.versions(workflow_name))
    except catalog.UnknownWorkflowError:
        return frozenset()
