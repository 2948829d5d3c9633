"""The storage-author API: what a checkpoint storage is made of.

``workflows`` is the API workflow authors use; this package is for those who write or operate a
storage:

- the protocol every storage keeps (``CheckpointStorage``) and its optional capability
  (``SummaryStorage``), and the two storages we ship (``InMemoryCheckpointStorage``, the
  reference, and ``FileCheckpointStorage``);
- the split of a checkpoint into a small record and content-addressed parts
  (``split_checkpoint`` / ``join_checkpoint``, ``join_document`` for the document itself,
  ``PartCache``, ``SplitCheckpoint``, ``summarize_record``, ``record_digests`` for every blob a
  record refers to, long conversations' chunks included, and ``CheckpointSummary``);
- ``instant``, the moment a checkpoint's timestamp names, which every storage orders by;
- the retention rules every storage's pruning decides with: ``decide`` over
  ``CheckpointFacts`` and ``RetentionRules`` gives a ``Decision`` and its ``Reason`` for each
  checkpoint; ``decide_one`` does it a page at a time against a run's ``RunHorizon``, and
  ``delete_before`` is the bound a storage may narrow its candidates with;
- the typed codec (``encode`` / ``decode`` to JSON-safe data, ``dumps`` / ``loads`` to and from
  text, ``resolve_type_name`` for a stored type name, ``chat_type_name`` for MAF's chat types,
  which it stores in their own form).

The contract tests every storage passes are in ``workflows.testing``.
"""

from ..chat_types import chat_type_name
from ..codec import decode, dumps, encode, loads
from ..registry import resolve_type_name
from .document import (
    PartCache,
    SplitCheckpoint,
    join_checkpoint,
    join_document,
    record_digests,
    split_checkpoint,
    summarize_record,
)
from .file import FileCheckpointStorage
from .memory import InMemoryCheckpointStorage
from .protocol import CheckpointStorage, CheckpointSummary, SummaryStorage, instant
from .retention import (
    CheckpointFacts,
    Decision,
    Reason,
    RetentionRules,
    RunHorizon,
    decide,
    decide_one,
    delete_before,
)

__all__ = [
    "CheckpointFacts",
    "CheckpointStorage",
    "CheckpointSummary",
    "Decision",
    "FileCheckpointStorage",
    "InMemoryCheckpointStorage",
    "PartCache",
    "Reason",
    "RetentionRules",
    "RunHorizon",
    "SplitCheckpoint",
    "SummaryStorage",
    "chat_type_name",
    "decide",
    "decide_one",
    "decode",
    "delete_before",
    "dumps",
    "encode",
    "instant",
    "join_checkpoint",
    "join_document",
    "loads",
    "record_digests",
    "resolve_type_name",
    "split_checkpoint",
    "summarize_record",
]
