"""The file storage's record of the newest checkpoint per workflow and per run.

``latest/w-<hash of the workflow name>.json`` and ``latest/r-<hash of the run id>.json`` each
hold ``{"id": ..., "ts": ..., "homes": {digest: checkpoint id}}``: the newest checkpoint of that
workflow or run, its timestamp, and which files hold the values it shares with older
checkpoints (so loading it needs no index). ``get_latest`` reads one of them and the checkpoint
it names: two small reads, however many checkpoints the folder holds.

Why the record can be trusted without an fsync of its own. It obeys one invariant: it names a
checkpoint at least as new as every checkpoint of its workflow or run whose file exists. A save
raises the record *before* renaming its checkpoint into place, both under an exclusive
``flock`` of the ``latest/`` folder, so a process that dies between the two leaves a record
that names a missing checkpoint, never one older than a checkpoint that exists. A reader that
finds the named checkpoint missing, or a record missing or unreadable (torn by a crash, deleted
by hand), answers from the index instead and rewrites the record under the lock, where no save
can be half done. A record is replaced by an unlink and a rename, and ext4 and XFS commit
those in the order they were made, so after a power cut a record is missing, empty, or the one
in force when the last surviving checkpoint was renamed, never older. Deleting the newest
checkpoint lowers the record the same way, from the index.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import os
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

__all__ = ["Latest", "LatestRecords"]

KINDS = ("w", "r")  # per workflow name, per run id


@dataclass(frozen=True)
class Latest:
    id: str
    ts: str
    homes: dict[str, str] = field(default_factory=dict)  # digest -> checkpoint id, "" for blobs/


class LatestRecords:
    """The records of one storage folder. Callers serialize threads themselves; ``locked``
    adds the exclusion between processes (and between storage objects of one process).

    Files are reached through a descriptor of the folder (``dir_fd``): a save touches them
    five times, and resolving the folder's path each time would cost as much as the writes.
    """

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        folder.mkdir(exist_ok=True)
        self._fd: int | None = os.open(folder, os.O_RDONLY)
        self._pid = os.getpid()
        self._locked_fd = -1
        self._depth = 0
        self._writes = 0

    def path(self, kind: str, name: str) -> Path:
        return self.folder / self._name(kind, name)

    @staticmethod
    def _name(kind: str, name: str) -> str:
        digest = hashlib.sha256(name.encode("utf-8", "surrogatepass")).hexdigest()[:40]
        return f"{kind}-{digest}.json"

    def _dir(self) -> int:
        if self._fd is None or self._pid != os.getpid():
            # A forked child shares its parent's open file, and so its lock: it opens its own.
            self._fd, self._pid = os.open(self.folder, os.O_RDONLY), os.getpid()
        return self._fd

    def read_raw(self, kind: str, name: str) -> bytes | None:
        try:
            fd = os.open(self._name(kind, name), os.O_RDONLY, dir_fd=self._dir())
        except FileNotFoundError:
            return None
        try:
            chunks = []
            while chunk := os.read(fd, 1 << 16):
                chunks.append(chunk)
            return b"".join(chunks)
        finally:
            os.close(fd)

    def read(self, kind: str, name: str) -> Latest | None:
        """The record, or None when it is missing or unreadable."""
        return parse(self.read_raw(kind, name))

    def write(self, kind: str, name: str, latest: Latest | None) -> None:
        """Replace the record (call under ``locked``); None removes it."""
        folder, target = self._dir(), self._name(kind, name)
        if latest is None:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(target, dir_fd=folder)
            return
        text = json.dumps({"id": latest.id, "ts": latest.ts, "homes": latest.homes})
        self._writes += 1
        tmp = f".{target}.{os.getpid()}.{self._writes}.tmp"  # ours alone: we hold the lock
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644, dir_fd=folder)
        try:
            try:
                os.write(fd, text.encode("utf-8", "surrogatepass"))
            finally:
                os.close(fd)
            # Not a rename over the old record: ext4 then writes the new file's data out at
            # once (auto_da_alloc), several times the cost of the rest of this save. A reader
            # in between finds no record and asks the index; after a power cut the record is
            # missing or empty, both seen as untrustworthy, never older than it was.
            with contextlib.suppress(FileNotFoundError):
                os.unlink(target, dir_fd=folder)
            os.rename(tmp, target, src_dir_fd=folder, dst_dir_fd=folder)
        except BaseException:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(tmp, dir_fd=folder)
            raise

    @contextlib.contextmanager
    def locked(self) -> Iterator[None]:
        """The folder's exclusive lock; re-entrant within the caller's thread lock."""
        if self._depth == 0:
            self._locked_fd = self._dir()
            fcntl.flock(self._locked_fd, fcntl.LOCK_EX)
        self._depth += 1
        try:
            yield
        finally:
            self._depth -= 1
            if self._depth == 0:
                fcntl.flock(self._locked_fd, fcntl.LOCK_UN)

    def close(self) -> None:
        if self._fd is not None and self._pid == os.getpid():
            os.close(self._fd)
        self._fd = None


def parse(raw: bytes | None) -> Latest | None:
    if raw is None:
        return None
    try:
        data = json.loads(raw)
        latest = Latest(data["id"], data["ts"], dict(data.get("homes", {})))
    except (ValueError, KeyError, TypeError):
        return None  # torn by a crash, or written by hand
    if not isinstance(latest.id, str) or not isinstance(latest.ts, str):
        return None
    if not all(isinstance(k, str) and isinstance(v, str) for k, v in latest.homes.items()):
        return None
    return latest
