"""Revealing one masked field (``dashboard.access.masking``): an explicit, audited act.

Pages, the API and exports show a sensitive field as its mask to everyone. Someone who holds
"view sensitive data" for the run's workflow (the ``reveal`` action: Admin, or the "Sensitive
data" role held as a group or granted for that workflow) asks for one field by its path, of
the run's input or output or of one checkpoint, and gets its value; each reveal, and each
refused one, is an audit entry naming the field.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from dashboard.access import audit, authz, masking
from dashboard.checkpoints import documents
from dashboard.core.errors import InvalidInput, NotFound
from dashboard.core.types import Actor, RunId
from dashboard.models import Checkpoint, WorkflowRun

__all__ = ["MAX_PATH_LENGTH", "Revealed", "masked_fields", "reveal"]

MAX_PATH_LENGTH = 1000


@dataclass(frozen=True, slots=True)
class Revealed:
    """A masked field's value (its JSON, codec tags and all) and where it was read."""

    path: str
    value: Any
    checkpoint_id: str


def masked_fields(run: WorkflowRun, checkpoint: Checkpoint | None = None) -> list[masking.Masked]:
    """What the run's input and output (or, given one, a checkpoint) show masked."""
    masker = _masked(run, checkpoint)
    return list(masker.found)


def reveal(run_id: RunId, *, path: object, checkpoint_id: object = "", user: Actor) -> Revealed:
    """The value behind the mask at ``path``: of ``checkpoint_id``'s document, or (empty) of
    the run's input and output.

    Raises:
        Forbidden: the user may not reveal sensitive fields of the run's workflow (recorded).
        NotFound: no such run or checkpoint, or nothing masked at that path.
        InvalidInput: a path or checkpoint id that is not text of a sensible length.
    """
    if not isinstance(path, str) or not 0 < len(path) <= MAX_PATH_LENGTH or "\x00" in path:
        raise InvalidInput(
            "name the masked field by its path, such as $.input.customer.email",
            errors={"path": f"a path of at most {MAX_PATH_LENGTH} characters"},
        )
    if not isinstance(checkpoint_id, str) or len(checkpoint_id) > 128 or "\x00" in checkpoint_id:
        raise InvalidInput("not a checkpoint id", errors={"checkpoint_id": "not a checkpoint id"})
    target = f"{path} of run {run_id}" + (f" at {checkpoint_id}" if checkpoint_id else "")
    who = authz.require_for_run(user, "reveal", run_id, target=target)
    run = WorkflowRun.objects.filter(pk=str(run_id)).first()
    if run is None:
        raise NotFound(f"no run with id {run_id}")
    checkpoint = None
    if checkpoint_id:
        checkpoint = Checkpoint.objects.filter(run=run, checkpoint_id=checkpoint_id).first()
        if checkpoint is None:
            raise NotFound(f"run {run.pk} has no checkpoint {checkpoint_id!r}")
    masker = _masked(run, checkpoint)
    found = next((item for item in masker.found if item.path == path), None)
    if found is None:
        raise NotFound(
            f"nothing is masked at {path!r} in this {'checkpoint' if checkpoint else 'run'}"
        )
    audit.record(
        who,
        "reveal",
        run=run,
        target=target,
        details={"path": path, "checkpoint_id": checkpoint_id, "reason": found.reason},
    )
    return Revealed(path, masker.originals[found.mask], checkpoint_id)


def _masked(run: WorkflowRun, checkpoint: Checkpoint | None) -> masking.Masker:
    masker = masking.for_run(run)
    if checkpoint is not None:
        masker.document(documents.checkpoint_document(checkpoint))
    else:
        masker.input(run.input)
        if run.output is not None:
            masker.output(run.output)
    return masker
