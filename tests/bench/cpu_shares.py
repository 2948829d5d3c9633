"""Who used the machine's CPU during a benchmark: each process's user + system time read from
``/proc``, grouped by the process tree it belongs to (the web server, the worker, ...) or by its
name (PostgreSQL's backends, Redis), so a figure that misses its target says where the time went.

Processes that start and end between two snapshots are not seen; the groups are long-lived.
Linux only (``/proc``); elsewhere the snapshot is empty and nothing is printed.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import TextIO

__all__ = ["CpuShares", "cpu_seconds"]

_TICK = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100
# Processes known by name wherever they were started (the shared PostgreSQL server's backends).
_BY_NAME = {"postgres": "postgresql", "redis-server": "redis"}


def _stat(raw: str) -> tuple[int, str, float]:
    """(parent pid, name, user + system CPU seconds) from a ``/proc/<pid>/stat`` line."""
    # The name is in parentheses and may hold spaces: split after the last ')'.
    name = raw[raw.index("(") + 1 : raw.rindex(")")]
    fields = raw[raw.rindex(")") + 2 :].split()
    return int(fields[1]), name, (int(fields[11]) + int(fields[12])) / _TICK


def cpu_seconds(pid: int) -> float:
    """User + system CPU a process has used so far."""
    return _stat(Path(f"/proc/{pid}/stat").read_text())[2]


def _processes() -> dict[int, tuple[int, str, float]]:
    """pid -> (parent pid, name, CPU seconds so far)."""
    found: dict[int, tuple[int, str, float]] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            found[int(entry.name)] = _stat((entry / "stat").read_text())
        except OSError:
            continue  # ended meanwhile
    return found


@dataclass
class CpuShares:
    """``roots`` names process trees: every descendant of a root pid counts toward its name."""

    roots: dict[str, int]
    _start: dict[int, tuple[str, float]] = field(default_factory=dict)
    _began: float = 0.0

    def _grouped(self) -> dict[int, tuple[str, float]]:
        table = _processes()
        by_root = {pid: name for name, pid in self.roots.items()}
        me = os.getpid()

        def group(pid: int) -> str:
            seen = 0
            walk = pid
            while walk in table and seen < 64:
                if walk in by_root:
                    return by_root[walk]
                if walk == me:
                    return "load generator (this process)"
                walk, seen = table[walk][0], seen + 1
            return _BY_NAME.get(table[pid][1], "everything else")

        return {pid: (group(pid), cpu) for pid, (_, _, cpu) in table.items()}

    def start(self) -> None:
        self._start, self._began = self._grouped(), time.monotonic()

    def report(self, out: TextIO) -> None:
        if not self._start:
            return
        elapsed = time.monotonic() - self._began
        totals: dict[str, float] = {}
        for pid, (name, cpu) in self._grouped().items():
            totals[name] = totals.get(name, 0.0) + cpu - self._start.get(pid, (name, 0.0))[1]
        cpus = os.cpu_count() or 1
        out.write(f"\nCPU used meanwhile (CPU-seconds per second; this machine has {cpus}):\n")
        for name, used in sorted(totals.items(), key=lambda item: -item[1]):
            out.write(f"  {name:<32} {used / elapsed:5.2f}\n")
        out.write(f"  {'all':<32} {sum(totals.values()) / elapsed:5.2f}\n")
