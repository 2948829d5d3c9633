"""The file storage's record of the newest checkpoint per workflow and per run.

``latest/w-<hash of the workflow name>.json`` and ``latest/r-<hash of the run id>.json`` each
hold ``{"id": ..., "ts": ..., "homes": {digest: checkpoint id}, "digest": ...}``: the newest
checkpoint of that workflow or run, its timestamp, which files hold the values it shares with
older checkpoints (so loading it needs no index), and a digest of those three. ``get_latest``
reads one of them and the checkpoint it names: two small reads, however many checkpoints the
folder holds.

Why the record can be trusted. It obeys one invariant: it names a checkpoint at least as new as
every checkpoint of its workflow or run whose file exists. A save raises the record, and makes
it durable (``fdatasync``), *before* renaming its checkpoint into place, both under an exclusive
``flock`` of the ``latest/`` folder, so a process that dies between the two leaves a record that
names a missing checkpoint, never one older than a checkpoint that exists. A reader that finds
the named checkpoint missing, or a record missing or unreadable (torn by a crash, deleted by
hand), answers from the index instead and rewrites the record under the lock, where no save can
be half done. Deleting the newest checkpoint lowers the record the same way, from the index.

Why a record is overwritten in place. Creating a file allocates an inode, which on the virtual
disks we run on takes as long as the whole fsync'ed write of a 64 KiB checkpoint: a save that
created a fresh file for each of its two records cost three times the checkpoint's own write.
So a record file, once there, is rewritten where it stands: its JSON ends with a digest of the
rest (a write cut short by a crash, or read while half done, does not match and is not trusted),
followed by spaces up to the file's size, which so stays put and leaves ``fdatasync`` only the
data to flush.

Where the OS lacks ``flock``, ``fdatasync``, ``pwrite`` or ``dir_fd``, ``os_support.py`` stands in
for each with a call that keeps these guarantees, and says why it does.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from . import os_support

__all__ = ["Latest", "LatestRecords"]

KINDS = ("w", "r")  # per workflow name, per run id
_BLOCK = 512  # a record file's size is a multiple of this
_SHRINK_AFTER = 8  # a file this many times a record's size is cut back to it


@dataclass(frozen=True)
class Latest:
    id: str
    ts: str
    homes: dict[str, str] = field(default_factory=dict)  # digest -> checkpoint id, "" for blobs/


class LatestRecords:
    """The records of one storage folder. Callers serialize threads themselves; ``locked``
    adds the exclusion between processes (and between storage objects of one process).

    Files are reached through a descriptor of the folder (``dir_fd``) where the OS has it: a
    save touches them five times, and resolving the folder's path each time would cost as much
    as the writes.
    """

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self._files = os_support.Folder(folder)
        self._depth = 0

    def path(self, kind: str, name: str) -> Path:
        return self.folder / self._name(kind, name)

    @staticmethod
    def _name(kind: str, name: str) -> str:
        digest = hashlib.sha256(name.encode("utf-8", "surrogatepass")).hexdigest()[:40]
        return f"{kind}-{digest}.json"

    def read_raw(self, kind: str, name: str) -> bytes | None:
        try:
            fd = self._files.open(self._name(kind, name), os.O_RDONLY)
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
        """Replace the record, durably (call under ``locked``); None removes it."""
        target = self._name(kind, name)
        if latest is None:
            with contextlib.suppress(FileNotFoundError):
                self._files.unlink(target)
            return
        sealed = seal(latest)
        fd = self._files.open(target, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            size = os.fstat(fd).st_size
            room = -(-len(sealed) // _BLOCK) * _BLOCK
            if size < room or size > room * _SHRINK_AFTER:
                # Grown past its file (or far smaller than it): the file's size changes this once.
                os.ftruncate(fd, room)
                size = room
            data = sealed + b" " * (size - len(sealed))
            view = memoryview(data)
            offset = 0
            while offset < len(data):
                offset += os_support.pwrite(fd, view[offset:], offset)
            os_support.sync_data(fd)
        finally:
            os.close(fd)

    @contextlib.contextmanager
    def locked(self) -> Iterator[None]:
        """The folder's exclusive lock; re-entrant within the caller's thread lock."""
        if self._depth == 0:
            self._files.lock()
        self._depth += 1
        try:
            yield
        finally:
            self._depth -= 1
            if self._depth == 0:
                self._files.unlock()

    def close(self) -> None:
        self._files.close()


def seal(latest: Latest) -> bytes:
    """The record as JSON, with a digest of the rest of it as its last field."""
    text = _text({"id": latest.id, "ts": latest.ts, "homes": latest.homes})
    return text[:-1] + b',"digest":"' + _digest(text) + b'"}\n'


def _text(fields: dict[str, object]) -> bytes:
    return json.dumps(fields, separators=(",", ":")).encode("ascii")


def _digest(text: bytes) -> bytes:
    return hashlib.blake2b(text, digest_size=16).hexdigest().encode("ascii")


def parse(raw: bytes | None) -> Latest | None:
    if raw is None:
        return None
    try:
        data = json.loads(raw)
        digest = data.pop("digest")
        if not isinstance(digest, str) or digest.encode("ascii") != _digest(_text(data)):
            # Torn by a crash, caught half written, written by hand or by an older version.
            return None
        latest = Latest(data["id"], data["ts"], dict(data.get("homes", {})))
    except (ValueError, KeyError, TypeError, AttributeError):
        return None
    if not isinstance(latest.id, str) or not isinstance(latest.ts, str):
        return None
    if not all(isinstance(k, str) and isinstance(v, str) for k, v in latest.homes.items()):
        return None
    return latest
