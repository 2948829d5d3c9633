"""Every error the engine raises on purpose.

    WorkflowError
    ├── WorkflowValidationError (also ValueError)   a graph or executor that cannot be built
    │   ├── EdgeDuplicationError                   the same source -> target edge added twice
    │   ├── ExecutorDuplicationError               two different executors share one id
    │   ├── TypeCompatibilityError                 no type a source sends is taken by its target
    │   ├── GraphConnectivityError                 an executor the start cannot reach
    │   └── OutputDesignationError                 output_from / intermediate_output_from misused
    ├── WorkflowRunError                           a run that cannot start or go on
    │   ├── RunArgumentsError (also ValueError)    run() called with contradictory arguments
    │   │   └── InputTypeError (also RuntimeError) the start executor takes no such input
    │   ├── ConcurrentRunError (also RuntimeError) a second run on an instance that is still running
    │   ├── WorkflowConvergenceError               max_iterations reached with messages still queued
    │   ├── StepReplayError (also ValueError)      a @step call that cannot be replayed safely
    │   └── ReservedStateKeyError (also ValueError) a RunContext state key starting with "_"
    ├── RequestError (also ValueError)             answers to human-in-the-loop requests
    │   ├── UnknownRequestError                    no pending request has that id
    │   ├── RequestAlreadyAnsweredError            the request was answered before
    │   └── ResponseTypeError (also TypeError)     the answer is not of the declared response type
    └── CheckpointError
        ├── CheckpointNotFoundError (also KeyError) a storage has no checkpoint with that id
        ├── CheckpointEncodeError (also TypeError)  a value the codec cannot restore, refused
        ├── CheckpointDecodeError (also ValueError) a stored document that is malformed or hostile
        │   └── UnregisteredTypeError              it names a type this process cannot rebuild
        ├── CheckpointTypeError (also TypeError)    a listed type the codec cannot rebuild
        └── GraphMismatchError                      the checkpoint was written by a different graph
            └── StepMismatchError (also ValueError) ... or by different functional-workflow code

The builtin second bases let callers who only know Python's vocabulary (``except ValueError``)
catch what they expect, while ``except WorkflowError`` catches everything the engine means.

A validation error carries ``validation_type`` (a ``ValidationTypeEnum``, the same values Microsoft
Agent Framework uses, so code that switches on it ports unchanged) and names the executors at fault
as attributes.
"""

from __future__ import annotations

from enum import Enum
from typing import Any

__all__ = [
    "CheckpointDecodeError",
    "CheckpointEncodeError",
    "CheckpointError",
    "CheckpointMigrationError",
    "CheckpointNotFoundError",
    "CheckpointTypeError",
    "ConcurrentRunError",
    "EdgeDuplicationError",
    "ExecutorDuplicationError",
    "GraphConnectivityError",
    "GraphMismatchError",
    "InputTypeError",
    "OutputDesignationError",
    "RequestAlreadyAnsweredError",
    "RequestError",
    "ReservedStateKeyError",
    "ResponseTypeError",
    "RunArgumentsError",
    "StepMismatchError",
    "StepReplayError",
    "TypeCompatibilityError",
    "UnknownRequestError",
    "UnregisteredTypeError",
    "ValidationTypeEnum",
    "WorkflowCheckpointException",
    "WorkflowConvergenceError",
    "WorkflowConvergenceException",
    "WorkflowError",
    "WorkflowException",
    "WorkflowRunError",
    "WorkflowRunnerException",
    "WorkflowValidationError",
]


class WorkflowError(Exception):
    """Base of every error the engine raises on purpose."""


class ValidationTypeEnum(Enum):
    """Which build-time check refused a workflow."""

    EDGE_DUPLICATION = "EDGE_DUPLICATION"
    EXECUTOR_DUPLICATION = "EXECUTOR_DUPLICATION"
    TYPE_COMPATIBILITY = "TYPE_COMPATIBILITY"
    GRAPH_CONNECTIVITY = "GRAPH_CONNECTIVITY"
    HANDLER_OUTPUT_ANNOTATION = "HANDLER_OUTPUT_ANNOTATION"
    OUTPUT_VALIDATION = "OUTPUT_VALIDATION"


