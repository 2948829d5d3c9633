"""Superstep's workflow engine: typed executors exchanging messages in supersteps, with a
checkpoint after every superstep and human-in-the-loop requests that survive restarts.

Pure Python and asyncio; nothing here imports Django. This module is the API for workflow
authors; ``workflows.storage`` is the API for those who write or operate a checkpoint storage.

Building a graph:
    ``WorkflowBuilder`` (edges, fan-out, fan-in, switch-case with ``Case`` / ``Default`` or MAF's
    ``SwitchCaseEdgeGroupCase`` / ``SwitchCaseEdgeGroupDefault``, output designation), the edge
    groups it makes (``Edge``, ``SingleEdgeGroup``, ``FanOutEdgeGroup``, ``FanInEdgeGroup``,
    ``SwitchCaseEdgeGroup``), ``validate_workflow_graph``, ``INTERNAL_SOURCE_ID`` (the source of
    the input and of answers), the picture of a graph, ``WorkflowViz``, and the default
    superstep limit, ``DEFAULT_MAX_ITERATIONS``.
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
    ``WorkflowCheckpoint`` (``CheckpointID``, written for a ``CheckpointKind``) holding
    ``WorkflowMessage`` in flight; the ``CheckpointStorage`` protocol with
    ``InMemoryCheckpointStorage`` and ``FileCheckpointStorage``; the types checkpoints may
    hold: ``TypeRegistry``, ``register_type`` and MAF's ``register_checkpoint_type``;
    retention with ``prune`` and its ``PruneReport``; fields marked ``Sensitive`` in their
    type annotation (``sensitive_fields`` lists a class's), which the dashboard masks; moving
    a checkpoint onto a changed graph:
    ``check_checkpoint_migration`` (a ``CheckpointMigration`` report) and
    ``migrate_checkpoint``.
Functional workflows (``workflows.functional``; MAF's ``@workflow`` / ``@step`` API):
    the ``workflow`` decorator makes a ``FunctionalWorkflowDefinition`` of an async function;
    its ``build()`` makes a ``FunctionalWorkflow`` whose ``run()`` returns the same results and
    streams as a graph's. ``step`` makes a ``StepWrapper``: a function whose result is saved
    and, on resume, replayed instead of recomputed. ``RunContext`` asks for human input, adds
    events and keeps state (anywhere in a run: ``get_run_context``); ``FunctionalWorkflowAgent``
    is ``FunctionalWorkflow.as_agent()`` (loaded on first use); ``read_steps`` lists a
    checkpoint's step calls as ``StepRecord`` objects. ``from workflows import
    workflow`` gives the decorator; the graph module stays importable as
    ``from workflows.workflow import Workflow`` (but ``import workflows.workflow as m`` and
    ``mock.patch("workflows.workflow...")`` resolve the package attribute, the decorator).
Agents (``workflows.agents``, loaded on first use: it needs ``agent_framework``):
    ``AgentExecutor`` runs a Microsoft Agent Framework agent as an executor (an agent passed
    to the builder is wrapped in one), taking ``AgentExecutorRequest`` and sending
    ``AgentExecutorResponse``, its state shaped as ``AgentExecutorCheckpointState``;
    ``resolve_agent_id``; ``WorkflowAgent`` is ``Workflow.as_agent()``. ``run()``'s agent
    arguments: ``WorkflowInvocationKwargs``. A host watches every agent's streamed chunks and
    finished replies (with their usage) through an ``AgentObserver`` set by ``observing``.
Errors (hierarchy in ``workflows.exceptions``):
    ``WorkflowError``; ``WorkflowValidationError`` with ``ValidationTypeEnum`` and
    ``EdgeDuplicationError``, ``ExecutorDuplicationError``, ``TypeCompatibilityError``,
    ``GraphConnectivityError``, ``OutputDesignationError``; ``WorkflowRunError`` with
    ``RunArgumentsError`` (and its ``InputTypeError``), ``ConcurrentRunError``,
    ``WorkflowConvergenceError``, and for functional workflows ``StepReplayError`` and
    ``ReservedStateKeyError``; ``RequestError`` with ``UnknownRequestError``,
    ``RequestAlreadyAnsweredError``, ``ResponseTypeError``; ``CheckpointError`` with
    ``CheckpointNotFoundError``, ``CheckpointEncodeError``, ``CheckpointDecodeError`` (and its
    ``UnregisteredTypeError``),
    ``CheckpointTypeError``, ``GraphMismatchError`` (and its functional ``StepMismatchError``),
    ``CheckpointMigrationError``; and MAF's
    names for the same families: ``WorkflowException``, ``WorkflowRunnerException``,
    ``WorkflowConvergenceException``, ``WorkflowCheckpointException``.
"""

