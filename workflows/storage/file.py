"""Durable checkpoints on a local disk: one JSON file per checkpoint, plus an index.

Layout of ``storage_path``::

    checkpoints/<id>.json   {"format": ..., "record": {...}, "blobs": {digest: value}}
    blobs/<digest>.json     a blob whose first checkpoint was deleted while others still use it
    index.jsonl             one line per save/delete, so listings never open checkpoint files
    latest/                 the newest checkpoint per workflow and per run (see ``latest.py``)

A checkpoint file carries the blobs it introduced (state values that changed), so one save is one
atomic write: a temporary file, fsync, rename, fsync of the directory (``os_support.py`` says
what stands in for these where the OS lacks them). The index is appended
without fsync: it is a cache of what the files say, repaired from the files when they disagree.
It is read when first needed (a listing, a save, a delete), not when the storage is opened:
``get_latest`` of a workflow or a run reads its record and the checkpoint it names instead, so
finding where a run stopped costs the same with a hundred checkpoints or a hundred thousand.
Several processes may save into one folder; deletes (retention) should come from one of them.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import re
import threading
import uuid
import weakref
from collections import OrderedDict
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

from .. import codec
from ..checkpoint import WorkflowCheckpoint
from ..exceptions import (
    CheckpointDecodeError,
    CheckpointError,
    CheckpointNotFoundError,
    UnregisteredTypeError,
)
from ..registry import AllowedTypes, TypeRegistry, default_registry
from . import os_support
from .document import (
    PartCache,
    join_checkpoint,
    record_digests,
    split_checkpoint,
    summarize_record,
)
from .latest import Latest, LatestRecords
from .latest import parse as parse_latest
from .protocol import CheckpointSummary, instant

__all__ = ["FileCheckpointStorage", "atomic_write"]

logger = logging.getLogger(__name__)

FILE_FORMAT = "superstep.checkpoint-file/1"
_SAFE_ID = re.compile(r"^[A-Za-z0-9_-][A-Za-z0-9_.-]{0,127}$")
_DIGEST = re.compile(r"^[0-9a-f]{64}$")
_MISSING: Any = object()
_T = TypeVar("_T")


def atomic_write(path: Path, data: bytes) -> None:
    """Write ``data`` to ``path`` so that a crash leaves either the old file or the new one."""
    tmp = durable_temp(path, data)
    try:
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    os_support.sync_dir(path.parent)


def durable_temp(path: Path, data: bytes) -> Path:
    """``data`` written and fsync'ed under a temporary name beside ``path``; returns that name."""
    tmp = path.with_name(f".{path.name}.{uuid.uuid4().hex}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os_support.O_BINARY, 0o644)
    try:
        try:
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view) :]
            os_support.sync_file(fd)
        finally:
            os.close(fd)
    except BaseException:
        tmp.unlink(missing_ok=True)  # a full disk must not leave half-written files behind
        raise
    return tmp


