"""Checkpoint storages: the protocol, the in-memory reference and the file backend."""

from .file import FileCheckpointStorage
from .memory import InMemoryCheckpointStorage
from .protocol import CheckpointStorage, CheckpointSummary, SummaryStorage

__all__ = [
    "CheckpointStorage",
    "CheckpointSummary",
    "FileCheckpointStorage",
    "InMemoryCheckpointStorage",
    "SummaryStorage",
]
