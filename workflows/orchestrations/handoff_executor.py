"""``HandoffAgentExecutor``: an agent of a handoff workflow, as a node of its graph.

Every agent of a handoff workflow hears the whole conversation: each answer (cleaned of tool
traffic) and each user turn is broadcast to all the others, who keep it until it is their turn.
After its agent answers, the executor either hands the floor to the agent its handoff tool
named (``handoff_sent`` event), stops (the termination condition holds), lets its agent go on
alone (autonomous mode, up to a turn limit), or asks the user for the next turn with a
``HandoffAgentUserRequest``.

A tool approval inside the agent's turn pauses the run as in any ``AgentExecutor``; once it is
answered the turn carries on through the same routing. The state (the conversation, the
session, pending approvals and the autonomous turns taken) is in the checkpoint, so a run
resumes in another process without asking the model again for a finished turn.
"""

from __future__ import annotations

import inspect
import logging
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, TypeVar, cast

from agent_framework import (
    Agent,
    AgentResponse,
    AgentResponseUpdate,
    AgentSession,
    Content,
    Message,
)

from ..agents.executor import (
    AgentExecutor,
    AgentExecutorRequest,
    AgentExecutorResponse,
    resolve_agent_id,
)
from ..context import WorkflowContext
from ..events import WorkflowEvent
from ..exceptions import CheckpointDecodeError
from ..executor import handler, response_handler
from .handoff_messages import HandoffAgentUserRequest, HandoffSentEvent
from .handoff_tools import (
    HandoffConfiguration,
    HandoffInterceptor,
    find_requested_handoff,
    prepare_handoff_agent,
)
from .helpers import clean_conversation_for_handoff

if TYPE_CHECKING:
    from .base_group_chat import TerminationCondition

__all__ = ["HandoffAgentExecutor"]

logger = logging.getLogger("workflows")

# MAF's defaults: what an agent in autonomous mode is told when it goes on alone, and how many
# turns it may take before the user is asked.
AUTONOMOUS_MODE_DEFAULT_PROMPT = "User did not respond. Continue assisting autonomously."
DEFAULT_AUTONOMOUS_TURN_LIMIT = 50

# The key of the autonomous turn count in the checkpoint (MAF's).
_TURNS_KEY = "_autonomous_mode_turns"

_Ctx = WorkflowContext[Any, Any]
_Yields = AgentResponse | AgentResponseUpdate
_Handler = TypeVar("_Handler", bound=Callable[..., Any])


# The handlers' types are given to the decorators: the inherited handlers declare that they
# send an AgentExecutorResponse, where a handoff agent sends requests to the other agents.
def _routing_handler(message_type: Any) -> Callable[[_Handler], _Handler]:
    return cast(
        Callable[[_Handler], _Handler],
        handler(input=message_type, output=AgentExecutorRequest, workflow_output=_Yields),
    )


def _routing_response_handler(
    request_type: Any, response_type: Any
) -> Callable[[_Handler], _Handler]:
    return cast(
        Callable[[_Handler], _Handler],
        response_handler(
            request=request_type,
            response=response_type,
            output=AgentExecutorRequest,
            workflow_output=_Yields,
        ),
    )


