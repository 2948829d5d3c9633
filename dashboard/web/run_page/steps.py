"""A functional run's steps, for its run page: the ``@step`` calls in call order, each with its
input, result, duration, and whether the result was replayed from a checkpoint (on a resume)
or computed by calling the step. A functional workflow has no graph: this list takes its place.

Read from the run's latest checkpoint (``selectors.checkpoint_steps``), whose journal is the
attempt that wrote it: after a resume, the steps done before it show as replayed.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from typing import Any

from dashboard import catalog, selectors
from dashboard.models import WorkflowRun
from dashboard.renderers.diff_values import tree
from dashboard.web import timefmt

__all__ = ["StepRow", "StepsView", "steps_view"]


@dataclass(frozen=True, slots=True)
class StepRow:
    number: int
    step: str
    status: str
    input: Any
    result: Any
    has_result: bool
    duration: str
    error: str

    @property
    def replayed(self) -> bool:
        return self.status == "replayed"

    @property
    def input_id(self) -> str:
        return f"step-{self.number}-input"

    @property
    def result_id(self) -> str:
        return f"step-{self.number}-result"


@dataclass(frozen=True, slots=True)
class StepsView:
    rows: list[StepRow]
    checkpoint_id: str

    @property
    def replayed_count(self) -> int:
        return sum(row.replayed for row in self.rows)


def steps_view(run: WorkflowRun) -> StepsView | None:
    """The run's steps, or None when its workflow is not a functional one."""
    if not catalog.is_functional(run.workflow_name):
        return None
    checkpoint = run.latest_checkpoint if run.latest_checkpoint_id else None
    if checkpoint is None:
        return StepsView([], "")
    rows = [
        StepRow(
            number=index,
            step=record.step,
            status=record.status,
            input=tree(record.input),
            result=tree(record.result) if record.has_result else None,
            has_result=record.has_result,
            duration=duration_text(record.duration_ms),
            error=record.error or "",
        )
        for index, record in enumerate(selectors.checkpoint_steps(checkpoint, run), start=1)
    ]
    return StepsView(rows, checkpoint.checkpoint_id)


def duration_text(ms: float | None) -> str:
    """``12 ms``, ``1.50 s``, then as the rest of the pages say it (``2 min 05 s``); empty
    while the step runs. Steps are often quicker than the pages' one-second resolution."""
    if ms is None:
        return ""
    if ms < 1000:
        return f"{ms:.0f} ms"
    if ms < 60_000:
        return f"{ms / 1000:.2f} s"
    return timefmt.duration_text(dt.timedelta(milliseconds=ms))
