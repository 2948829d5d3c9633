"""Group chat led by an agent: ``AgentBasedGroupChatOrchestrator`` asks its agent, after every
turn, for an ``AgentOrchestrationOutput`` naming who speaks next or ending the chat."""

from __future__ import annotations

import json
import logging
from collections.abc import Sequence
from typing import Any

from agent_framework import Agent, AgentSession, Message
from pydantic import BaseModel, ConfigDict, Field

from ..agents.executor import AgentExecutorResponse, resolve_agent_id
from ..context import WorkflowContext
from ..registry import register_type
from .base_group_chat import (
    BaseGroupChatOrchestrator,
    GroupChatResponseMessage,
    ParticipantRegistry,
    TerminationCondition,
)
from .helpers import clean_conversation_for_handoff, extract_markdown_fence_bodies

__all__ = ["AgentBasedGroupChatOrchestrator", "AgentOrchestrationOutput"]

logger = logging.getLogger(__name__)


class AgentOrchestrationOutput(BaseModel):
    """The structured answer the orchestrator agent of an ``AgentBasedGroupChatOrchestrator``
    gives at each step.

    Attributes:
        terminate: end the chat now.
        reason: why it decided so.
        next_speaker: who speaks next, when not terminating.
        final_message: the chat's closing message, when terminating.
    """

    # The schema is what the model is shown, so it is MAF's, word for word: its description
    # (not this docstring) and every property listed as required (OpenAI's strict structured
    # output demands that).
    model_config = ConfigDict(
        extra="forbid",
        json_schema_extra={
            "description": (
                "Structured output type for the agent in AgentBasedGroupChatOrchestrator."
            ),
            "required": ["terminate", "reason", "next_speaker", "final_message"],
        },
    )

    terminate: bool
    reason: str
    next_speaker: str | None = Field(
        default=None, description="Name of the next participant to speak (if not terminating)"
    )
    final_message: str | None = Field(
        default=None, description="Optional final message if terminating"
    )


register_type(AgentOrchestrationOutput)

_DEFAULT_AGENT_FINAL_MESSAGE = "The conversation has been terminated by the agent."


