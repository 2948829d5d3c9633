"""What a refused action tells the person who tried it: one sentence, for a human.

Services refuse a stale action with a ``Conflict`` whose message is written for logs and API
clients (ids, ISO timestamps). An operator whose button was true a moment ago wants to know
what happened instead: who did what, and how long ago ("ana already approved this 2 minutes
ago."). The sentence is built from the object as it is now, re-read after the refusal, so it
names what really happened whichever way the race went; the service's own message is the
fallback for a refusal these pages cannot explain better.
"""

from __future__ import annotations

from django.contrib.auth.models import User

from dashboard import selectors
from dashboard.core.types import Actor
from dashboard.models import ApprovalRequest, ApprovalStatus, RunStatus, WorkflowRun
from dashboard.web.timefmt import ago

__all__ = ["approval_conflict", "run_conflict"]

# Audit actions that move a run to another status, and how a sentence says them.
_RUN_MOVES = {
    "cancel": "cancelled",
    "retry": "retried",
    "resume": "resumed",
    "start": "started",
}


def _signed_in(actor: Actor) -> User | None:
    return actor if isinstance(actor, User) and actor.is_authenticated else None


def _is(actor: Actor, other: object) -> bool:
    """``other`` (a user or None) is the one asking."""
    user = _signed_in(actor)
    return user is not None and isinstance(other, User) and other.pk == user.pk


def _name(user: Actor, other: object) -> str:
    if _is(user, other):
        return "You"
    get = getattr(other, "get_username", None)
    return str(get()) if callable(get) else "someone"


def approval_conflict(
    approval: ApprovalRequest | None, *, user: Actor, fallback: str, release: bool = False
) -> str:
    """Why deciding, claiming or releasing ``approval`` was refused, as it stands now."""
    if approval is None:
        return "This request no longer exists."
    when = ago(approval.decided_at)
    if approval.status == ApprovalStatus.CANCELLED:
        return (
            f"This request was cancelled {when}: its run was cancelled, or resumed from "
            "another checkpoint."
        )
    if approval.status in (ApprovalStatus.APPROVED, ApprovalStatus.REJECTED):
        verb = approval.get_status_display().lower()
        if approval.decided_by is None:
            return f"The deadline's default outcome already {verb} this {when}."
        return f"{_name(user, approval.decided_by)} already {verb} this {when}."
    claimer = approval.claimed_by
    if release and not _is(user, claimer):
        return "This request is not claimed by you, so there is no claim of yours to give back."
    if claimer is not None and not _is(user, claimer):
        return (
            f"This request is already claimed by {claimer.get_username()} "
            f"({ago(approval.claimed_at)}): only they can decide it or give it back, "
            "unless you take it over."
        )
    run = approval.run
    if run.is_terminal:
        return f"This request no longer applies: its run {_run_state(run)}."
    if approval.engine_run_id != run.engine_run_id:
        return (
            "This request no longer applies: its run was resumed from another checkpoint, "
            "where it asks again."
        )
    voter = _signed_in(user)
    if voter is not None and approval.votes.filter(user=voter).exists():
        return (
            f"You have already voted on this request; it needs {approval.required_approvals} "
            "approvals from different people."
        )
    return fallback


def _run_state(run: WorkflowRun) -> str:
    """``completed 2 minutes ago``, ``was cancelled just now``, ``is running``."""
    if run.status == RunStatus.CANCELLED:
        return f"was cancelled {ago(run.finished_at)}"
    if run.is_terminal:
        return f"{run.status} {ago(run.finished_at)}"
    return f"is {run.get_status_display().lower()}"


def run_conflict(run: WorkflowRun, action: str, *, user: Actor, fallback: str) -> str:
    """Why cancelling or retrying ``run`` was refused, as it stands now."""
    last = next(
        (
            entry
            for entry in selectors.run_audit_entries(run.pk, limit=20)
            if entry.outcome == "ok" and entry.action in _RUN_MOVES
        ),
        None,
    )
    by = "someone"
    if last is not None:
        me = _signed_in(user)
        mine = me is not None and last.actor_name == me.get_username()
        by = "You" if mine else (last.actor_name or "the system")
    if action == "cancel" and run.status == RunStatus.CANCELLED:
        if last is not None and last.action == "cancel":
            return f"{by} cancelled this run {ago(last.created_at)}."
        return f"This run was cancelled {ago(run.finished_at)}."
    if action == "cancel" and run.is_terminal:
        advice = "; retry it instead" if run.status == RunStatus.FAILED else ""
        return f"This run {_run_state(run)}: there is nothing left to cancel{advice}."
    if action == "retry" and run.status != RunStatus.FAILED:
        if last is not None and last.action in ("retry", "resume") and not run.is_terminal:
            return (
                f"{by} {_RUN_MOVES[last.action]} this run {ago(last.created_at)}; "
                f"it {_run_state(run)} now."
            )
        return f"This run {_run_state(run)}; only a failed run can be retried."
    return fallback
