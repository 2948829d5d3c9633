"""``HandoffBuilder``: agents that pass the conversation to each other by calling a tool.

There is no orchestrator: each agent gets a ``handoff_to_<id>`` tool per agent it may hand over
to (every other agent by default, or the routes ``add_handoff`` declares), and calling one gives
that agent the floor. An agent that answers without handing over waits for the user (a
``HandoffAgentUserRequest``), or, in autonomous mode, carries on alone up to a turn limit. The
termination condition, checked on the whole conversation, ends the run.

Every agent's answer is a workflow output as it speaks (``AgentResponse``, or its
``AgentResponseUpdate`` chunks when streaming). The graph is fully connected, so an agent can
share what it heard with all the others; ``HandoffAgentExecutor`` does the routing.

Public names, errors and observable behaviour follow Microsoft Agent Framework 1.23's
``agent_framework_orchestrations._handoff``.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Literal, cast

from agent_framework import Agent, SupportsAgentRun

from ..agents.executor import resolve_agent_id
from ..builder import WorkflowBuilder
from .handoff_executor import HandoffAgentExecutor
from .handoff_messages import HandoffAgentUserRequest, HandoffSentEvent
from .handoff_tools import HANDOFF_FUNCTION_RESULT_KEY, HandoffConfiguration, get_handoff_tool_name
from .participant_output import (
    UNSET,
    ParticipantIntermediateOutputSelection,
    ParticipantOutputSpecifier,
    coalesce_output_from,
    coerce_intermediate_output_from,
    resolve_participant_output_config,
)

if TYPE_CHECKING:
    from ..storage.protocol import CheckpointStorage
    from ..workflow import Workflow
    from .base_group_chat import TerminationCondition

__all__ = [
    "DEFAULT_WORKFLOW_NAME",
    "HANDOFF_FUNCTION_RESULT_KEY",
    "HandoffAgentExecutor",
    "HandoffAgentUserRequest",
    "HandoffBuilder",
    "HandoffConfiguration",
    "HandoffSentEvent",
    "get_handoff_tool_name",
]

logger = logging.getLogger(__name__)

DEFAULT_WORKFLOW_NAME = "Handoff"


class HandoffBuilder:
    """Builds a workflow of agents that hand the conversation to each other.

    Args:
        name: the workflow's name; ``"Handoff"`` by default.
        participants: the agents (``Agent`` instances, each with a distinct name, else id);
            ``participants([...])`` may give them later.
        description: the workflow's description.
        checkpoint_storage: where the workflow saves its checkpoints.
        termination_condition: given the whole conversation, True (or an awaitable of True)
            ends the run; checked before and after every agent's turn.
        output_from: the agents whose answers are ``output`` events (all of them by default;
            ``"all"`` says so explicitly).
        intermediate_output_from: the agents whose answers are ``intermediate`` events
            (``"all_other"``: every agent not in ``output_from``); other agents' are hidden.

    Raises:
        ValueError: an unknown ``output_from`` / ``intermediate_output_from`` literal, or a bad
            participant list (see ``participants``).
        TypeError: a participant that is not an ``Agent``.
    """

    def __init__(
        self,
        *,
        name: str | None = None,
        participants: Sequence[Agent[Any]] | None = None,
        description: str | None = None,
        checkpoint_storage: CheckpointStorage | None = None,
        termination_condition: TerminationCondition | None = None,
        output_from: Sequence[ParticipantOutputSpecifier] | Literal["all"] | None = cast(
            Any, UNSET
        ),
        intermediate_output_from: ParticipantIntermediateOutputSelection = None,
    ) -> None:
        self._name = name or DEFAULT_WORKFLOW_NAME
        self._description = description
        self._participants: dict[str, Agent[Any]] = {}
        self._start_id: str | None = None
        if participants:
            self.participants(participants)
        # Per source, its routes by target id, in the order they were declared.
        self._handoff_config: dict[str, dict[str, HandoffConfiguration]] = {}
        self._return_to_previous = True
        self._checkpoint_storage = checkpoint_storage
        self._autonomous_mode = False
        self._autonomous_mode_prompts: dict[str, str] = {}
        self._autonomous_mode_turn_limits: dict[str, int] = {}
        self._autonomous_mode_enabled_agents: list[str] = []
        self._termination_condition = termination_condition
        self._output_from = coalesce_output_from(output_from=output_from)
        self._intermediate_output_from = coerce_intermediate_output_from(intermediate_output_from)

    # ------------------------------------------------------------------------- configuration

    def participants(self, participants: Sequence[Agent[Any]]) -> HandoffBuilder:
        """Set the agents of the workflow (once).

        Returns:
            The builder.

        Raises:
            ValueError: participants were already set, the list is empty, or two agents have
                the same name (else id).
            TypeError: a participant is not an ``Agent`` (the workflow copies each agent and
                adds tools and middleware to it, which only ``Agent`` allows).
        """
        if self._participants:
            raise ValueError("participants have already been assigned")
        if not participants:
            raise ValueError("participants cannot be empty")
        named: dict[str, Agent[Any]] = {}
        for participant in participants:
            if not isinstance(participant, Agent):
                raise TypeError(
                    f"Participants must be Agent instances. Got {type(participant).__name__}. "
                    "Handoff workflows require Agent because they rely on cloning, tool "
                    "injection, and middleware capabilities."
                )
            participant_id = _agent_id(participant)
            if participant_id in named:
                raise ValueError(f"Duplicate participant name '{participant_id}' detected")
            named[participant_id] = participant
        self._participants = named
        return self

    def add_handoff(
        self,
        source: Agent[Any] | str,
        targets: Sequence[Agent[Any] | str],
        *,
        description: str | None = None,
    ) -> HandoffBuilder:
        """Let ``source`` hand the conversation to each of ``targets``.

        Once any route is declared, only declared routes exist (otherwise every agent may hand
        over to every other). Declaring a route again replaces its description, with a warning.

        Args:
            source: the agent (or its id) that hands over.
            targets: the agents (or their ids) it may hand over to.
            description: the handoff tools' description; by default each target's own.

        Returns:
            The builder.

        Raises:
            ValueError: participants are not set yet, or ``source`` or a target is not one.
            TypeError: ``source`` or a target is neither an agent nor an id.
        """
        if not self._participants:
            raise ValueError("Call participants(...) before add_handoff(...)")
        source_id = _agent_id(source)
        if source_id not in self._participants:
            raise ValueError(f"Source agent '{source}' is not in the participants list")
        target_ids: list[str] = []
        for target in targets:
            target_id = _agent_id(target)
            if target_id not in self._participants:
                raise ValueError(f"Target agent '{target}' is not in the participants list")
            target_ids.append(target_id)
        routes = self._handoff_config.setdefault(source_id, {})
        for target_id in target_ids:
            if routes.pop(target_id, None) is not None:
                logger.warning(
                    f"Handoff from '{source_id}' to '{target_id}' is already configured; "
                    "overwriting."
                )
            routes[target_id] = HandoffConfiguration(target=target_id, description=description)
        return self

    def with_start_agent(self, agent: Agent[Any] | str) -> HandoffBuilder:
        """Set the agent that receives the user's first messages.

        Returns:
            The builder.

        Raises:
            ValueError: participants are not set yet, or ``agent`` is not one of them.
            TypeError: ``agent`` is neither an agent nor an id.
        """
        start_id = _agent_id(agent)
        if not self._participants:
            raise ValueError("Call participants(...) before with_start_agent(...)")
        if start_id not in self._participants:
            raise ValueError(f"Start agent '{start_id}' is not in the participants list")
        self._start_id = start_id
        return self

    def enable_return_to_previous(self, enabled: bool = True) -> HandoffBuilder:
        """Whether a user's reply goes to the agent that asked (the default) or, when
        disabled, to the start agent, which may then hand over again.

        Returns:
            The builder.
        """
        self._return_to_previous = enabled
        return self

    def with_autonomous_mode(
        self,
        *,
        agents: Sequence[Agent[Any]] | Sequence[str] | None = None,
        prompts: dict[str, str] | None = None,
        turn_limits: dict[str, int] | None = None,
    ) -> HandoffBuilder:
        """Let agents go on without the user after an answer that hands over to no one.

        Args:
            agents: the agents (or ids) that may; all of them by default.
            prompts: per agent id, the user turn added when it goes on alone (by default
                "User did not respond. Continue assisting autonomously.").
            turn_limits: per agent id, how many turns it may go on alone before the user is
                asked (50 by default; ``0`` means it never goes on alone).

        Returns:
            The builder.
        """
        self._autonomous_mode = True
        self._autonomous_mode_prompts = prompts or {}
        self._autonomous_mode_turn_limits = turn_limits or {}
        self._autonomous_mode_enabled_agents = [_agent_id(a) for a in agents] if agents else []
        return self

    def with_checkpointing(self, checkpoint_storage: CheckpointStorage) -> HandoffBuilder:
        """Save a checkpoint after every superstep to ``checkpoint_storage``, so a run can be
        resumed (in any process) where it paused.

        Returns:
            The builder.
        """
        self._checkpoint_storage = checkpoint_storage
        return self

    def with_termination_condition(
        self, termination_condition: TerminationCondition
    ) -> HandoffBuilder:
        """End the run when ``termination_condition(conversation)`` is True (it may be async).

        Returns:
            The builder.
        """
        self._termination_condition = termination_condition
        return self

    # --------------------------------------------------------------------------------- build

    def build(self) -> Workflow:
        """The workflow: one ``HandoffAgentExecutor`` per agent, every one linked to every
        other, starting at the start agent.

        Returns:
            The workflow.

        Raises:
            ValueError: no participants; an agent without
                ``require_per_service_call_history_persistence=True`` (its local history would
                keep handoff results the service never saw); no start agent; a bad output
                designation; an agent that already has a tool named like a handoff tool.
        """
        agents = self._resolve_agents()
        missing = [
            _agent_id(agent)
            for agent in agents.values()
            if not agent.require_per_service_call_history_persistence
        ]
        if missing:
            raise ValueError(
                "Handoff workflows require all participant agents to have "
                "'require_per_service_call_history_persistence=True'. "
                f"The following agents are missing this setting: {', '.join(missing)}. "
                "Set this flag when constructing each Agent to ensure local history stays "
                "consistent with the service across handoff tool-call short-circuits."
            )
        executors = self._make_executors(agents, self._resolve_handoffs(agents))
        if self._start_id is None:
            raise ValueError("Must call with_start_agent(...) before building the workflow.")
        everyone = list(executors.values())
        outputs, intermediates = resolve_participant_output_config(
            participants=everyone,
            output_from=self._output_from,
            intermediate_output_from=self._intermediate_output_from,
            default_output_from=everyone,
        )
        builder = WorkflowBuilder(
            name=self._name,
            description=self._description,
            start_executor=executors[self._start_id],
            checkpoint_storage=self._checkpoint_storage,
            output_from=outputs,
            intermediate_output_from=intermediates,
        )
        # Fully connected: whoever speaks must be able to tell everyone else.
        for executor in everyone:
            others = [other for other in everyone if other.id != executor.id]
            if len(others) > 1:
                builder.add_fan_out_edges(executor, others)
            elif others:
                builder.add_edge(executor, others[0])
        return builder.build()

    def _resolve_agents(self) -> dict[str, Agent[Any]]:
        if not self._participants:
            raise ValueError("No participants provided. Call .participants() first.")
        return self._participants

    def _resolve_handoffs(
        self, agents: dict[str, Agent[Any]]
    ) -> dict[str, list[HandoffConfiguration]]:
        """Each source's routes, with the target's description where none was given; every
        agent to every other when no route was declared."""
        resolved: dict[str, list[HandoffConfiguration]] = {}
        if not self._handoff_config:
            for source_id in agents:
                resolved[source_id] = [
                    HandoffConfiguration(target=target_id, description=target.description)
                    for target_id, target in agents.items()
                    if target_id != source_id
                ]
            return resolved
        for source_id, routes in self._handoff_config.items():
            if source_id not in agents:
                raise ValueError(
                    f"Handoff source agent '{source_id}' not found. "
                    "Please make sure source has been added as a participant."
                )
            for route in routes.values():
                target = agents.get(route.target_id)
                if target is None:
                    raise ValueError(
                        f"Handoff target agent '{route.target_id}' not found for source "
                        f"'{source_id}'. Please make sure target has been added as a participant."
                    )
                resolved.setdefault(source_id, []).append(
                    HandoffConfiguration(
                        target=route.target_id, description=route.description or target.description
                    )
                )
        return resolved

    def _make_executors(
        self, agents: dict[str, Agent[Any]], handoffs: dict[str, list[HandoffConfiguration]]
    ) -> dict[str, HandoffAgentExecutor]:
        executors: dict[str, HandoffAgentExecutor] = {}
        for agent_id, agent in agents.items():
            routes = handoffs.get(agent_id, [])
            if not routes:
                logger.warning(
                    f"No handoff configuration found for agent '{agent_id}'. This agent will not "
                    "be able to hand off to any other agents and your workflow may get stuck."
                )
            autonomous = self._autonomous_mode and (
                not self._autonomous_mode_enabled_agents
                or agent_id in self._autonomous_mode_enabled_agents
            )
            executors[agent_id] = HandoffAgentExecutor(
                agent=agent,
                handoffs=routes,
                is_start_agent=agent_id == self._start_id,
                user_response_target_id=None if self._return_to_previous else self._start_id,
                termination_condition=self._termination_condition,
                autonomous_mode=autonomous,
                autonomous_mode_prompt=self._autonomous_mode_prompts.get(agent_id),
                autonomous_mode_turn_limit=self._autonomous_mode_turn_limits.get(agent_id),
            )
        return executors


def _agent_id(candidate: SupportsAgentRun | str) -> str:
    """The id a participant reference stands for: an agent's name (else id), or the id given.

    Raises:
        TypeError: ``candidate`` is neither.
    """
    if isinstance(candidate, SupportsAgentRun):
        return resolve_agent_id(candidate)
    if isinstance(candidate, str):
        return candidate
    raise TypeError(f"Invalid starting agent reference: {type(candidate).__name__}")
