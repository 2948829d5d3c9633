"""What every orchestrator-led group chat shares: the envelopes between the orchestrator and its
participants, the ``group_chat`` progress events, the participant registry, and
``BaseGroupChatOrchestrator``.

``GroupChatBuilder``'s orchestrators and Magentic's derive from the base class; a user's own
orchestrator (``GroupChatBuilder(orchestrator=...)``) does too, implementing ``_handle_messages``
(the task arrives) and ``_handle_response`` (a participant answered). The base keeps the whole
conversation and the round count, routes messages (an agent participant gets an
``AgentExecutorRequest``, any other executor a ``GroupChatRequestMessage`` or
``GroupChatParticipantMessage``), applies ``max_rounds`` and the termination condition, and
checkpoints all of it as an ``OrchestrationState`` so a chat resumes in another process.

Public names, events and observable behaviour follow Microsoft Agent Framework 1.23's
``agent_framework_orchestrations._base_group_chat_orchestrator``.
"""

from __future__ import annotations

import inspect
import logging
from abc import ABC
from collections import OrderedDict
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

from agent_framework import AgentResponse, AgentResponseUpdate, Message

from ..agents.executor import AgentExecutor, AgentExecutorRequest, AgentExecutorResponse
from ..context import WorkflowContext
from ..events import WorkflowEvent
from ..executor import Executor, handler
from ..registry import register_type
from .request_info import AgentApprovalExecutor
from .state import OrchestrationState

__all__ = [
    "BaseGroupChatOrchestrator",
    "GroupChatParticipantMessage",
    "GroupChatRequestMessage",
    "GroupChatRequestSentEvent",
    "GroupChatResponseMessage",
    "GroupChatResponseReceivedEvent",
    "GroupChatWorkflowContextOutT",
    "ParticipantRegistry",
    "TerminationCondition",
]

logger = logging.getLogger(__name__)


# region Envelopes


@dataclass
class GroupChatRequestMessage:
    """The orchestrator asking a non-agent participant for its turn.

    Attributes:
        additional_instruction: guidance for this turn, if the orchestrator has any.
        metadata: whatever else the orchestrator passes along.
    """

    additional_instruction: str | None = None
    metadata: dict[str, Any] | None = None


@dataclass
class GroupChatParticipantMessage:
    """Messages another participant (or the user) produced, sent to a non-agent participant so
    that it follows the conversation without being asked to speak.

    Attributes:
        messages: the new messages, in order.
    """

    messages: list[Message]


@dataclass
class GroupChatResponseMessage:
    """A non-agent participant's turn, sent back to the orchestrator.

    Attributes:
        message: what the participant said.
    """

    message: Message


TerminationCondition = Callable[[list[Message]], bool | Awaitable[bool]]
"""Called with the whole conversation after every turn; True (or an awaitable of True) ends
the chat."""

GroupChatWorkflowContextOutT = (
    AgentExecutorRequest | GroupChatRequestMessage | GroupChatParticipantMessage
)
"""What an orchestrator sends to its participants."""

# What a group chat orchestrator yields: the closing message, whole or as one streamed update.
_CompletionOutput = AgentResponse | AgentResponseUpdate
_OrchestratorContext = WorkflowContext[GroupChatWorkflowContextOutT, _CompletionOutput]

# endregion

# region Events


@dataclass
class GroupChatRequestSentEvent:
    """The data of a ``group_chat`` event: the orchestrator asked a participant to speak.

    Attributes:
        round_index: the round the turn belongs to (0 for the first).
        participant_name: the participant's executor id.
    """

    round_index: int
    participant_name: str


@dataclass
class GroupChatResponseReceivedEvent:
    """The data of a ``group_chat`` event: a participant's turn reached the orchestrator.

    Attributes:
        round_index: the number of turns requested so far.
        participant_name: the participant's executor id ("unknown" if it cannot be told).
    """

    round_index: int
    participant_name: str


