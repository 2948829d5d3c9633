"""What the file storage needs of the operating system, and what it does where the OS lacks it.

The storage's guarantees (see ``file.py`` and ``latest.py``) were written against Linux: a latest
record is rewritten in place (``pwrite``) and flushed (``fdatasync``) before the checkpoint it
names is renamed into place, under an exclusive ``flock`` of the ``latest/`` folder, whose files
are opened relative to a descriptor of it (``dir_fd``); and each rename is followed by an fsync of
its directory. Windows has none of these calls, and macOS has no ``fdatasync`` while its
``fsync`` stops at the drive's cache. So each is chosen here, once, at import, by testing for the
capability rather than by the platform's name. On Linux every choice is the call the storage
always made (the benchmarks in ``tests/bench/`` hold it to that).

=================  ========================  ===================================================
need               first choice              fallbacks
=================  ========================  ===================================================
folder lock        ``flock`` of the folder   ``msvcrt.locking`` of ``.lock`` in it; else
                                             ``.lock`` created with ``O_CREAT | O_EXCL``
data sync          ``F_FULLFSYNC``           ``os.fdatasync``; else ``os.fsync``
file sync          ``F_FULLFSYNC``           ``os.fsync``
directory sync     ``F_FULLFSYNC``           ``os.fsync`` of the opened folder; else none
positioned write   ``os.pwrite``             ``os.lseek`` + ``os.write``
files in a folder  ``dir_fd``                paths joined to the folder's
=================  ========================  ===================================================

Why each fallback keeps the guarantees:

- ``F_FULLFSYNC`` exists only where the OS says its ``fsync`` leaves data in the drive's cache
  (macOS), so it comes before ``fdatasync`` rather than after it. A file system that refuses it
  (network, FAT) gets ``os.fsync``, as SQLite does.
- ``msvcrt.locking`` (Windows) locks the first byte of a lock file; the OS drops the lock of a
  process that ends, as it does a ``flock``. It has no blocking wait worth the name (it retries
  once a second, ten times), so the wait polls, from 1 ms up to 50 ms, for at most
  ``LOCK_WAIT`` seconds, then raises ``TimeoutError``.
- The ``O_EXCL`` lock file, where Python reaches no lock call at all, excludes just as well, but a
  process that dies holding it leaves it behind: the same bounded wait then raises a
  ``TimeoutError`` naming the file, its holder's pid, and what to do.
- ``lseek`` + ``write`` instead of ``pwrite``: a record's descriptor is opened for that one write,
  under the folder lock and the storage's thread lock, so nothing else moves its offset.
- Paths instead of ``dir_fd``: the same files, reached by a longer road.
- No directory sync where a directory cannot be opened (Windows; POSIX's ``O_DIRECTORY`` exists
  exactly where it can): there is no descriptor to flush. NTFS journals the rename itself, so
  after a crash a folder holds the old name or the new one, never a torn entry; and the data was
  flushed before the rename, so a name that survives names whole contents. A power cut just
  after a save may undo that save's rename, since ``os.replace`` does not ask for write-through:
  its latest record then names a missing checkpoint, which readers notice and repair from the
  index, as after a process that died between the record and the rename.

Every file is opened in binary mode (``O_BINARY``, 0 on POSIX): Windows would otherwise turn
``\\n`` into ``\\r\\n`` on the way to the disk and change the size of records written in place.

Not covered here: on Windows an ``O_APPEND`` write is the C runtime's seek to the end, then a
write, so lines that two processes append to ``index.jsonl`` at the same instant may overwrite
each other. The index is a cache of the files, checked against them when a process first reads
it, and the latest records do not depend on it; but a process already running may then miss
another's checkpoint in its listings until it restarts.
"""

from __future__ import annotations

import importlib
import os
import time
from collections.abc import Buffer, Callable
from pathlib import Path
from types import ModuleType
from typing import Protocol

try:
    import fcntl as _fcntl
except ImportError:  # Windows
    _fcntl = None  # type: ignore[assignment]

__all__ = [
    "DATA_SYNC",
    "DIR_SYNC",
    "FILE_SYNC",
    "Folder",
    "LOCKING",
    "LOCK_FILE",
    "LOCK_WAIT",
    "OPEN_IN_FOLDER",
    "O_BINARY",
    "POSITIONED_WRITE",
    "pwrite",
    "sync_data",
    "sync_dir",
    "sync_file",
]


def _optional_module(name: str) -> ModuleType | None:
    try:
        return importlib.import_module(name)
    except ImportError:
        return None


