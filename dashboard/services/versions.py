"""Workflow versions: which graph a run executes on, and moving runs to a deployed version.

A run records the graph version (signature hash) it started on. After a deploy that changed
its workflow:

* if that version is still registered (several versions side by side, see
  ``catalog.sources``), the run finishes on it;
* otherwise, when the run next executes, a change the deployed graph can carry (the engine's
  ``check_checkpoint_migration``) moves its latest checkpoint onto the new graph and it goes
  on, the move recorded in its history;
* a change it cannot carry parks the run as ``needs_migration``, naming what changed and what
  would be lost, until an operator migrates it (``run_migrate``: resume on the deployed graph
  from a checkpoint they choose, optionally discarding what cannot be carried) or cancels it.
  A periodic job (``park_runs_on_removed_versions``) parks waiting runs the same way, so nobody
  decides a request of a run that cannot continue without being told.
"""

from __future__ import annotations

import dataclasses
import uuid

from django.db import transaction

from dashboard import broadcast, catalog
from dashboard.access import audit, authz
from dashboard.checkpoints.storage import DjangoCheckpointStorage
from dashboard.checkpoints.writes import save_split
from dashboard.core import run_events
from dashboard.core.errors import Conflict, Forbidden, NotFound
from dashboard.core.types import Actor, RunId, username
from dashboard.models import Checkpoint, RunStatus, WorkflowRun
from dashboard.services import approvals
from dashboard.services.common import (
    ACTIVE_STATUSES,
    enqueue,
    locked_run,
    record_events,
    set_status,
)
from dashboard.services.execution import Lease, _approval_specs, fenced

# A migration from an earlier checkpoint is a resume onto the new graph: the same lookup,
# approvals and output rules as runs.run_resume.
from dashboard.services.runs import _cancel_pending_approvals, _checkpoint_of, output_at
from workflows import (
    CheckpointDecodeError,
    CheckpointMigration,
    CheckpointMigrationError,
    WorkflowCheckpoint,
    check_checkpoint_migration,
    migrate_checkpoint,
)
from workflows.storage import split_checkpoint

__all__ = [
    "BulkMigration",
    "VersionState",
    "attempt_version",
    "migration_preview",
    "park_runs_on_removed_versions",
    "run_migrate",
    "run_version",
    "runs_migrate",
    "short",
    "version_state",
]

# Parked per sweep at most: the next sweep takes the rest.
_PARK_BATCH = 200


def short(version: str) -> str:
    """A version as people read it: the first 12 hex digits of its signature hash."""
    return version[:12]


def run_version(run: WorkflowRun) -> str:
    """The version ``run`` executes on; runs from before versions were recorded take their
    latest checkpoint's ("" for such a run that has none yet)."""
    if run.graph_version:
        return run.graph_version
    checkpoint = run.latest_checkpoint
    return checkpoint.graph_signature_hash if checkpoint is not None else ""


@dataclasses.dataclass(frozen=True)
class VersionState:
    """What the run page says about a run's version.

    ``current`` is None when the workflow is not registered at all; ``migration`` is the
    check of the run's latest checkpoint against the current graph, made only when the run's
    own version is gone; ``unreadable`` says why that checkpoint could not be read.
    """

    version: str
    current: str | None
    registered: bool
    migration: CheckpointMigration | None = None
    unreadable: str = ""

    @property
    def is_current(self) -> bool:
        return self.current is not None and self.version in ("", self.current)

    @property
    def can_continue(self) -> bool:
        """The run can execute as it is: on its own version, or moved automatically."""
        if self.registered or self.is_current:
            return True
        return self.migration is not None and self.migration.compatible and not self.unreadable

    @property
    def reason(self) -> str:
        """Why the run cannot continue as it is ("" when it can)."""
        if self.can_continue:
            return ""
        if self.current is None:
            return "its workflow is not registered any more"
        if self.unreadable:
            return (
                f"its latest checkpoint cannot be read by the deployed version: {self.unreadable}"
            )
        assert self.migration is not None
        return (
            f"version {short(self.version)} is no longer registered and the deployed version "
            f"{short(self.current)} cannot carry its latest checkpoint. Changed: "
            f"{self.migration.changes}. It would lose: " + "; ".join(self.migration.blockers)
        )


