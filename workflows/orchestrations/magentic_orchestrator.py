"""``MagenticOrchestrator``: the executor that runs Magentic-One's two loops on the engine.

The outer loop plans (and, after a stall, resets the team and replans); the inner loop runs
one round per superstep pair: the manager judges progress, the orchestrator either ends the run
or asks one participant to act, and the participant's answer, shared with the others, starts
the next round. A person can be asked to sign off each plan (``require_plan_signoff``).

All the run's knowledge lives in this executor: the manager's context, the task and progress
ledgers and the manager's own state are its checkpoint, so a resumed run carries on from the
last superstep without asking the model again for what is done.
"""

from __future__ import annotations

import logging
from typing import Any, ClassVar

from agent_framework import AgentResponse, AgentResponseUpdate, Message

from ..agents.executor import AgentExecutorRequest, AgentExecutorResponse
from ..context import WorkflowContext
from ..events import WorkflowEvent
from ..executor import handler, response_handler
from .base_group_chat import (
    BaseGroupChatOrchestrator,
    GroupChatParticipantMessage,
    GroupChatRequestMessage,
    GroupChatResponseMessage,
    ParticipantRegistry,
)
from .magentic_manager import MagenticManagerBase
from .magentic_state import MagenticRunState
from .magentic_types import (
    MAGENTIC_MANAGER_NAME,
    MagenticContext,
    MagenticOrchestratorEvent,
    MagenticOrchestratorEventType,
    MagenticPlanReviewRequest,
    MagenticPlanReviewResponse,
    MagenticProgressLedger,
    MagenticResetSignal,
)

__all__ = ["MagenticOrchestrator"]

logger = logging.getLogger(__name__)

# Besides the group chat envelopes, the orchestrator broadcasts a reset when it replans; each
# handler declares it, since any of them can reach a replan.
_Sent = (
    AgentExecutorRequest
    | GroupChatRequestMessage
    | GroupChatParticipantMessage
    | MagenticResetSignal
)
_Ctx = WorkflowContext[_Sent, AgentResponse | AgentResponseUpdate]


