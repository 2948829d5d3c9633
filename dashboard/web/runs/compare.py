"""Two runs side by side (``/runs/compare/?a=<run>&b=<run>``): their facts in two columns with
the differences marked, then what differs in their input, their output and their latest
checkpoints (the inspector's diff, run A read as "before" and run B as "after"), and how often
each executor ran in each. Typical pairs: a fork and its origin, a retry against a run that
worked, two runs of one workflow on different versions.

A run is named by its id or a unique prefix of it (8 hex characters or more, as the pages show
them); a run the user may not see is not found.
"""

from __future__ import annotations

import dataclasses
import re
import uuid
from typing import Any

from django.db.models import Count
from django.http import QueryDict
from django.utils import timezone

from dashboard import selectors
from dashboard.access import masking
from dashboard.core.types import Actor
from dashboard.models import RunEvent, WorkflowRun
from dashboard.renderers import checkpoint_diff
from dashboard.renderers.jsondiff import diff_json
from dashboard.web.durations import run_durations
from dashboard.web.timefmt import duration_text

__all__ = ["Comparison", "compare", "candidates", "find_run"]

_HEX = re.compile(r"[0-9a-f]{8,32}")
CANDIDATES = 20


def find_run(text: str, user: Actor) -> tuple[WorkflowRun | None, str]:
    """The run ``text`` names (an id, or a prefix of one), and why not when there is none."""
    wanted = text.strip().lower()
    if not wanted:
        return None, ""
    compact = wanted.replace("-", "")
    if len(compact) == 32 and _HEX.fullmatch(compact):
        run = selectors.run_get(uuid.UUID(compact), user=user)
        return run, "" if run else f"no run {wanted[:40]}"
    if not _HEX.fullmatch(compact):
        return None, "a run id, or its first 8 characters or more"
    low, high = uuid.UUID(compact.ljust(32, "0")), uuid.UUID(compact.ljust(32, "f"))
    found = list(
        WorkflowRun.objects.filter(id__gte=low, id__lte=high).values_list("pk", flat=True)[:2]
    )
    if len(found) > 1:
        return None, f"more than one run starts with {compact}: give more of its id"
    run = selectors.run_get(found[0], user=user) if found else None
    return run, "" if run else f"no run starts with {compact}"


def candidates(run: WorkflowRun, user: Actor) -> list[WorkflowRun]:
    """Runs worth comparing ``run`` with: its origin, its forks, then recent runs of its
    workflow (only those the user may see)."""
    picked: dict[uuid.UUID, WorkflowRun] = {}
    if run.parent_run_id:
        parent = selectors.run_get(run.parent_run_id, user=user)
        if parent is not None:
            picked[parent.pk] = parent
    for child in selectors.run_children(run.pk):
        picked.setdefault(child.pk, child)
    recent = WorkflowRun.objects.filter(workflow_name=run.workflow_name).exclude(pk=run.pk)
    for other in recent.order_by("-created_at").only(
        "id", "workflow_name", "status", "created_at", "parent_run_id"
    )[:CANDIDATES]:
        picked.setdefault(other.pk, other)
    picked.pop(run.pk, None)
    return list(picked.values())[:CANDIDATES]


@dataclasses.dataclass(frozen=True)
class Fact:
    label: str
    a: str
    b: str

    @property
    def differs(self) -> bool:
        return self.a != self.b


@dataclasses.dataclass(frozen=True)
class Comparison:
    a: WorkflowRun
    b: WorkflowRun
    facts: list[Fact]
    input: Any
    output: Any
    checkpoints: checkpoint_diff.CheckpointDiff | None
    checkpoint_note: str
    executors: list[tuple[str, int, int]]

    @property
    def relation(self) -> str:
        if self.b.parent_run_id == self.a.pk:
            return "Run B is a fork of run A."
        if self.a.parent_run_id == self.b.pk:
            return "Run A is a fork of run B."
        if self.a.workflow_name != self.b.workflow_name:
            return "The runs are of different workflows: only their facts compare meaningfully."
        return ""


def _executor_counts(run: WorkflowRun) -> dict[str, int]:
    rows = (
        RunEvent.objects.filter(run=run, type="executor_invoked")
        .values_list("data__executor_id")
        .annotate(n=Count("id"))
    )
    return {str(name): n for name, n in rows if name}


def _facts(a: WorkflowRun, b: WorkflowRun) -> list[Fact]:
    spans = run_durations([a, b])

    def duration(run: WorkflowRun) -> str:
        span = spans.get(run.pk)
        if span is None or span.since is None:
            return "not started"
        until = span.until or timezone.now()  # still counting
        return duration_text(until - span.since)

    def version(run: WorkflowRun) -> str:
        return (run.graph_version or "")[:12] or "—"

    def who(run: WorkflowRun) -> str:
        return run.created_by.get_username() if run.created_by else "—"

    return [
        Fact("Workflow", a.workflow_name, b.workflow_name),
        Fact("Status", a.status, b.status),
        Fact("Version", version(a), version(b)),
        Fact("Supersteps", str(a.current_superstep), str(b.current_superstep)),
        Fact("Duration", duration(a), duration(b)),
        Fact("Started by", who(a), who(b)),
        Fact(
            "Error",
            f"{a.error_type}: {a.error_message}"[:300] if a.error_type else "—",
            f"{b.error_type}: {b.error_message}"[:300] if b.error_type else "—",
        ),
    ]


def compare(a: WorkflowRun, b: WorkflowRun) -> Comparison:
    diff = None
    note = ""
    first = a.latest_checkpoint
    second = b.latest_checkpoint
    if first is None or second is None:
        note = "One of the runs has no checkpoint yet."
    else:
        diff = checkpoint_diff.checkpoint_diff(
            checkpoint_diff.parts(
                selectors.checkpoint_document(first, a), superstep=first.superstep
            ),
            checkpoint_diff.parts(
                selectors.checkpoint_document(second, b), superstep=second.superstep
            ),
        )
    counts_a, counts_b = _executor_counts(a), _executor_counts(b)
    executors = [
        (name, counts_a.get(name, 0), counts_b.get(name, 0))
        for name in sorted(set(counts_a) | set(counts_b))
    ]
    return Comparison(
        a=a,
        b=b,
        facts=_facts(a, b),
        input=diff_json(
            masking.for_run(a).input(a.input), masking.for_run(b).input(b.input), path="$input"
        ),
        output=diff_json(
            masking.for_run(a).output(a.output), masking.for_run(b).output(b.output), path="$output"
        ),
        checkpoints=diff,
        checkpoint_note=note,
        executors=executors,
    )


def query(a: WorkflowRun, b: WorkflowRun, **extra: Any) -> str:
    params = QueryDict(mutable=True)
    params["a"], params["b"] = str(a.pk), str(b.pk)
    for key, value in extra.items():
        params[key] = str(value)
    return params.urlencode()
