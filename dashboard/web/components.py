"""``components/time.html`` and ``components/status_pill.html`` rendered in Python, for tables.

A page of the runs list repeats these components a hundred and fifty times; as template
includes they were a third of the page's time (an include with three ``date`` filters costs
about ten times the same markup built here). The templates stay the components' definition
for every other use: tests/dashboard/web/test_page_queries.py renders both ways and requires the
same HTML, so the two cannot drift apart.
"""

from __future__ import annotations

import datetime as dt

from django.utils import timezone
from django.utils.html import format_html
from django.utils.safestring import SafeString
from django.utils.text import capfirst, slugify
from django.utils.timesince import timesince

__all__ = ["status_pill_html", "time_html"]

_NOT_SET = SafeString('<span class="muted" title="Not set">—</span>')


def _iso(value: dt.datetime) -> str:
    return timezone.localtime(value).isoformat()  # the date filter's "c"


def time_html(
    value: dt.datetime | None, *, mode: str = "", until: dt.datetime | None = None
) -> SafeString:
    """What ``{% include "components/time.html" with value=… mode=… until=… %}`` renders."""
    if value is None:
        return _NOT_SET
    if mode == "duration":
        if until is not None:
            return format_html(
                '<span class="duration" data-duration-since="{}" '
                'data-duration-until="{}">{}</span>',
                _iso(value),
                _iso(until),
                timesince(value, until),
            )
        return format_html(
            '<span class="duration" data-duration-since="{}">{}</span>',
            _iso(value),
            timesince(value),
        )
    local = timezone.localtime(value)
    if mode == "absolute":
        return format_html(
            '<time class="timestamp" datetime="{}">{}</time>',
            local.isoformat(),
            local.strftime("%Y-%m-%d %H:%M:%S"),
        )
    return format_html(
        '<time class="timestamp" datetime="{}" data-relative title="{}">{}</time>',
        local.isoformat(),
        local.strftime("%Y-%m-%d %H:%M:%S %Z"),
        local.strftime("%Y-%m-%d %H:%M"),
    )


def status_pill_html(status: str) -> SafeString:
    """What ``{% include "components/status_pill.html" with status=… %}`` renders for a status
    (a value of a ``TextChoices`` or its member)."""
    text = getattr(status, "label", None) or status
    css = slugify(str(status)) or "unknown"
    return format_html(
        '<span class="pill status-{}"><span class="pill-dot" aria-hidden="true"></span>{}</span>',
        css,
        capfirst(str(text)),
    )