class WorkflowValidationError(WorkflowError, ValueError):
    """A workflow graph or an executor definition is invalid; raised before anything runs.

    ``validation_type`` is None for checks that have no kind of their own (a bad argument, a
    handler that cannot be read); the subclasses below always set it, and their text starts with
    it in brackets (``[EDGE_DUPLICATION] ...``).
    """

    def __init__(
        self, message: str = "", validation_type: ValidationTypeEnum | None = None
    ) -> None:
        super().__init__(message)
        self.message = message
        self.validation_type = validation_type

    def __str__(self) -> str:
        if self.validation_type is None:
            return self.message
        return f"[{self.validation_type.value}] {self.message}"


class EdgeDuplicationError(WorkflowValidationError):
    """One ``source -> target`` edge was added twice (``edge_id`` is ``"source->target"``)."""

    def __init__(self, edge_id: str, message: str | None = None) -> None:
        source, _, target = edge_id.partition("->")
        super().__init__(
            message or f"duplicate edge {source!r} -> {target!r}: each edge may be added once",
            ValidationTypeEnum.EDGE_DUPLICATION,
        )
        self.edge_id = edge_id
        self.source_executor_id = source
        self.target_executor_id = target


class ExecutorDuplicationError(WorkflowValidationError):
    """Two different executor objects were given the same id."""

    def __init__(self, executor_id: str, message: str | None = None) -> None:
        super().__init__(
            message
            or f"two different executors share the id {executor_id!r}; give each a unique id",
            ValidationTypeEnum.EXECUTOR_DUPLICATION,
        )
        self.executor_id = executor_id


class TypeCompatibilityError(WorkflowValidationError):
    """No type the source declares it sends is accepted by the target of one of its edges."""

    def __init__(
        self,
        source_executor_id: str,
        target_executor_id: str,
        source_types: list[Any],
        target_types: list[Any],
        message: str | None = None,
    ) -> None:
        super().__init__(
            message
            or f"executor {source_executor_id!r} sends {source_types} but its target "
            f"{target_executor_id!r} handles only {target_types}",
            ValidationTypeEnum.TYPE_COMPATIBILITY,
        )
        self.source_executor_id = source_executor_id
        self.target_executor_id = target_executor_id
        self.source_types = source_types
        self.target_types = target_types


class GraphConnectivityError(WorkflowValidationError):
    """Executors the start executor cannot reach, or a start executor missing from the graph."""

    def __init__(self, message: str, executor_ids: list[str] | None = None) -> None:
        super().__init__(message, ValidationTypeEnum.GRAPH_CONNECTIVITY)
        self.executor_ids = list(executor_ids or [])


class OutputDesignationError(WorkflowValidationError):
    """``output_from`` / ``intermediate_output_from`` name an executor that cannot be one."""

    def __init__(self, message: str, executor_ids: list[str] | None = None) -> None:
        super().__init__(message, ValidationTypeEnum.OUTPUT_VALIDATION)
        self.executor_ids = list(executor_ids or [])


class WorkflowRunError(WorkflowError):
    """A run cannot start or cannot go on."""


class RunArgumentsError(WorkflowRunError, ValueError):
    """``run()`` got arguments that contradict each other (e.g. a message and a checkpoint id)."""


class InputTypeError(RunArgumentsError, RuntimeError):
    """The start executor has no handler for the run's input. MAF raises ``RuntimeError`` here,
    so code catching that ports unchanged; it is also a ``RunArgumentsError``."""


class ConcurrentRunError(WorkflowRunError, RuntimeError):
    """A workflow instance runs one run at a time. MAF raises ``RuntimeError`` here (graph and
    functional workflows alike), so code catching that ports unchanged."""


class WorkflowConvergenceError(WorkflowRunError):
    """The run reached ``max_iterations`` supersteps while messages were still queued."""


