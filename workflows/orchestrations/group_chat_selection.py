"""Group chat chosen by a function: ``GroupChatState`` is what the function sees, and
``GroupChatOrchestrator`` asks it who speaks next after every turn (see ``group_chat``)."""

from __future__ import annotations

import inspect
import logging
from collections import OrderedDict
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from agent_framework import Message

from ..agents.executor import AgentExecutorResponse
from ..context import WorkflowContext
from .base_group_chat import (
    BaseGroupChatOrchestrator,
    GroupChatResponseMessage,
    ParticipantRegistry,
    TerminationCondition,
)
from .helpers import clean_conversation_for_handoff

__all__ = [
    "DEFAULT_WORKFLOW_NAME",
    "GroupChatOrchestrator",
    "GroupChatSelectionFunction",
    "GroupChatState",
]

logger = logging.getLogger(__name__)

DEFAULT_WORKFLOW_NAME = "GroupChat"


@dataclass(frozen=True)
class GroupChatState:
    """What a selection function sees when it picks the next speaker.

    Attributes:
        current_round: the number of turns requested so far (0 before the first).
        participants: participant id -> description, in the builder's order.
        conversation: the whole conversation so far.
    """

    current_round: int
    participants: OrderedDict[str, str]
    conversation: list[Message]


GroupChatSelectionFunction = Callable[[GroupChatState], Awaitable[str] | str]
"""Picks the next speaker: returns (or resolves to) a participant id."""


# region Selection-function orchestrator


class GroupChatOrchestrator(BaseGroupChatOrchestrator):
    """An orchestrator that asks ``selection_func`` who speaks next, after the task and after
    every turn; each turn is broadcast to the participants who did not speak it.

    Without ``max_rounds`` or a ``termination_condition`` the chat never ends: give one.

    Args:
        id: the executor id.
        participant_registry: the participants.
        selection_func: picks the next speaker from a ``GroupChatState`` (sync or async).
        name: the author name of the orchestrator's messages; the id by default.
        max_rounds: the most turns to request.
        termination_condition: ends the chat when it returns True for the conversation.
    """

    def __init__(
        self,
        id: str,
        participant_registry: ParticipantRegistry,
        selection_func: GroupChatSelectionFunction,
        *,
        name: str | None = None,
        max_rounds: int | None = None,
        termination_condition: TerminationCondition | None = None,
    ) -> None:
        super().__init__(
            id,
            participant_registry,
            name=name,
            max_rounds=max_rounds,
            termination_condition=termination_condition,
        )
        self._selection_func = selection_func

    async def _handle_messages(
        self, messages: list[Message], ctx: WorkflowContext[Any, Any]
    ) -> None:
        self._append_messages(messages)
        # The task itself may already satisfy the condition.
        if await self._check_terminate_and_yield(ctx):
            return
        speaker = await self._get_next_speaker()
        await self._broadcast_messages_to_participants(messages, ctx)
        await self._send_request_to_participant(speaker, ctx)
        self._increment_round()

    async def _handle_response(
        self,
        response: AgentExecutorResponse | GroupChatResponseMessage,
        ctx: WorkflowContext[Any, Any],
    ) -> None:
        # Tool calls and results belong to the turn that made them; replayed to other agents
        # they would be refused by providers.
        messages = clean_conversation_for_handoff(self._process_participant_response(response))
        self._append_messages(messages)
        if await self._check_terminate_and_yield(ctx):
            return
        if await self._check_round_limit_and_yield(ctx):
            return
        speaker = await self._get_next_speaker()
        await self._broadcast_to_all_but_speaker(messages, ctx)
        await self._send_request_to_participant(speaker, ctx)
        self._increment_round()

    async def _get_next_speaker(self) -> str:
        """The selection function's choice.

        Raises:
            RuntimeError: it named someone who is not a participant.
        """
        state = GroupChatState(
            current_round=self._round_index,
            participants=self._participant_registry.participants,
            conversation=self._get_conversation(),
        )
        chosen = self._selection_func(state)
        if inspect.isawaitable(chosen):
            chosen = await chosen
        if chosen not in self._participant_registry.participants:
            raise RuntimeError(f"Selection function returned unknown participant '{chosen}'.")
        return chosen


# endregion