class AgentBasedGroupChatOrchestrator(BaseGroupChatOrchestrator):
    """An orchestrator whose agent decides, after the task and after every turn, who speaks
    next or whether the chat is over.

    The agent keeps its own session, so each call gives it only the messages since its last
    call (the cache) and an instruction listing the participants; it must answer with an
    ``AgentOrchestrationOutput`` (asked for as its ``response_format``). The executor's id and
    the author name of its messages are the agent's name.

    Args:
        agent: the deciding agent (it must support structured output).
        participant_registry: the participants.
        max_rounds: the most turns to request.
        termination_condition: ends the chat when it returns True for the conversation.
        retry_attempts: how many times to ask again when the agent's answer fails (unparsable,
            or naming nobody valid); None or 0 to fail at once.
        session: the agent's session; a new one by default.
    """

    def __init__(
        self,
        agent: Agent,
        participant_registry: ParticipantRegistry,
        *,
        max_rounds: int | None = None,
        termination_condition: TerminationCondition | None = None,
        retry_attempts: int | None = None,
        session: AgentSession | None = None,
    ) -> None:
        super().__init__(
            resolve_agent_id(agent),
            participant_registry,
            name=agent.name,
            max_rounds=max_rounds,
            termination_condition=termination_condition,
        )
        self._agent = agent
        self._retry_attempts = retry_attempts
        self._session = session or agent.create_session()
        # What the agent has not been shown yet; its session holds the rest.
        self._cache: list[Message] = []

    def _append_messages(self, messages: Sequence[Message]) -> None:
        self._cache.extend(messages)
        super()._append_messages(messages)

    async def _handle_messages(
        self, messages: list[Message], ctx: WorkflowContext[Any, Any]
    ) -> None:
        self._append_messages(messages)
        if await self._check_terminate_and_yield(ctx):
            return
        decision = await self._invoke_agent(ctx)
        if await self._check_agent_terminate_and_yield(decision, ctx):
            return
        await self._broadcast_messages_to_participants(messages, ctx)
        await self._send_request_to_participant(_speaker(decision), ctx)
        self._increment_round()

    async def _handle_response(
        self,
        response: AgentExecutorResponse | GroupChatResponseMessage,
        ctx: WorkflowContext[Any, Any],
    ) -> None:
        messages = clean_conversation_for_handoff(self._process_participant_response(response))
        self._append_messages(messages)
        if await self._check_terminate_and_yield(ctx):
            return
        if await self._check_round_limit_and_yield(ctx):
            return
        decision = await self._invoke_agent(ctx)
        if await self._check_agent_terminate_and_yield(decision, ctx):
            return
        await self._broadcast_to_all_but_speaker(messages, ctx)
        await self._send_request_to_participant(_speaker(decision), ctx)
        self._increment_round()

    async def _invoke_agent(self, ctx: WorkflowContext[Any, Any]) -> AgentOrchestrationOutput:
        """Ask the agent for its decision on what it has not seen yet, retrying on failure.

        Raises:
            Exception: the last failure, once the retries are spent.
        """
        # The agent runs outside any AgentExecutor, so it takes its share of the run's
        # arguments itself, as the participants do.
        function_kwargs, client_kwargs = ctx.agent_run_kwargs()
        prompt = [*self._cache, Message(role="user", contents=[self._instruction()])]
        self._cache.clear()
        retries_left = self._retry_attempts
        while True:
            try:
                return await self._decide(prompt, function_kwargs, client_kwargs)
            except Exception as exc:
                logger.error("Agent orchestration invocation failed: %s", exc)
                if retries_left is None or retries_left <= 0:
                    raise
                retries_left -= 1
                logger.debug(
                    "Retrying agent orchestration invocation, attempts left: %s", retries_left
                )
                # The session holds the conversation; the agent needs only to hear what failed.
                retry = f"Your input could not be parsed due to an error: {exc}. Please try again."
                prompt = [Message(role="user", contents=[retry])]

    async def _decide(
        self,
        prompt: list[Message],
        function_kwargs: dict[str, Any] | None,
        client_kwargs: dict[str, Any] | None,
    ) -> AgentOrchestrationOutput:
        response = await self._agent.run(
            messages=prompt,
            session=self._session,
            options={"response_format": AgentOrchestrationOutput},
            function_invocation_kwargs=function_kwargs,
            client_kwargs=client_kwargs,
        )
        decision = self._parse_agent_output(response)
        if decision.terminate:
            return decision
        if not decision.next_speaker:
            raise ValueError("next_speaker must be provided if not terminating the conversation.")
        participants = self._participant_registry.participants
        if decision.next_speaker not in participants:
            raise ValueError(
                f"Orchestrator agent selected unknown participant '{decision.next_speaker}'. "
                f"Valid participants: {', '.join(participants)}."
            )
        return decision

    def _instruction(self) -> str:
        roster = "\n".join(
            f"{name}: {description}"
            for name, description in self._participant_registry.participants.items()
        )
        return (
            "Decide what to do next. Respond with a JSON object of the following format:\n"
            "{\n"
            '  "terminate": <true|false>,\n'
            '  "reason": "<explanation for the decision>",\n'
            '  "next_speaker": "<name of the next participant to speak (if not terminating)>",\n'
            '  "final_message": "<optional final message if terminating>"\n'
            "}\n"
            "If not terminating, here are the valid participant names (case-sensitive) and their "
            "descriptions:\n" + roster
        )

    @classmethod
    def _parse_agent_output(cls, agent_response: Any) -> AgentOrchestrationOutput:
        """The decision in the agent's response: its structured value when there is one, else
        the JSON of its text (or of the last Markdown fence in it, for providers that ignore
        ``response_format``; or the last of several JSON objects written back to back).

        Raises:
            ValueError: no reading of the response gives a valid decision.
        """
        try:
            structured = agent_response.value
        except Exception:  # noqa: BLE001 - an unreadable value means: read the text instead
            structured = None
        if structured is not None:
            return AgentOrchestrationOutput.model_validate(structured)
        last_error: Exception | None = None
        for candidate in _text_candidates(agent_response):
            try:
                return AgentOrchestrationOutput.model_validate_json(candidate)
            except ValueError as exc:
                last_error = exc
            try:
                parsed = _last_json_object(candidate)
                if parsed is not None:
                    return parsed
            except ValueError as exc:
                last_error = exc
        raise ValueError("Failed to parse agent orchestration output.") from last_error

    async def _check_agent_terminate_and_yield(
        self, agent_orchestration_output: AgentOrchestrationOutput, ctx: WorkflowContext[Any, Any]
    ) -> bool:
        """End the chat with the agent's final message if it decided to.

        Returns:
            Whether the chat ended.
        """
        if not agent_orchestration_output.terminate:
            return False
        text = agent_orchestration_output.final_message or _DEFAULT_AGENT_FINAL_MESSAGE
        await self._complete_with(text, ctx)
        return True

    async def on_checkpoint_save(self) -> dict[str, Any]:
        """The base state, with the cache and the agent's session (``cache``, ``session``)."""
        state = await super().on_checkpoint_save()
        state["cache"] = list(self._cache)
        state["session"] = self._session.to_dict()
        return state

    async def on_checkpoint_restore(self, state: dict[str, Any]) -> None:
        await super().on_checkpoint_restore(state)
        self._cache = list(state.get("cache") or [])
        session = state.get("session")
        if session:
            self._session = AgentSession.from_dict(session)


def _speaker(decision: AgentOrchestrationOutput) -> str:
    # A decision that does not terminate names a valid participant (checked in _decide).
    assert decision.next_speaker is not None
    return decision.next_speaker


def _text_candidates(agent_response: Any) -> list[str]:
    """The texts a decision may be read from: the last assistant message, the whole response,
    then the last fenced block of each."""
    candidates: list[str] = []
    for message in reversed(agent_response.messages):
        if message.role == "assistant" and message.text.strip():
            candidates.append(message.text.strip())
            break
    whole = agent_response.text.strip()
    if whole and whole not in candidates:
        candidates.append(whole)
    for candidate in list(candidates):
        fenced = extract_markdown_fence_bodies(candidate)
        if fenced and fenced[-1] not in candidates:
            candidates.append(fenced[-1])
    return candidates


def _last_json_object(text: str) -> AgentOrchestrationOutput | None:
    """The last of the JSON values written back to back in ``text`` (``{...}{...}``), as a
    decision; None for blank text.

    Raises:
        ValueError: the text is not a run of JSON values, or the last is not a decision.
    """
    decoder = json.JSONDecoder()
    position = 0
    last: Any = None
    while True:
        while position < len(text) and text[position].isspace():
            position += 1
        if position >= len(text):
            break
        last, position = decoder.raw_decode(text, position)
    return None if last is None else AgentOrchestrationOutput.model_validate(last)


# endregion

# region Builder
