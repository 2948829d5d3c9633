"""The event log page's filters and layout: which events (types, one executor), grouped by the
superstep they belong to, in the normal or the compact density. The query is the selectors';
this module reads the request and shapes what they return for the template."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from typing import Any

from django.http import QueryDict

from dashboard.models import RunEvent
from dashboard.web.run_page.events import EventView, event_views

__all__ = ["EventGroup", "EventLogFilters", "grouped", "read_filters"]

MAX_TYPES = 40
MAX_TEXT = 200


@dataclasses.dataclass(frozen=True)
class EventLogFilters:
    types: tuple[str, ...] = ()
    executor: str = ""
    compact: bool = False
    by_superstep: bool = True

    @property
    def active(self) -> bool:
        return bool(self.types or self.executor)

    def query(self, **extra: Any) -> str:
        """The query string that keeps these filters (``extra`` replaces or adds keys)."""
        params = QueryDict(mutable=True)
        params.setlist("type", list(self.types))
        if self.executor:
            params["executor"] = self.executor
        if self.compact:
            params["density"] = "compact"
        if not self.by_superstep:
            params["group"] = "none"
        for key, value in extra.items():
            if value in (None, ""):
                params.pop(key, None)
            else:
                params[key] = str(value)
        return params.urlencode()


def read_filters(
    params: QueryDict, *, known_types: Sequence[str], executors: Sequence[str]
) -> EventLogFilters:
    """The filters a request asks for; names this run does not have are dropped, not errors
    (a link kept from another run still opens)."""
    wanted = [t for t in params.getlist("type")[:MAX_TYPES] if t in known_types]
    executor = params.get("executor", "")[:MAX_TEXT]
    return EventLogFilters(
        types=tuple(dict.fromkeys(wanted)),
        executor=executor if executor in executors else "",
        compact=params.get("density") == "compact",
        by_superstep=params.get("group") != "none",
    )


@dataclasses.dataclass(frozen=True)
class EventGroup:
    """The events of one superstep (``superstep`` None: before the first one, or ungrouped)."""

    superstep: int | None
    events: list[EventView]

    @property
    def executors(self) -> list[str]:
        return sorted({e.executor for e in self.events if e.executor})


def _superstep_of(event: RunEvent, current: int | None) -> int | None:
    data: Mapping[str, Any] = event.data if isinstance(event.data, dict) else {}
    step = data.get("iteration")
    if isinstance(step, int) and not isinstance(step, bool):
        return step
    return current


def grouped(
    events: list[RunEvent], *, by_superstep: bool, start: int | None = None
) -> list[EventGroup]:
    """Events newest first, in groups of one superstep each (also newest first). An event
    without a superstep of its own belongs to the superstep that last started before it
    (``start``: the one in progress where this page begins)."""
    views = event_views(events)
    if not by_superstep:
        return [EventGroup(None, list(reversed(views)))]
    groups: list[EventGroup] = []
    current = start
    for event, view in zip(events, views, strict=True):
        current = _superstep_of(event, current)
        if not groups or groups[-1].superstep != current:
            groups.append(EventGroup(current, []))
        groups[-1].events.append(view)
    return [EventGroup(g.superstep, list(reversed(g.events))) for g in reversed(groups)]
