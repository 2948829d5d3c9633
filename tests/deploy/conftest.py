"""The deploy kit's tests start the Django side's processes: they share its fixtures."""

from __future__ import annotations

from tests.dashboard.conftest import subprocess_env

__all__ = ["subprocess_env"]
