"""Times in words, formatted in Python: a row's ``created_at`` (not with the template's date
filter, because a log or a timeline shows hundreds of rows), and the "2 minutes ago" and
"4 min 12 s" of sentences rendered once (a conflict message, a toast). What stays on a page and
must keep moving is ``components/time.html``, which static/js/app.js refreshes with the same
wording."""

from __future__ import annotations

import datetime as dt

from django.utils import timezone

__all__ = ["CreatedAtLabels", "ago", "duration_text"]


class CreatedAtLabels:
    """Mixin for view rows that have a ``created_at`` datetime."""

    created_at: dt.datetime

    @property
    def time_iso(self) -> str:
        return self.created_at.isoformat()

    @property
    def time_short(self) -> str:
        return timezone.localtime(self.created_at).strftime("%H:%M:%S")

    @property
    def time_title(self) -> str:
        return timezone.localtime(self.created_at).strftime("%Y-%m-%d %H:%M:%S.%f %Z")


_UNITS = ((86400, "day"), (3600, "hour"), (60, "minute"), (1, "second"))


def ago(moment: dt.datetime | None, now: dt.datetime | None = None) -> str:
    """``just now``, ``40 seconds ago``, ``2 minutes ago``, ``3 hours ago``, ``2 days ago``."""
    if moment is None:
        return "earlier"
    seconds = int(((now or timezone.now()) - moment).total_seconds())
    if seconds < 5:
        return "just now"
    size, unit = next((size, unit) for size, unit in _UNITS if seconds >= size)
    count = seconds // size
    return f"{count} {unit}{'' if count == 1 else 's'} ago"


def duration_text(delta: dt.timedelta) -> str:
    """``4 s``, ``2 min 05 s``, ``1 h 02 min``, ``3 d 4 h``: as app.js's durationText."""
    total = max(0, int(delta.total_seconds()))
    days, rest = divmod(total, 86400)
    hours, rest = divmod(rest, 3600)
    minutes, seconds = divmod(rest, 60)
    if days:
        return f"{days} d {hours} h"
    if hours:
        return f"{hours} h {minutes:02d} min"
    if minutes:
        return f"{minutes} min {seconds:02d} s"
    return f"{seconds} s"
