"""``MagenticAgentExecutor``: an agent participant of a Magentic team.

It is an ``AgentExecutor`` that also obeys the orchestrator's ``MagenticResetSignal``: when the
manager replans, the agent forgets the conversation, any tool approvals it was waiting for and
its session, so the new plan starts from a clean slate. Because the session is replaced on
reset, the executor always makes its own; it takes no session from the caller.
"""

from __future__ import annotations

from typing import Never

from agent_framework import SupportsAgentRun

from ..agents.executor import AgentExecutor
from ..context import WorkflowContext
from ..executor import handler
from .magentic_types import MagenticResetSignal

__all__ = ["MagenticAgentExecutor"]


class MagenticAgentExecutor(AgentExecutor):
    """Runs one agent of a Magentic team; its id is the agent's name.

    Args:
        agent: the agent.
    """

    def __init__(self, agent: SupportsAgentRun) -> None:
        super().__init__(agent)

    @handler
    async def handle_magentic_reset(
        self, signal: MagenticResetSignal, ctx: WorkflowContext[Never]
    ) -> None:
        """Forget everything of the attempt before the replan, and start a new session."""
        self._cache.clear()
        self._full_conversation.clear()
        self._pending_agent_requests.clear()
        self._pending_responses_to_agent.clear()
        self._pending_request_order.clear()
        self._session = self._agent.create_session()
