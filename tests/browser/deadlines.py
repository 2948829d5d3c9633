"""Deadlines that grow with how busy the machine is.

A browser test waits on conditions (a status pill, a webhook payload, a row), never for a fixed
time, and every wait has a deadline that is only reached when something is wrong. On a busy
machine everything takes longer, so each deadline is a base (what a quiet machine needs, with
room to spare) times ``SLOWNESS``:

- ``SUPERSTEP_TEST_SLOWNESS`` (a number, at least 1) when it is set;
- else 3 under CI (``CI=true`` or ``CI=1``), which shares its CPUs with other work;
- else 1.5.

That factor is a floor: when the machine is busier than it allows for (more runnable processes
per CPU, over the last minute, than ``SLOWNESS / 1.5``), a deadline set now grows with the load,
since a process then gets only a share of a CPU. ``seconds(30)`` and ``ms(30_000)`` scale a base
for Python and for Playwright, each at the moment it is asked. The conftest scales Playwright's
default timeouts and pytest-timeout's limit per test the same way. The integration and fault
tests (tests/helpers/stack.py) wait with the same deadlines.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable

__all__ = ["SLOWNESS", "ms", "seconds", "slowness", "wait_until"]


def _slowness() -> float:
    given = os.environ.get("SUPERSTEP_TEST_SLOWNESS", "").strip()
    if given:
        try:
            value = float(given)
        except ValueError:
            raise ValueError(f"SUPERSTEP_TEST_SLOWNESS={given!r} is not a number") from None
        if value < 1:
            raise ValueError(f"SUPERSTEP_TEST_SLOWNESS={given!r} is below 1")
        return value
    in_ci = os.environ.get("CI", "").strip().lower() in {"1", "true"}
    return 3.0 if in_ci else 1.5


SLOWNESS = _slowness()
QUIET = 1.5  # the room a deadline leaves on a machine with a CPU to itself


def _load_per_cpu() -> float:
    try:
        return os.getloadavg()[0] / (os.cpu_count() or 1)
    except OSError:  # no load average on this system: the configured factor alone
        return 0.0


def slowness() -> float:
    """``SLOWNESS``, or more while the machine is busier than that factor allows for."""
    return max(SLOWNESS, QUIET * _load_per_cpu())


def seconds(base: float) -> float:
    """A deadline of ``base`` seconds on a quiet machine, scaled to this one as it is now."""
    return base * slowness()


def ms(base: float) -> float:
    """A Playwright timeout of ``base`` milliseconds on a quiet machine, scaled to this one."""
    return base * slowness()


def wait_until[T](
    condition: Callable[[], T], *, timeout: float, what: str, every: float = 0.2
) -> T:
    """Call ``condition`` until it returns something true, and return that; raise
    ``AssertionError`` naming ``what`` once ``seconds(timeout)`` have passed without."""
    allowed = seconds(timeout)
    deadline = time.monotonic() + allowed
    while True:
        found = condition()
        if found:
            return found
        if time.monotonic() >= deadline:
            raise AssertionError(f"{what}: not within {allowed:.0f} s")
        time.sleep(every)
