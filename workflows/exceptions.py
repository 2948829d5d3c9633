"""Every error the engine raises on purpose.

    WorkflowError
    ├── WorkflowValidationError (also ValueError)   a graph or executor that cannot be built
    ├── WorkflowRunError                           a run that cannot start or go on
    │   ├── RunArgumentsError (also ValueError)    run() called with a contradictory set of arguments
    │   ├── ConcurrentRunError                     a second run on an instance that is still running
    │   └── WorkflowConvergenceError               max_iterations reached with messages still queued
    ├── RequestError (also ValueError)             answers to human-in-the-loop requests
    │   ├── UnknownRequestError                    no pending request has that id
    │   ├── RequestAlreadyAnsweredError            the request was answered before
    │   └── ResponseTypeError (also TypeError)     the answer is not of the declared response type
    └── CheckpointError
        ├── CheckpointNotFoundError (also KeyError) a storage has no checkpoint with that id
        ├── CheckpointEncodeError (also TypeError)  a value the codec could not restore, refused at save
        ├── CheckpointDecodeError (also ValueError) a stored document that is malformed or hostile
        └── GraphMismatchError                      the checkpoint was written by a different graph

The builtin second bases let callers who only know Python's vocabulary (``except ValueError``)
catch what they expect, while ``except WorkflowError`` catches everything the engine means.
"""

from __future__ import annotations

__all__ = [
    "CheckpointDecodeError",
    "CheckpointEncodeError",
    "CheckpointError",
    "CheckpointNotFoundError",
    "ConcurrentRunError",
    "GraphMismatchError",
    "RequestAlreadyAnsweredError",
    "RequestError",
    "ResponseTypeError",
    "RunArgumentsError",
    "UnknownRequestError",
    "WorkflowConvergenceError",
    "WorkflowError",
    "WorkflowRunError",
    "WorkflowValidationError",
]


class WorkflowError(Exception):
    """Base of every error the engine raises on purpose."""


class WorkflowValidationError(WorkflowError, ValueError):
    """A workflow graph or an executor definition is invalid; raised before anything runs."""


class WorkflowRunError(WorkflowError):
    """A run cannot start or cannot go on."""


class RunArgumentsError(WorkflowRunError, ValueError):
    """``run()`` got arguments that contradict each other (e.g. a message and a checkpoint id)."""


class ConcurrentRunError(WorkflowRunError):
    """A workflow instance runs one run at a time."""


class WorkflowConvergenceError(WorkflowRunError):
    """The run reached ``max_iterations`` supersteps while messages were still queued."""


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


class GraphMismatchError(CheckpointError):
    """The checkpoint was written by a workflow graph that differs from this one."""
