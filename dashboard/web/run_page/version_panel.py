"""The run page's version panel: which version a run executes on and, when it needs
migration, the checkpoints it can move from and what each would lose
(``templates/dashboard/_run_version.html``)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from dashboard import services
from dashboard.core.types import Actor
from dashboard.models import Checkpoint, RunStatus, WorkflowRun
from dashboard.services.versions import short
from workflows import CheckpointMigration

__all__ = ["CheckpointChoice", "Preview", "panel_context"]

# The checkpoints offered as a starting point: the latest ones, newest first.
CHOICES = 50


@dataclass(frozen=True)
class CheckpointChoice:
    checkpoint_id: str
    superstep: int
    kind: str
    created_at: Any
    latest: bool


@dataclass(frozen=True)
class Preview:
    """What migrating from the chosen checkpoint means, or why it cannot be said."""

    checkpoint_id: str
    migration: CheckpointMigration | None
    error: str = ""


def panel_context(
    run: WorkflowRun, user: Actor, checkpoint_id: str | None = None
) -> dict[str, Any]:
    """The context of the run page's version panel (``_run_version.html``)."""
    state = services.version_state(run)
    stuck = run.status == RunStatus.NEEDS_MIGRATION or not state.can_continue
    context: dict[str, Any] = {
        "run": run,
        "version": state,
        "version_short": short(state.version),
        "current_short": short(state.current or ""),
        "stuck": stuck,
        "may_migrate": services.can(user, "migrate"),
        "reason": run.migration_reason or state.reason,
    }
    if stuck and state.current is not None:
        choices = _choices(run)
        chosen = checkpoint_id or (choices[0].checkpoint_id if choices else None)
        context["choices"] = choices
        context["preview"] = _preview(run, chosen) if chosen else None
    return context


def _choices(run: WorkflowRun) -> list[CheckpointChoice]:
    rows = (
        Checkpoint.objects.filter(run=run)
        .order_by("-superstep", "-created_at")
        .values_list("checkpoint_id", "superstep", "document__metadata__kind", "created_at")[
            :CHOICES
        ]
    )
    return [
        CheckpointChoice(cid, step, str(kind or "superstep"), created, cid == _latest_id(run))
        for cid, step, kind, created in rows
    ]


def _latest_id(run: WorkflowRun) -> str | None:
    checkpoint = run.latest_checkpoint
    return checkpoint.checkpoint_id if checkpoint is not None else None


def _preview(run: WorkflowRun, checkpoint_id: str) -> Preview:
    try:
        return Preview(checkpoint_id, services.migration_preview(run, checkpoint_id))
    except services.ServiceError as exc:
        return Preview(checkpoint_id, None, exc.message)
