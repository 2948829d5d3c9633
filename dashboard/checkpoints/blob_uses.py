"""Which lineages use which blobs, and letting go of those nobody uses.

A checkpoint's large values live in ``CheckpointBlob`` rows; a ``CheckpointBlobUse`` row
says a lineage's checkpoints refer to a blob. The invariant: every ``blob_refs`` entry of
every checkpoint has the use row of its lineage, and every use row its blob.

Saves only ever add or lock use rows (``checkpoints.writes``); what deletes checkpoints (the
storage's ``delete``, retention) then calls in here, in its own transaction. Every deletion
locks the rows first and decides in a *later* statement: under READ COMMITTED that statement
sees every save that held the lock and has committed meanwhile, so a checkpoint written while
a lineage was being pruned keeps its blob. Locks are taken in (lineage, digest) order, the
order a save locks its own rows in, so the two never deadlock.

A use row or a blob that outlives its need (a lineage never pruned again, a crash between
deleting checkpoints and reviewing their uses) only costs space: it is never a missing blob.
"""

from __future__ import annotations

from collections.abc import Iterable

from django.core.exceptions import ImproperlyConfigured
from django.db import connections
from django.db.models import Exists, OuterRef

from dashboard.checkpoints.writes import forget_known_blobs
from dashboard.models import Checkpoint, CheckpointBlob, CheckpointBlobUse

__all__ = [
    "collect_unused_blobs",
    "ref_digests",
    "release_unused_uses",
    "release_uses_of_gone_lineages",
]


def ref_digests(refs: object) -> list[str]:
    """The digests a stored record's ``blob_refs`` name (malformed entries left out): a part's
    ``[path, digest]`` and a long conversation's ``[path, digest, ...]`` (its chunks)."""
    if not isinstance(refs, list):
        return []
    return [
        digest
        for r in refs
        if isinstance(r, list) and len(r) >= 2
        for digest in r[1:]
        if isinstance(digest, str)
    ]


def _require_read_committed(using: str) -> None:
    with connections[using].cursor() as cursor:
        cursor.execute("SHOW transaction_isolation")
        level = cursor.fetchone()[0]
    if level != "read committed":
        # At REPEATABLE READ or above the deciding statement would not see a save that
        # committed while we waited for its lock, and would release a use it needs.
        raise ImproperlyConfigured(
            f"releasing blob uses needs READ COMMITTED transactions, not {level!r}"
        )


# Every (lineage, digest) the lineages' checkpoints refer to, computed by the database.
_REFERENCED_SQL = """
SELECT DISTINCT c.engine_run_id, d.digest
FROM {checkpoint} c
CROSS JOIN LATERAL jsonb_array_elements(
    CASE WHEN jsonb_typeof(c.document -> 'blob_refs') = 'array'
         THEN c.document -> 'blob_refs' ELSE '[]'::jsonb END) AS r(ref)
CROSS JOIN LATERAL jsonb_array_elements(
    CASE WHEN jsonb_typeof(r.ref) = 'array' THEN r.ref - 0 ELSE '[]'::jsonb END) AS e(item)
CROSS JOIN LATERAL (SELECT e.item #>> '{{}}' AS digest WHERE jsonb_typeof(e.item) = 'string') d
WHERE c.engine_run_id = ANY(%s)
"""

# Which of these use rows no checkpoint of their lineage refers to (stops at the first user).
_UNREFERENCED_SQL = """
SELECT u.id FROM {use} u
WHERE u.id = ANY(%s) AND NOT EXISTS (
    SELECT 1 FROM {checkpoint} c
    WHERE c.engine_run_id = u.engine_run_id
      AND c.document -> 'blob_refs' @> jsonb_build_array(jsonb_build_array(u.blob_id)))
"""


def _referenced(lineages: list[str], using: str) -> set[tuple[str, str]]:
    if connections[using].vendor == "postgresql":
        with connections[using].cursor() as cursor:
            cursor.execute(_REFERENCED_SQL.format(checkpoint=Checkpoint._meta.db_table), [lineages])
            return {(lineage, digest) for lineage, digest in cursor.fetchall() if digest}
    referenced: set[tuple[str, str]] = set()
    documents = (
        Checkpoint.objects.using(using)
        .filter(engine_run_id__in=lineages)
        .values_list("engine_run_id", "document__blob_refs")
    )
    for lineage, refs in documents.iterator(chunk_size=2000):
        referenced.update((lineage, digest) for digest in ref_digests(refs))
    return referenced