from typing import Any as _Any

from .agent_observer import AgentObserver, observing
from .builder import DEFAULT_MAX_ITERATIONS, WorkflowBuilder
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
    InputTypeError,
    OutputDesignationError,
    RequestAlreadyAnsweredError,
    RequestError,
    ReservedStateKeyError,
    ResponseTypeError,
    RunArgumentsError,
    StepMismatchError,
    StepReplayError,
    TypeCompatibilityError,
    UnknownRequestError,
    UnregisteredTypeError,
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
from .run_kwargs import WorkflowInvocationKwargs
from .sensitive import Sensitive, sensitive_fields
from .storage import CheckpointStorage, FileCheckpointStorage, InMemoryCheckpointStorage
from .subworkflow import SubWorkflowRequestMessage, SubWorkflowResponseMessage, WorkflowExecutor
from .validation import validate_workflow_graph
from .viz import WorkflowViz
from .workflow import Workflow

# isort: split
# Last, on purpose: the graph module ``workflows.workflow`` is imported above, so from here on the
# package attribute ``workflow`` is MAF's decorator (``from workflows import workflow``), and
# no later first import of the module can put the module back in its place.
from .functional import (
    FunctionalWorkflow,
    FunctionalWorkflowDefinition,
    RunContext,
    StepRecord,
    StepWrapper,
    get_run_context,
    read_steps,
    step,
    workflow,
)

# Agent names live in workflows.agents, which imports agent_framework: they are loaded when
# first asked for, so a workflow without agents never pays for (or needs) MAF.
_AGENT_NAMES = frozenset(
    {
        "AgentExecutor",
        "AgentExecutorCheckpointState",
        "AgentExecutorRequest",
        "AgentExecutorResponse",
        "WorkflowAgent",
        "resolve_agent_id",
    }
)


def __getattr__(name: str) -> _Any:
    if name in _AGENT_NAMES:
        from . import agents

        value = getattr(agents, name)
        globals()[name] = value
        return value
    if name == "FunctionalWorkflowAgent":
        from .functional.agent import FunctionalWorkflowAgent

        globals()[name] = FunctionalWorkflowAgent
        return FunctionalWorkflowAgent
    raise AttributeError(f"module 'workflows' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | _AGENT_NAMES | {"FunctionalWorkflowAgent"})


__all__ = [
    "AgentExecutor",
    "AgentExecutorCheckpointState",
    "AgentExecutorRequest",
    "AgentExecutorResponse",
    "AgentObserver",
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
    "DEFAULT_MAX_ITERATIONS",
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
    "FunctionalWorkflow",
    "FunctionalWorkflowAgent",
    "FunctionalWorkflowDefinition",
    "GraphConnectivityError",
    "GraphMismatchError",
    "INTERNAL_SOURCE_ID",
    "InMemoryCheckpointStorage",
    "InputTypeError",
    "OutputDesignationError",
    "PruneReport",
    "RequestAlreadyAnsweredError",
    "RequestError",
    "RequestInfoEvent",
    "ReservedStateKeyError",
    "ResponseTypeError",
    "RunArgumentsError",
    "RunContext",
    "Sensitive",
    "SingleEdgeGroup",
    "StepMismatchError",
    "StepRecord",
    "StepReplayError",
    "StepWrapper",
    "SubWorkflowRequestMessage",
    "SubWorkflowResponseMessage",
    "SwitchCaseEdgeGroup",
    "SwitchCaseEdgeGroupCase",
    "SwitchCaseEdgeGroupDefault",
    "TypeCompatibilityError",
    "TypeRegistry",
    "UnknownRequestError",
    "UnregisteredTypeError",
    "ValidationTypeEnum",
    "Workflow",
    "WorkflowAgent",
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
    "WorkflowInvocationKwargs",
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
    "get_run_context",
    "handler",
    "migrate_checkpoint",
    "observing",
    "prune",
    "read_steps",
    "register_checkpoint_type",
    "register_type",
    "resolve_agent_id",
    "response_handler",
    "sensitive_fields",
    "step",
    "validate_workflow_graph",
    "workflow",
]
