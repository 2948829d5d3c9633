"""``MagenticBuilder``: a Magentic-One team as an ordinary ``Workflow``.

The built graph is a star: the ``MagenticOrchestrator`` is the start executor, with an edge to
and from every participant (agents become ``MagenticAgentExecutor``; other executors take
part as they are). Only the orchestrator's final answer is a workflow output unless
``output_from`` / ``intermediate_output_from`` show participants' outputs too.

Arguments, defaults, error messages and warnings are MAF 1.23's, so MAF code builds the same
workflow here; the workflow is named "Magentic" unless ``name`` says otherwise, which keeps a
rebuilt workflow's checkpoints its own.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from functools import partial
from typing import TYPE_CHECKING, Any, Literal, Self

from agent_framework import SupportsAgentRun

from ..builder import WorkflowBuilder
from ..executor import Executor
from .base_group_chat import ParticipantRegistry
from .magentic_agent import MagenticAgentExecutor
from .magentic_manager import MagenticManagerBase, StandardMagenticManager
from .magentic_orchestrator import MagenticOrchestrator
from .magentic_types import TaskLedger
from .participant_output import (
    UNSET,
    ParticipantIntermediateOutputSelection,
    ParticipantOutputSpecifier,
    UnsetType,
    coalesce_output_from,
    coerce_intermediate_output_from,
    resolve_participant_output_config,
)

if TYPE_CHECKING:
    from ..storage.protocol import CheckpointStorage
    from ..workflow import Workflow

__all__ = ["DEFAULT_WORKFLOW_NAME", "MagenticBuilder"]

logger = logging.getLogger(__name__)

DEFAULT_WORKFLOW_NAME = "Magentic"

_PROMPT_OPTIONS = (
    "task_ledger_facts_prompt",
    "task_ledger_plan_prompt",
    "task_ledger_full_prompt",
    "task_ledger_facts_update_prompt",
    "task_ledger_plan_update_prompt",
    "progress_ledger_prompt",
    "final_answer_prompt",
)


class MagenticBuilder:
    """Builds a Magentic-One workflow: a manager plans, picks who acts each round, watches for
    stalls (resetting the team and replanning) and writes the final answer.

    Args:
        participants: the team, agents (each needs a name) or executors.
        manager: a manager instance, reused (with its state) by every build.
        manager_factory: makes a manager for each build.
        manager_agent: the agent of a new ``StandardMagenticManager`` for each build.
        manager_agent_factory: makes that agent for each build.
        task_ledger: a starting task ledger for the standard manager.
        task_ledger_facts_prompt, task_ledger_plan_prompt, task_ledger_full_prompt,
        task_ledger_facts_update_prompt, task_ledger_plan_update_prompt,
        progress_ledger_prompt, final_answer_prompt: the standard manager's prompts.
        max_stall_count: rounds without progress before a reset and replan (default 3).
        max_reset_count: resets allowed; None for no limit.
        max_round_count: rounds allowed; None for no limit.
        name: the workflow's name ("Magentic" by default).
        enable_plan_review: ask a person to sign off each plan.
        checkpoint_storage: where the workflow's checkpoints go.
        output_from: participants whose yields are workflow outputs too ("all" for every one).
        intermediate_output_from: participants whose yields are ``intermediate`` events
            ("all", or "all_other" for those ``output_from`` does not name).

    The standard manager's options apply to ``manager_agent`` and ``manager_agent_factory``;
    with a manager or manager factory they are ignored, with a warning.

    Raises:
        ValueError: no participants, a nameless agent, two participants with one name, not
            exactly one way to get a manager, or an unknown output selection literal.
        TypeError: a participant that is neither an agent nor an executor.
    """

    def __init__(
        self,
        *,
        participants: Sequence[SupportsAgentRun | Executor],
        manager: MagenticManagerBase | None = None,
        manager_factory: Callable[[], MagenticManagerBase] | None = None,
        manager_agent: SupportsAgentRun | None = None,
        manager_agent_factory: Callable[[], SupportsAgentRun] | None = None,
        task_ledger: TaskLedger | None = None,
        task_ledger_facts_prompt: str | None = None,
        task_ledger_plan_prompt: str | None = None,
        task_ledger_full_prompt: str | None = None,
        task_ledger_facts_update_prompt: str | None = None,
        task_ledger_plan_update_prompt: str | None = None,
        progress_ledger_prompt: str | None = None,
        final_answer_prompt: str | None = None,
        max_stall_count: int | UnsetType = UNSET,
        max_reset_count: int | None = None,
        max_round_count: int | None = None,
        name: str | None = None,
        enable_plan_review: bool = False,
        checkpoint_storage: CheckpointStorage | None = None,
        output_from: Sequence[ParticipantOutputSpecifier] | Literal["all"] | None | UnsetType = (
            UNSET
        ),
        intermediate_output_from: ParticipantIntermediateOutputSelection = None,
    ) -> None:
        self._name = name or DEFAULT_WORKFLOW_NAME
        self._participants: dict[str, SupportsAgentRun | Executor] = {}
        self._manager: MagenticManagerBase | None = None
        self._manager_factory: Callable[[], MagenticManagerBase] | None = None
        self._manager_agent_factory: Callable[[], SupportsAgentRun] | None = None
        self._standard_manager_options: dict[str, Any] = {}
        self._enable_plan_review = enable_plan_review
        self._checkpoint_storage = checkpoint_storage
        self._output_from = coalesce_output_from(output_from=output_from)
        self._intermediate_output_from = coerce_intermediate_output_from(intermediate_output_from)
        self._set_participants(participants)
        sources = (manager, manager_factory, manager_agent, manager_agent_factory)
        if any(source is not None for source in sources):
            options: dict[str, Any] = {
                "task_ledger": task_ledger,
                "task_ledger_facts_prompt": task_ledger_facts_prompt,
                "task_ledger_plan_prompt": task_ledger_plan_prompt,
                "task_ledger_full_prompt": task_ledger_full_prompt,
                "task_ledger_facts_update_prompt": task_ledger_facts_update_prompt,
                "task_ledger_plan_update_prompt": task_ledger_plan_update_prompt,
                "progress_ledger_prompt": progress_ledger_prompt,
                "final_answer_prompt": final_answer_prompt,
                "max_stall_count": max_stall_count,
                "max_reset_count": max_reset_count,
                "max_round_count": max_round_count,
            }
            self._set_manager(
                manager=manager,
                manager_factory=manager_factory,
                manager_agent=manager_agent,
                manager_agent_factory=manager_agent_factory,
                options=options,
            )

    # region Configuration

    def _set_participants(self, participants: Sequence[SupportsAgentRun | Executor]) -> None:
        if self._participants:
            raise ValueError("participants already set.")
        if not participants:
            raise ValueError("participants cannot be empty.")
        named: dict[str, SupportsAgentRun | Executor] = {}
        for participant in participants:
            identifier = _participant_name(participant)
            if identifier in named:
                raise ValueError(f"Duplicate participant name '{identifier}' detected")
            named[identifier] = participant
        self._participants = named

    def _set_manager(
        self,
        *,
        manager: MagenticManagerBase | None,
        manager_factory: Callable[[], MagenticManagerBase] | None,
        manager_agent: SupportsAgentRun | None,
        manager_agent_factory: Callable[[], SupportsAgentRun] | None,
        options: dict[str, Any],
    ) -> None:
        """Keep the one way to get a manager, with the standard manager's options.

        Raises:
            ValueError: a manager is already set, or not exactly one source is given.
        """
        if any([self._manager, self._manager_factory, self._manager_agent_factory]):
            raise ValueError("Manager has already been configured. Set manager config once only.")
        sources = (manager, manager_agent, manager_factory, manager_agent_factory)
        if sum(source is not None for source in sources) != 1:
            raise ValueError(
                "Exactly one of manager, manager_agent, manager_factory, or manager_agent_factory "
                "must be provided."
            )
        stall_given = not isinstance(options["max_stall_count"], UnsetType)
        others_given = any(
            value is not None for key, value in options.items() if key != "max_stall_count"
        )
        if not stall_given:
            options["max_stall_count"] = 3
        if manager is not None or manager_factory is not None:
            if stall_given or others_given:
                logger.warning(
                    "Custom manager provided; all other manager arguments will be ignored."
                )
            self._manager = manager
            self._manager_factory = manager_factory
        elif manager_agent is not None:
            self._manager_factory = partial(StandardMagenticManager, agent=manager_agent, **options)
        else:
            self._manager_agent_factory = manager_agent_factory
            self._standard_manager_options = options

    def with_plan_review(self, enable: bool = True) -> Self:
        """Ask a person to approve each plan before the team works on it (and each replan).

        The run pauses with a ``MagenticPlanReviewRequest``; answer it with
        ``request.approve()`` or ``request.revise(feedback)`` through
        ``workflow.run(responses={request_id: answer})``.

        Returns:
            The builder.
        """
        self._enable_plan_review = enable
        return self

    def with_checkpointing(self, checkpoint_storage: CheckpointStorage) -> Self:
        """Checkpoint the workflow in ``checkpoint_storage`` after every superstep.

        Returns:
            The builder.
        """
        self._checkpoint_storage = checkpoint_storage
        return self

    # endregion

    # region Building

    def _resolve_manager(self) -> MagenticManagerBase:
        """This build's manager.

        Raises:
            ValueError: no manager was configured.
        """
        if self._manager is not None:
            return self._manager
        if self._manager_factory is not None:
            return self._manager_factory()
        if self._manager_agent_factory is not None:
            agent = self._manager_agent_factory()
            return StandardMagenticManager(agent=agent, **self._standard_manager_options)
        raise ValueError(
            "No manager configured. "
            "Pass manager, manager_factory, manager_agent, or manager_agent_factory to the "
            "constructor."
        )

    def _resolve_participants(self) -> list[Executor]:
        """The participants as executors: a new ``MagenticAgentExecutor`` for each agent."""
        if not self._participants:
            raise ValueError("No participants provided. Pass participants to the constructor.")
        return [
            participant if isinstance(participant, Executor) else MagenticAgentExecutor(participant)
            for participant in self._participants.values()
        ]

    def build(self) -> Workflow:
        """Build the workflow: a new orchestrator and participant executors each time, and a
        new manager unless an instance was given.

        Returns:
            The workflow.

        Raises:
            ValueError: no manager configured, or the output selections name unknown or
                overlapping participants.
        """
        logger.info(f"Building Magentic workflow with {len(self._participants)} participants")
        participants = self._resolve_participants()
        orchestrator = MagenticOrchestrator(
            manager=self._resolve_manager(),
            participant_registry=ParticipantRegistry(participants),
            require_plan_signoff=self._enable_plan_review,
        )
        outputs, intermediates = resolve_participant_output_config(
            participants=participants,
            output_from=self._output_from,
            intermediate_output_from=self._intermediate_output_from,
            extra_output_executors=[orchestrator],
        )
        builder = WorkflowBuilder(
            name=self._name,
            start_executor=orchestrator,
            checkpoint_storage=self._checkpoint_storage,
            output_from=outputs,
            intermediate_output_from=intermediates,
        )
        for participant in participants:
            builder.add_edge(orchestrator, participant)
            builder.add_edge(participant, orchestrator)
        return builder.build()

    # endregion


def _participant_name(participant: object) -> str:
    """The id a participant goes by: an executor's id, an agent's name.

    Raises:
        ValueError: an agent without a name.
        TypeError: neither an agent nor an executor.
    """
    if isinstance(participant, Executor):
        return participant.id
    if isinstance(participant, SupportsAgentRun):
        if not participant.name:
            raise ValueError("SupportsAgentRun participants must have a non-empty name.")
        return participant.name
    raise TypeError(
        "Participants must be SupportsAgentRun or Executor instances. "
        f"Got {type(participant).__name__}."
    )
