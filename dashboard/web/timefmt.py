"""How pages print a row's ``created_at``: formatted in Python, not with the template's date
filter, because a log or a timeline shows hundreds of rows."""

from __future__ import annotations

import datetime as dt

from django.utils import timezone

__all__ = ["CreatedAtLabels"]


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
