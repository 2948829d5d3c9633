"""Keyset pagination shared by the run list and the approval inbox and archive."""

from __future__ import annotations

import dataclasses

from django.db.models import Model, Q, QuerySet

__all__ = ["Cursor", "KeysetPage", "keyset"]

# (sort value, id) of the row a page starts after or ends before.
type Cursor[K] = tuple[object, K]


@dataclasses.dataclass(frozen=True)
class KeysetPage[T]:
    """One page of a keyset-paginated list, in display order.

    ``has_next`` means rows exist beyond the last one in the sort direction; ``has_previous``
    that rows exist before the first. Cursors are (sort value, id) of the edge rows.
    """

    rows: list[T]
    has_next: bool
    has_previous: bool


def keyset[M: Model, K](
    rows: QuerySet[M],
    field: str,
    *,
    descending: bool,
    after: Cursor[K] | None,
    before: Cursor[K] | None,
    limit: int,
) -> KeysetPage[M]:
    """Rows ordered by (field, id), ``limit`` of them after/before a cursor (value, id)."""
    newer_first = descending
    if before is not None:
        # Walk backwards from the cursor, then flip the rows into display order.
        value, pk = before
        towards = Q(**{f"{field}__gt" if newer_first else f"{field}__lt": value}) | Q(
            **{field: value, "id__gt" if newer_first else "id__lt": pk}
        )
        order = (field, "id") if newer_first else (f"-{field}", "-id")
        found = list(rows.filter(towards).order_by(*order)[: limit + 1])
        has_previous = len(found) > limit
        page = list(reversed(found[:limit]))
        return KeysetPage(page, has_next=True, has_previous=has_previous)
    order = (f"-{field}", "-id") if newer_first else (field, "id")
    if after is not None:
        value, pk = after
        rows = rows.filter(
            Q(**{f"{field}__lt" if newer_first else f"{field}__gt": value})
            | Q(**{field: value, "id__lt" if newer_first else "id__gt": pk})
        )
    found = list(rows.order_by(*order)[: limit + 1])
    return KeysetPage(found[:limit], has_next=len(found) > limit, has_previous=after is not None)
