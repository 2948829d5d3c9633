"""``GroupChatBuilder``: the orchestrator and the participants wired into a star."""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from typing import Any, ClassVar, Literal

from agent_framework import Agent, SupportsAgentRun

from ..agents.executor import AgentExecutor, resolve_agent_id
from ..builder import WorkflowBuilder
from ..executor import Executor
from ..storage import CheckpointStorage
from ..workflow import Workflow
from .base_group_chat import (
    BaseGroupChatOrchestrator,
    ParticipantRegistry,
    TerminationCondition,
)
from .group_chat_agent import AgentBasedGroupChatOrchestrator
from .group_chat_selection import (
    DEFAULT_WORKFLOW_NAME,
    GroupChatOrchestrator,
    GroupChatSelectionFunction,
)
from .participant_output import (
    UNSET,
    ParticipantIntermediateOutputSelection,
    ParticipantOutputSpecifier,
    UnsetType,
    coalesce_output_from,
    coerce_intermediate_output_from,
    resolve_participant_output_config,
)
from .request_info import (
    AgentApprovalExecutor,
    resolve_request_info_filter,
    validate_request_info_filter,
)

__all__ = ["GroupChatBuilder"]

logger = logging.getLogger(__name__)

Participant = SupportsAgentRun | Executor
ParticipantFactory = Callable[[], Participant]


