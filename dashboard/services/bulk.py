"""Actions on many runs at once: cancel, retry, resume from the latest checkpoint, hold,
release.

``bulk_preview`` says, before anything happens, how many runs the action would change and
which it would skip and why (the confirmation shows it). ``bulk_start`` records the action and
its runs and queues the work (a small cancel it does at once, once committed: see
``INLINE_CANCELS``); ``bulk_execute`` (a Celery task, or a thread in embedded mode)
works through them a chunk at a time, each run through the very service a single click calls,
audited there, in a short transaction that also records the run's outcome: a worker killed
half-way leaves a run acted on with its outcome, or neither, so whoever carries on acts on
each run once. A run that cannot be acted on (it moved on meanwhile, the role may not act on
its workflow) is skipped with the reason; the others go on.

A worker that dies leaves its task unacknowledged with the broker, which gives it back only
after the visibility timeout (an hour); ``bulk_sweep`` (a periodic job) queues the action
again once the dead worker's claim has expired.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import functools
import uuid
from collections import Counter
from collections.abc import Callable, Sequence
from typing import Any

from django.conf import settings
from django.db import transaction
from django.db.models import Count, Q
from django.utils import timezone

from dashboard.access import audit, authz
from dashboard.core.errors import InvalidInput, NotFound, ServiceError
from dashboard.core.types import Actor
from dashboard.models import (
    TERMINAL_RUN_STATUSES,
    BulkAction,
    BulkActionItem,
    RunStatus,
    WorkflowRun,
)
from dashboard.services import dispatch, runs, validation

__all__ = [
    "BULK_ACTIONS",
    "MAX_BULK_RUNS",
    "BulkPreview",
    "bulk_execute",
    "bulk_preview",
    "bulk_start",
    "bulk_sweep",
]

# What one action may cover: enough for a bad day's failures, bounded for one confirmation.
MAX_BULK_RUNS = 10_000
# Runs done between two progress updates (each run is its own transaction either way).
CHUNK = 25
# A cancel of at most this many runs is done in the request that asks for it, after its commit:
# a cancel must take effect at once, and the workers it would wait for may be busy running
# the very runs it cancels (the embedded pool has a few threads; a busy Celery queue too).
INLINE_CANCELS = 100
# Actions queued again by one sweep; the rest wait for the next.
SWEEP_BATCH = 100
ACTIVE = (RunStatus.QUEUED, RunStatus.RUNNING)


@dataclasses.dataclass(frozen=True)
class _Action:
    label: str  # the button: "Cancel"
    done: str  # the outcome: "cancelled"
    permission: str  # authz action
    # Why a run of this status (and hold) is left alone, or "" when the action applies.
    skip: Callable[[WorkflowRun], str]


def _cancel_skip(run: WorkflowRun) -> str:
    return f"already {run.status}" if run.status in TERMINAL_RUN_STATUSES else ""


def _retry_skip(run: WorkflowRun) -> str:
    return "" if run.status == RunStatus.FAILED else f"{run.status}, not failed"


def _resume_skip(run: WorkflowRun) -> str:
    if run.status in ACTIVE:
        return f"{run.status}: nothing to resume"
    if run.status == RunStatus.COMPLETED:
        return "completed"
    return "" if run.latest_checkpoint_id else "no checkpoint yet"


def _hold_skip(run: WorkflowRun) -> str:
    return "already on hold" if run.on_hold else ""


def _release_skip(run: WorkflowRun) -> str:
    return "" if run.on_hold else "not on hold"


BULK_ACTIONS: dict[str, _Action] = {
    "cancel": _Action("Cancel", "cancelled", "cancel", _cancel_skip),
    "retry": _Action("Retry", "queued again", "retry", _retry_skip),
    "resume": _Action("Resume from latest checkpoint", "resumed", "resume", _resume_skip),
    "hold": _Action("Put on hold", "put on hold", "hold", _hold_skip),
    "release": _Action("Release hold", "released", "release", _release_skip),
}


def _action(name: str) -> _Action:
    found = BULK_ACTIONS.get(name)
    if found is None:
        raise InvalidInput(
            f"unknown action {name[:40]!r}; one of " + ", ".join(BULK_ACTIONS),
            errors={"action": "unknown"},
        )
    return found


@dataclasses.dataclass(frozen=True)
class BulkPreview:
    action: str
    total: int
    acting: int
    # (why, how many, a few of their ids) for the runs the action would leave alone.
    skips: list[tuple[str, int, list[str]]]

    @property
    def label(self) -> str:
        return BULK_ACTIONS[self.action].label


def _unique_ids(run_ids: Sequence[object]) -> list[uuid.UUID]:
    found: list[uuid.UUID] = []
    for value in run_ids:
        try:
            found.append(value if isinstance(value, uuid.UUID) else uuid.UUID(str(value)))
        except ValueError:
            raise InvalidInput(
                f"{str(value)[:40]!r} is not a run id", errors={"runs": "not a run id"}
            ) from None
    unique = list(dict.fromkeys(found))
    if not unique:
        raise InvalidInput("pick the runs to act on", errors={"runs": "none picked"})
    if len(unique) > MAX_BULK_RUNS:
        raise InvalidInput(
            f"at most {MAX_BULK_RUNS} runs at once, not {len(unique)}; narrow the filter",
            errors={"runs": "too many"},
        )
    return unique


def _targets(run_ids: Sequence[object], user: Actor) -> list[WorkflowRun]:
    """The runs named that exist and ``user`` may see, in the order named."""
    ids = _unique_ids(run_ids)
    visible = authz.visible_workflows(user)
    rows = WorkflowRun.objects.filter(pk__in=ids).only(
        "id", "workflow_name", "status", "on_hold", "latest_checkpoint_id"
    )
    if visible is not None:
        rows = rows.filter(workflow_name__in=sorted(visible))
    by_id = {run.pk: run for run in rows}
    return [by_id[i] for i in ids if i in by_id]


def _why_not(action: _Action, run: WorkflowRun, user: Actor) -> str:
    if not authz.can(user, action.permission, run.workflow_name):
        return f"your role may not {action.permission} runs of {run.workflow_name}"
    return action.skip(run)


def bulk_preview(action: str, run_ids: Sequence[object], *, user: Actor) -> BulkPreview:
    """What ``action`` on these runs would do: how many it changes, which it skips and why."""
    chosen = _action(action)
    targets = _targets(run_ids, user)
    reasons: Counter[str] = Counter()
    samples: dict[str, list[str]] = {}
    for run in targets:
        why = _why_not(chosen, run, user)
        if why:
            reasons[why] += 1
            samples.setdefault(why, [])
            if len(samples[why]) < 5:
                samples[why].append(str(run.pk))
    skipped = sum(reasons.values())
    return BulkPreview(
        action=action,
        total=len(targets),
        acting=len(targets) - skipped,
        skips=[(why, n, samples[why]) for why, n in reasons.most_common()],
    )


def bulk_start(
    action: str, run_ids: Sequence[object], *, user: Actor, reason: str = "", described: str = ""
) -> BulkAction:
    """Record the action and its runs, and queue the work (after commit)."""
    chosen = _action(action)
    who = authz.require(user, chosen.permission, target=f"{len(run_ids)} runs")
    validation.require_storable(described, field="described")
    targets = _targets(run_ids, user)
    if not targets:
        raise NotFound("none of the picked runs exists (any more)")
    reason = validation.reason_for(f"{chosen.label.lower()} many runs", reason, user=user)
    with transaction.atomic():
        bulk = BulkAction.objects.create(
            action=action,
            reason=reason,
            requested_by=who,
            described=(described or f"{len(targets)} runs")[:300],
            total=len(targets),
        )
        BulkActionItem.objects.bulk_create(
            [
                BulkActionItem(
                    bulk=bulk, position=n, run_id=run.pk, workflow_name=run.workflow_name
                )
                for n, run in enumerate(targets)
            ],
            batch_size=1000,
        )
        audit.record(
            user,
            f"bulk_{action}",
            target=f"bulk action {bulk.pk}",
            details={"runs": len(targets), "described": bulk.described, "reason": bulk.reason},
        )
        if action == "cancel" and len(targets) <= INLINE_CANCELS:
            # Registered first, so it runs before the worker's task is queued: that task finds
            # the work done, or, after an error here, carries on from the first run left.
            transaction.on_commit(functools.partial(_execute_now, str(bulk.pk)), robust=True)
        dispatch.execute_bulk_on_commit(str(bulk.pk))
    return bulk


def _execute_now(bulk_id: str) -> None:
    try:
        bulk_execute(bulk_id)
    except BaseException:
        # Give up the claim, or the queued task would take it for a live worker's and leave.
        BulkAction.objects.filter(pk=bulk_id).update(claim_token="", claimed_until=None)
        raise


def _claim_seconds() -> int:
    """How long a worker owns a bulk action between two chunks: as long as it owns a run
    between two heartbeats (``SUPERSTEP_LEASE_SECONDS``), well past a chunk's duration."""
    return int(settings.SUPERSTEP_LEASE_SECONDS)


