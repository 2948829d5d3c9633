"""Human review after an agent's turn, shared by every orchestration's ``with_request_info``.

An agent picked for review runs inside a small sub-workflow: its ``AgentExecutor`` answers, a
reviewer executor turns the answer into a ``request_info`` (the ``AgentExecutorResponse`` is the
request's data) and the run pauses. The caller answers with an ``AgentRequestInfoResponse``:
no messages approves the answer, which then leaves the sub-workflow; messages go back to the
agent as a new user turn and it answers again, to be reviewed again.

``AgentApprovalExecutor`` is that sub-workflow as one executor of the orchestration, with the
agent's id, so the orchestration's edges, output designation and events name the agent as
they would without review. Its requests are the orchestration's own (propagated), answered
through ``workflow.run(responses=...)``; the agent's tool approvals travel the same way.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal, Never

from agent_framework import AgentResponse, Message, SupportsAgentRun

from ..agents.executor import (
    AgentExecutor,
    AgentExecutorRequest,
    AgentExecutorResponse,
    resolve_agent_id,
)
from ..builder import WorkflowBuilder
from ..context import WorkflowContext
from ..executor import Executor, handler, response_handler
from ..registry import register_type
from ..subworkflow import WorkflowExecutor

if TYPE_CHECKING:
    from ..workflow import Workflow

__all__ = [
    "AgentApprovalExecutor",
    "AgentRequestInfoExecutor",
    "AgentRequestInfoResponse",
    "REQUEST_INFO_EXECUTOR_ID",
    "resolve_request_info_filter",
    "validate_request_info_filter",
]

# The reviewer's id inside every approval sub-workflow (MAF's, so nested checkpoints agree).
REQUEST_INFO_EXECUTOR_ID = "agent_request_info_executor"

ContextMode = Literal["full", "last_agent", "custom"]


@dataclass
class AgentRequestInfoResponse:
    """The answer to a review request raised after an agent's turn.

    Attributes:
        messages: what the reviewer adds to the conversation. Empty approves the agent's answer
            as it is; otherwise the messages go to the agent, which answers again.
    """

    messages: list[Message]

    @staticmethod
    def from_messages(messages: list[Message]) -> AgentRequestInfoResponse:
        """An answer that gives the agent ``messages`` to iterate on.

        Args:
            messages: the messages for the agent, as they are.

        Returns:
            The answer.
        """
        return AgentRequestInfoResponse(messages=messages)

    @staticmethod
    def from_strings(texts: list[str]) -> AgentRequestInfoResponse:
        """An answer that gives the agent one user message per text.

        Args:
            texts: the reviewer's guidance, one message each.

        Returns:
            The answer.
        """
        return AgentRequestInfoResponse(
            messages=[Message(role="user", contents=[text]) for text in texts]
        )

    @staticmethod
    def approve() -> AgentRequestInfoResponse:
        """An answer that accepts the agent's answer unchanged.

        Returns:
            The answer, with no messages.
        """
        return AgentRequestInfoResponse(messages=[])


# Pending requests and answers in flight sit in checkpoints: the codec must know the class.
register_type(AgentRequestInfoResponse)


def resolve_request_info_filter(agents: Sequence[str | SupportsAgentRun] | None) -> set[str]:
    """The ids named by ``with_request_info(agents=...)``; empty means every agent.

    Args:
        agents: agent names or agents; None (or empty) for all.

    Returns:
        The set of executor ids to review.

    Raises:
        TypeError: an entry is neither a name nor an agent.
    """
    resolved: set[str] = set()
    for agent in agents or ():
        if isinstance(agent, str):
            resolved.add(agent)
        elif isinstance(agent, SupportsAgentRun):
            resolved.add(resolve_agent_id(agent))
        else:
            raise TypeError(f"Unsupported type for request_info filter: {type(agent).__name__}")
    return resolved


def validate_request_info_filter(
    request_info_filter: set[str] | None, agent_ids: list[str]
) -> None:
    """Refuse a review filter that names something other than an agent participant.

    Args:
        request_info_filter: the ids from ``resolve_request_info_filter``; empty or None is all.
        agent_ids: the ids of the orchestration's agent participants.

    Raises:
        ValueError: a name in the filter is not an agent participant.
    """
    unknown = sorted((request_info_filter or set()) - set(agent_ids))
    if unknown:
        named = ", ".join(repr(name) for name in unknown)
        raise ValueError(
            f"with_request_info() names agents that are not agent participants: {named}. "
            f"Agent participants: {', '.join(agent_ids)}."
        )


async def _let_siblings_run() -> None:
    """Give the event loop to the other executors of the parent's superstep.

    MAF runs every superstep of a sub-workflow as its own task, so participants running beside
    a reviewed agent get the loop at each of its sub-workflow's supersteps. Yielding where ours
    start one keeps the events of concurrent participants in MAF's order.
    """
    await asyncio.sleep(0)


async def _ask_reviewer(agent_response: AgentExecutorResponse, ctx: WorkflowContext[Never]) -> None:
    await _let_siblings_run()
    await ctx.request_info(agent_response, AgentRequestInfoResponse)


async def _send_back(response: AgentRequestInfoResponse, ctx: WorkflowContext[Any, Any]) -> bool:
    """Give the reviewer's messages to the agent; False when the answer is an approval."""
    await _let_siblings_run()
    if not response.messages:
        return False
    await ctx.send_message(AgentExecutorRequest(messages=response.messages, should_respond=True))
    return True


