"""tests/browser/deadlines.py: a deadline grows with the load, and never shrinks below the floor.

No browser needed: these run in the quick loop too.
"""

from __future__ import annotations

import pytest

from tests.browser import deadlines


def test_a_deadline_on_a_quiet_machine_is_the_configured_factor(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(deadlines.os, "getloadavg", lambda: (0.0, 0.0, 0.0))

    assert deadlines.seconds(10) == pytest.approx(10 * deadlines.SLOWNESS)
    assert deadlines.ms(10_000) == pytest.approx(10_000 * deadlines.SLOWNESS)


def test_a_deadline_grows_with_the_runnable_processes_per_cpu(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    cpus = 2
    monkeypatch.setattr(deadlines.os, "cpu_count", lambda: cpus)
    # Ten runnable processes on two CPUs: each gets a fifth of one, on top of the quiet room.
    monkeypatch.setattr(deadlines.os, "getloadavg", lambda: (10.0 * cpus, 0.0, 0.0))

    assert deadlines.seconds(10) == pytest.approx(10 * max(deadlines.SLOWNESS, 1.5 * 10))


def test_wait_until_gives_up_after_the_scaled_deadline_and_says_so(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(deadlines.os, "getloadavg", lambda: (0.0, 0.0, 0.0))

    with pytest.raises(AssertionError, match=r"the flag: not within \d+ s"):
        deadlines.wait_until(lambda: False, timeout=0.01, what="the flag", every=0.001)
