"""The storage-author API: what a checkpoint storage is made of.

``workflows`` is the API workflow authors use; this package is for those who write or operate a
storage: the protocol every storage keeps (``CheckpointStorage``) and its optional capability
(``SummaryStorage``), the two storages we ship (``InMemoryCheckpointStorage``, the reference,
and ``FileCheckpointStorage``), the split of a checkpoint into a small record and
content-addressed parts (``split_checkpoint`` / ``join_checkpoint``, ``PartCache``,
``SplitCheckpoint``, ``summarize_record`` and ``CheckpointSummary``), and the typed codec
(``encode`` / ``decode`` to JSON-safe data, ``dumps`` / ``loads`` to and from text,
``resolve_type_name`` for a stored type name). The contract tests every storage passes are in
``workflows.testing``.
"""

from ..codec import decode, dumps, encode, loads
from ..registry import resolve_type_name
from .document import (
    PartCache,
    SplitCheckpoint,
    join_checkpoint,
    split_checkpoint,
    summarize_record,
)
from .file import FileCheckpointStorage
from .memory import InMemoryCheckpointStorage
from .protocol import CheckpointStorage, CheckpointSummary, SummaryStorage

__all__ = [
    "CheckpointStorage",
    "CheckpointSummary",
    "FileCheckpointStorage",
    "InMemoryCheckpointStorage",
    "PartCache",
    "SplitCheckpoint",
    "SummaryStorage",
    "decode",
    "dumps",
    "encode",
    "join_checkpoint",
    "loads",
    "resolve_type_name",
    "split_checkpoint",
    "summarize_record",
]
