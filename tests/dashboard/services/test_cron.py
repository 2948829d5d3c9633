"""dashboard/services/cron.py: five-field cron expressions and their next fire time in a time
zone, including the days the clocks change (a skipped time fires once when they jump, a
repeated time fires once)."""

from __future__ import annotations

import datetime as dt
from zoneinfo import ZoneInfo

import pytest

from dashboard.services import cron

UTC = dt.UTC
NEW_YORK = ZoneInfo("America/New_York")
PARIS = ZoneInfo("Europe/Paris")


def utc(
    year: int,
    month: int,
    day: int,
    hour: int = 0,
    minute: int = 0,
    second: int = 0,
    microsecond: int = 0,
) -> dt.datetime:
    return dt.datetime(year, month, day, hour, minute, second, microsecond, tzinfo=UTC)


def fires(expression: str, after: dt.datetime, tz: ZoneInfo, count: int) -> list[dt.datetime]:
    parsed = cron.parse(expression)
    moments = []
    for _ in range(count):
        after = parsed.next_after(after, tz)
        moments.append(after)
    return moments


def test_cron_parse_reads_lists_ranges_steps_and_names() -> None:
    parsed = cron.parse("0,30 9-17/4 1,15 jan-MAR,dec mon-fri")

    assert parsed.minutes == {0, 30}
    assert parsed.hours == {9, 13, 17}
    assert parsed.days == {1, 15}
    assert parsed.months == {1, 2, 3, 12}
    assert parsed.weekdays == {1, 2, 3, 4, 5}


def test_cron_parse_reads_stars_with_steps_a_start_with_a_step_and_sunday_as_seven() -> None:
    parsed = cron.parse("*/20 5/6 * * 7")

    assert parsed.minutes == {0, 20, 40}
    assert parsed.hours == {5, 11, 17, 23}
    assert parsed.days == set(range(1, 32)) and parsed.months == set(range(1, 13))
    assert parsed.weekdays == {0}


@pytest.mark.parametrize(
    "shorthand, same_as",
    [
        ("@hourly", "0 * * * *"),
        ("@daily", "0 0 * * *"),
        ("@weekly", "0 0 * * 0"),
        ("@monthly", "0 0 1 * *"),
        ("@YEARLY", "0 0 1 1 *"),
    ],
)
def test_cron_shorthands_stand_for_their_expressions(shorthand: str, same_as: str) -> None:
    a, b = cron.parse(shorthand), cron.parse(same_as)

    assert (a.minutes, a.hours, a.days, a.months, a.weekdays) == (
        b.minutes,
        b.hours,
        b.days,
        b.months,
        b.weekdays,
    )


def test_cron_parse_keeps_the_expression_with_its_spaces_normalised() -> None:
    assert cron.parse("  0   9 * *\tMON ").text == "0 9 * * MON"


@pytest.mark.parametrize(
    "text, complaint",
    [
        ("", "five fields"),
        ("* * * *", "five fields"),
        ("* * * * * *", "five fields"),
        ("60 * * * *", "minute: 60 is outside 0-59"),
        ("* 24 * * *", "hour: 24 is outside 0-23"),
        ("* * 0 * *", "day of month: 0 is outside 1-31"),
        ("* * * 13 *", "month: 13 is outside 1-12"),
        ("* * * * 8", "day of week: 8 is outside 0-7"),
        ("*/0 * * * *", "step must be at least 1"),
        ("1/ * * * *", "step '' is not a number"),
        ("5-1 * * * *", "runs backwards"),
        ("1,,2 * * * *", "empty item"),
        ("* * * FOO *", "month: value 'FOO'"),
        ("* * * * MON-FOO", "day of week: value 'FOO'"),
        ("* * * jan-feb-mar *", "not a number"),
        ("-1 * * * *", "not a number"),
        ("\u0663 * * * *", "not a number"),  # an Arabic-Indic digit: int() would read it
        ("99999 * * * *", "not a number"),
        ("0 0 30 2 *", "never occurs"),
        ("0 0 31 4,6,9,11 *", "never occurs"),
        ("@often", "five fields"),
    ],
)
def test_cron_parse_refuses_what_cannot_fire_with_the_reason(text: str, complaint: str) -> None:
    with pytest.raises(cron.CronError, match=complaint):
        cron.parse(text)


def test_cron_29_february_is_a_day_that_occurs() -> None:
    assert fires("0 0 29 2 *", utc(2026, 1, 1), ZoneInfo("UTC"), 2) == [
        utc(2028, 2, 29),
        utc(2032, 2, 29),
    ]


def test_cron_day_of_month_or_day_of_week_when_both_are_restricted() -> None:
    # The 13th, or any Friday (crontab(5)): 2026-03-06 is a Friday, the 13th is one too.
    moments = fires("0 12 13 * FRI", utc(2026, 3, 1), ZoneInfo("UTC"), 4)

    assert [m.day for m in moments] == [6, 13, 20, 27]


def test_cron_day_of_month_and_day_of_week_when_one_is_a_star() -> None:
    # Only Mondays (day of month *), and "*/2" days starting with * count as unrestricted too.
    mondays = fires("0 12 * * MON", utc(2026, 3, 1), ZoneInfo("UTC"), 3)
    odd_days_that_are_mondays = fires("0 12 */2 * MON", utc(2026, 3, 1), ZoneInfo("UTC"), 2)

    assert [m.day for m in mondays] == [2, 9, 16]
    assert [m.day for m in odd_days_that_are_mondays] == [9, 23]


