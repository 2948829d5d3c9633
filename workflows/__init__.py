"""Superstep's workflow engine: typed executors exchanging messages in supersteps, with a
checkpoint after every superstep and human-in-the-loop requests that survive restarts.

Pure Python and asyncio; nothing here imports Django.
"""

from .builder import WorkflowBuilder
from .checkpoint import WorkflowCheckpoint, WorkflowMessage, resolve_type_name
from .codec import decode, dumps, encode, loads
from .context import WorkflowContext
from .edges import Case, Default
from .events import ErrorDetails, RequestInfoEvent, WorkflowEvent, WorkflowRunState
from .exceptions import (
    CheckpointDecodeError,
    CheckpointEncodeError,
    CheckpointError,
    CheckpointNotFoundError,
    ConcurrentRunError,
    GraphMismatchError,
    RequestAlreadyAnsweredError,
    RequestError,
    ResponseTypeError,
    RunArgumentsError,
    UnknownRequestError,
    WorkflowConvergenceError,
    WorkflowError,
    WorkflowRunError,
    WorkflowValidationError,
)
from .executor import Executor, FunctionExecutor, executor, handler, response_handler
from .registry import TypeRegistry, register_type
from .result import WorkflowRunResult, WorkflowRunStream
from .retention import PruneReport, prune
from .storage import (
    CheckpointStorage,
    CheckpointSummary,
    FileCheckpointStorage,
    InMemoryCheckpointStorage,
)
from .storage.document import (
    PartCache,
    SplitCheckpoint,
    join_checkpoint,
    split_checkpoint,
    summarize_record,
)
from .workflow import Workflow

__all__ = [
    "Case",
    "CheckpointDecodeError",
    "CheckpointEncodeError",
    "CheckpointError",
    "CheckpointNotFoundError",
    "CheckpointStorage",
    "CheckpointSummary",
    "ConcurrentRunError",
    "Default",
    "ErrorDetails",
    "Executor",
    "FileCheckpointStorage",
    "FunctionExecutor",
    "GraphMismatchError",
    "InMemoryCheckpointStorage",
    "PartCache",
    "PruneReport",
    "RequestAlreadyAnsweredError",
    "RequestError",
    "RequestInfoEvent",
    "ResponseTypeError",
    "RunArgumentsError",
    "SplitCheckpoint",
    "TypeRegistry",
    "UnknownRequestError",
    "Workflow",
    "WorkflowBuilder",
    "WorkflowCheckpoint",
    "WorkflowContext",
    "WorkflowConvergenceError",
    "WorkflowError",
    "WorkflowEvent",
    "WorkflowMessage",
    "WorkflowRunError",
    "WorkflowRunResult",
    "WorkflowRunState",
    "WorkflowRunStream",
    "WorkflowValidationError",
    "decode",
    "dumps",
    "encode",
    "executor",
    "handler",
    "join_checkpoint",
    "loads",
    "prune",
    "register_type",
    "resolve_type_name",
    "response_handler",
    "split_checkpoint",
    "summarize_record",
]
