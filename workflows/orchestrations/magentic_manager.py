"""The Magentic manager: the part that plans, judges progress and writes the final answer.

``MagenticManagerBase`` is the contract the orchestrator drives (subclass it for a manager of
your own); ``StandardMagenticManager`` fulfils it with a chat agent and the Magentic-One
prompts of ``magentic_prompts``. The manager keeps only its task ledger; everything else it
needs arrives in the ``MagenticContext`` of each call, so a resumed run asks the model nothing
again: the ledger travels in the orchestrator's checkpoint.
"""

from __future__ import annotations

import asyncio
import logging
from abc import ABC, abstractmethod
from typing import Any, ClassVar

from agent_framework import Message, SupportsAgentRun

from . import magentic_prompts as prompts
from .magentic_json import extract_json_object
from .magentic_types import (
    MAGENTIC_MANAGER_NAME,
    MagenticContext,
    MagenticProgressLedger,
    TaskLedger,
)

__all__ = ["MagenticManagerBase", "StandardMagenticManager"]

logger = logging.getLogger(__name__)

# What reading a ledger out of text or a checkpoint can raise: a reply that is not JSON, or an
# object whose items have the wrong shape ("is_in_loop": "yes" has no fields to read).
_UNREADABLE = (ValueError, TypeError, AttributeError, KeyError)


class MagenticManagerBase(ABC):
    """What a Magentic orchestrator needs from its manager.

    Args:
        max_stall_count: rounds without progress tolerated before a reset and replan.
        max_reset_count: resets allowed before the run ends; None for no limit.
        max_round_count: rounds allowed before the run ends; None for no limit.
    """

    def __init__(
        self,
        *,
        max_stall_count: int = 3,
        max_reset_count: int | None = None,
        max_round_count: int | None = None,
    ) -> None:
        self.max_stall_count = max_stall_count
        self.max_reset_count = max_reset_count
        self.max_round_count = max_round_count
        self.task_ledger_full_prompt: str = prompts.TASK_LEDGER_FULL_PROMPT

    @abstractmethod
    async def plan(self, magentic_context: MagenticContext) -> Message:
        """Returns: the task ledger (facts and plan) the team starts from."""

    @abstractmethod
    async def replan(self, magentic_context: MagenticContext) -> Message:
        """Returns: a new task ledger, after a stall or a reviewer's feedback."""

    @abstractmethod
    async def create_progress_ledger(
        self, magentic_context: MagenticContext
    ) -> MagenticProgressLedger:
        """Returns: the verdict on the conversation so far and who should act next.

        An exception here makes the orchestrator reset and replan.
        """

    @abstractmethod
    async def prepare_final_answer(self, magentic_context: MagenticContext) -> Message:
        """Returns: the answer given to the user."""

    def on_checkpoint_save(self) -> dict[str, Any]:
        """Returns: the manager's own state for the orchestrator's checkpoint (values the
        checkpoint codec can store)."""
        return {}

    def on_checkpoint_restore(self, state: dict[str, Any]) -> None:
        """Put back what ``on_checkpoint_save`` returned."""
        return