def test_cron_next_after_is_strictly_after_and_counts_whole_minutes() -> None:
    parsed = cron.parse("*/15 * * * *")

    assert parsed.next_after(utc(2026, 5, 1, 10, 15), ZoneInfo("UTC")) == utc(2026, 5, 1, 10, 30)
    assert parsed.next_after(utc(2026, 5, 1, 10, 14, 59, 999), ZoneInfo("UTC")) == utc(
        2026, 5, 1, 10, 15
    )


def test_cron_next_after_wants_an_aware_moment() -> None:
    with pytest.raises(ValueError, match="aware"):
        cron.parse("* * * * *").next_after(dt.datetime(2026, 1, 1), ZoneInfo("UTC"))


def test_cron_is_read_on_the_time_zones_wall_clock_winter_and_summer() -> None:
    # 09:00 in Paris is 08:00 UTC in winter (CET) and 07:00 UTC in summer (CEST).
    assert fires("0 9 * * *", utc(2026, 1, 10), PARIS, 1) == [utc(2026, 1, 10, 8)]
    assert fires("0 9 * * *", utc(2026, 7, 10), PARIS, 1) == [utc(2026, 7, 10, 7)]


def test_cron_a_time_the_clocks_skip_fires_once_when_they_jump() -> None:
    # New York, 2026-03-08: 02:00 EST becomes 03:00 EDT (07:00 UTC); 02:30 does not exist.
    moments = fires("30 2 * * *", utc(2026, 3, 7, 12), NEW_YORK, 3)

    assert moments == [utc(2026, 3, 8, 7), utc(2026, 3, 9, 6, 30), utc(2026, 3, 10, 6, 30)]
    assert moments[0].astimezone(NEW_YORK).strftime("%H:%M %Z") == "03:00 EDT"


def test_cron_several_skipped_times_fire_once_together() -> None:
    moments = fires("*/15 2 * * *", utc(2026, 3, 7, 12), NEW_YORK, 3)

    assert moments == [utc(2026, 3, 8, 7), utc(2026, 3, 9, 6), utc(2026, 3, 9, 6, 15)]


def test_cron_a_time_the_clocks_repeat_fires_once_at_its_first_occurrence() -> None:
    # New York, 2026-11-01: 02:00 EDT becomes 01:00 EST, so 01:30 happens at 05:30 and 06:30 UTC.
    moments = fires("30 1 * * *", utc(2026, 10, 31, 12), NEW_YORK, 2)

    assert moments == [utc(2026, 11, 1, 5, 30), utc(2026, 11, 2, 6, 30)]


def test_cron_every_half_hour_across_the_repeated_hour_fires_each_wall_time_once() -> None:
    moments = fires("*/30 * * * *", utc(2026, 11, 1, 4), NEW_YORK, 4)

    local = [m.astimezone(NEW_YORK).strftime("%H:%M %Z") for m in moments]
    assert local == ["00:30 EDT", "01:00 EDT", "01:30 EDT", "02:00 EST"]


def test_cron_from_inside_the_repeated_hour_the_next_time_is_after_it() -> None:
    # At 01:10 EST (the second pass) the 01:30 of this night is over: it fired at 01:30 EDT.
    second_pass = dt.datetime(2026, 11, 1, 1, 10, tzinfo=NEW_YORK, fold=1)

    assert cron.parse("30 1 * * *").next_after(second_pass, NEW_YORK) == utc(2026, 11, 2, 6, 30)
    assert cron.parse("0 * * * *").next_after(second_pass, NEW_YORK) == utc(2026, 11, 1, 7)


def test_cron_a_skipped_midnight_fires_at_the_first_minute_of_the_day() -> None:
    # Santiago moves its clocks at midnight: 2026-09-06 00:00 does not exist (it is 01:00).
    santiago = ZoneInfo("America/Santiago")
    (moment,) = fires("0 0 * * *", utc(2026, 9, 5, 12), santiago, 1)

    assert moment.astimezone(santiago).strftime("%Y-%m-%d %H:%M") == "2026-09-06 01:00"


# Why the parser is our own (the module docstring): the cases the kept libraries get wrong.
# Paris, 2026-10-25: 03:00 CEST becomes 02:00 CET, so 02:00-02:59 happens twice (00:00-00:59
# UTC and 01:00-01:59 UTC).


def test_cron_30_2_fires_once_on_the_night_the_clocks_go_back() -> None:
    moments = fires("30 2 * * *", utc(2026, 10, 24, 12), PARIS, 2)

    assert moments == [utc(2026, 10, 25, 0, 30), utc(2026, 10, 26, 1, 30)]
    assert moments[0].astimezone(PARIS).strftime("%H:%M %Z") == "02:30 CEST"


def test_cron_refuses_31_april_a_date_that_never_comes() -> None:
    with pytest.raises(cron.CronError) as refused:
        cron.parse("0 0 31 4 *")

    assert str(refused.value) == "'0 0 31 4 *' names a day that never occurs"


def test_cron_on_the_hour_and_half_hour_runs_once_through_the_repeated_hour() -> None:
    moments = fires("0,30 * * * *", utc(2026, 10, 24, 23, 45), PARIS, 5)

    local = [m.astimezone(PARIS).strftime("%H:%M %Z") for m in moments]
    assert local == ["02:00 CEST", "02:30 CEST", "03:00 CET", "03:30 CET", "04:00 CET"]