def version_state(run: WorkflowRun) -> VersionState:
    version = run_version(run)
    if run.workflow_name not in catalog.names():
        return VersionState(version, None, registered=False)
    current = catalog.current_version(run.workflow_name)
    if not version or version in catalog.versions(run.workflow_name):
        return VersionState(version, current, registered=True)
    checkpoint = run.latest_checkpoint
    if checkpoint is None:
        return VersionState(version, current, registered=False)
    try:
        migration = _check(run, _decoded(run, checkpoint))
    except CheckpointDecodeError as exc:
        return VersionState(version, current, registered=False, unreadable=str(exc))
    return VersionState(version, current, registered=False, migration=migration)


def migration_preview(run: WorkflowRun, checkpoint_id: str) -> CheckpointMigration:
    """What migrating ``run`` from one of its checkpoints to the current version means.

    Raises:
        NotFound: the run has no such checkpoint.
        Conflict: the workflow is not registered, or the checkpoint cannot be read.
    """
    _ensure_registered(run)
    checkpoint = _checkpoint_of(run, checkpoint_id)
    try:
        return _check(run, _decoded(run, checkpoint))
    except CheckpointDecodeError as exc:
        raise Conflict(
            f"checkpoint {checkpoint_id} cannot be read by the deployed version: {exc}"
        ) from None


# ------------------------------------------------------------------------------ the worker


def attempt_version(lease: Lease) -> str | None:
    """The version this attempt executes on, moving the run first when it must.

    Returns None when the run was parked as ``needs_migration`` (and the lease released):
    the worker stops there.
    """
    with transaction.atomic():
        run = fenced(lease)
        name = run.workflow_name
        version = run_version(run)
        registered = catalog.versions(name)  # UnknownWorkflowError: the worker fails the run
        current = catalog.current_version(name)
        if version in registered or run.latest_checkpoint is None:
            # Never executed yet (or on a registered version): it runs where it stands.
            chosen = version if version in registered else current
            if run.graph_version != chosen:
                WorkflowRun.objects.filter(pk=run.pk).update(graph_version=chosen)
            return chosen
        state = version_state(run)
        if not state.can_continue:
            _park(run, state.reason)
            return None
        assert run.latest_checkpoint is not None
        _move(run, run.latest_checkpoint, user=None, new_lineage=False, discard=False)
        run.save()
        return current


def _park(run: WorkflowRun, reason: str) -> None:
    run.lease_owner, run.lease_expires_at = "", None
    set_status(run, RunStatus.NEEDS_MIGRATION, migration_reason=reason, attempts=0, lost_workers=0)
    run.save()
    record_events(run, [run_events.run_status(RunStatus.NEEDS_MIGRATION, reason=reason)])
    audit.record(
        None,
        "needs_migration",
        run=run,
        target=f"run {run.pk}",
        checkpoint_before=run.latest_checkpoint_id,
        checkpoint_after=run.latest_checkpoint_id,
        details={"version": run_version(run), "reason": reason},
    )
    transaction.on_commit(lambda: broadcast.broadcast_run_changed(run.pk), robust=True)


def park_runs_on_removed_versions() -> list[str]:
    """Park waiting runs whose version was removed and that the deployed one cannot carry,
    so the run page and the lists say so before anyone decides their requests. Returns the
    parked runs' ids."""
    parked: list[str] = []
    for name in catalog.names():
        registered = list(catalog.versions(name))
        candidates = (
            WorkflowRun.objects.filter(workflow_name=name, status=RunStatus.WAITING)
            .exclude(graph_version__in=[*registered, ""])
            .values_list("pk", flat=True)[:_PARK_BATCH]
        )
        for run_id in list(candidates):
            with transaction.atomic():
                run = (
                    WorkflowRun.objects.select_for_update()
                    .select_related("latest_checkpoint")
                    .get(pk=run_id)
                )
                if run.status != RunStatus.WAITING:
                    continue
                state = version_state(run)
                if not state.can_continue:
                    _park(run, state.reason)
                    parked.append(str(run.pk))
    return parked