class StepReplayError(WorkflowRunError, ValueError):
    """A ``@step`` call of a functional workflow cannot be paired with its saved result safely.

    Raised when a call cannot be identified (concurrent calls whose arguments or captured state
    cannot be fingerprinted, which need ``@step(replay_key=...)``), when a ``replay_key`` is
    empty or repeats within one run, when a step's defaults changed after decoration, or when a
    result cannot be kept for a replay (``Cannot checkpoint ...``). ``step_name`` names the step.
    MAF raises ``ValueError`` in these cases; this is one.
    """

    def __init__(self, message: str, step_name: str | None = None) -> None:
        super().__init__(message)
        self.step_name = step_name


class ReservedStateKeyError(WorkflowRunError, ValueError):
    """``RunContext.set_state`` was given a key starting with ``_``: functional checkpoints keep
    the engine's own records there (``_functional``)."""


class RequestError(WorkflowError, ValueError):
    """An answer to a human-in-the-loop request was refused."""


class UnknownRequestError(RequestError):
    """No pending request has the given id."""


class RequestAlreadyAnsweredError(RequestError):
    """The request was answered earlier in this run's lineage."""


class ResponseTypeError(RequestError, TypeError):
    """The answer cannot be turned into the request's declared response type."""


class CheckpointError(WorkflowError):
    """Base of checkpoint storage and codec errors."""


class CheckpointNotFoundError(CheckpointError, KeyError):
    """The storage holds no checkpoint with that id."""

    def __str__(self) -> str:  # KeyError would print the repr of the message
        return str(self.args[0]) if self.args else "checkpoint not found"


class CheckpointEncodeError(CheckpointError, TypeError):
    """A value cannot be stored in a form the codec can restore; raised at save time."""


class CheckpointDecodeError(CheckpointError, ValueError):
    """A stored document is malformed, too large, too deep or names a type that is not allowed."""


class UnregisteredTypeError(CheckpointDecodeError):
    """An intact document names a type this process has not registered (or a chat type when the
    agent layer is not installed). Unlike a damaged file, it is not passed over: reading an
    older checkpoint instead would run again what the newer one had done."""


class CheckpointTypeError(CheckpointError, TypeError):
    """A type offered to the checkpoint registry (``register_type``, ``allowed_checkpoint_types``,
    ``allowed_types=``) that the codec cannot rebuild: not a dataclass, pydantic model or Enum,
    or a name that is not ``"module:qualname"``."""


class GraphMismatchError(CheckpointError):
    """The checkpoint was written by a workflow graph that differs from this one."""


class StepMismatchError(GraphMismatchError, ValueError):
    """A functional workflow's checkpoint (or paused run) was written by code that differs from
    the code running now, so its saved step results no longer pair with the calls this code
    makes. Nothing is replayed: a stale result is never handed to a changed call.

    ``workflow_name`` names the workflow; ``changed`` names what differs (``step 'draft'``,
    ``function 'app.flows.review'``), empty when the checkpoint does not say.
    """

    def __init__(
        self, message: str, *, workflow_name: str = "", changed: tuple[str, ...] = ()
    ) -> None:
        super().__init__(message)
        self.workflow_name = workflow_name
        self.changed = changed


class CheckpointMigrationError(CheckpointError):
    """The changed graph cannot carry what a checkpoint holds (``migrate_checkpoint``);
    ``blockers`` names each part: an executor's saved state, a message, a buffer, a request."""

    def __init__(self, message: str, blockers: tuple[str, ...] = ()) -> None:
        super().__init__(message)
        self.blockers = blockers


# Microsoft Agent Framework's names for the same families, so ``except WorkflowException`` and
# its kin port unchanged (MAF files checkpoint errors under the runner's; here they stand apart).
WorkflowException = WorkflowError
WorkflowRunnerException = WorkflowRunError
WorkflowConvergenceException = WorkflowConvergenceError
WorkflowCheckpointException = CheckpointError