class MagenticOrchestrator(BaseGroupChatOrchestrator):
    """Plans with its manager, then picks who acts each round until the manager is satisfied,
    a limit is reached, or the manager names someone outside the team.

    Emits ``magentic_orchestrator`` events (a ``MagenticOrchestratorEvent``) when a plan is
    created or replanned and when each round's progress ledger is written, besides the group
    chat's ``group_chat`` events. Its one output is the final answer (or the message saying
    which limit ended the run), as an ``AgentResponse`` or, streaming, an
    ``AgentResponseUpdate``.

    Args:
        manager: plans, judges progress and answers.
        participant_registry: the team.
        require_plan_signoff: ask a person to approve each plan (a ``MagenticPlanReviewRequest``
            answered with a ``MagenticPlanReviewResponse``).
    """

    MANAGER_NAME: ClassVar[str] = "magentic_orchestrator"

    def __init__(
        self,
        manager: MagenticManagerBase,
        participant_registry: ParticipantRegistry,
        *,
        require_plan_signoff: bool = False,
    ) -> None:
        super().__init__(self.MANAGER_NAME, participant_registry)
        self._manager = manager
        self._require_plan_signoff = require_plan_signoff
        self._magentic_context: MagenticContext | None = None
        self._task_ledger: Message | None = None
        self._progress_ledger: MagenticProgressLedger | None = None
        self._terminated = False
        # The manager's own limit, uncoerced (a group chat's max_rounds is at least 1).
        self._max_rounds = manager.max_round_count

    # region Handlers (the group chat's, declaring the reset they may send)

    @handler
    async def handle_str(self, task: str, ctx: _Ctx) -> None:
        """Start on a user prompt."""
        await super().handle_str(task, ctx)

    @handler
    async def handle_message(self, task: Message, ctx: _Ctx) -> None:
        """Start on one message."""
        await super().handle_message(task, ctx)

    @handler
    async def handle_messages(self, task: list[Message], ctx: _Ctx) -> None:
        """Start on a list holding one message (raises ValueError for an empty list)."""
        await super().handle_messages(task, ctx)

    @handler
    async def handle_participant_response(
        self, response: AgentExecutorResponse | GroupChatResponseMessage, ctx: _Ctx
    ) -> None:
        """A participant's turn: announced, shared with the others, then the next round."""
        await super().handle_participant_response(response, ctx)

    @response_handler
    async def handle_plan_review_response(
        self,
        original_request: MagenticPlanReviewRequest,
        response: MagenticPlanReviewResponse,
        ctx: _Ctx,
    ) -> None:
        """A person's verdict on a plan: approval starts (or resumes) the rounds; feedback joins
        the conversation, the manager replans (a ``REPLANNED`` event) and the new plan is
        reviewed again, as stalled as the one it replaces.

        Raises:
            RuntimeError: no plan was made in this run.
        """
        context = self._require_context()
        if not response.review:
            logger.debug("Magentic Orchestrator: Plan review approved by human.")
            await self._run_outer_loop(ctx)
            return
        logger.debug("Magentic Orchestrator: Plan review revision requested by human.")
        context.chat_history.extend(response.review)
        self._task_ledger = await self._manager.replan(context.clone(deep=True))
        await self._announce(ctx, MagenticOrchestratorEventType.REPLANNED, self._task_ledger)
        await self._request_plan_review(ctx, is_stalled=original_request.is_stalled)

    # endregion

    # region The group chat's hooks

    async def _handle_messages(
        self, messages: list[Message], ctx: WorkflowContext[Any, Any]
    ) -> None:
        """Take the task, plan, and start the rounds (or ask for the plan's review).

        Raises:
            RuntimeError: this orchestrator already finished a run.
            ValueError: not exactly one message, or one without text.
        """
        self._check_task(messages)
        context = MagenticContext(
            task=messages[0].text,
            participant_descriptions=dict(self._participant_registry.participants),
            chat_history=list(messages),
        )
        self._magentic_context = context
        # The manager works on a copy: what it adds while planning stays out of the history.
        self._task_ledger = await self._manager.plan(context.clone(deep=True))
        await self._announce(ctx, MagenticOrchestratorEventType.PLAN_CREATED, self._task_ledger)
        if self._require_plan_signoff:
            await self._request_plan_review(ctx)
            return
        context.chat_history.append(self._task_ledger)
        logger.debug("Task ledger created.")
        await self._run_inner_loop(ctx)

    def _check_task(self, messages: list[Message]) -> None:
        if self._terminated:
            raise RuntimeError(
                "This Magentic workflow has already been completed. No further messages can be "
                "processed. Use the builder to create a new workflow instance to handle "
                "additional tasks."
            )
        if not messages:
            raise ValueError(
                "Magentic orchestrator requires at least one message to start the workflow."
            )
        if len(messages) > 1:
            raise ValueError("Magentic only support a single task message to start the workflow.")
        if messages[0].text.strip() == "":
            raise ValueError("Magentic task message must contain non-empty text.")

    async def _handle_response(
        self,
        response: AgentExecutorResponse | GroupChatResponseMessage,
        ctx: WorkflowContext[Any, Any],
    ) -> None:
        """Record a participant's turn, share it with the rest of the team, run a round.

        Raises:
            RuntimeError: no plan was made in this run.
        """
        context = self._require_context()
        messages = self._process_participant_response(response)
        context.chat_history.extend(messages)
        speaker = ctx.get_source_executor_id()
        others = [name for name in self._participant_registry.participants if name != speaker]
        await self._broadcast_messages_to_participants(messages, ctx, participants=others)
        await self._run_inner_loop(ctx)

    # endregion

    # region The loops

    async def _run_inner_loop(self, ctx: WorkflowContext[Any, Any]) -> None:
        """One round: check the limits, get the progress ledger, then finish, replan, or ask
        the next speaker."""
        context = self._require_context()
        if not await self._check_within_limits_or_complete(ctx):
            return
        context.round_count += 1
        self._increment_round()
        logger.debug(f"Magentic Orchestrator: Inner loop - round {self._round_index}")
        try:
            ledger = await self._manager.create_progress_ledger(context.clone(deep=True))
        except Exception as exc:  # noqa: BLE001 - any manager failure means: start over
            logger.warning(
                f"Magentic Orchestrator: Progress ledger creation failed, triggering reset: {exc}"
            )
            await self._reset_and_replan(ctx)
            return
        self._progress_ledger = ledger
        await self._announce(ctx, MagenticOrchestratorEventType.PROGRESS_LEDGER_UPDATED, ledger)
        logger.debug(
            f"Progress evaluation: satisfied={ledger.is_request_satisfied.answer}, "
            f"next={ledger.next_speaker.answer}"
        )
        if ledger.is_request_satisfied.answer:
            logger.info("Magentic Orchestrator: Task completed")
            await self._prepare_final_answer(ctx)
            return
        if self._count_stall(context, ledger) > self._manager.max_stall_count:
            logger.debug(
                f"Magentic Orchestrator: Stalling detected after {context.stall_count} rounds"
            )
            await self._reset_and_replan(ctx)
            return
        await self._ask_next_speaker(ctx, context, ledger)

    @staticmethod
    def _count_stall(context: MagenticContext, ledger: MagenticProgressLedger) -> int:
        """A round without progress, or in a loop, adds a stall; a good round takes one off."""
        if not ledger.is_progress_being_made.answer or ledger.is_in_loop.answer:
            context.stall_count += 1
        else:
            context.stall_count = max(0, context.stall_count - 1)
        return context.stall_count

    async def _ask_next_speaker(
        self,
        ctx: WorkflowContext[Any, Any],
        context: MagenticContext,
        ledger: MagenticProgressLedger,
    ) -> None:
        """Give the ledger's instruction to its next speaker; a name outside the team ends the
        run with the final answer."""
        speaker = ledger.next_speaker.answer
        if not isinstance(speaker, str):
            logger.warning(
                "Next speaker answer was not a string; selecting first participant as fallback"
            )
            speaker = next(iter(self._participant_registry.participants))
        instruction = str(ledger.instruction_or_question.answer)
        if speaker not in self._participant_registry.participants:
            logger.warning(f"Invalid next speaker: {speaker}")
            await self._prepare_final_answer(ctx)
            return
        context.chat_history.append(
            Message(role="assistant", contents=[instruction], author_name=MAGENTIC_MANAGER_NAME)
        )
        logger.debug(f"Magentic Orchestrator: Requesting {speaker} to respond")
        await self._send_request_to_participant(speaker, ctx, additional_instruction=instruction)

    async def _reset_and_replan(self, ctx: WorkflowContext[Any, Any]) -> None:
        """Clear the conversation, reset every participant, replan (a ``REPLANNED`` event), and
        start again (after a review, when plans need sign-off)."""
        context = self._require_context()
        logger.debug("Magentic Orchestrator: Resetting and replanning")
        context.reset()
        # No target: the signal goes along every edge, to every participant.
        await ctx.send_message(MagenticResetSignal())
        self._task_ledger = await self._manager.replan(context.clone(deep=True))
        await self._announce(ctx, MagenticOrchestratorEventType.REPLANNED, self._task_ledger)
        if self._require_plan_signoff:
            await self._request_plan_review(ctx, is_stalled=True)
            return
        context.chat_history.append(self._task_ledger)
        await self._run_outer_loop(ctx)

    async def _run_outer_loop(self, ctx: WorkflowContext[Any, Any]) -> None:
        """Put the current plan at the end of the conversation (once) and run a round."""
        context = self._require_context()
        logger.debug("Magentic Orchestrator: Outer loop - entering inner loop")
        history = context.chat_history
        if self._task_ledger and (not history or history[-1] != self._task_ledger):
            history.append(self._task_ledger)
        await self._run_inner_loop(ctx)

    # endregion

    # region Ending

    async def _prepare_final_answer(self, ctx: WorkflowContext[Any, Any]) -> None:
        """Yield the manager's final answer; this orchestrator takes no further task."""
        context = self._require_context()
        logger.info("Magentic Orchestrator: Preparing final answer")
        answer = await self._manager.prepare_final_answer(context.clone(deep=True))
        await self._yield_completion(ctx, answer)
        self._terminated = True

    async def _check_within_limits_or_complete(self, ctx: WorkflowContext[Any, Any]) -> bool:
        """Whether another round may run; if not, yield the message naming the limit reached
        (rounds first, then resets) and finish.

        Returns:
            True when within both limits.
        """
        context = self._require_context()
        rounds_done = self._max_rounds is not None and self._round_index >= self._max_rounds
        max_resets = self._manager.max_reset_count
        resets_done = max_resets is not None and context.reset_count >= max_resets
        if not (rounds_done or resets_done):
            return True
        limit = "round" if rounds_done else "reset"
        logger.error(f"Magentic Orchestrator: Max {limit} count reached")
        notice = Message(
            role="assistant",
            contents=[f"Workflow terminated due to reaching maximum {limit} count."],
            author_name=MAGENTIC_MANAGER_NAME,
        )
        await self._yield_completion(ctx, notice)
        self._terminated = True
        return False

    # endregion

    # region Helpers

    def _require_context(self) -> MagenticContext:
        if self._magentic_context is None or self._task_ledger is None:
            raise RuntimeError("Context or task ledger not initialized")
        return self._magentic_context

    async def _announce(
        self,
        ctx: WorkflowContext[Any, Any],
        kind: MagenticOrchestratorEventType,
        content: Message | MagenticProgressLedger,
    ) -> None:
        event = MagenticOrchestratorEvent(event_type=kind, content=content)
        await ctx.add_event(WorkflowEvent("magentic_orchestrator", executor_id=self.id, data=event))

    async def _request_plan_review(
        self, ctx: WorkflowContext[Any, Any], *, is_stalled: bool = False
    ) -> None:
        """Ask a person to review the current plan; the run pauses until they answer."""
        if self._task_ledger is None:
            raise RuntimeError("No task ledger available for plan review request.")
        request = MagenticPlanReviewRequest(
            plan=self._task_ledger,
            current_progress=self._progress_ledger,
            is_stalled=is_stalled,
        )
        await ctx.request_info(request, MagenticPlanReviewResponse)

    # endregion

    # region Checkpoints

    async def on_checkpoint_save(self) -> dict[str, Any]:
        """The group chat's state plus this run's (see ``magentic_state``)."""
        run = MagenticRunState(
            self._terminated, self._magentic_context, self._task_ledger, self._progress_ledger
        )
        return run.save_into(await super().on_checkpoint_save(), self._manager)

    async def on_checkpoint_restore(self, state: dict[str, Any]) -> None:
        """Put back what ``on_checkpoint_save`` kept, the manager's state included."""
        await super().on_checkpoint_restore(state)
        run = MagenticRunState.read_from(state, self._manager)
        self._terminated = run.terminated
        self._magentic_context = run.context
        self._task_ledger = run.task_ledger
        self._progress_ledger = run.progress_ledger

    # endregion
