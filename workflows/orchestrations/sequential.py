"""``SequentialBuilder``: participants one after another, each carrying the conversation on.

The graph is ``input-conversation -> participant 1 -> ... -> participant N``. The first node
turns the run's input (a prompt, a message, or a list of them) into ``list[Message]``. An agent
participant runs in an ``AgentExecutor`` (an ``AgentApprovalExecutor`` when it is reviewed) and
sends its ``AgentExecutorResponse`` on; the next agent reads the whole conversation from it, or
only the previous agent's answer with ``chain_only_agent_responses``. A custom executor takes
what the step before sends (``list[Message]`` first, an ``AgentExecutorResponse`` after an
agent) and sends ``list[Message]`` on, or, as the last step, yields the answer itself.

By default only the last participant's yields are the workflow's outputs: an ``AgentResponse``
(streamed as ``AgentResponseUpdate`` chunks). ``output_from`` / ``intermediate_output_from``
show other participants' yields too.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any, Literal, cast

from agent_framework import Message, SupportsAgentRun

from ..agents.executor import AgentExecutor, resolve_agent_id
from ..agents.messages import normalize_messages
from ..builder import WorkflowBuilder
from ..context import WorkflowContext
from ..executor import Executor, handler
from ..storage.protocol import CheckpointStorage
from ..workflow import Workflow
from .helpers import agent_ids_of, check_participants
from .participant_output import (
    UNSET,
    ParticipantIntermediateOutputSelection,
    ParticipantOutputSpecifier,
    coalesce_output_from,
    coerce_intermediate_output_from,
    resolve_participant_output_config,
)
from .request_info import (
    AgentApprovalExecutor,
    resolve_request_info_filter,
    validate_request_info_filter,
)

__all__ = ["DEFAULT_WORKFLOW_NAME", "INPUT_EXECUTOR_ID", "SequentialBuilder"]

logger = logging.getLogger(__name__)

DEFAULT_WORKFLOW_NAME = "Sequential"
INPUT_EXECUTOR_ID = "input-conversation"


class _InputToConversation(Executor):
    """The chain's first node: the run's input as the ``list[Message]`` conversation."""

    @handler
    async def from_str(self, prompt: str, ctx: WorkflowContext[list[Message]]) -> None:
        await ctx.send_message(normalize_messages(prompt))

    @handler
    async def from_message(self, message: Message, ctx: WorkflowContext[list[Message]]) -> None:
        await ctx.send_message(normalize_messages(message))

    @handler
    async def from_messages(
        self, messages: list[str | Message], ctx: WorkflowContext[list[Message]]
    ) -> None:
        await ctx.send_message(normalize_messages(messages))


class SequentialBuilder:
    """Builds a workflow that runs its participants in order over one shared conversation.

    Args:
        name: the workflow's name; ``"Sequential"`` by default.
        participants: agents (``SupportsAgentRun``) and executors, in running order.
        checkpoint_storage: where the workflow saves its checkpoints.
        chain_only_agent_responses: give each agent only the previous agent's answer, not the
            whole conversation (also after a custom executor that sends an
            ``AgentExecutorResponse``).
        output_from: participants (agents, executors or ids) whose yields are ``output``
            events, or ``"all"``; the last participant when not given.
        intermediate_output_from: participants whose yields are ``intermediate`` events,
            ``"all"``, or ``"all_other"`` (those ``output_from`` does not select). Yields of
            participants selected by neither are not shown.
        ensure_trailing_user_turn: add a "please continue." user turn to an agent call whose
            conversation ends with an assistant message (some providers answer nothing then).

    Raises:
        ValueError: no participants, a participant twice, or a bad output literal.
    """

    def __init__(
        self,
        *,
        name: str | None = None,
        participants: Sequence[SupportsAgentRun | Executor],
        checkpoint_storage: CheckpointStorage | None = None,
        chain_only_agent_responses: bool = False,
        output_from: Sequence[ParticipantOutputSpecifier] | Literal["all"] | None = cast(
            Any, UNSET
        ),
        intermediate_output_from: ParticipantIntermediateOutputSelection = None,
        ensure_trailing_user_turn: bool = False,
    ) -> None:
        self._name = name or DEFAULT_WORKFLOW_NAME
        self._checkpoint_storage = checkpoint_storage
        self._chain_only_agent_responses = chain_only_agent_responses
        self._ensure_trailing_user_turn = ensure_trailing_user_turn
        self._request_info_enabled = False
        self._request_info_filter: set[str] = set()
        self._output_from = coalesce_output_from(output_from=output_from)
        self._intermediate_output_from = coerce_intermediate_output_from(intermediate_output_from)
        self._participants = check_participants(participants, strict=False)

    def with_request_info(
        self, *, agents: Sequence[str | SupportsAgentRun] | None = None
    ) -> SequentialBuilder:
        """Pause for a person after each reviewed agent answers.

        The run raises a ``request_info`` whose data is the agent's ``AgentExecutorResponse``;
        answer it with an ``AgentRequestInfoResponse``: ``approve()`` passes the answer on,
        messages make the agent answer again (and be reviewed again). Custom executors are
        never reviewed.

        Args:
            agents: the agents to review, by name or instance; all of them by default.

        Returns:
            This builder.

        Raises:
            TypeError: an entry is neither a name nor an agent.
        """
        self._request_info_enabled = True
        self._request_info_filter = resolve_request_info_filter(list(agents) if agents else None)
        return self

    def _reviewed(self, agent: SupportsAgentRun) -> bool:
        if not self._request_info_enabled:
            return False
        return not self._request_info_filter or resolve_agent_id(agent) in self._request_info_filter

    def _resolve_participants(self) -> list[Executor]:
        """Each participant as its executor; a reviewed last agent yields the approved answer
        as the workflow's output.

        Raises:
            TypeError: a participant that is neither an agent nor an executor.
            ValueError: ``with_request_info(agents=...)`` names a non-agent.
        """
        context_mode: Literal["last_agent"] | None = (
            "last_agent" if self._chain_only_agent_responses else None
        )
        last = len(self._participants) - 1
        executors: list[Executor] = []
        for index, participant in enumerate(self._participants):
            if isinstance(participant, Executor):
                executors.append(participant)
            elif not isinstance(participant, SupportsAgentRun):
                raise TypeError(
                    "Participants must be SupportsAgentRun or Executor instances. Got "
                    f"{type(participant).__name__}."
                )
            elif self._reviewed(participant):
                executors.append(
                    AgentApprovalExecutor(
                        participant,
                        context_mode=context_mode,
                        allow_direct_output=index == last,
                        ensure_trailing_user_turn=self._ensure_trailing_user_turn,
                    )
                )
            else:
                executors.append(
                    AgentExecutor(
                        participant,
                        context_mode=context_mode,
                        ensure_trailing_user_turn=self._ensure_trailing_user_turn,
                    )
                )
        if self._request_info_enabled:
            validate_request_info_filter(
                self._request_info_filter, agent_ids_of(self._participants)
            )
        return executors

    def build(self) -> Workflow:
        """Wire ``input-conversation`` and the participants in a chain and build it.

        Returns:
            The workflow; its ``output`` events are the last participant's yields unless
            ``output_from`` says otherwise.

        Raises:
            TypeError: a participant that is neither an agent nor an executor.
            ValueError: a bad output designation or review filter, or a graph the workflow
                builder refuses (``WorkflowValidationError``, e.g. a custom executor that does
                not take what the step before it sends).
        """
        start = _InputToConversation(id=INPUT_EXECUTOR_ID)
        participants = self._resolve_participants()
        outputs, intermediates = resolve_participant_output_config(
            participants=participants,
            output_from=self._output_from,
            intermediate_output_from=self._intermediate_output_from,
            default_output_from=[participants[-1]],
        )
        builder = WorkflowBuilder(
            name=self._name,
            start_executor=start,
            checkpoint_storage=self._checkpoint_storage,
            output_from=outputs,
            intermediate_output_from=intermediates,
        )
        builder.add_chain([start, *participants])
        return builder.build()