def _claim(bulk_id: uuid.UUID, token: str) -> bool:
    """Own the action for ``_claim_seconds()``, unless another worker holds a live claim (one
    UPDATE: of two at once, one wins)."""
    now = timezone.now()
    return bool(
        BulkAction.objects.filter(pk=bulk_id)
        .exclude(status=BulkAction.FINISHED)
        .filter(Q(claim_token="") | Q(claim_token=token) | Q(claimed_until__lt=now))
        .update(claim_token=token, claimed_until=now + dt.timedelta(seconds=_claim_seconds()))
    )


def bulk_sweep() -> list[str]:
    """Queue again the unfinished actions nobody works on: a claim that expired (its worker
    died) or, a while after they were asked, none at all (the message was lost with the
    broker). Returns their ids. Queuing a live one is harmless: its claim turns the task away.
    """
    moment = timezone.now()
    unasked_since = moment - dt.timedelta(seconds=2 * _claim_seconds())
    stalled = [
        str(pk)
        for pk in BulkAction.objects.exclude(status=BulkAction.FINISHED)
        .filter(Q(claimed_until__lt=moment) | Q(claim_token="", created_at__lt=unasked_since))
        .order_by("created_at")
        .values_list("pk", flat=True)[:SWEEP_BATCH]
    ]
    for bulk_id in stalled:
        dispatch.execute_bulk_on_commit(bulk_id)
    return stalled


