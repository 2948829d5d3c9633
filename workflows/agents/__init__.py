"""Agents in workflows: Microsoft Agent Framework's agents as executors, and workflows as agents.

This package imports ``agent_framework`` (the ``superstep[agents]`` extra); ``import workflows``
does not, and reaches these names lazily. ``AgentExecutor`` wraps an agent (the builder does it
for an agent passed where an executor goes), ``AgentExecutorRequest`` / ``AgentExecutorResponse``
are what agent executors take and send, ``AgentExecutorCheckpointState`` is the shape of their
checkpoint state, and ``WorkflowAgent`` is ``workflow.as_agent()``.
"""

from .executor import (
    AgentExecutor,
    AgentExecutorCheckpointState,
    AgentExecutorRequest,
    AgentExecutorResponse,
    resolve_agent_id,
)
from .workflow_agent import WorkflowAgent

__all__ = [
    "AgentExecutor",
    "AgentExecutorCheckpointState",
    "AgentExecutorRequest",
    "AgentExecutorResponse",
    "WorkflowAgent",
    "resolve_agent_id",
]