# ---------------------------------------------------------------------------- the operator


def run_migrate(
    run_id: RunId,
    *,
    checkpoint_id: str | None = None,
    discard_unmatched: bool = False,
    user: Actor = None,
) -> WorkflowRun:
    """Move the run onto the current version from one of its checkpoints (its latest when
    ``checkpoint_id`` is None) and queue it.

    From its latest checkpoint the run keeps its lineage: requests it waits for stay open and
    decisions already made still count. From an earlier one it continues as a resume does, on
    a new branch. ``discard_unmatched`` drops what the new graph cannot carry (listed in the
    history and the audit trail) instead of refusing.

    Raises:
        Conflict: the run is queued or running, finished, already on the current version, or
            the new graph cannot carry the checkpoint (the message lists what it would lose).
        NotFound: no such run or checkpoint.
    """
    authz.require_for_run(user, "migrate", run_id, target=f"run {run_id}")
    with transaction.atomic():
        run = locked_run(run_id)
        if run.status in ACTIVE_STATUSES:
            raise Conflict(f"run {run.pk} is {run.status}; cancel it first or wait for it")
        if run.status in (RunStatus.COMPLETED, RunStatus.CANCELLED):
            raise Conflict(f"run {run.pk} is {run.status}; only unfinished or failed runs migrate")
        _ensure_registered(run)
        current = catalog.current_version(run.workflow_name)
        if run_version(run) == current:
            raise Conflict(f"run {run.pk} already runs on the current version {short(current)}")
        checkpoint = (
            _checkpoint_of(run, checkpoint_id)
            if checkpoint_id is not None
            else run.latest_checkpoint
        )
        if checkpoint is None:
            # Never executed: it simply starts on the current version.
            set_status(run, RunStatus.QUEUED, graph_version=current, migration_reason="")
            run.save()
            moved_to = None
        else:
            new_lineage = checkpoint.pk != run.latest_checkpoint_id
            before = run.latest_checkpoint_id
            moved_to = _move(
                run, checkpoint, user=user, new_lineage=new_lineage, discard=discard_unmatched
            )
            set_status(
                run,
                RunStatus.QUEUED,
                attempts=0,
                lost_workers=0,
                migration_reason="",
                error_type="",
                error_message="",
                traceback="",
            )
            run.save()
            audit.record(
                user,
                "migrate",
                run=run,
                target=f"run {run.pk}",
                checkpoint_before=before,
                checkpoint_after=moved_to.checkpoint_id,
                details={
                    "to_version": current,
                    "from_checkpoint": checkpoint.checkpoint_id,
                    "discarded": moved_to.metadata.get("discarded", []),
                },
            )
        record_events(
            run,
            [
                run_events.run_status(
                    RunStatus.QUEUED,
                    by=username(user),
                    action="migrate",
                    checkpoint_id=moved_to.checkpoint_id if moved_to else None,
                )
            ],
        )
        enqueue(run)
    return run


@dataclasses.dataclass
class BulkMigration:
    """What a bulk migration did: the runs moved, and each run skipped with the reason."""

    migrated: list[str] = dataclasses.field(default_factory=list)
    skipped: dict[str, str] = dataclasses.field(default_factory=dict)


def runs_migrate(
    run_ids: list[str], *, discard_unmatched: bool = False, user: Actor = None
) -> BulkMigration:
    """Migrate each run from its latest checkpoint, one transaction per run, so one that
    cannot move is reported and never holds back the others."""
    authz.require(user, "migrate", target=f"{len(run_ids)} runs")
    result = BulkMigration()
    for run_id in dict.fromkeys(run_ids):
        try:
            run_migrate(run_id, discard_unmatched=discard_unmatched, user=user)
        except (Conflict, NotFound, Forbidden) as exc:
            result.skipped[str(run_id)] = str(exc)
        else:
            result.migrated.append(str(run_id))
    return result


# ---------------------------------------------------------------------------------- helpers