def bulk_execute(bulk_id: str) -> BulkAction | None:
    """Do the action on every run not done yet, a chunk at a time. Safe to deliver twice: a
    second worker finds the first one's claim and leaves; after a worker died, its claim
    expires and the redelivered task carries on where the work stopped."""
    bulk = BulkAction.objects.select_related("requested_by").filter(pk=bulk_id).first()
    if bulk is None or bulk.status == BulkAction.FINISHED:
        return bulk
    token = uuid.uuid4().hex
    if not _claim(bulk.pk, token):
        return bulk  # another worker is on it
    chosen = BULK_ACTIONS[bulk.action]
    user = bulk.requested_by
    BulkAction.objects.filter(pk=bulk.pk, started_at__isnull=True).update(started_at=timezone.now())
    BulkAction.objects.filter(pk=bulk.pk).update(status=BulkAction.RUNNING)
    while True:
        if not _claim(bulk.pk, token):
            return BulkAction.objects.get(pk=bulk.pk)  # taken over after a stall: stop here
        chunk = list(
            BulkActionItem.objects.filter(bulk=bulk, outcome="").order_by("position")[:CHUNK]
        )
        if not chunk:
            break
        # One read for the chunk's runs, to skip without a round trip what need not be tried.
        found = {
            run.pk: run
            for run in WorkflowRun.objects.filter(pk__in=[i.run_id for i in chunk]).only(
                "id", "workflow_name", "status", "on_hold", "latest_checkpoint_id"
            )
        }
        for item in chunk:
            _act_and_record(chosen, bulk, item, found.get(item.run_id), user)
        # Counted from the records, by the claim's holder only: a worker that lost its claim
        # after a stall cannot write a count older than its successor's.
        BulkAction.objects.filter(pk=bulk.pk, claim_token=token).update(**_counts(bulk.pk))
    BulkAction.objects.filter(pk=bulk.pk, claim_token=token).update(
        status=BulkAction.FINISHED, finished_at=timezone.now(), claim_token="", claimed_until=None
    )
    return BulkAction.objects.get(pk=bulk.pk)


def _act_and_record(
    action: _Action, bulk: BulkAction, item: BulkActionItem, run: WorkflowRun | None, user: Any
) -> None:
    """Act on one run and record its outcome in one transaction (the service's own nests in
    it): a worker that dies in between leaves neither. The item is marked done first, which
    locks its row: a second worker waits on that lock and then finds the item recorded."""
    with transaction.atomic():
        pending = BulkActionItem.objects.filter(pk=item.pk, outcome="")
        if not pending.update(outcome=BulkActionItem.DONE, message=action.done):
            return  # a worker that took over meanwhile has done it
        outcome, message = _one(action, bulk, run, user)
        if outcome != BulkActionItem.DONE:
            BulkActionItem.objects.filter(pk=item.pk).update(outcome=outcome, message=message)


def _counts(bulk_id: uuid.UUID) -> dict[str, int]:
    return BulkActionItem.objects.filter(bulk_id=bulk_id).aggregate(
        done=Count("pk", filter=Q(outcome=BulkActionItem.DONE)),
        skipped=Count("pk", filter=Q(outcome=BulkActionItem.SKIPPED)),
    )


def _one(action: _Action, bulk: BulkAction, run: WorkflowRun | None, user: Any) -> tuple[str, str]:
    """One run, through the single-run service: (outcome, what to say)."""
    if run is None:
        return BulkActionItem.SKIPPED, "the run no longer exists"
    why = _why_not(action, run, user)
    if why:
        return BulkActionItem.SKIPPED, why[:500]
    try:
        if bulk.action == "cancel":
            runs.run_cancel(run.pk, user=user, reason=bulk.reason)
        elif bulk.action == "retry":
            runs.run_retry(run.pk, user=user, reason=bulk.reason)
        elif bulk.action == "resume":
            runs.run_resume(
                run.pk, checkpoint_id=str(run.latest_checkpoint_id), user=user, reason=bulk.reason
            )
        else:
            runs.run_hold(run.pk, user=user, hold=bulk.action == "hold", reason=bulk.reason)
    except ServiceError as exc:
        return BulkActionItem.SKIPPED, exc.message[:500]
    return BulkActionItem.DONE, action.done