# Sent between executors (so held in checkpoints while in flight) or carried by events that
# are serialized for the dashboard.
for _cls in (
    GroupChatRequestMessage,
    GroupChatParticipantMessage,
    GroupChatResponseMessage,
    GroupChatRequestSentEvent,
    GroupChatResponseReceivedEvent,
):
    register_type(_cls)
del _cls

# endregion

# region Participant registry


class ParticipantRegistry:
    """The participants of one chat, in order: their ids, descriptions, and which are agents.

    Args:
        participants: the participant executors (agents already wrapped).

    Raises:
        ValueError: two participants share an id.
    """

    EMPTY_DESCRIPTION_PLACEHOLDER: ClassVar[str] = (
        "<no description, use name to identify the purpose of this participant>"
    )

    def __init__(self, participants: Sequence[Executor]) -> None:
        self._agents: set[str] = set()
        self._participants: OrderedDict[str, str] = OrderedDict()
        for participant in participants:
            self._register(participant)

    def _register(self, participant: Executor) -> None:
        if participant.id in self._participants:
            raise ValueError(
                f"Participant ID conflict: '{participant.id}' registered as both agent and "
                "executor."
            )
        description = None
        # Agents (plain, or wrapped for a human's review) take AgentExecutorRequest; anything
        # else takes the group chat envelopes.
        if isinstance(participant, AgentExecutor | AgentApprovalExecutor):
            self._agents.add(participant.id)
            description = participant.description
        self._participants[participant.id] = description or self.EMPTY_DESCRIPTION_PLACEHOLDER

    def is_agent(self, name: str) -> bool:
        """Whether the participant ``name`` is an agent (rather than a custom executor)."""
        return name in self._agents

    @property
    def participants(self) -> OrderedDict[str, str]:
        """Participant id -> description, in registration order."""
        return self._participants


# endregion


