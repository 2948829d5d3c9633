"""Superstep's workflow engine: typed executors exchanging messages in supersteps, with a
checkpoint after every superstep and human-in-the-loop requests that survive restarts.

Pure Python and asyncio; nothing here imports Django.
"""

from .builder import WorkflowBuilder
from .checkpoint import CheckpointID, WorkflowCheckpoint, WorkflowMessage, resolve_type_name
from .codec import decode, dumps, encode, loads
from .context import WorkflowContext
from .edges import (
    Case,
    Default,
    Edge,
    FanInEdgeGroup,
    FanOutEdgeGroup,
    SingleEdgeGroup,
    SwitchCaseEdgeGroup,
)
from .events import (
    ErrorDetails,
    RequestInfoEvent,
    WorkflowErrorDetails,
    WorkflowEvent,
    WorkflowEventSource,
    WorkflowRunState,
)
from .exceptions import (
    CheckpointDecodeError,
    CheckpointEncodeError,
    CheckpointError,
    CheckpointNotFoundError,
    CheckpointTypeError,
    ConcurrentRunError,
    EdgeDuplicationError,
    ExecutorDuplicationError,
    GraphConnectivityError,
    GraphMismatchError,
    OutputDesignationError,
    RequestAlreadyAnsweredError,
    RequestError,
    ResponseTypeError,
    RunArgumentsError,
    TypeCompatibilityError,
    UnknownRequestError,
    ValidationTypeEnum,
    WorkflowCheckpointException,
    WorkflowConvergenceError,
    WorkflowError,
    WorkflowRunError,
    WorkflowValidationError,
)
from .executor import Executor, FunctionExecutor, executor, handler, response_handler
from .registry import TypeRegistry, register_checkpoint_type, register_type
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
from .subworkflow import SubWorkflowRequestMessage, SubWorkflowResponseMessage, WorkflowExecutor
from .viz import WorkflowViz
from .workflow import Workflow

__all__ = [
    "Case",
    "CheckpointDecodeError",
    "CheckpointEncodeError",
    "CheckpointError",
    "CheckpointID",
    "CheckpointNotFoundError",
    "CheckpointStorage",
    "CheckpointSummary",
    "CheckpointTypeError",
    "ConcurrentRunError",
    "Default",
    "Edge",
    "EdgeDuplicationError",
    "ErrorDetails",
    "Executor",
    "ExecutorDuplicationError",
    "FanInEdgeGroup",
    "FanOutEdgeGroup",
    "FileCheckpointStorage",
    "FunctionExecutor",
    "GraphConnectivityError",
    "GraphMismatchError",
    "InMemoryCheckpointStorage",
    "OutputDesignationError",
    "PartCache",
    "PruneReport",
    "RequestAlreadyAnsweredError",
    "RequestError",
    "RequestInfoEvent",
    "ResponseTypeError",
    "RunArgumentsError",
    "SingleEdgeGroup",
    "SplitCheckpoint",
    "SubWorkflowRequestMessage",
    "SubWorkflowResponseMessage",
    "SwitchCaseEdgeGroup",
    "TypeCompatibilityError",
    "TypeRegistry",
    "UnknownRequestError",
    "ValidationTypeEnum",
    "Workflow",
    "WorkflowBuilder",
    "WorkflowCheckpoint",
    "WorkflowCheckpointException",
    "WorkflowContext",
    "WorkflowConvergenceError",
    "WorkflowError",
    "WorkflowErrorDetails",
    "WorkflowEvent",
    "WorkflowEventSource",
    "WorkflowExecutor",
    "WorkflowMessage",
    "WorkflowRunError",
    "WorkflowRunResult",
    "WorkflowRunState",
    "WorkflowRunStream",
    "WorkflowValidationError",
    "WorkflowViz",
    "decode",
    "dumps",
    "encode",
    "executor",
    "handler",
    "join_checkpoint",
    "loads",
    "prune",
    "register_checkpoint_type",
    "register_type",
    "resolve_type_name",
    "response_handler",
    "split_checkpoint",
    "summarize_record",
]