class StandardMagenticManager(MagenticManagerBase):
    """The Magentic-One manager, backed by a chat agent.

    Planning asks the model for a fact sheet then a plan; each round asks for a JSON progress
    ledger (retried when it does not parse or names no team member); replanning rewrites the
    facts and the plan; the end asks for the answer. Every model call runs in a fresh session
    with the whole conversation the manager wants it to see, so nothing is counted twice.

    Args:
        agent: the agent whose model the manager asks; its options and instructions apply.
        task_ledger: facts and plan to start from (normally made by ``plan``).
        task_ledger_facts_prompt, task_ledger_plan_prompt, task_ledger_full_prompt,
        task_ledger_facts_update_prompt, task_ledger_plan_update_prompt,
        progress_ledger_prompt, final_answer_prompt: replacements for the prompts of
            ``magentic_prompts`` (same placeholders).
        max_stall_count, max_reset_count, max_round_count: see ``MagenticManagerBase``.
        progress_ledger_retry_count: model calls allowed for one progress ledger (default 3).
    """

    MANAGER_NAME: ClassVar[str] = "StandardMagenticManager"

    task_ledger: TaskLedger | None

    def __init__(
        self,
        agent: SupportsAgentRun,
        task_ledger: TaskLedger | None = None,
        *,
        task_ledger_facts_prompt: str | None = None,
        task_ledger_plan_prompt: str | None = None,
        task_ledger_full_prompt: str | None = None,
        task_ledger_facts_update_prompt: str | None = None,
        task_ledger_plan_update_prompt: str | None = None,
        progress_ledger_prompt: str | None = None,
        final_answer_prompt: str | None = None,
        max_stall_count: int = 3,
        max_reset_count: int | None = None,
        max_round_count: int | None = None,
        progress_ledger_retry_count: int | None = None,
    ) -> None:
        super().__init__(
            max_stall_count=max_stall_count,
            max_reset_count=max_reset_count,
            max_round_count=max_round_count,
        )
        self._agent = agent
        self.task_ledger = task_ledger
        self.task_ledger_facts_prompt = task_ledger_facts_prompt or prompts.TASK_LEDGER_FACTS_PROMPT
        self.task_ledger_plan_prompt = task_ledger_plan_prompt or prompts.TASK_LEDGER_PLAN_PROMPT
        self.task_ledger_full_prompt = task_ledger_full_prompt or prompts.TASK_LEDGER_FULL_PROMPT
        self.task_ledger_facts_update_prompt = (
            task_ledger_facts_update_prompt or prompts.TASK_LEDGER_FACTS_UPDATE_PROMPT
        )
        self.task_ledger_plan_update_prompt = (
            task_ledger_plan_update_prompt or prompts.TASK_LEDGER_PLAN_UPDATE_PROMPT
        )
        self.progress_ledger_prompt = progress_ledger_prompt or prompts.PROGRESS_LEDGER_PROMPT
        self.final_answer_prompt = final_answer_prompt or prompts.FINAL_ANSWER_PROMPT
        self.progress_ledger_retry_count: int = (
            3 if progress_ledger_retry_count is None else progress_ledger_retry_count
        )

    async def _complete(self, messages: list[Message]) -> Message:
        """The model's last message for ``messages``.

        A throwaway session per call: the caller already passes the whole conversation, and a
        session's history provider would replay earlier calls into this one. A session is still
        given, so context providers on the manager's agent run.

        Raises:
            RuntimeError: the agent answered with no message.
        """
        response = await self._agent.run(messages, session=self._agent.create_session())
        if not response.messages:
            raise RuntimeError("Agent returned no messages in response.")
        if len(response.messages) > 1:
            logger.warning("Agent returned multiple messages; using the last one.")
        return response.messages[-1]

    async def _write_ledger(
        self,
        magentic_context: MagenticContext,
        facts_prompt: str,
        plan_prompt: str,
    ) -> Message:
        """Ask for facts, then for a plan in their light; keep both and render the ledger."""
        history = magentic_context.chat_history
        facts_request = Message(role="user", contents=[facts_prompt])
        facts = await self._complete([*history, facts_request])
        plan_request = Message(role="user", contents=[plan_prompt])
        plan = await self._complete([*history, facts_request, facts, plan_request])
        self.task_ledger = TaskLedger(facts=facts, plan=plan)
        # The exchange joins the history the caller passed, for the model's later grounding.
        history.extend([facts_request, facts, plan_request, plan])
        ledger = self.task_ledger_full_prompt.format(
            task=magentic_context.task,
            team=_team_block(magentic_context.participant_descriptions),
            facts=facts.text,
            plan=plan.text,
        )
        return Message(role="assistant", contents=[ledger], author_name=MAGENTIC_MANAGER_NAME)

    async def plan(self, magentic_context: MagenticContext) -> Message:
        """Returns: the first task ledger, as one assistant message of the manager."""
        team = _team_block(magentic_context.participant_descriptions)
        return await self._write_ledger(
            magentic_context,
            self.task_ledger_facts_prompt.format(task=magentic_context.task),
            self.task_ledger_plan_prompt.format(team=team),
        )

    async def replan(self, magentic_context: MagenticContext) -> Message:
        """Returns: a task ledger with updated facts and a new plan.

        Raises:
            RuntimeError: ``plan`` was never called (there are no facts to update).
        """
        if self.task_ledger is None:
            raise RuntimeError(
                "replan() called before plan(); call plan() once before requesting a replan."
            )
        team = _team_block(magentic_context.participant_descriptions)
        facts_prompt = self.task_ledger_facts_update_prompt.format(
            task=magentic_context.task, old_facts=self.task_ledger.facts.text
        )
        return await self._write_ledger(
            magentic_context, facts_prompt, self.task_ledger_plan_update_prompt.format(team=team)
        )

    async def create_progress_ledger(
        self, magentic_context: MagenticContext
    ) -> MagenticProgressLedger:
        """Returns: the model's progress ledger.

        A reply that does not parse, or names someone outside the team while the task is not
        done, is asked again (with a short pause) up to ``progress_ledger_retry_count`` calls.
        When calls run out on an unknown name, that ledger is returned, so the orchestrator
        ends the run as for any unknown speaker rather than resetting.

        Raises:
            RuntimeError: the team is empty, or no reply parsed.
        """
        names = list(magentic_context.participant_descriptions)
        if not names:
            raise RuntimeError("No participants configured; cannot determine next speaker.")
        names_csv = ", ".join(names)
        request = Message(
            role="user",
            contents=[
                self.progress_ledger_prompt.format(
                    task=magentic_context.task,
                    team=_team_block(magentic_context.participant_descriptions),
                    names=names_csv,
                )
            ],
        )
        failure: Exception | None = None
        unknown_speaker: MagenticProgressLedger | None = None
        for attempt in range(1, self.progress_ledger_retry_count + 1):
            reply = await self._complete([*magentic_context.chat_history, request])
            try:
                ledger = MagenticProgressLedger.from_dict(extract_json_object(reply.text))
            except _UNREADABLE as exc:
                failure, unknown_speaker = exc, None
            else:
                speaker = ledger.next_speaker.answer
                if ledger.is_request_satisfied.answer or not isinstance(speaker, str):
                    return ledger
                if speaker in names:
                    return ledger
                unknown_speaker = ledger
                failure = ValueError(f"Unknown next speaker '{speaker}'. Valid names: {names_csv}.")
            logger.warning(
                f"Progress ledger attempt failed ({attempt}/{self.progress_ledger_retry_count}): "
                f"{failure}"
            )
            if attempt < self.progress_ledger_retry_count:
                await asyncio.sleep(0.25 * attempt)
        if unknown_speaker is not None:
            return unknown_speaker
        raise RuntimeError(
            f"Progress ledger parse failed after {self.progress_ledger_retry_count} attempt(s): "
            f"{failure}"
        )

    async def prepare_final_answer(self, magentic_context: MagenticContext) -> Message:
        """Returns: the model's answer to the user, as an assistant message (authored by the
        model's agent, else the manager)."""
        request = Message(
            role="user", contents=[self.final_answer_prompt.format(task=magentic_context.task)]
        )
        reply = await self._complete([*magentic_context.chat_history, request])
        return Message(
            role="assistant",
            contents=[reply.text],
            author_name=reply.author_name or MAGENTIC_MANAGER_NAME,
        )

    def on_checkpoint_save(self) -> dict[str, Any]:
        """Returns: ``{"task_ledger": {"facts": Message, "plan": Message}}`` once planned."""
        if self.task_ledger is None:
            return {}
        return {"task_ledger": {"facts": self.task_ledger.facts, "plan": self.task_ledger.plan}}

    def on_checkpoint_restore(self, state: dict[str, Any]) -> None:
        """Put the task ledger back; one that cannot be read is skipped with a warning."""
        saved = state.get("task_ledger")
        if saved is None:
            return
        try:
            self.task_ledger = TaskLedger.from_dict(saved)
        except _UNREADABLE:
            logger.warning("Failed to restore manager task ledger from checkpoint state")


def _team_block(participants: dict[str, str]) -> str:
    """The team as the prompts show it: one ``- name: description`` line each."""
    return "\n".join(f"- {name}: {description}" for name, description in participants.items())
