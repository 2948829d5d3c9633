"""Superstep's workflow engine: typed executors exchanging messages in supersteps, with a
checkpoint after every superstep and human-in-the-loop requests that survive restarts.

Pure Python and asyncio; nothing here imports Django. This module is the API for workflow
authors; ``workflows.storage`` is the API for those who write or operate a checkpoint storage.

Building a graph:
    ``WorkflowBuilder`` (edges, fan-out, fan-in, switch-case with ``Case`` / ``Default`` or MAF's
    ``SwitchCaseEdgeGroupCase`` / ``SwitchCaseEdgeGroupDefault``, output designation), the edge
    groups it makes (``Edge``, ``SingleEdgeGroup``, ``FanOutEdgeGroup``, ``FanInEdgeGroup``,
    ``SwitchCaseEdgeGroup``), ``validate_workflow_graph``, ``INTERNAL_SOURCE_ID`` (the source of
    the input and of answers), and the picture of a graph, ``WorkflowViz``.
Executors:
    ``Executor`` with ``handler`` and ``response_handler`` methods, ``executor`` /
    ``FunctionExecutor`` for functions, ``WorkflowExecutor`` for a whole workflow as one executor
    (with ``SubWorkflowRequestMessage`` / ``SubWorkflowResponseMessage``), and the
    ``WorkflowContext`` every handler gets.
Running:
    ``Workflow`` and its ``run()``, which returns a ``WorkflowRunResult`` or a
    ``WorkflowRunStream`` of ``WorkflowEvent`` (``RequestInfoEvent`` for requests); the catalogue
    of event types ``EVENT_KINDS`` (``EventKind`` entries, ``WorkflowEventType`` names),
    ``WorkflowEventSource``, ``WorkflowRunState`` and ``ErrorDetails`` (MAF's
    ``WorkflowErrorDetails``).
Checkpoints:
    ``WorkflowCheckpoint`` (``CheckpointID``, written for a ``CheckpointKind``) holding ``WorkflowMessage`` in flight; the
    ``CheckpointStorage`` protocol with ``InMemoryCheckpointStorage`` and
    ``FileCheckpointStorage``; the types checkpoints may hold: ``TypeRegistry``, ``register_type``
    and MAF's ``register_checkpoint_type``; retention with ``prune`` and its ``PruneReport``;
    moving a checkpoint onto a changed graph: ``check_checkpoint_migration`` (a
    ``CheckpointMigration`` report) and ``migrate_checkpoint``.
Errors (hierarchy in ``workflows.exceptions``):
    ``WorkflowError``; ``WorkflowValidationError`` with ``ValidationTypeEnum`` and
    ``EdgeDuplicationError``, ``ExecutorDuplicationError``, ``TypeCompatibilityError``,
    ``GraphConnectivityError``, ``OutputDesignationError``; ``WorkflowRunError`` with
    ``RunArgumentsError``, ``ConcurrentRunError``, ``WorkflowConvergenceError``; ``RequestError``
    with ``UnknownRequestError``, ``RequestAlreadyAnsweredError``, ``ResponseTypeError``;
    ``CheckpointError`` with ``CheckpointNotFoundError``, ``CheckpointEncodeError``,
    ``CheckpointDecodeError``, ``CheckpointTypeError``, ``GraphMismatchError``,
    ``CheckpointMigrationError``; and MAF's names
    for the same families: ``WorkflowException``, ``WorkflowRunnerException``,
    ``WorkflowConvergenceException``, ``WorkflowCheckpointException``.
"""

from .builder import WorkflowBuilder
from .checkpoint import CheckpointID, CheckpointKind, WorkflowCheckpoint, WorkflowMessage
from .context import WorkflowContext
from .edges import (
    INTERNAL_SOURCE_ID,
    Case,
    Default,
    Edge,
    FanInEdgeGroup,
    FanOutEdgeGroup,
    SingleEdgeGroup,
    SwitchCaseEdgeGroup,
    SwitchCaseEdgeGroupCase,
    SwitchCaseEdgeGroupDefault,
)
from .events import (
    EVENT_KINDS,
    ErrorDetails,
    EventKind,
    RequestInfoEvent,
    WorkflowErrorDetails,
    WorkflowEvent,
    WorkflowEventSource,
    WorkflowEventType,
    WorkflowRunState,
)
from .exceptions import (
    CheckpointDecodeError,
    CheckpointEncodeError,
    CheckpointError,
    CheckpointMigrationError,
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
    WorkflowConvergenceException,
    WorkflowError,
    WorkflowException,
    WorkflowRunError,
    WorkflowRunnerException,
    WorkflowValidationError,
)
from .executor import Executor, FunctionExecutor, executor, handler, response_handler
from .migration import CheckpointMigration, check_checkpoint_migration, migrate_checkpoint
from .registry import TypeRegistry, register_checkpoint_type, register_type
from .result import WorkflowRunResult, WorkflowRunStream
from .retention import PruneReport, prune
from .storage import CheckpointStorage, FileCheckpointStorage, InMemoryCheckpointStorage
from .subworkflow import SubWorkflowRequestMessage, SubWorkflowResponseMessage, WorkflowExecutor
from .validation import validate_workflow_graph
from .viz import WorkflowViz
from .workflow import Workflow

__all__ = [
    "Case",
    "CheckpointDecodeError",
    "CheckpointEncodeError",
    "CheckpointError",
    "CheckpointID",
    "CheckpointKind",
    "CheckpointMigration",
    "CheckpointMigrationError",
    "CheckpointNotFoundError",
    "CheckpointStorage",
    "CheckpointTypeError",
    "ConcurrentRunError",
    "Default",
    "EVENT_KINDS",
    "Edge",
    "EdgeDuplicationError",
    "ErrorDetails",
    "EventKind",
    "Executor",
    "ExecutorDuplicationError",
    "FanInEdgeGroup",
    "FanOutEdgeGroup",
    "FileCheckpointStorage",
    "FunctionExecutor",
    "GraphConnectivityError",
    "GraphMismatchError",
    "INTERNAL_SOURCE_ID",
    "InMemoryCheckpointStorage",
    "OutputDesignationError",
    "PruneReport",
    "RequestAlreadyAnsweredError",
    "RequestError",
    "RequestInfoEvent",
    "ResponseTypeError",
    "RunArgumentsError",
    "SingleEdgeGroup",
    "SubWorkflowRequestMessage",
    "SubWorkflowResponseMessage",
    "SwitchCaseEdgeGroup",
    "SwitchCaseEdgeGroupCase",
    "SwitchCaseEdgeGroupDefault",
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
    "WorkflowConvergenceException",
    "WorkflowError",
    "WorkflowErrorDetails",
    "WorkflowEvent",
    "WorkflowEventSource",
    "WorkflowEventType",
    "WorkflowException",
    "WorkflowExecutor",
    "WorkflowMessage",
    "WorkflowRunError",
    "WorkflowRunResult",
    "WorkflowRunState",
    "WorkflowRunStream",
    "WorkflowRunnerException",
    "WorkflowValidationError",
    "WorkflowViz",
    "check_checkpoint_migration",
    "executor",
    "handler",
    "migrate_checkpoint",
    "prune",
    "register_checkpoint_type",
    "register_type",
    "response_handler",
    "validate_workflow_graph",
]