O_BINARY: int = getattr(os, "O_BINARY", 0)
LOCK_FILE = ".lock"  # in the locked folder, where there is no flock
LOCK_WAIT = 10.0  # seconds a polled lock (msvcrt, lock file) is waited for

_F_FULLFSYNC: int | None = getattr(_fcntl, "F_FULLFSYNC", None)
_DIRS_OPEN = hasattr(os, "O_DIRECTORY")
_FLOCK = _fcntl is not None and hasattr(_fcntl, "flock") and _DIRS_OPEN
_msvcrt = None if _FLOCK else _optional_module("msvcrt")

# The choices, by name. Folder reads OPEN_IN_FOLDER and LOCKING when it is made; the functions
# below are bound from the others.
OPEN_IN_FOLDER = "dir_fd" if _DIRS_OPEN and {os.open, os.unlink} <= os.supports_dir_fd else "path"
LOCKING = "flock" if _FLOCK else "msvcrt" if _msvcrt is not None else "lock file"
if _F_FULLFSYNC is not None:  # the OS says its fsync leaves data in the drive's cache
    DATA_SYNC = FILE_SYNC = "F_FULLFSYNC"
else:
    DATA_SYNC = "fdatasync" if hasattr(os, "fdatasync") else "fsync"
    FILE_SYNC = "fsync"
DIR_SYNC = "none" if not _DIRS_OPEN else FILE_SYNC
POSITIONED_WRITE = "pwrite" if hasattr(os, "pwrite") else "lseek+write"

# --------------------------------------------------------------------------------- syncs
# The os functions are looked up on each call, so a test or a benchmark that patches os.fsync
# or os.fdatasync sees every call the storage makes.


def _fdatasync(fd: int) -> None:
    os.fdatasync(fd)


def _fsync(fd: int) -> None:
    os.fsync(fd)


def _full_fsync(fd: int) -> None:
    assert _fcntl is not None and _F_FULLFSYNC is not None
    try:
        _fcntl.fcntl(fd, _F_FULLFSYNC)
    except OSError:
        os.fsync(fd)  # a file system that does not take it


_SYNCS: dict[str, Callable[[int], None]] = {
    "F_FULLFSYNC": _full_fsync,
    "fdatasync": _fdatasync,
    "fsync": _fsync,
}

sync_data = _SYNCS[DATA_SYNC]
"""Flush a file's data (its size unchanged) to stable storage."""

sync_file = _SYNCS[FILE_SYNC]
"""Flush a new file's data and metadata to stable storage."""


def _sync_opened_dir(folder: Path) -> None:
    fd = os.open(folder, os.O_RDONLY)
    try:
        sync_file(fd)
    finally:
        os.close(fd)


def _no_dir_sync(folder: Path) -> None:
    """Nothing to flush where a directory cannot be opened (see the module's docstring)."""


sync_dir: Callable[[Path], None] = _no_dir_sync if DIR_SYNC == "none" else _sync_opened_dir
"""Make the entries of ``folder`` (a rename into it, an unlink) durable."""

# ------------------------------------------------------------------------ positioned write


def _seek_write(fd: int, data: Buffer, offset: int) -> int:
    os.lseek(fd, offset, os.SEEK_SET)
    return os.write(fd, data)


pwrite: Callable[[int, Buffer, int], int] = (
    os.pwrite if POSITIONED_WRITE == "pwrite" else _seek_write
)
"""Write ``data`` at ``offset``; returns how many bytes were written."""

# ------------------------------------------------------------------------------ folder lock


class _Lock(Protocol):
    def acquire(self) -> None: ...
    def release(self) -> None: ...
    def close(self) -> None: ...


class _Flock:
    """``flock`` of the folder's own descriptor: no extra file."""

    def __init__(self, folder: Folder) -> None:
        assert _fcntl is not None  # chosen only where it is there
        self._fcntl = _fcntl
        self._folder = folder
        self._fd = -1

    def acquire(self) -> None:
        self._fd = self._folder.descriptor()
        self._fcntl.flock(self._fd, self._fcntl.LOCK_EX)

    def release(self) -> None:
        self._fcntl.flock(self._fd, self._fcntl.LOCK_UN)

    def close(self) -> None:
        pass  # the folder's descriptor is the folder's to close