class GroupChatBuilder:
    """Builds a group chat workflow: an orchestrator and its participants in a star.

    Participants may be agents (each runs in an ``AgentExecutor``) and custom executors, which
    take ``GroupChatRequestMessage`` / ``GroupChatParticipantMessage`` and answer with
    ``GroupChatResponseMessage``. Exactly one way of choosing speakers is given: an
    ``orchestrator_agent``, an ``orchestrator`` (or a factory of either) or a
    ``selection_func``. The workflow's output is the orchestrator's closing message.

    Args:
        name: the workflow's name; ``"GroupChat"`` by default.
        participants: the agents and executors taking part.
        participant_factories: callables making them (instead of ``participants``).
        orchestrator_agent: an ``Agent`` (or a callable making one) that picks speakers.
        orchestrator: a ``BaseGroupChatOrchestrator`` (or a callable making one).
        selection_func: a function of ``GroupChatState`` returning the next speaker.
        orchestrator_name: the author name of the orchestrator's messages, with
            ``selection_func`` only.
        termination_condition: ends the chat when it returns True for the conversation.
        max_rounds: the most turns to request.
        checkpoint_storage: where the workflow checkpoints.
        output_from: participants (names, agents or executors, or ``"all"``) whose yields are
            outputs too, beside the orchestrator's.
        intermediate_output_from: participants whose yields are ``intermediate`` events
            (``"all_other"``: every participant not in ``output_from``). Others are hidden.

    Raises:
        ValueError: neither or both of ``participants`` / ``participant_factories``, an empty
            or duplicated participant, more than one orchestrator, a bad output literal.
        TypeError: a participant is neither an agent nor an executor.
    """

    DEFAULT_ORCHESTRATOR_ID: ClassVar[str] = "group_chat_orchestrator"

    def __init__(
        self,
        *,
        name: str | None = None,
        participants: Sequence[Participant] | None = None,
        participant_factories: Sequence[ParticipantFactory] | None = None,
        orchestrator_agent: Agent | Callable[[], Agent] | None = None,
        orchestrator: BaseGroupChatOrchestrator
        | Callable[[], BaseGroupChatOrchestrator]
        | None = None,
        selection_func: GroupChatSelectionFunction | None = None,
        orchestrator_name: str | None = None,
        termination_condition: TerminationCondition | None = None,
        max_rounds: int | None = None,
        checkpoint_storage: CheckpointStorage | None = None,
        output_from: Sequence[ParticipantOutputSpecifier]
        | Literal["all"]
        | UnsetType
        | None = UNSET,
        intermediate_output_from: ParticipantIntermediateOutputSelection = None,
    ) -> None:
        self._name = name or DEFAULT_WORKFLOW_NAME
        self._participants: dict[str, Participant] = {}
        self._participant_factories: list[ParticipantFactory] = []
        self._orchestrator: BaseGroupChatOrchestrator | None = None
        self._orchestrator_factory: Callable[[], Agent | BaseGroupChatOrchestrator] | None = None
        self._selection_func: GroupChatSelectionFunction | None = None
        self._agent_orchestrator: Agent | None = None
        self._orchestrator_name: str | None = None
        self._termination_condition = termination_condition
        self._max_rounds = max_rounds
        self._checkpoint_storage = checkpoint_storage
        self._request_info_enabled = False
        self._request_info_filter: set[str] = set()
        self._output_from = coalesce_output_from(output_from=output_from)
        self._intermediate_output_from = coerce_intermediate_output_from(intermediate_output_from)
        if participants is None and participant_factories is None:
            raise ValueError("Either participants or participant_factories must be provided.")
        if participant_factories is not None:
            self._set_participant_factories(participant_factories)
        if participants is not None:
            self._set_participants(participants)
        if any(x is not None for x in (orchestrator_agent, orchestrator, selection_func)):
            self._set_orchestrator(
                orchestrator_agent=orchestrator_agent,
                orchestrator=orchestrator,
                selection_func=selection_func,
                orchestrator_name=orchestrator_name,
            )

    # region Configuration

    def _set_orchestrator(
        self,
        *,
        orchestrator_agent: Agent | Callable[[], Agent] | None = None,
        orchestrator: BaseGroupChatOrchestrator
        | Callable[[], BaseGroupChatOrchestrator]
        | None = None,
        selection_func: GroupChatSelectionFunction | None = None,
        orchestrator_name: str | None = None,
    ) -> None:
        """Keep the one way of choosing speakers.

        Raises:
            ValueError: one is already configured, or not exactly one is given.
        """
        for configured, what in (
            (self._agent_orchestrator, "An agent orchestrator"),
            (self._orchestrator, "An orchestrator"),
            (self._orchestrator_factory, "A factory"),
            (self._selection_func, "A selection function"),
        ):
            if configured is not None:
                raise ValueError(
                    f"{what} has already been configured. Set orchestrator config once only."
                )
        if sum(x is not None for x in (orchestrator_agent, orchestrator, selection_func)) != 1:
            raise ValueError(
                "Exactly one of orchestrator_agent, orchestrator, or selection_func must be "
                "provided."
            )
        if isinstance(orchestrator_agent, Agent):
            self._agent_orchestrator = orchestrator_agent
        elif isinstance(orchestrator, BaseGroupChatOrchestrator):
            self._orchestrator = orchestrator
        elif selection_func is not None:
            self._selection_func = selection_func
            self._orchestrator_name = orchestrator_name
        else:
            # Anything else is taken as a factory, called when the workflow is built.
            self._orchestrator_factory = orchestrator_agent or orchestrator

    def _set_participant_factories(
        self, participant_factories: Sequence[ParticipantFactory]
    ) -> None:
        if self._participants:
            raise ValueError("Cannot provide both participants and participant_factories.")
        if self._participant_factories:
            raise ValueError("participant_factories already set.")
        if not participant_factories:
            raise ValueError("participant_factories cannot be empty")
        self._participant_factories = list(participant_factories)

    def _set_participants(self, participants: Sequence[Participant]) -> None:
        if self._participant_factories:
            raise ValueError("Cannot provide both participants and participant_factories.")
        if self._participants:
            raise ValueError("participants already set.")
        if not participants:
            raise ValueError("participants cannot be empty.")
        named: dict[str, Participant] = {}
        for participant in participants:
            identifier = _participant_name(participant)
            if identifier in named:
                raise ValueError(f"Duplicate participant name '{identifier}' detected")
            named[identifier] = participant
        self._participants = named

    def with_termination_condition(
        self, termination_condition: TerminationCondition
    ) -> GroupChatBuilder:
        """End the chat when ``termination_condition(conversation)`` returns True.

        It has no effect on an orchestrator given ready-made (a warning says so).

        Args:
            termination_condition: called after the task and after every turn, sync or async.

        Returns:
            The builder.
        """
        if self._orchestrator is not None or self._orchestrator_factory is not None:
            logger.warning(
                "Orchestrator has already been configured; setting termination condition on "
                "builder has no effect."
            )
        self._termination_condition = termination_condition
        return self

    def with_max_rounds(self, max_rounds: int | None) -> GroupChatBuilder:
        """Request at most ``max_rounds`` turns, then end with the max-rounds message.

        It has no effect on an orchestrator given ready-made (a warning says so).

        Args:
            max_rounds: the limit; None for none.

        Returns:
            The builder.
        """
        if self._orchestrator is not None or self._orchestrator_factory is not None:
            logger.warning(
                "Orchestrator has already been configured; setting max rounds on builder has no "
                "effect."
            )
        self._max_rounds = max_rounds
        return self

    def with_checkpointing(self, checkpoint_storage: CheckpointStorage) -> GroupChatBuilder:
        """Checkpoint the workflow in ``checkpoint_storage`` after every superstep.

        Args:
            checkpoint_storage: the storage.

        Returns:
            The builder.
        """
        self._checkpoint_storage = checkpoint_storage
        return self

    def with_request_info(
        self, *, agents: Sequence[str | SupportsAgentRun] | None = None
    ) -> GroupChatBuilder:
        """Pause for a person after each turn of the given agents (all agents by default).

        The workflow raises a ``request_info`` whose data is the agent's
        ``AgentExecutorResponse``; answer it with an ``AgentRequestInfoResponse``: approve, or
        give the agent messages to answer again. Custom executors are never paused.

        Args:
            agents: agent names or agents to review; None for every agent participant.

        Returns:
            The builder.

        Raises:
            TypeError: an entry is neither a name nor an agent.
        """
        self._request_info_enabled = True
        self._request_info_filter = resolve_request_info_filter(list(agents) if agents else None)
        return self

    # endregion

    # region Building

    def _resolve_orchestrator(self, participants: Sequence[Executor]) -> Executor:
        """The orchestrator executor for ``participants``.

        Raises:
            ValueError: no orchestrator is configured.
            TypeError: a factory made neither an ``Agent`` nor a ``BaseGroupChatOrchestrator``.
        """
        if self._orchestrator is not None:
            return self._orchestrator
        if self._selection_func is not None:
            return GroupChatOrchestrator(
                id=self.DEFAULT_ORCHESTRATOR_ID,
                participant_registry=ParticipantRegistry(participants),
                selection_func=self._selection_func,
                name=self._orchestrator_name,
                max_rounds=self._max_rounds,
                termination_condition=self._termination_condition,
            )
        made: object
        if self._agent_orchestrator is not None:
            made = self._agent_orchestrator
        elif self._orchestrator_factory is not None:
            made = self._orchestrator_factory()
        else:
            raise ValueError(
                "No orchestrator has been configured. "
                "Pass orchestrator_agent, orchestrator, or selection_func to the constructor."
            )
        if isinstance(made, Agent):
            return AgentBasedGroupChatOrchestrator(
                agent=made,
                participant_registry=ParticipantRegistry(participants),
                max_rounds=self._max_rounds,
                termination_condition=self._termination_condition,
            )
        if isinstance(made, BaseGroupChatOrchestrator):
            return made
        raise TypeError(
            "Orchestrator factory must return Agent or BaseGroupChatOrchestrator instance. "
            f"Got {type(made).__name__}."
        )

    def _resolve_participants(self) -> list[Executor]:
        """The participants as executors: agents wrapped (for review when asked).

        Raises:
            ValueError: no participants, or the review filter names a non-participant.
            TypeError: a factory made neither an agent nor an executor.
        """
        if not self._participants and not self._participant_factories:
            raise ValueError(
                "No participants provided. Pass participants or participant_factories to the "
                "constructor."
            )
        made: list[Any] = (
            [factory() for factory in self._participant_factories]
            if self._participant_factories
            else list(self._participants.values())
        )
        executors = [self._as_executor(participant) for participant in made]
        if self._request_info_enabled:
            agent_ids = [resolve_agent_id(p) for p in made if not isinstance(p, Executor)]
            validate_request_info_filter(self._request_info_filter, agent_ids)
        return executors

    def _as_executor(self, participant: object) -> Executor:
        if isinstance(participant, Executor):
            return participant
        if isinstance(participant, SupportsAgentRun):
            reviewed = self._request_info_enabled and (
                not self._request_info_filter
                or resolve_agent_id(participant) in self._request_info_filter
            )
            return AgentApprovalExecutor(participant) if reviewed else AgentExecutor(participant)
        raise TypeError(
            "Participants must be SupportsAgentRun or Executor instances. "
            f"Got {type(participant).__name__}."
        )

    def build(self) -> Workflow:
        """Build the workflow: an edge each way between the orchestrator and every
        participant; the orchestrator is the start and always an output executor.

        Returns:
            The validated workflow.

        Raises:
            ValueError: no orchestrator or participants, a bad review filter or output
                selection.
            TypeError: a factory made something of the wrong kind.
            WorkflowValidationError: the graph itself is invalid (duplicate ids...).
        """
        participants = self._resolve_participants()
        orchestrator = self._resolve_orchestrator(participants)
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
    """The id a participant will have in the workflow.

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


# endregion
