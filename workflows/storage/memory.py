"""In-memory checkpoint storage: the reference backend every other one is tested against.

It keeps the encoded JSON text, never live objects, so a state that cannot be stored fails here
in a unit test just as it would fail on disk, and every read hands out fresh objects.
"""

from __future__ import annotations

import asyncio

from .. import codec
from ..checkpoint import WorkflowCheckpoint
from ..exceptions import CheckpointDecodeError, CheckpointNotFoundError
from ..registry import AllowedTypes, TypeRegistry, default_registry
from .document import PartCache, join_checkpoint, split_checkpoint, summarize_record
from .protocol import CheckpointSummary, instant

__all__ = ["InMemoryCheckpointStorage"]


class InMemoryCheckpointStorage:
    """Checkpoints in this process's memory; lost when it ends. For tests and development.

    ``allowed_checkpoint_types`` is as for ``FileCheckpointStorage``: MAF's in-memory storage
    keeps live objects and needs no list, but this one stores what a file would hold, so types
    kept in state must be registered or listed here too.
    """

    def __init__(
        self,
        *,
        allowed_checkpoint_types: AllowedTypes | None = None,
        registry: TypeRegistry = default_registry,
    ) -> None:
        registry.allow(allowed_checkpoint_types)
        self._registry = registry
        self._records: dict[str, tuple[str, CheckpointSummary, list[str]]] = {}
        self._blob_text: dict[str, str] = {}
        self._blob_refs: dict[str, int] = {}
        self._cache = PartCache()
        self._lock = asyncio.Lock()
        self.bytes_written = 0

    async def save(self, checkpoint: WorkflowCheckpoint) -> str:
        piece = split_checkpoint(checkpoint, cache=self._cache, registry=self._registry)
        async with self._lock:
            if checkpoint.checkpoint_id in self._records:
                self._drop(checkpoint.checkpoint_id)
            written = len(piece.record_text)
            for digest in piece.refs:
                if digest not in self._blob_text:
                    self._blob_text[digest] = piece.blobs[digest]
                    written += len(piece.blobs[digest])
                self._blob_refs[digest] = self._blob_refs.get(digest, 0) + 1
            summary = summarize_record(piece.record, piece.size_bytes)
            self._records[checkpoint.checkpoint_id] = (piece.record_text, summary, piece.refs)
            self.bytes_written += written
        return checkpoint.checkpoint_id

    async def load(self, checkpoint_id: str) -> WorkflowCheckpoint:
        entry = self._records.get(checkpoint_id) if isinstance(checkpoint_id, str) else None
        if entry is None:
            raise CheckpointNotFoundError(f"no checkpoint with id {checkpoint_id!r}")
        record = codec.loads(entry[0])
        return join_checkpoint(record, self._blob, registry=self._registry)

    def _blob(self, digest: str) -> object:
        text = self._blob_text.get(digest)
        if text is None:
            raise CheckpointDecodeError(f"checkpoint blob {digest} is missing")
        return codec.loads(text)

    async def list_summaries(
        self, *, workflow_name: str | None = None, run_id: str | None = None
    ) -> list[CheckpointSummary]:
        """Summaries of the matching checkpoints, oldest first, decoding nothing."""
        found = [
            summary
            for _, summary, _ in self._records.values()
            if (workflow_name is None or summary.workflow_name == workflow_name)
            and (run_id is None or summary.run_id == run_id)
        ]
        found.sort(key=lambda s: instant(s.timestamp))
        return found

    async def list_checkpoint_ids(
        self, *, workflow_name: str | None = None, run_id: str | None = None
    ) -> list[str]:
        summaries = await self.list_summaries(workflow_name=workflow_name, run_id=run_id)
        return [s.checkpoint_id for s in summaries]

    async def list_checkpoints(
        self, *, workflow_name: str | None = None, run_id: str | None = None
    ) -> list[WorkflowCheckpoint]:
        ids = await self.list_checkpoint_ids(workflow_name=workflow_name, run_id=run_id)
        return [await self.load(cid) for cid in ids]

    async def get_latest(
        self, *, workflow_name: str | None = None, run_id: str | None = None
    ) -> WorkflowCheckpoint | None:
        summaries = await self.list_summaries(workflow_name=workflow_name, run_id=run_id)
        return await self.load(summaries[-1].checkpoint_id) if summaries else None

    async def delete(self, checkpoint_id: str) -> bool:
        async with self._lock:
            if checkpoint_id not in self._records:
                return False
            self._drop(checkpoint_id)
            return True

    def _drop(self, checkpoint_id: str) -> None:
        _, _, refs = self._records.pop(checkpoint_id)
        for digest in refs:
            self._blob_refs[digest] -= 1
            if self._blob_refs[digest] == 0:
                del self._blob_refs[digest], self._blob_text[digest]

    @property
    def blob_count(self) -> int:
        return len(self._blob_text)