class _MsvcrtLock:
    """``msvcrt.locking`` of the first byte of the folder's lock file, kept open."""

    def __init__(self, folder: Folder) -> None:
        assert _msvcrt is not None  # chosen only where it is there
        self._msvcrt = _msvcrt
        self._path = folder.path / LOCK_FILE
        self._fd = -1

    def acquire(self) -> None:
        if self._fd < 0:
            self._fd = os.open(self._path, os.O_RDWR | os.O_CREAT | O_BINARY, 0o644)
        _poll(self._try, lambda: f"{self._path} stayed locked by another process")

    def _try(self) -> bool:
        os.lseek(self._fd, 0, os.SEEK_SET)  # the lock covers bytes from the file's position
        try:
            self._msvcrt.locking(self._fd, self._msvcrt.LK_NBLCK, 1)
        except OSError:
            return False
        return True

    def release(self) -> None:
        os.lseek(self._fd, 0, os.SEEK_SET)
        self._msvcrt.locking(self._fd, self._msvcrt.LK_UNLCK, 1)

    def close(self) -> None:
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1


class _LockFile:
    """The folder's lock file exists while the lock is held, and names its holder."""

    def __init__(self, folder: Folder) -> None:
        self._path = folder.path / LOCK_FILE

    def acquire(self) -> None:
        _poll(self._try, self._stuck)

    def _try(self) -> bool:
        try:
            fd = os.open(self._path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | O_BINARY, 0o644)
        except FileExistsError:
            return False
        try:
            os.write(fd, f"{os.getpid()}\n".encode())
        finally:
            os.close(fd)
        return True

    def _stuck(self) -> str:
        try:
            holder = self._path.read_text(encoding="ascii").strip() or "unknown"
        except (OSError, ValueError):
            holder = "unknown"
        return (
            f"{self._path} is held by process {holder}. If that process has ended (it died "
            "holding the lock), delete the file; otherwise another process is stuck in a save"
        )

    def release(self) -> None:
        try:
            os.unlink(self._path)
        except FileNotFoundError:
            pass  # deleted by hand while held

    def close(self) -> None:
        pass


def _poll(take: Callable[[], bool], stuck: Callable[[], str]) -> None:
    """``take()`` until it succeeds, for at most ``LOCK_WAIT`` seconds: neither msvcrt nor a
    lock file has a wait that blocks until the holder lets go."""
    deadline = time.monotonic() + LOCK_WAIT
    pause = 0.001
    while not take():
        if time.monotonic() >= deadline:
            raise TimeoutError(f"could not lock in {LOCK_WAIT:g} s: {stuck()}")
        time.sleep(pause)
        pause = min(pause * 2, 0.05)


_LOCKS: dict[str, Callable[[Folder], _Lock]] = {
    "flock": _Flock,
    "msvcrt": _MsvcrtLock,
    "lock file": _LockFile,
}

# ----------------------------------------------------------------------------------- folder


class Folder:
    """One folder's files, opened by name, and the folder's exclusive lock between processes.

    Where the OS resolves names against a directory descriptor (``dir_fd``), one descriptor of
    the folder serves that and ``flock``: a save touches the latest records five times,
    and resolving the folder's path each time would cost as much as the writes. Elsewhere names
    are joined to the folder's path. Files are opened in binary mode.

    ``lock`` waits until this object holds the folder, against other processes and other
    ``Folder`` objects of this one. It is not re-entrant; threads are the caller's to serialize.

    Args:
        path: the folder (created if missing).
    """

    def __init__(self, path: Path) -> None:
        path.mkdir(exist_ok=True)
        self.path = path
        self._prefix = os.path.join(path, "")
        self._relative = OPEN_IN_FOLDER == "dir_fd"
        self._pid = os.getpid()
        self._fd: int | None = None
        if self._relative or LOCKING == "flock":
            self._fd = os.open(path, os.O_RDONLY)
        self._lock = _LOCKS[LOCKING](self)

    def descriptor(self) -> int:
        """The folder's descriptor, opened by this process."""
        if self._fd is None or self._pid != os.getpid():
            # A forked child shares its parent's open file, and so its lock: it opens its own.
            self._fd, self._pid = os.open(self.path, os.O_RDONLY), os.getpid()
        return self._fd

    def open(self, name: str, flags: int, mode: int = 0o644) -> int:
        """``os.open`` of the folder's file ``name``."""
        if self._relative:
            return os.open(name, flags | O_BINARY, mode, dir_fd=self.descriptor())
        return os.open(self._prefix + name, flags | O_BINARY, mode)

    def unlink(self, name: str) -> None:
        """``os.unlink`` of the folder's file ``name``."""
        if self._relative:
            os.unlink(name, dir_fd=self.descriptor())
        else:
            os.unlink(self._prefix + name)

    def lock(self) -> None:
        self._lock.acquire()

    def unlock(self) -> None:
        self._lock.release()

    def close(self) -> None:
        self._lock.close()
        if self._fd is not None and self._pid == os.getpid():
            os.close(self._fd)
        self._fd = None