def _ensure_registered(run: WorkflowRun) -> None:
    if run.workflow_name not in catalog.names():
        raise Conflict(
            f"workflow {run.workflow_name!r} is not registered; there is nothing to migrate to"
        )


def _decoded(run: WorkflowRun, checkpoint: Checkpoint) -> WorkflowCheckpoint:
    # Building every registered version registers every type their checkpoints may hold.
    catalog.versions(run.workflow_name)
    return DjangoCheckpointStorage().decode(checkpoint.document)


def _check(run: WorkflowRun, checkpoint: WorkflowCheckpoint) -> CheckpointMigration:
    if catalog.is_functional(run.workflow_name):
        # Its saved step results belong to the code that computed them (the engine refuses
        # them elsewhere with StepMismatchError): a functional run moves onto no other code.
        current = catalog.current_version(run.workflow_name)
        if checkpoint.graph_signature_hash == current:
            return CheckpointMigration(current, current, "", ())
        return CheckpointMigration(
            checkpoint.graph_signature_hash,
            current,
            "the workflow function, its steps or their helpers changed",
            ("the results its steps saved, which only the code that computed them may replay",),
        )
    return check_checkpoint_migration(checkpoint, catalog.describe(run.workflow_name))


def _move(
    run: WorkflowRun, checkpoint: Checkpoint, *, user: Actor, new_lineage: bool, discard: bool
) -> WorkflowCheckpoint:
    """Write the checkpoint moved onto the current graph and point the run at it (the caller
    saves the run). Raises Conflict listing what the new graph cannot carry."""
    try:
        source = _decoded(run, checkpoint)
    except CheckpointDecodeError as exc:
        raise Conflict(
            f"checkpoint {checkpoint.checkpoint_id} cannot be read by the deployed version: {exc}"
        ) from None
    if catalog.is_functional(run.workflow_name):
        raise Conflict(
            f"run {run.pk} is a functional workflow's: the results its steps saved are replayed "
            "only by the code that computed them, so it cannot move to another version"
        )
    lineage = uuid.uuid4().hex if new_lineage else None
    try:
        moved = migrate_checkpoint(
            source, catalog.describe(run.workflow_name), run_id=lineage, discard_unmatched=discard
        )
    except CheckpointMigrationError as exc:
        raise Conflict(
            f"the deployed version cannot continue run {run.pk} from checkpoint "
            f"{checkpoint.checkpoint_id} without losing: "
            + "; ".join(exc.blockers)
            + ". Choose an earlier checkpoint, or discard what cannot be carried."
        ) from None
    previous_version = run_version(run)
    if new_lineage:
        _cancel_pending_approvals(run)
        run.output = output_at(run, checkpoint)
        run.origin_checkpoint_id = checkpoint.checkpoint_id
    row = save_split(split_checkpoint(moved), run_id=run.pk, trust_known_blobs=False)
    run.latest_checkpoint = row
    run.current_superstep = moved.iteration_count
    run.engine_run_id = moved.run_id
    run.graph_version = moved.graph_signature_hash
    # Requests the moved checkpoint waits for that have no approval yet (a new lineage asks
    # again); the worker saves no checkpoint that would raise them before it pauses.
    specs = _approval_specs(run.pk, moved, run.workflow_name)
    for spec in specs:
        approvals.approval_opened(run.approval_requests.create(**spec, checkpoint=row), run)
    if specs:
        transaction.on_commit(broadcast.broadcast_approvals_changed, robust=True)
    record_events(
        run,
        [
            run_events.run_migrated(
                from_version=previous_version,
                to_version=moved.graph_signature_hash,
                checkpoint_id=row.checkpoint_id,
                from_checkpoint_id=checkpoint.checkpoint_id,
                changes=str(moved.metadata.get("changes", "")),
                discarded=[str(item) for item in moved.metadata.get("discarded", [])],
                by=username(user),
            ),
            run_events.checkpoint_marker(
                str(moved.metadata["kind"]),
                moved.iteration_count,
                row.checkpoint_id,
                row.size_bytes,
                len(moved.pending_request_info_events),
            ),
        ],
    )
    transaction.on_commit(lambda: broadcast.broadcast_run_changed(run.pk), robust=True)
    return moved