class BaseGroupChatOrchestrator(Executor, ABC):
    """The executor at the centre of a group chat: it takes the task, asks participants to
    speak, and hears their answers.

    Subclasses implement ``_handle_messages`` and ``_handle_response``; the rest is shared.
    The chat ends with one message from the orchestrator, yielded as an ``AgentResponse``
    (an ``AgentResponseUpdate`` in a streaming run).

    Args:
        id: the executor id.
        participant_registry: the participants.
        name: the author name of the orchestrator's messages; the id by default.
        max_rounds: the most turns to request; values below 1 count as 1; None for no limit.
        termination_condition: ends the chat when it returns True for the conversation.
    """

    TERMINATION_CONDITION_MET_MESSAGE: ClassVar[str] = (
        "The group chat has reached its termination condition."
    )
    MAX_ROUNDS_MET_MESSAGE: ClassVar[str] = (
        "The group chat has reached the maximum number of rounds."
    )

    def __init__(
        self,
        id: str,
        participant_registry: ParticipantRegistry,
        *,
        name: str | None = None,
        max_rounds: int | None = None,
        termination_condition: TerminationCondition | None = None,
    ) -> None:
        super().__init__(id)
        self._name = name or id
        self._max_rounds = None if max_rounds is None else max(1, max_rounds)
        self._termination_condition = termination_condition
        self._round_index = 0
        self._participant_registry = participant_registry
        self._full_conversation: list[Message] = []

    # region Handlers

    @handler
    async def handle_str(self, task: str, ctx: _OrchestratorContext) -> None:
        """Start the chat with a user prompt."""
        await self._handle_messages([Message(role="user", contents=[task])], ctx)

    @handler
    async def handle_message(self, task: Message, ctx: _OrchestratorContext) -> None:
        """Start the chat with one message."""
        await self._handle_messages([task], ctx)

    @handler
    async def handle_messages(self, task: list[Message], ctx: _OrchestratorContext) -> None:
        """Start the chat with a conversation.

        Raises:
            ValueError: the list is empty.
        """
        if not task:
            raise ValueError("At least one Message is required to start the group chat workflow.")
        await self._handle_messages(task, ctx)

    @handler
    async def handle_participant_response(
        self,
        response: AgentExecutorResponse | GroupChatResponseMessage,
        ctx: _OrchestratorContext,
    ) -> None:
        """A participant's turn: announce it with a ``group_chat`` event, then hand it to
        ``_handle_response``."""
        sources = ctx.source_executor_ids
        received = GroupChatResponseReceivedEvent(
            round_index=self._round_index,
            participant_name=sources[0] if sources else "unknown",
        )
        await ctx.add_event(WorkflowEvent("group_chat", data=received))
        await self._handle_response(response, ctx)

    # endregion

    # region What subclasses implement

    async def _handle_messages(
        self, messages: list[Message], ctx: WorkflowContext[Any, Any]
    ) -> None:
        """Begin the chat on the task's messages.

        Raises:
            NotImplementedError: always, unless overridden.
        """
        raise NotImplementedError("_handle_messages must be implemented by subclasses.")

    async def _handle_response(
        self,
        response: AgentExecutorResponse | GroupChatResponseMessage,
        ctx: WorkflowContext[Any, Any],
    ) -> None:
        """Carry the chat on after a participant's turn.

        Raises:
            NotImplementedError: always, unless overridden.
        """
        raise NotImplementedError("_handle_response must be implemented by subclasses.")

    # endregion

    # region Conversation

    def _append_messages(self, messages: Sequence[Message]) -> None:
        self._full_conversation.extend(messages)

    def _get_conversation(self) -> list[Message]:
        """A copy of the conversation so far (the list, not the messages)."""
        return list(self._full_conversation)

    def _process_participant_response(
        self, response: AgentExecutorResponse | GroupChatResponseMessage
    ) -> list[Message]:
        """The messages a participant's turn adds to the conversation.

        Raises:
            TypeError: ``response`` is neither envelope.
        """
        if isinstance(response, AgentExecutorResponse):
            return response.agent_response.messages
        if isinstance(response, GroupChatResponseMessage):
            return [response.message]
        raise TypeError(f"Unsupported response type: {type(response)}")

    def _clear_conversation(self) -> None:
        self._full_conversation.clear()

    def _increment_round(self) -> None:
        self._round_index += 1

    # endregion

    # region Ending the chat

    async def _check_termination(self) -> bool:
        """Whether the termination condition (sync or async) holds for the conversation."""
        if self._termination_condition is None:
            return False
        verdict = self._termination_condition(self._get_conversation())
        if inspect.isawaitable(verdict):
            verdict = await verdict
        return bool(verdict)

    async def _check_terminate_and_yield(self, ctx: WorkflowContext[Any, Any]) -> bool:
        """End the chat with the termination message if the condition holds.

        Returns:
            Whether the chat ended.
        """
        if not await self._check_termination():
            return False
        await self._complete_with(self.TERMINATION_CONDITION_MET_MESSAGE, ctx)
        return True

    def _check_round_limit(self) -> bool:
        """Whether ``max_rounds`` turns have been requested (logged as a warning, as MAF does)."""
        if self._max_rounds is None or self._round_index < self._max_rounds:
            return False
        logger.warning(
            "%s reached max_rounds=%s; forcing completion.",
            type(self).__name__,
            self._max_rounds,
        )
        return True

    async def _check_round_limit_and_yield(self, ctx: WorkflowContext[Any, Any]) -> bool:
        """End the chat with the max-rounds message if the limit is reached.

        Returns:
            Whether the chat ended.
        """
        if not self._check_round_limit():
            return False
        await self._complete_with(self.MAX_ROUNDS_MET_MESSAGE, ctx)
        return True

    async def _complete_with(self, text: str, ctx: WorkflowContext[Any, Any]) -> None:
        message = self._create_completion_message(text)
        self._append_messages([message])
        await self._yield_completion(ctx, message)

    async def _yield_completion(
        self, ctx: WorkflowContext[Any, Any], completion_message: Message
    ) -> None:
        """Yield the closing message as the run's output, shaped like an agent's output in the
        same mode: one ``AgentResponseUpdate`` when streaming, an ``AgentResponse`` otherwise."""
        if ctx.is_streaming():
            await ctx.yield_output(
                AgentResponseUpdate(
                    contents=list(completion_message.contents),
                    role=completion_message.role,
                    author_name=completion_message.author_name,
                    message_id=completion_message.message_id,
                )
            )
        else:
            await ctx.yield_output(AgentResponse(messages=[completion_message]))

    def _create_completion_message(self, message: str) -> Message:
        """An assistant message of ``message`` written by the orchestrator."""
        return Message(role="assistant", contents=[message], author_name=self._name)

    # endregion

    # region Routing

    async def _broadcast_messages_to_participants(
        self,
        messages: list[Message],
        ctx: WorkflowContext[Any, Any],
        participants: Sequence[str] | None = None,
    ) -> None:
        """Give ``messages`` to participants (all of them by default) without asking any of
        them to speak, so each keeps the whole conversation."""
        targets = (
            list(self._participant_registry.participants) if participants is None else participants
        )
        for target in targets:
            if self._participant_registry.is_agent(target):
                envelope: Any = AgentExecutorRequest(messages=messages, should_respond=False)
            else:
                envelope = GroupChatParticipantMessage(messages=messages)
            await ctx.send_message(envelope, target_id=target)

    async def _broadcast_to_all_but_speaker(
        self, messages: list[Message], ctx: WorkflowContext[Any, Any]
    ) -> None:
        """Broadcast a participant's turn to every other participant (it has its own)."""
        speaker = ctx.get_source_executor_id()
        others = [p for p in self._participant_registry.participants if p != speaker]
        await self._broadcast_messages_to_participants(messages, ctx, participants=others)

    async def _send_request_to_participant(
        self,
        target: str,
        ctx: WorkflowContext[Any, Any],
        *,
        additional_instruction: str | None = None,
        metadata: dict[str, Any] | None = None,
    ) -> None:
        """Ask ``target`` to take its turn and announce it with a ``group_chat`` event.

        An agent gets an ``AgentExecutorRequest`` (the instruction, if any, as a user
        message; its conversation it already has); another executor a
        ``GroupChatRequestMessage`` carrying the instruction and metadata.
        """
        request: Any
        if self._participant_registry.is_agent(target):
            prompt: list[Message] = []
            if additional_instruction:
                prompt.append(Message(role="user", contents=[additional_instruction]))
            request = AgentExecutorRequest(messages=prompt, should_respond=True)
        else:
            request = GroupChatRequestMessage(
                additional_instruction=additional_instruction, metadata=metadata
            )
        await ctx.send_message(request, target_id=target)
        sent = GroupChatRequestSentEvent(round_index=self._round_index, participant_name=target)
        await ctx.add_event(WorkflowEvent("group_chat", data=sent))

    # endregion

    # region Checkpoints

    async def on_checkpoint_save(self) -> dict[str, Any]:
        """The conversation, round and name as an ``OrchestrationState`` dict, with
        ``_snapshot_pattern_metadata()`` as its metadata."""
        state = OrchestrationState(
            conversation=list(self._full_conversation),
            round_index=self._round_index,
            orchestrator_name=self._name,
            metadata=self._snapshot_pattern_metadata(),
        )
        return state.to_dict()

    def _snapshot_pattern_metadata(self) -> dict[str, Any]:
        """What a subclass adds to its checkpoint (nothing by default)."""
        return {}

    async def on_checkpoint_restore(self, state: dict[str, Any]) -> None:
        """Put back what ``on_checkpoint_save`` returned."""
        restored = OrchestrationState.from_dict(state)
        self._full_conversation = list(restored.conversation)
        self._round_index = restored.round_index
        self._name = restored.orchestrator_name
        self._restore_pattern_metadata(restored.metadata)

    def _restore_pattern_metadata(self, metadata: dict[str, Any]) -> None:
        """Put back what ``_snapshot_pattern_metadata`` returned (nothing by default)."""

    # endregion