class AgentRequestInfoExecutor(Executor):
    """The reviewer of an approval sub-workflow whose approved answer goes on to another
    participant: it yields the ``AgentExecutorResponse`` itself, the currency the next agent
    executor takes."""

    @handler
    async def request_info(
        self, agent_response: AgentExecutorResponse, ctx: WorkflowContext[Never]
    ) -> None:
        """Ask for a review of the agent's answer."""
        await _ask_reviewer(agent_response, ctx)

    @response_handler
    async def handle_request_info_response(
        self,
        original_request: AgentExecutorResponse,
        response: AgentRequestInfoResponse,
        ctx: WorkflowContext[AgentExecutorRequest, AgentExecutorResponse],
    ) -> None:
        """Approve (yield the answer) or send the reviewer's messages back to the agent."""
        if not await _send_back(response, ctx):
            await ctx.yield_output(original_request)


class _TerminalAgentRequestInfoExecutor(Executor):
    """The reviewer of an approval sub-workflow that ends the orchestration: an approved answer
    is the orchestration's output, so it yields the ``AgentResponse`` (what every orchestration
    outputs, and what ``workflow.as_agent()`` returns), not the executor envelope."""

    @handler
    async def request_info(
        self, agent_response: AgentExecutorResponse, ctx: WorkflowContext[Never]
    ) -> None:
        """Ask for a review of the agent's answer."""
        await _ask_reviewer(agent_response, ctx)

    @response_handler
    async def handle_request_info_response(
        self,
        original_request: AgentExecutorResponse,
        response: AgentRequestInfoResponse,
        ctx: WorkflowContext[AgentExecutorRequest, AgentResponse],
    ) -> None:
        """Approve (yield the agent's response) or send the messages back to the agent."""
        if not await _send_back(response, ctx):
            await ctx.yield_output(original_request.agent_response)


class AgentApprovalExecutor(WorkflowExecutor):
    """An agent whose every answer is reviewed by a person before the orchestration goes on.

    Args:
        agent: the agent.
        context_mode: how the agent's executor reads a previous agent's answer (see
            ``AgentExecutor``); None for the default, the full conversation.
        allow_direct_output: this is the orchestration's last step: the approved
            ``AgentResponse`` is yielded as the orchestration's output instead of sent on
            as an ``AgentExecutorResponse``.
        ensure_trailing_user_turn: add a "please continue." user turn to a call whose
            conversation ends with an assistant message.

    Raises:
        ValueError: the agent has neither a name nor an id, or ``context_mode`` is not known.
    """

    def __init__(
        self,
        agent: SupportsAgentRun,
        context_mode: ContextMode | None = None,
        *,
        allow_direct_output: bool = False,
        ensure_trailing_user_turn: bool = False,
    ) -> None:
        self._context_mode: ContextMode | None = context_mode
        self._ensure_trailing_user_turn = ensure_trailing_user_turn
        self._description = agent.description
        self._agent = agent
        super().__init__(
            workflow=self._build_workflow(agent, terminal=allow_direct_output),
            id=resolve_agent_id(agent),
            propagate_request=True,
            allow_direct_output=allow_direct_output,
        )

    def _build_workflow(self, agent: SupportsAgentRun, *, terminal: bool) -> Workflow:
        """The agent and its reviewer in a loop; only the reviewer's yields leave it (the
        unapproved answer is seen through the request)."""
        agent_executor = AgentExecutor(
            agent,
            context_mode=self._context_mode,
            ensure_trailing_user_turn=self._ensure_trailing_user_turn,
        )
        reviewer_class = _TerminalAgentRequestInfoExecutor if terminal else AgentRequestInfoExecutor
        reviewer = reviewer_class(id=REQUEST_INFO_EXECUTOR_ID)
        return (
            WorkflowBuilder(start_executor=agent_executor, output_from=[reviewer])
            .add_edge(agent_executor, reviewer)
            .add_edge(reviewer, agent_executor)
            .build()
        )

    @property
    def workflow_output_types(self) -> list[Any]:
        """What the sub-workflow yields, whether or not this executor yields it itself.

        A builder may designate a reviewed agent that is not the last step (``output_from="all"``,
        ``intermediate_output_from="all_other"``): MAF accepts that, since its wrapper always
        declares output, and the agent's intermediate events still come out under its id.
        """
        return self._child_output_types()

    @handler
    async def process_workflow(self, input_data: object, ctx: WorkflowContext[Any, Any]) -> None:
        """Run the agent (and its review) on a new input."""
        await _let_siblings_run()
        await super().process_workflow(input_data, ctx)

    @response_handler
    async def handle_propagated_request_response(
        self, original_request: Any, response: Any, ctx: WorkflowContext[Any, Any]
    ) -> None:
        """An answer to the review (or to one of the agent's tool approvals)."""
        await _let_siblings_run()
        await super().handle_propagated_request_response(original_request, response, ctx)

    @property
    def agent(self) -> SupportsAgentRun:
        """The reviewed agent."""
        return self._agent

    @property
    def description(self) -> str | None:
        """The agent's description (what orchestrators show when they pick a speaker)."""
        return self._description