class HandoffAgentExecutor(AgentExecutor):
    """Runs one agent of a handoff workflow: a copy of it with a ``handoff_to_<id>`` tool per
    route, whose calls route the conversation instead of running.

    Args:
        agent: the participant (an ``Agent``; it is copied, never changed).
        handoffs: the agents it may hand over to.
        agent_session: the session to run it in; a new one by default.
        is_start_agent: it receives the user's first messages (and shares them with the rest).
        user_response_target_id: the executor that answers a user reply to this agent; None
            (or this executor's id) means this agent answers it.
        termination_condition: given the whole conversation, says when to stop (may be async).
        autonomous_mode: after an answer without a handoff, go on instead of asking the user.
        autonomous_mode_prompt: the user turn added when it goes on alone.
        autonomous_mode_turn_limit: how many turns it may go on alone before asking the user
            (``0``: none; None: 50).

    Raises:
        ValueError: the agent already has a tool named like one of its handoff tools.
    """

    def __init__(
        self,
        agent: Agent[Any],
        handoffs: Sequence[HandoffConfiguration],
        *,
        agent_session: AgentSession | None = None,
        is_start_agent: bool = False,
        user_response_target_id: str | None = None,
        termination_condition: TerminationCondition | None = None,
        autonomous_mode: bool = False,
        autonomous_mode_prompt: str | None = None,
        autonomous_mode_turn_limit: int | None = None,
    ) -> None:
        self._interceptor = HandoffInterceptor(handoffs)
        prepared = prepare_handoff_agent(agent, handoffs, self._interceptor)
        super().__init__(prepared, session=agent_session)
        self._handoff_targets = {handoff.target_id for handoff in handoffs}
        self._termination_condition = termination_condition
        self._is_start_agent = is_start_agent
        self._user_response_target_id = user_response_target_id
        self._autonomous_mode = autonomous_mode
        self._autonomous_mode_prompt = autonomous_mode_prompt or AUTONOMOUS_MODE_DEFAULT_PROMPT
        self._autonomous_mode_turn_limit = (
            DEFAULT_AUTONOMOUS_TURN_LIMIT
            if autonomous_mode_turn_limit is None
            else autonomous_mode_turn_limit
        )
        self._autonomous_mode_turns = 0

    # ------------------------------------------------------------------------------ handlers

    @_routing_handler(AgentExecutorRequest)
    async def run(self, request: AgentExecutorRequest, ctx: _Ctx) -> None:
        """Keep what another agent (or the user) said; take the turn when told to respond."""
        await super().run(request, ctx)

    @_routing_handler(AgentExecutorResponse)
    async def from_response(self, prior: AgentExecutorResponse, ctx: _Ctx) -> None:
        await super().from_response(prior, ctx)

    @_routing_handler(str)
    async def from_str(self, text: str, ctx: _Ctx) -> None:
        await super().from_str(text, ctx)

    @_routing_handler(Message)
    async def from_message(self, message: Message, ctx: _Ctx) -> None:
        await super().from_message(message, ctx)

    @_routing_handler(list[str | Message])
    async def from_messages(self, messages: list[str | Message], ctx: _Ctx) -> None:
        await super().from_messages(messages, ctx)

    @_routing_response_handler(Content, Content)
    async def handle_user_input_response(
        self, original_request: Content, response: Content, ctx: _Ctx
    ) -> None:
        """An answer to a tool approval (or other user-input request) of the agent's turn."""
        await super().handle_user_input_response(original_request, response, ctx)

    @_routing_response_handler(HandoffAgentUserRequest, list[Message])
    async def handle_response(
        self,
        original_request: HandoffAgentUserRequest,
        response: list[Message],
        ctx: _Ctx,
    ) -> None:
        """The user's reply to an answer of this agent; an empty reply ends the conversation.

        The reply is shared with every agent; then this agent answers it, or the agent named
        by ``user_response_target_id`` is told to.
        """
        if not response:
            return
        await self._broadcast(response, ctx)
        self._cache.extend(response)
        target = self._user_response_target_id
        if target is not None and target != self.id:
            await ctx.send_message(
                AgentExecutorRequest(messages=[], should_respond=True), target_id=target
            )
            return
        await self._answer(ctx)

    # ----------------------------------------------------------------------------- answering

    async def _answer(self, ctx: _Ctx) -> None:
        """Take the agent's turn (and, in autonomous mode, the turns after it), then route."""
        while True:
            if self._is_start_agent and not self._full_conversation:
                # The opening messages reach the start agent only; the others hear them here.
                await self._broadcast(list(self._cache), ctx)
            self._full_conversation.extend(self._cache)
            if await self._should_terminate():
                return
            response = await self._take_turn(ctx)
            self._cache.clear()
            if response is None:
                return  # it waits for a tool approval; the answer resumes this turn
            cleaned = clean_conversation_for_handoff(response.messages)
            self._full_conversation.extend(cleaned)
            await self._broadcast(cleaned, ctx)
            if await self._hand_off(response, ctx) or await self._should_terminate():
                return
            if not self._autonomous_mode or (
                self._autonomous_mode_turns >= self._autonomous_mode_turn_limit
            ):
                break
            self._cache.append(Message(role="user", contents=[self._autonomous_mode_prompt]))
            self._autonomous_mode_turns += 1
        self._autonomous_mode_turns = 0
        await ctx.request_info(HandoffAgentUserRequest(response), list[Message])

    async def _take_turn(self, ctx: _Ctx) -> AgentResponse | None:
        messages = list(self._cache)
        if not messages:
            logger.warning(
                "AgentExecutor %s: Running agent with empty message cache. This could lead to "
                "service error for some LLM providers.",
                self.id,
            )
        if ctx.is_streaming():
            return await self._run_streaming(ctx, messages)
        return await self._run_once(ctx, messages)

    async def _hand_off(self, response: AgentResponse, ctx: _Ctx) -> bool:
        """Give the turn to the agent the response's handoff call named, if it named one.

        Raises:
            ValueError: the agent handed off to an agent it has no route to.
        """
        requested = find_requested_handoff(response, self._interceptor.take_caught())
        if requested is None:
            return False
        target, answer = requested
        if target not in self._handoff_targets:
            raise ValueError(
                f"Agent '{resolve_agent_id(self._agent)}' attempted to handoff to unknown "
                f"target '{target}'. Valid targets are: {', '.join(self._handoff_targets)}"
            )
        # The handoff call's answer goes back to this agent with its next turn: a model
        # refuses a conversation where a tool call has no result.
        self._cache.append(answer)
        await ctx.send_message(
            AgentExecutorRequest(messages=[], should_respond=True), target_id=target
        )
        await ctx.add_event(
            WorkflowEvent("handoff_sent", data=HandoffSentEvent(source=self.id, target=target))
        )
        self._autonomous_mode_turns = 0
        return True

    async def _broadcast(self, messages: list[Message], ctx: _Ctx) -> None:
        """Let every other agent hear ``messages`` without answering them yet."""
        await ctx.send_message(AgentExecutorRequest(messages=messages, should_respond=False))

    async def _should_terminate(self) -> bool:
        if self._termination_condition is None:
            return False
        verdict = self._termination_condition(self._full_conversation)
        if inspect.isawaitable(verdict):
            verdict = await verdict
        return bool(verdict)

    # ---------------------------------------------------------------------------- checkpoints

    async def on_checkpoint_save(self) -> dict[str, Any]:
        """The agent executor's state and the autonomous turns taken so far."""
        state = await super().on_checkpoint_save()
        state[_TURNS_KEY] = self._autonomous_mode_turns
        return state

    async def on_checkpoint_restore(self, state: dict[str, Any]) -> None:
        """Put the state back; a checkpoint without the turn count keeps the current one.

        Raises:
            CheckpointDecodeError: a field holds something of the wrong kind.
        """
        await super().on_checkpoint_restore(state)
        if _TURNS_KEY in state:
            turns = state[_TURNS_KEY]
            if isinstance(turns, bool) or not isinstance(turns, int):
                raise CheckpointDecodeError(
                    f"HandoffAgentExecutor checkpoint field '{_TURNS_KEY}' must be an int, got "
                    f"{type(turns).__name__}."
                )
            self._autonomous_mode_turns = turns
