"""Five-field cron expressions, and when they next fire in a time zone.

Our own, small parser rather than a library, because the two kept ones break a rule a
schedule here must keep, with the expressions that show it tested in tests/dashboard/services/
test_cron.py. ``croniter`` (maintained again, by pallets-eco) fires ``30 2 * * *`` twice on the
night the clocks go back in Europe, and accepts ``0 0 31 4 *``, a date that never comes.
``cronsim`` copies Debian cron's DST handling, which runs ``0,30 * * * *`` in both passes of
the repeated hour. A schedule here follows one rule whatever the expression, which the page
states in a sentence:

* a local time that does not exist (the clocks jump forward over it) fires once, at the first
  instant after the jump; several such times in one gap fire once together;
* a local time that happens twice (the clocks go back) fires once, at its first occurrence.

Syntax (as in crontab(5)): minute, hour, day of month, month, day of week; each field a list
of ``*``, ``N``, ``N-M``, with an optional ``/step`` (``N/step`` runs from N to the field's
end); months ``JAN``-``DEC`` and days ``SUN``-``SAT`` by name; Sunday is 0 or 7. When both day
fields are restricted (neither starts with ``*``) a day matches either, otherwise both.
``@yearly``, ``@monthly``, ``@weekly``, ``@daily`` and ``@hourly`` are shorthands.

Django-free: plain functions over ``datetime`` and ``zoneinfo``.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterator
from dataclasses import dataclass
from zoneinfo import ZoneInfo

__all__ = ["CronError", "CronExpression", "parse"]

_MONTHS = ("JAN", "FEB", "MAR", "APR", "MAY", "JUN", "JUL", "AUG", "SEP", "OCT", "NOV", "DEC")
_DAYS = ("SUN", "MON", "TUE", "WED", "THU", "FRI", "SAT")
_SHORTHANDS = {
    "@yearly": "0 0 1 1 *",
    "@annually": "0 0 1 1 *",
    "@monthly": "0 0 1 * *",
    "@weekly": "0 0 * * 0",
    "@daily": "0 0 * * *",
    "@midnight": "0 0 * * *",
    "@hourly": "0 * * * *",
}
# A matching day occurs within this many days, or never: 29 February on a given weekday
# recurs every 28 years at most.
_SEARCH_DAYS = 366 * 29
_MINUTE = dt.timedelta(minutes=1)


class CronError(ValueError):
    """The expression cannot be read; the message says which field and why."""


@dataclass(frozen=True, slots=True)
class _Field:
    name: str
    low: int
    high: int
    names: tuple[str, ...] = ()
    name_base: int = 0


_FIELDS = (
    _Field("minute", 0, 59),
    _Field("hour", 0, 23),
    _Field("day of month", 1, 31),
    _Field("month", 1, 12, _MONTHS, 1),
    _Field("day of week", 0, 7, _DAYS, 0),
)


@dataclass(frozen=True, slots=True)
class CronExpression:
    """A parsed expression: the values each field allows, and whether the day fields are
    restricted (which decides how they combine)."""

    text: str
    minutes: frozenset[int]
    hours: frozenset[int]
    days: frozenset[int]
    months: frozenset[int]
    weekdays: frozenset[int]  # 0 = Sunday ... 6 = Saturday (7 folded into 0)
    days_restricted: bool
    weekdays_restricted: bool

    def matches_day(self, day: dt.date) -> bool:
        if day.month not in self.months:
            return False
        in_month = day.day in self.days
        in_week = (day.isoweekday() % 7) in self.weekdays
        if self.days_restricted and self.weekdays_restricted:
            return in_month or in_week
        return in_month and in_week

    def next_after(self, after: dt.datetime, tz: ZoneInfo) -> dt.datetime:
        """The first instant strictly after ``after`` (aware) at which this fires in ``tz``,
        as an aware UTC datetime (see the module docstring for the DST rules)."""
        if after.tzinfo is None:
            raise ValueError("after must be an aware datetime")
        after = after.astimezone(dt.UTC)
        wall = after.astimezone(tz).replace(tzinfo=None, second=0, microsecond=0, fold=0)
        for candidate in self._wall_times(wall + _MINUTE):
            instant = _instant(candidate, tz)
            # In a repeated hour the wall clock passes times whose first occurrence is over.
            if instant > after:
                return instant
        raise CronError(f"{self.text!r} never fires")  # parse() refuses these; kept as a guard

    def _wall_times(self, start: dt.datetime) -> Iterator[dt.datetime]:
        """The matching local wall-clock minutes from ``start`` on, in order, for at most
        ``_SEARCH_DAYS`` days; days that cannot match are skipped whole."""
        day = start.date()
        for _ in range(_SEARCH_DAYS):
            if self.matches_day(day):
                for hour in sorted(self.hours):
                    for minute in sorted(self.minutes):
                        moment = dt.datetime(day.year, day.month, day.day, hour, minute)
                        if moment >= start:
                            yield moment
            day += dt.timedelta(days=1)


def _instant(wall: dt.datetime, tz: ZoneInfo) -> dt.datetime:
    """The instant a local wall time stands for: its first occurrence when it happens twice,
    the end of the gap when the clocks skip it."""
    first = wall.replace(tzinfo=tz, fold=0).astimezone(dt.UTC)
    if first.astimezone(tz).replace(tzinfo=None) == wall:
        return first
    # Nonexistent: walk the wall clock forward to the first minute that exists (a gap is
    # whole minutes, an hour or less in every zone in use).
    moment = wall
    while True:
        moment += _MINUTE
        later = moment.replace(tzinfo=tz, fold=0).astimezone(dt.UTC)
        if later.astimezone(tz).replace(tzinfo=None) == moment:
            return later


def parse(text: str) -> CronExpression:
    """Read a five-field expression (or an ``@`` shorthand).

    Raises:
        CronError: wrong number of fields, a value out of range, an unknown name, a step of
            zero, a reversed range, or a date that never occurs (``0 0 30 2 *``).
    """
    source = " ".join(text.split())
    expanded = _SHORTHANDS.get(source.lower(), source)
    parts = expanded.split(" ")
    if len(parts) != 5 or not source:
        raise CronError(
            "a cron expression has five fields: minute hour day-of-month month day-of-week"
        )
    values = [_parse_field(part, field) for part, field in zip(parts, _FIELDS, strict=True)]
    weekdays = frozenset(0 if day == 7 else day for day in values[4])
    expression = CronExpression(
        text=source,
        minutes=values[0],
        hours=values[1],
        days=values[2],
        months=values[3],
        weekdays=weekdays,
        days_restricted=not parts[2].startswith("*"),
        weekdays_restricted=not parts[4].startswith("*"),
    )
    _require_a_day(expression)
    return expression


def _parse_field(text: str, field: _Field) -> frozenset[int]:
    allowed: set[int] = set()
    for item in text.split(","):
        if not item:
            raise CronError(f"{field.name}: empty item in {text!r}")
        allowed.update(_parse_item(item, field))
    return frozenset(allowed)


def _parse_item(item: str, field: _Field) -> range:
    span, _, step_text = item.partition("/")
    step = 1
    if step_text or item.endswith("/"):
        step = _number(step_text, field, what="step")
        if step == 0:
            raise CronError(f"{field.name}: a step must be at least 1, got {item!r}")
    if span == "*":
        low, high = field.low, field.high
    elif "-" in span:
        start, _, end = span.partition("-")
        low, high = _value(start, field), _value(end, field)
        if low > high:
            raise CronError(f"{field.name}: range {span!r} runs backwards")
    else:
        low = _value(span, field)
        # "5/15" means from 5 to the end by 15 (as Vixie cron's descendants read it).
        high = field.high if step_text else low
    return range(low, high + 1, step)


def _value(text: str, field: _Field) -> int:
    upper = text.upper()
    if field.names and upper in field.names:
        return field.names.index(upper) + field.name_base
    value = _number(text, field, what="value")
    if not field.low <= value <= field.high:
        raise CronError(f"{field.name}: {value} is outside {field.low}-{field.high}")
    return value


def _number(text: str, field: _Field, *, what: str) -> int:
    # isdecimal() alone would accept other scripts' digits, which int() reads.
    if not (text.isascii() and text.isdecimal()) or len(text) > 4:
        raise CronError(f"{field.name}: {what} {text!r} is not a number or a known name")
    return int(text)


def _require_a_day(expression: CronExpression) -> None:
    """Refuse dates that never come (31 April): a schedule that can never fire is a typo."""
    start = dt.date(2000, 1, 1)  # a leap year, so 29 February is found
    for offset in range(_SEARCH_DAYS):
        if expression.matches_day(start + dt.timedelta(days=offset)):
            return
    raise CronError(f"{expression.text!r} names a day that never occurs")
