"""Where a functional run keeps its records in a checkpoint's state.

``state["_functional"]`` holds the run's input, the answers given in its lineage and the
number of pages of each list of records; the lists themselves (``cache``: the saved results;
``steps``: the step journal) are cut into pages of ``PAGE_SIZE`` records under
``state["_functional.<list>.<page>"]``. A page that is full never changes while the run goes
on, so a storage writes it once (storages keep each sizeable state value once by content):
a run of n steps costs O(n) bytes of checkpoints, not O(n²).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

__all__ = ["PAGE_SIZE", "STATE_KEY", "read_records", "write_records"]

STATE_KEY = "_functional"
PAGE_SIZE = 32


def _page_key(name: str, index: int) -> str:
    return f"{STATE_KEY}.{name}.{index}"


def write_records(
    state: dict[str, Any], header: dict[str, Any], name: str, records: list[Any]
) -> None:
    """Put ``records`` in ``state`` as pages, and their count in ``header["pages"]``."""
    pages = [records[i : i + PAGE_SIZE] for i in range(0, len(records), PAGE_SIZE)]
    for index, page in enumerate(pages):
        state[_page_key(name, index)] = page
    header.setdefault("pages", {})[name] = len(pages)


def read_records(state: Mapping[str, Any], name: str) -> list[Any]:
    """The records ``write_records`` put in ``state`` under ``name`` (empty when none)."""
    header = state.get(STATE_KEY)
    pages = header.get("pages", {}) if isinstance(header, dict) else {}
    count = pages.get(name, 0) if isinstance(pages, dict) else 0
    records: list[Any] = []
    for index in range(count if isinstance(count, int) else 0):
        page = state.get(_page_key(name, index))
        if isinstance(page, list):
            records.extend(page)
    return records
