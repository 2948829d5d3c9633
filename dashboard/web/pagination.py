"""Keyset cursors in the URL, and the page object ``components/pagination.html`` renders.

A cursor is the (sort value, id) of the row a page starts after (``?after=``) or ends before
(``?before=``), as URL-safe base64 of a small JSON array. A cursor that does not decode is
ignored (the first page shows) rather than an error: it only ever comes from our own links.
"""

from __future__ import annotations

import base64
import binascii
import dataclasses
import datetime as dt
import json
from collections.abc import Callable
from decimal import Decimal, InvalidOperation
from typing import Any

from django.http import HttpRequest, QueryDict

from dashboard.selectors import KeysetPage

__all__ = ["Page", "decode_cost_cursor", "decode_cursor", "encode_cursor", "page_links"]


def encode_cursor(value: dt.datetime | Decimal | None, pk: object) -> str:
    if isinstance(value, Decimal):
        text: str | None = str(value)
    else:
        text = value.isoformat() if value else None
    raw = json.dumps([text, str(pk)], separators=(",", ":"))
    return base64.urlsafe_b64encode(raw.encode()).decode().rstrip("=")


def _moment(text: str) -> dt.datetime:
    moment = dt.datetime.fromisoformat(text)
    if moment.tzinfo is None:
        raise ValueError("a cursor's time has a zone")
    return moment


def _cost(text: str) -> Decimal:
    try:
        value = Decimal(text)
    except InvalidOperation:
        raise ValueError("not a cost") from None
    if not value.is_finite():
        raise ValueError("not a cost")
    return value


def decode_cursor[K](text: str | None, pk_type: Callable[[str], K]) -> tuple[dt.datetime, K] | None:
    """(time, pk) of a cursor, with ``pk_type`` applied to the id (``uuid.UUID``, ``int``)."""
    return _decode(text, pk_type, _moment)


def decode_cost_cursor[K](
    text: str | None, pk_type: Callable[[str], K]
) -> tuple[Decimal, K] | None:
    """(cost, pk) of a cursor of a list sorted by cost."""
    return _decode(text, pk_type, _cost)


def _decode[K, V](
    text: str | None, pk_type: Callable[[str], K], value_type: Callable[[str], V]
) -> tuple[V, K] | None:
    if not text or len(text) > 200:
        return None
    try:
        raw = base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))
        value, pk = json.loads(raw)
        if not isinstance(value, str):
            return None
        found = value_type(value)
        key = pk_type(pk) if isinstance(pk, str) and pk else None
    except (binascii.Error, ValueError, TypeError, UnicodeDecodeError):
        return None
    if key is None:
        return None
    return found, key


@dataclasses.dataclass(frozen=True)
class Page:
    """What ``components/pagination.html`` reads."""

    has_previous: bool
    has_next: bool
    previous_url: str = ""
    next_url: str = ""
    previous_label: str = "Newer"
    next_label: str = "Older"


def page_links(
    request: HttpRequest,
    page: KeysetPage[Any],
    key: Callable[[Any], tuple[dt.datetime | Decimal | None, Any]],
    *,
    path: str | None = None,
    previous_label: str = "Newer",
    next_label: str = "Older",
) -> Page:
    """Links to the neighbouring pages that keep every other query parameter (filters, sort)."""
    base = path if path is not None else request.path

    def url(**cursor: str) -> str:
        query: QueryDict = request.GET.copy()
        for name in ("after", "before", "partial"):
            query.pop(name, None)
        for name, value in cursor.items():
            query[name] = value
        encoded = query.urlencode()
        return f"{base}?{encoded}" if encoded else base

    rows = page.rows
    return Page(
        has_previous=page.has_previous and bool(rows),
        has_next=page.has_next and bool(rows),
        previous_url=url(before=encode_cursor(*key(rows[0]))) if rows else "",
        next_url=url(after=encode_cursor(*key(rows[-1]))) if rows else "",
        previous_label=previous_label,
        next_label=next_label,
    )