class FileCheckpointStorage:
    """Checkpoints as JSON files under ``storage_path`` (created if missing).

    Args:
        storage_path: the folder; ids are confined to it.
        allowed_checkpoint_types: types checkpoints may store and restore besides those already
            registered, as MAF writes them: ``"module:qualname"`` names or classes. They join
            ``registry`` (see ``TypeRegistry.allow``); a name is never imported.
        registry: the types checkpoints may restore (defaults to the process-wide registry).
        offload_io: write on a worker thread instead of the event loop. A run waits for its
            checkpoint to be durable either way; offloading lets *other* coroutines on the same
            loop go on during the fsync, at the cost of a thread hop per save. Turn it on when
            many runs share one event loop.
    """

    def __init__(
        self,
        storage_path: str | os.PathLike[str],
        *,
        allowed_checkpoint_types: AllowedTypes | None = None,
        registry: TypeRegistry = default_registry,
        offload_io: bool = False,
    ) -> None:
        registry.allow(allowed_checkpoint_types)
        self._offload = offload_io
        self.root = Path(storage_path).resolve()
        self._dir = self.root / "checkpoints"
        self._blob_dir = self.root / "blobs"
        self._index_path = self.root / "index.jsonl"
        self._dir.mkdir(parents=True, exist_ok=True)
        self._blob_dir.mkdir(exist_ok=True)
        self._registry = registry
        self._cache = PartCache()
        self._lock = threading.RLock()
        self._summaries: dict[str, CheckpointSummary] = {}
        self._key_counts: dict[tuple[str, str], int] = {}  # checkpoints per workflow / run
        self._refs: dict[str, list[str]] = {}
        self._carried: dict[str, list[str]] = {}
        self._blob_home: dict[str, str] = {}  # digest -> checkpoint id, or "" for blobs/
        self._refcount: dict[str, int] = {}
        self._index_offset = 0
        self._index_file: tuple[int, tuple[int, int], weakref.finalize[Any, Any]] | None = None
        self._parsed: OrderedDict[str, Any] = OrderedDict()  # small LRU of parsed blobs
        self._indexed = False
        self._latest = LatestRecords(self.root / "latest")
        weakref.finalize(self, self._latest.close)
        self.bytes_written = 0

    @property
    def storage_path(self) -> Path:
        """The folder (MAF's attribute name)."""
        return self.root

    # ------------------------------------------------------------------------------ paths & ids

    def _path(self, checkpoint_id: str) -> Path | None:
        # The pattern admits no separator and no leading dot, so the path cannot leave the
        # folder; no resolve() (two syscalls per component) on every save and load.
        if not isinstance(checkpoint_id, str) or not _SAFE_ID.fullmatch(checkpoint_id):
            return None
        return self._dir / f"{checkpoint_id}.json"

    # ---------------------------------------------------------------------------------- index

    def _append_index(self, entry: dict[str, Any]) -> None:
        line = (json.dumps(entry, separators=(",", ":")) + "\n").encode()
        fd = self._index_fd()
        os.write(fd, line)  # one write with O_APPEND: lines from several processes never mix
        after = os.fstat(fd).st_size
        # If the file grew by exactly our line past what we have applied, no other process
        # appended in between and our own line is already applied by the caller. Otherwise
        # _refresh replays from the old offset, which is idempotent.
        if after - len(line) == self._index_offset:
            self._index_offset = after

    def _index_fd(self) -> int:
        """The index, opened once for appending (an open per save costs more than the write).

        The descriptor is checked before each use: a daemonizing fork may have closed it, and
        its number may since belong to another file, which must be neither written nor closed.
        """
        if self._index_file is not None:
            fd, identity, finalizer = self._index_file
            try:
                current = os.fstat(fd)
            except OSError:
                current = None
            if current is not None and (current.st_dev, current.st_ino) == identity:
                return fd
            finalizer.detach()  # not ours any more: forget it without closing it
            self._index_file = None
        flags = os.O_WRONLY | os.O_CREAT | os.O_APPEND | os_support.O_BINARY
        fd = os.open(self._index_path, flags, 0o644)
        stat = os.fstat(fd)
        self._index_file = (fd, (stat.st_dev, stat.st_ino), weakref.finalize(self, os.close, fd))
        return fd

    def _drop_index_fd(self) -> None:
        if self._index_file is not None:
            self._index_file[2]()  # closes it
            self._index_file = None

    def _ensure_index(self) -> None:
        """The index, up to date: checked against the files the first time it is needed, then
        only what other processes appended since is read."""
        self._refresh()
        if not self._indexed:
            self._repair()
            self._indexed = True

    def _refresh(self) -> None:
        """Replay index lines other processes (or an earlier life of this one) appended."""
        try:
            stat = self._index_path.stat()
        except FileNotFoundError:
            self._drop_index_fd()  # removed by hand: the next append creates it again
            self._index_offset = 0
            return
        if self._index_file is not None and self._index_file[1] != (stat.st_dev, stat.st_ino):
            self._drop_index_fd()  # replaced by hand: append to, and read, the one there now
            self._index_offset = 0
        size = stat.st_size
        if size <= self._index_offset:
            return
        with open(self._index_path, "rb") as fh:
            fh.seek(self._index_offset)
            chunk = fh.read(size - self._index_offset)
        complete = chunk[: chunk.rfind(b"\n") + 1]  # a half-written last line waits for the rest
        self._index_offset += len(complete)
        for raw in complete.splitlines():
            try:
                self._apply(json.loads(raw))
            except (ValueError, KeyError, TypeError):
                continue  # a damaged line; _repair() rebuilds what the files say

    def _apply(self, entry: dict[str, Any]) -> None:
        if entry["op"] == "save":
            fields = dict(entry["summary"])
            for key in ("pending_request_ids", "answered_request_ids"):
                fields[key] = tuple(fields[key])
            self._add(CheckpointSummary(**fields), entry["refs"], entry["carried"])
        elif entry["op"] == "delete":
            for digest in entry.get("rehomed", []):
                self._blob_home[digest] = ""
            self._forget(entry["id"])

    def _add(self, summary: CheckpointSummary, refs: list[str], carried: list[str]) -> None:
        cid = summary.checkpoint_id
        if cid in self._summaries:
            self._forget(cid)
        self._summaries[cid] = summary
        for key in self._keys(summary):
            self._key_counts[key] = self._key_counts.get(key, 0) + 1
        self._refs[cid] = refs
        self._carried[cid] = carried
        for digest in carried:
            self._blob_home.setdefault(digest, cid)
        for digest in refs:
            self._refcount[digest] = self._refcount.get(digest, 0) + 1

    def _forget(self, cid: str) -> None:
        if cid not in self._summaries:
            return
        for key in self._keys(self._summaries.pop(cid)):
            self._key_counts[key] -= 1
        self._carried.pop(cid, None)
        for digest in self._refs.pop(cid, []):
            self._refcount[digest] -= 1
            if self._refcount[digest] <= 0:
                del self._refcount[digest]
                if self._blob_home.get(digest) != "":
                    self._blob_home.pop(digest, None)

    def _repair(self) -> None:
        """Make the index agree with the files: a crash between rename and append, or files
        copied in by hand, must not make checkpoints invisible."""
        on_disk = {p.stem for p in self._dir.glob("*.json")}
        for cid in sorted(on_disk - set(self._summaries)):
            try:
                record, carried, size = self._read_file(self._dir / f"{cid}.json")
                summary = summarize_record(record, size)
                refs = record_digests(record)
            except (CheckpointError, KeyError, TypeError, ValueError) as exc:
                logger.warning(
                    "checkpoint file %s.json is unreadable and was skipped: %s", cid, exc
                )
                continue
            self._add(summary, refs, sorted(carried))
            self._append_index(self._save_entry(summary, refs, sorted(carried)))
        for cid in sorted(set(self._summaries) - on_disk):
            self._forget(cid)
        for path in self._blob_dir.glob("*.json"):
            if _DIGEST.match(path.stem):
                self._blob_home[path.stem] = ""

    @staticmethod
    def _save_entry(
        summary: CheckpointSummary, refs: list[str], carried: list[str]
    ) -> dict[str, Any]:
        fields = dict(summary.__dict__)
        fields["pending_request_ids"] = list(summary.pending_request_ids)
        fields["answered_request_ids"] = list(summary.answered_request_ids)
        return {"op": "save", "summary": fields, "refs": refs, "carried": carried}

    # ----------------------------------------------------------------------------------- files

    def _read_file(self, path: Path) -> tuple[dict[str, Any], dict[str, Any], int]:
        try:
            raw = path.read_bytes()
        except FileNotFoundError:
            raise CheckpointNotFoundError(f"no checkpoint with id {path.stem!r}") from None
        data = codec.loads(raw)
        if not isinstance(data, dict) or data.get("format") != FILE_FORMAT:
            raise CheckpointDecodeError(f"{path.name} is not a checkpoint file")
        record, blobs = data.get("record"), data.get("blobs")
        if not isinstance(record, dict) or not isinstance(blobs, dict):
            raise CheckpointDecodeError(f"{path.name} is malformed")
        return record, blobs, len(raw)

    def _blob(self, digest: str, carried: dict[str, Any], homes: dict[str, str]) -> Any:
        if digest in carried:
            return carried[digest]
        if digest in self._parsed:
            self._parsed.move_to_end(digest)
            return self._parsed[digest]
        if not self._indexed and digest in homes and _DIGEST.match(digest):
            value = self._hinted_blob(digest, homes[digest])
            if value is not _MISSING:
                return self._remember(digest, value)
        home = self._blob_home.get(digest)
        if home is None:
            self._ensure_index()
            home = self._blob_home.get(digest)
        if home is None or not _DIGEST.match(digest):
            raise CheckpointDecodeError(f"checkpoint blob {digest} is missing")
        try:
            value = self._read_blob(digest, home)
        except (CheckpointNotFoundError, FileNotFoundError):
            # Another process deleted the checkpoint that carried it and moved it to blobs/.
            self._ensure_index()
            home = self._blob_home.get(digest, "")
            try:
                value = self._read_blob(digest, home)
            except (CheckpointNotFoundError, FileNotFoundError):
                raise CheckpointDecodeError(f"checkpoint blob {digest} is missing") from None
        return self._remember(digest, value)

    def _remember(self, digest: str, value: Any) -> Any:
        self._parsed[digest] = value
        if len(self._parsed) > 64:
            self._parsed.popitem(last=False)
        return value

    def _hinted_blob(self, digest: str, home: str) -> Any:
        """A blob from where a latest record says it is, without the index: the file of the
        checkpoint that carried it or, since that was deleted, blobs/. ``_MISSING`` if neither
        holds it (the caller then asks the index)."""
        if home and self._path(home) is not None:
            try:
                _, blobs, _ = self._read_file(self._dir / f"{home}.json")
            except CheckpointError:
                blobs = {}
            if digest in blobs:
                return blobs[digest]
        try:
            return codec.loads((self._blob_dir / f"{digest}.json").read_bytes())
        except (FileNotFoundError, CheckpointDecodeError):
            return _MISSING

    def _read_blob(self, digest: str, home: str) -> Any:
        if home == "":
            return codec.loads((self._blob_dir / f"{digest}.json").read_bytes())
        _, blobs, _ = self._read_file(self._dir / f"{home}.json")
        if digest not in blobs:
            raise CheckpointDecodeError(f"checkpoint blob {digest} is missing from {home}")
        return blobs[digest]

    # -------------------------------------------------------------------------------- protocol

    async def save(self, checkpoint: WorkflowCheckpoint) -> str:
        path = self._path(checkpoint.checkpoint_id)
        if path is None:
            raise CheckpointNotFoundError(f"invalid checkpoint id {checkpoint.checkpoint_id!r}")
        piece = split_checkpoint(checkpoint, cache=self._cache, registry=self._registry)
        summary = summarize_record(piece.record, piece.size_bytes)
        with self._lock:
            self._ensure_index()
            carried = sorted({d for d in piece.refs if d not in self._blob_home})
            homes = {d: self._blob_home[d] for d in piece.refs if d in self._blob_home}
            # Count this save's references now: a delete that runs while we write must move
            # (not drop) a shared value this checkpoint relies on but does not carry.
            self._reserve(piece.refs, +1)
        parts = [f'{{"format":"{FILE_FORMAT}","record":', piece.record_text, ',"blobs":{']
        parts.append(",".join(f'"{d}":{piece.blobs[d]}' for d in carried))
        parts.append("}}")
        data = "".join(parts).encode("utf-8")
        try:
            tmp = await self._io(durable_temp, path, data)
            try:
                with self._lock, self._latest.locked():
                    # The latest records move first: a crash before the rename leaves them
                    # naming a checkpoint that does not exist, which readers notice, never
                    # one older than a checkpoint that does.
                    self._raise_latest(
                        summary, Latest(summary.checkpoint_id, summary.timestamp, homes)
                    )
                    os.replace(tmp, path)
            except BaseException as exc:
                tmp.unlink(missing_ok=True)
                if isinstance(exc, Exception):  # not a dying process: put the records back
                    self._drop_latest(summary)
                raise
            await self._io(os_support.sync_dir, self._dir)
        except BaseException:
            with self._lock:
                self._reserve(piece.refs, -1)
            raise
        with self._lock:
            self._reserve(piece.refs, -1)  # handed over to _add under the same lock
            self._add(summary, piece.refs, carried)
            self._append_index(self._save_entry(summary, piece.refs, carried))
            self.bytes_written += len(data)
        return checkpoint.checkpoint_id

    async def _io(self, func: Callable[..., _T], *args: Any) -> _T:
        """Blocking file work, on a worker thread when ``offload_io`` asks for it."""
        if self._offload:
            return await asyncio.to_thread(func, *args)
        return func(*args)

    # --------------------------------------------------------------------------- latest records

    @staticmethod
    def _keys(summary: CheckpointSummary) -> tuple[tuple[str, str], ...]:
        return (("w", summary.workflow_name), ("r", summary.run_id))

    def _raise_latest(self, summary: CheckpointSummary, candidate: Latest) -> None:
        """Point the records of ``summary``'s workflow and run at it unless they name a newer
        checkpoint (call under both locks). Equal timestamps: the later save wins, as in the
        index's order."""
        for kind, name in self._keys(summary):
            current = self._latest.read(kind, name)
            if current is None:
                # Missing or torn: what the index knows may be newer than this save.
                known = self._newest(kind, name)
                if known is not None and instant(known.timestamp) > instant(candidate.ts):
                    self._latest.write(kind, name, self._latest_of(known))
                    continue
            elif instant(candidate.ts) < instant(current.ts):
                continue
            self._latest.write(kind, name, candidate)

    def _newest(self, kind: str, name: str) -> CheckpointSummary | None:
        """The newest indexed checkpoint of a workflow (``kind`` "w") or run ("r")."""
        if not self._key_counts.get((kind, name)):
            return None
        best = None
        for summary in self._summaries.values():
            if (summary.workflow_name if kind == "w" else summary.run_id) == name and (
                best is None or instant(summary.timestamp) >= instant(best.timestamp)
            ):
                best = summary
        return best

    def _latest_of(self, summary: CheckpointSummary) -> Latest:
        cid = summary.checkpoint_id
        carried = set(self._carried.get(cid, []))
        homes = {
            d: self._blob_home[d]
            for d in self._refs.get(cid, [])
            if d not in carried and d in self._blob_home
        }
        return Latest(cid, summary.timestamp, homes)

    def _rebuild_latest(self, kind: str, name: str) -> None:
        """Rewrite a record from the files themselves (call under both locks, where no save is
        between its record and its rename): the index, plus files saved by processes that have
        not appended their index line yet."""
        self._ensure_index()
        self._repair()
        newest = self._newest(kind, name)
        self._latest.write(kind, name, None if newest is None else self._latest_of(newest))

    def _recorded_latest(
        self, kind: str, name: str, raw: bytes | None, workflow_name: str | None
    ) -> tuple[WorkflowCheckpoint | None, bool]:
        """The checkpoint a record (``raw``) names, if it is what the record says; and whether
        the record needs rebuilding (missing, torn, or naming a checkpoint that is gone)."""
        latest = parse_latest(raw)
        path = None if latest is None else self._path(latest.id)
        if latest is None or path is None:
            return None, True
        try:
            record, carried, _ = self._read_file(path)
        except CheckpointNotFoundError:
            return None, True
        except CheckpointDecodeError:
            return None, False  # the index's way skips it with a warning
        field = "workflow_name" if kind == "w" else "run_id"
        said = (record.get("checkpoint_id"), record.get("timestamp"), record.get(field))
        if said != (latest.id, latest.ts, name):
            return None, True
        if workflow_name is not None and record.get("workflow_name") != workflow_name:
            return None, False  # the run's newest belongs to another workflow
        homes = latest.homes
        try:
            with self._lock:
                found = join_checkpoint(
                    record, lambda d: self._blob(d, carried, homes), registry=self._registry
                )
        except UnregisteredTypeError:
            raise
        except CheckpointDecodeError:
            return None, False
        return found, False

    def _heal_latest(self, kind: str, name: str, seen: bytes | None) -> None:
        with self._lock, self._latest.locked():
            if self._latest.read_raw(kind, name) == seen:  # no save or reader got there first
                self._rebuild_latest(kind, name)

    def _reserve(self, refs: list[str], delta: int) -> None:
        for digest in refs:
            count = self._refcount.get(digest, 0) + delta
            if count > 0:
                self._refcount[digest] = count
            else:
                self._refcount.pop(digest, None)

    async def load(self, checkpoint_id: str) -> WorkflowCheckpoint:
        path = self._path(checkpoint_id)
        if path is None:
            raise CheckpointNotFoundError(f"no checkpoint with id {checkpoint_id!r}")
        record, carried, _ = self._read_file(path)
        with self._lock:
            return join_checkpoint(
                record, lambda d: self._blob(d, carried, {}), registry=self._registry
            )

    async def list_summaries(
        self, *, workflow_name: str | None = None, run_id: str | None = None
    ) -> list[CheckpointSummary]:
        """Summaries of matching checkpoints from the index, oldest first."""
        with self._lock:
            self._ensure_index()
            found = [
                s
                for s in self._summaries.values()
                if (workflow_name is None or s.workflow_name == workflow_name)
                and (run_id is None or s.run_id == run_id)
            ]
        found.sort(key=lambda s: instant(s.timestamp))
        return found

    async def list_checkpoint_ids(
        self, *, workflow_name: str | None = None, run_id: str | None = None
    ) -> list[str]:
        return [
            s.checkpoint_id
            for s in await self.list_summaries(workflow_name=workflow_name, run_id=run_id)
        ]

    async def list_checkpoints(
        self, *, workflow_name: str | None = None, run_id: str | None = None
    ) -> list[WorkflowCheckpoint]:
        out = []
        for cid in await self.list_checkpoint_ids(workflow_name=workflow_name, run_id=run_id):
            try:
                out.append(await self.load(cid))
            except CheckpointNotFoundError:
                continue  # deleted by another process since the listing
            except CheckpointDecodeError as exc:
                logger.warning("checkpoint %s is unreadable and was skipped: %s", cid, exc)
        return out

    async def get_latest(
        self, *, workflow_name: str | None = None, run_id: str | None = None
    ) -> WorkflowCheckpoint | None:
        """The newest matching checkpoint. With a run id or a workflow name it comes from that
        run's (or workflow's) latest record; with neither, or when the record cannot be
        trusted, from the index, and the record is rebuilt."""
        key = (
            ("r", run_id)
            if run_id is not None
            else ("w", workflow_name)
            if workflow_name is not None
            else None
        )
        stale, seen = False, None
        if key is not None:
            seen = self._latest.read_raw(*key)
            found, stale = self._recorded_latest(*key, seen, workflow_name)
            if found is not None:
                return found
        summaries = await self.list_summaries(workflow_name=workflow_name, run_id=run_id)
        latest = None
        for summary in reversed(summaries):
            try:
                latest = await self.load(summary.checkpoint_id)
                break
            except CheckpointNotFoundError:
                continue
            except UnregisteredTypeError:
                raise  # intact, but not readable here: an older one would repeat its work
            except CheckpointDecodeError as exc:
                logger.warning(
                    "checkpoint %s is unreadable and was skipped: %s", summary.checkpoint_id, exc
                )
        if key is not None and stale:
            self._heal_latest(*key, seen)
        return latest

    async def delete(self, checkpoint_id: str) -> bool:
        path = self._path(checkpoint_id)
        if path is None:
            return False
        with self._lock:
            self._ensure_index()
            if checkpoint_id not in self._summaries and not path.exists():
                return False
            summary = self._summaries.get(checkpoint_id)
            rehomed = self._rehome_carried(checkpoint_id, path)
            path.unlink(missing_ok=True)
            os_support.sync_dir(self._dir)
            self._append_index({"op": "delete", "id": checkpoint_id, "rehomed": rehomed})
            for digest in rehomed:
                self._blob_home[digest] = ""
            self._forget(checkpoint_id)
            self._collect_orphans()
            if summary is not None:
                self._drop_latest(summary)
        return True

    def _drop_latest(self, gone: CheckpointSummary) -> None:
        """Records that name a checkpoint deleted, or whose save failed, are rebuilt (after
        the file went: a crash in between leaves them naming a missing checkpoint, which
        readers notice)."""
        with self._lock, self._latest.locked():
            for kind, name in self._keys(gone):
                current = self._latest.read(kind, name)
                if current is not None and current.id == gone.checkpoint_id:
                    self._rebuild_latest(kind, name)

    def _rehome_carried(self, checkpoint_id: str, path: Path) -> list[str]:
        """Blobs this file carries that other checkpoints still use move to blobs/ first."""
        own = self._refs.get(checkpoint_id, [])
        needed = [
            d
            for d in self._carried.get(checkpoint_id, [])
            if self._refcount.get(d, 0) - own.count(d) > 0
        ]
        if not needed:
            return []
        _, blobs, _ = self._read_file(path)
        for digest in needed:
            atomic_write(self._blob_dir / f"{digest}.json", codec.dumps(blobs[digest]).encode())
        return needed

    def _collect_orphans(self) -> None:
        for digest, home in list(self._blob_home.items()):
            if home == "" and self._refcount.get(digest, 0) == 0:
                (self._blob_dir / f"{digest}.json").unlink(missing_ok=True)
                del self._blob_home[digest]
