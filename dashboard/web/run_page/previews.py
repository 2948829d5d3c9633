"""What an action will do, in words, for its confirmation dialog (read-only; nothing changes).

Operators choose where to resume by what re-runs: which supersteps, which executors (and so
which side effects, such as e-mails or payments, happen again), which approvals are asked for
again. These previews say it before anyone clicks.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from dashboard import selectors
from dashboard.checkpoints import documents
from dashboard.models import Checkpoint, RunStatus, WorkflowRun
from dashboard.web.run_page import graph_state

__all__ = ["Preview", "cancel_preview", "fork_preview", "resume_preview", "retry_preview"]


@dataclasses.dataclass(frozen=True)
class Preview:
    title: str
    message: str
    items: list[str]


def _names(names: list[str]) -> str:
    return ", ".join(names) if names else "none"


def _model_calls(run: WorkflowRun, step: int, verb: str) -> list[str]:
    """What the model is asked again: each agent's calls after ``step``, with what they cost
    the first time, so that an operator choosing a checkpoint sees the price of going back."""
    calls = selectors.model_calls_after(run.pk, step)
    if not calls:
        return []
    parts = []
    for found in calls:
        times = "1 call" if found.calls == 1 else f"{found.calls} calls"
        parts.append(f"{found.executor_id} ({found.model or 'model unknown'}, {times})")
    tokens = sum(found.tokens for found in calls)
    costs = [found.cost for found in calls]
    spent = (
        f", which cost {sum(c for c in costs if c is not None)} the first time"
        if costs and all(c is not None for c in costs)
        else ""
    )
    return [f"Model calls that {verb}: {', '.join(parts)}: {tokens:,} tokens last time{spent}."]


def _first_to_run(run: WorkflowRun, document: dict[str, Any]) -> list[str]:
    found = graph_state.workflow_layout(run.workflow_name)
    edges = found[1] if found else ()
    return graph_state.next_executors(document, edges)


def resume_preview(
    run: WorkflowRun,
    checkpoint: Checkpoint,
    document: dict[str, Any],
    rerun: list[str] | None = None,
) -> Preview:
    """``rerun``: ``selectors.executors_run_after(run, superstep)`` when already known."""
    step = checkpoint.superstep
    reached = max(run.current_superstep, step)
    if rerun is None:
        rerun = selectors.executors_run_after(run.pk, step)
    asked = selectors.requests_raised_after(run.pk, step)
    if reached > step:
        message = (
            f"Supersteps {step + 1}–{reached} will run again from this checkpoint "
            f"(the run had reached superstep {reached}), then the run carries on."
        )
    else:
        message = f"The run continues from superstep {step}, as a new branch of its history."
    items = [
        f"Executors that re-execute: {_names(rerun)}.",
        f"First to run: {_names(_first_to_run(run, document))}.",
        *_model_calls(run, step, "run again"),
        "Anything they did outside the workflow (e-mails, payments, API calls) happens again.",
    ]
    if asked:
        items.append(f"{asked} approval request(s) raised after this point will be asked again.")
    if run.status == RunStatus.WAITING:
        items.append("The run's pending approval requests are cancelled.")
    return Preview(f"Resume from superstep {step}?", message, items)


def fork_preview(
    run: WorkflowRun,
    checkpoint: Checkpoint,
    document: dict[str, Any],
    rerun: list[str] | None = None,
) -> Preview:
    step = checkpoint.superstep
    if rerun is None:
        rerun = selectors.executors_run_after(run.pk, step)
    items = [
        f"First to run: {_names(_first_to_run(run, document))}.",
        f"Ran after this checkpoint in this run, and may run again in the fork: {_names(rerun)}.",
        *_model_calls(run, step, "may run again in the fork"),
        "Your edits were checked, and are checked again when the fork is saved.",
        "This run is not changed.",
    ]
    return Preview(
        f"Fork a new run from superstep {step}?",
        f"A new run of {run.workflow_name} starts from superstep {step} "
        "with the state in the editor.",
        items,
    )


def retry_preview(run: WorkflowRun) -> Preview:
    latest = run.latest_checkpoint
    if latest is None:
        return Preview(
            "Retry this run?",
            "The run starts again from its input: it failed before its first checkpoint.",
            ["Every executor runs again, with its side effects."],
        )
    return Preview(
        "Retry this run?",
        f"The run continues from its latest checkpoint (superstep {latest.superstep}); "
        f"superstep {latest.superstep + 1} runs again.",
        [
            f"First to run: {_names(_first_to_run(run, documents.checkpoint_document(latest)))}.",
            "Anything they did before failing (e-mails, payments, API calls) may happen again.",
        ],
    )


def cancel_preview(run: WorkflowRun, pending: int) -> Preview:
    items = ["A superstep in progress is abandoned; its work is not checkpointed."]
    if pending:
        items.append(f"{pending} pending approval request(s) are cancelled.")
    items.append("You can resume the run later from any of its checkpoints.")
    return Preview(
        "Cancel this run?", f"Run {str(run.pk)[:8]} stops and is marked cancelled.", items
    )
