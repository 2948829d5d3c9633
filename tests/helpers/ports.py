"""Ports for the servers the tests start in child processes (Daphne, PostgreSQL, Redis...).

Asking the kernel for a free port (binding port 0) and closing the socket leaves the port free
until the child binds it, a second or more later: meanwhile another test process on this
machine (an xdist worker, another checkout's suite) may be handed the same port and one of the
two servers fails to start. ``free_port`` closes that gap. It hands out ports below the kernel's
ephemeral range (which the kernel never gives to a bind to port 0 nor to an outgoing
connection), each reserved by a lock on its byte in one file under the temporary directory.
The lock belongs to this process and lasts as long as it does: no other process takes the
port, this one never hands it out twice, and a process that dies frees its ports with it.
A port some other program is listening on is passed over.
"""

from __future__ import annotations

import fcntl
import os
import random
import socket
import tempfile
import threading
from pathlib import Path

__all__ = ["free_port"]

FIRST, LAST = 20_000, 32_000  # below Linux's default ephemeral range (32768-60999)
_LOCKS = Path(tempfile.gettempdir()) / f"superstep-test-ports-{os.getuid()}.lock"

_mutex = threading.Lock()
_taken: set[int] = set()
_file: int | None = None


def _lock_file() -> int:
    global _file
    if _file is None:
        # Never closed: closing any descriptor of the file would drop all of this process's
        # locks on it (POSIX record locks).
        _file = os.open(_LOCKS, os.O_RDWR | os.O_CREAT, 0o666)
    return _file


def _reserve(port: int) -> bool:
    try:
        fcntl.lockf(_lock_file(), fcntl.LOCK_EX | fcntl.LOCK_NB, 1, port)
    except OSError:
        return False  # another process holds it
    with socket.socket() as probe:
        try:
            probe.bind(("127.0.0.1", port))
        except OSError:
            return False  # something else listens there; stays locked, so never tried again
    return True


def free_port() -> int:
    """A port on 127.0.0.1 that nothing listens on and no other test process will be given."""
    with _mutex:
        start = random.randrange(FIRST, LAST)
        for offset in range(LAST - FIRST):
            port = FIRST + (start - FIRST + offset) % (LAST - FIRST)
            if port in _taken:
                continue
            _taken.add(port)
            if _reserve(port):
                return port
    raise RuntimeError(f"no free port left between {FIRST} and {LAST}")