def release_unused_uses(
    lineages: Iterable[str], *, digests: Iterable[str] | None = None, using: str = "default"
) -> list[str]:
    """Delete the use rows of ``lineages`` (only those of ``digests``, if given) that no
    checkpoint of their lineage refers to any more.

    Call inside ``transaction.atomic(using=using)``, after deleting checkpoints. Pass the
    deleted checkpoints' digests when they are few (one ``delete``): each is then looked up
    on its own instead of reading every reference of the lineage. Returns the digests whose
    use rows went (their blobs may now be unused).
    """
    lineages = sorted(set(lineages))
    wanted = None if digests is None else sorted(set(digests))
    if not lineages or wanted == []:
        return []
    postgres = connections[using].vendor == "postgresql"
    if postgres:
        _require_read_committed(using)
    uses = CheckpointBlobUse.objects.using(using)
    rows = uses.select_for_update().filter(engine_run_id__in=lineages)
    if wanted is not None:
        rows = rows.filter(blob_id__in=wanted)
    # Statement 1: lock. A save of these lineages in flight holds some of these rows; wait.
    locked = list(
        rows.order_by("engine_run_id", "blob_id").values_list("pk", "engine_run_id", "blob_id")
    )
    if not locked:
        return []
    # Statement 2: decide, seeing every checkpoint committed up to now.
    if postgres and wanted is not None:
        with connections[using].cursor() as cursor:
            cursor.execute(
                _UNREFERENCED_SQL.format(
                    use=CheckpointBlobUse._meta.db_table, checkpoint=Checkpoint._meta.db_table
                ),
                [[pk for pk, _, _ in locked]],
            )
            unused_pks = {row[0] for row in cursor.fetchall()}
        unused = [(pk, digest) for pk, _, digest in locked if pk in unused_pks]
    else:
        referenced = _referenced(lineages, using)
        unused = [(pk, d) for pk, lineage, d in locked if (lineage, d) not in referenced]
    uses.filter(pk__in=[pk for pk, _ in unused]).delete()
    return sorted({digest for _, digest in unused})


def release_uses_of_gone_lineages(
    limit: int, *, after: int | None = None, using: str = "default"
) -> tuple[int, int | None]:
    """Delete up to ``limit`` use rows whose lineage has no checkpoint left at all (a run
    deleted whole, by retention or by hand), looking past the use row ``after``.

    Call inside ``transaction.atomic``; returns how many rows were looked at (fewer than
    ``limit``: nothing is left to look at) and where to go on from.
    """
    uses = CheckpointBlobUse.objects.using(using)
    alive = Checkpoint.objects.using(using).filter(engine_run_id=OuterRef("engine_run_id"))
    candidates = uses.filter(~Exists(alive))
    if after is not None:
        candidates = candidates.filter(pk__gt=after)
    keys = list(candidates.order_by("pk").values_list("pk", flat=True)[:limit])
    if not keys:
        return 0, after
    locked = list(
        uses.select_for_update()
        .filter(pk__in=keys)
        .order_by("engine_run_id", "blob_id")
        .values_list("pk", flat=True)
    )
    # Checked again after the lock: a save may have started the lineage again meanwhile.
    uses.filter(pk__in=locked).filter(~Exists(alive)).delete()
    return len(keys), keys[-1]


def collect_unused_blobs(
    digests: Iterable[str] | None = None,
    *,
    limit: int = 1000,
    after: str | None = None,
    using: str = "default",
) -> tuple[int, str | None]:
    """Delete up to ``limit`` blobs no lineage uses (among ``digests``, or any past ``after``).

    Call inside ``transaction.atomic``; returns how many were looked at and the last digest.
    """
    blobs = CheckpointBlob.objects.using(using)
    used = CheckpointBlobUse.objects.using(using).filter(blob_id=OuterRef("digest"))
    candidates = blobs.filter(~Exists(used))
    if digests is not None:
        candidates = candidates.filter(digest__in=sorted(set(digests)))
    if after is not None:
        candidates = candidates.filter(digest__gt=after)
    keys = list(candidates.order_by("digest").values_list("digest", flat=True)[:limit])
    if not keys:
        return 0, after
    # Lock, then check again: a save that used one of them meanwhile has committed by now.
    locked = list(
        blobs.select_for_update()
        .filter(digest__in=keys)
        .order_by("digest")
        .values_list("digest", flat=True)
    )
    gone = list(
        blobs.filter(digest__in=locked).filter(~Exists(used)).values_list("digest", flat=True)
    )
    forget_known_blobs(gone)
    blobs.filter(digest__in=gone).delete()
    return len(keys), keys[-1]
