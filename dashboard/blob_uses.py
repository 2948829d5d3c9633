"""Which lineages use which blobs, and letting go of those nobody uses.

A checkpoint's large values live in ``CheckpointBlob`` rows; a ``CheckpointBlobUse`` row
says a lineage's checkpoints refer to a blob. The invariant: every ``blob_refs`` entry of
every checkpoint has the use row of its lineage, and every use row its blob.

Saves only ever add or lock use rows (``checkpoint_writes``); what deletes checkpoints (the
storage's ``delete``, retention) then calls in here, in its own transaction. Every deletion
locks the rows first and decides in a *later* statement: under READ COMMITTED that statement
sees every save that held the lock and has committed meanwhile, so a checkpoint written while
a lineage was being pruned keeps its blob. Locks are taken in (lineage, digest) order, the
order a save locks its own rows in, so the two never deadlock.
"""

from __future__ import annotations

from collections.abc import Iterable

from django.db.models import Exists, OuterRef

from .checkpoint_writes import forget_known_blobs
from .models import Checkpoint, CheckpointBlob, CheckpointBlobUse

__all__ = ["collect_unused_blobs", "release_unused_uses", "release_uses_of_gone_lineages"]


def release_unused_uses(lineages: Iterable[str], *, using: str = "default") -> list[str]:
    """Delete the use rows of ``lineages`` that no checkpoint of theirs refers to any more.

    Call inside ``transaction.atomic(using=using)``, after deleting checkpoints. Returns the
    digests whose use rows went (their blobs may now be unused).
    """
    lineages = sorted(set(lineages))
    if not lineages:
        return []
    uses = CheckpointBlobUse.objects.using(using)
    # Statement 1: lock. A save of these lineages in flight holds some of these rows; wait.
    locked = list(
        uses.select_for_update()
        .filter(engine_run_id__in=lineages)
        .order_by("engine_run_id", "blob_id")
        .values_list("pk", "engine_run_id", "blob_id")
    )
    if not locked:
        return []
    # Statement 2: decide, seeing every checkpoint committed up to now.
    referenced: set[tuple[str, str]] = set()
    documents = (
        Checkpoint.objects.using(using)
        .filter(engine_run_id__in=lineages)
        .values_list("engine_run_id", "document__blob_refs")
    )
    for lineage, refs in documents.iterator(chunk_size=2000):
        for entry in refs if isinstance(refs, list) else ():
            if isinstance(entry, list) and len(entry) == 2:
                referenced.add((lineage, entry[1]))
    unused = [(pk, digest) for pk, lineage, digest in locked if (lineage, digest) not in referenced]
    uses.filter(pk__in=[pk for pk, _ in unused]).delete()
    return sorted({digest for _, digest in unused})


def release_uses_of_gone_lineages(limit: int, *, using: str = "default") -> int:
    """Delete up to ``limit`` use rows whose lineage has no checkpoint left at all (a run
    deleted whole, by retention or by hand). Call inside ``transaction.atomic``; returns how
    many rows were looked at (fewer than ``limit``: nothing is left to look at)."""
    uses = CheckpointBlobUse.objects.using(using)
    alive = Checkpoint.objects.using(using).filter(engine_run_id=OuterRef("engine_run_id"))
    candidates = list(
        uses.filter(~Exists(alive)).order_by("engine_run_id", "blob_id").values_list("pk", flat=True)[:limit]
    )
    if not candidates:
        return 0
    locked = list(
        uses.select_for_update().filter(pk__in=candidates).order_by("engine_run_id", "blob_id").values_list("pk", flat=True)
    )
    # Checked again after the lock: a save may have started the lineage again meanwhile.
    uses.filter(pk__in=locked).filter(~Exists(alive)).delete()
    return len(candidates)


def collect_unused_blobs(
    digests: Iterable[str] | None = None, *, limit: int = 1000, using: str = "default"
) -> int:
    """Delete up to ``limit`` blobs no lineage uses (among ``digests``, or any). Call inside
    ``transaction.atomic``; returns how many were looked at."""
    blobs = CheckpointBlob.objects.using(using)
    used = CheckpointBlobUse.objects.using(using).filter(blob_id=OuterRef("digest"))
    candidates = blobs.filter(~Exists(used))
    if digests is not None:
        candidates = candidates.filter(digest__in=sorted(set(digests)))
    keys = list(candidates.order_by("digest").values_list("digest", flat=True)[:limit])
    if not keys:
        return 0
    # Lock, then check again: a save that linked one of them meanwhile has committed by now.
    locked = list(blobs.select_for_update().filter(digest__in=keys).order_by("digest").values_list("digest", flat=True))
    gone = list(blobs.filter(digest__in=locked).filter(~Exists(used)).values_list("digest", flat=True))
    forget_known_blobs(gone)
    blobs.filter(digest__in=gone).delete()
    return len(keys)
