"""Notification retries back off exponentially with jitter (``delivery.retry_delay``).

Delivery itself, with retries through a real webhook receiver, is tested in
tests/dashboard/services/test_governance.py.
"""

from __future__ import annotations

import datetime as dt
import random

from dashboard.notifications.delivery import retry_delay


def test_retry_delay_doubles_per_attempt_between_half_and_all_of_the_backoff() -> None:
    rand = random.Random(7)
    for attempts, backoff in [(0, 5), (1, 10), (2, 20), (5, 160), (9, 2560)]:
        delays = [retry_delay(attempts, rand=rand).total_seconds() for _ in range(200)]

        assert backoff / 2 <= min(delays) and max(delays) < backoff, attempts


def test_retry_delay_spreads_notifications_that_failed_together() -> None:
    rand = random.Random(11)
    delays = {retry_delay(3, rand=rand) for _ in range(50)}

    assert len(delays) == 50  # no two of fifty come back at the same moment
    assert max(delays) - min(delays) > dt.timedelta(seconds=10)  # spread over the 20-40 s


def test_retry_delay_stays_within_the_hour_however_many_attempts() -> None:
    rand = random.Random(3)
    delays = [retry_delay(attempts, rand=rand) for attempts in (12, 40, 10_000)]

    assert all(dt.timedelta(minutes=30) <= d < dt.timedelta(hours=1) for d in delays)
