"""Which participants' yields an orchestration shows: its output_from and intermediate_output_from.

Every builder takes the two arguments in MAF's terms (participants named by agent, executor or
id; ``"all"``; ``"all_other"``) and turns them, once its participants are executors, into the
executor lists ``WorkflowBuilder`` designates. Each builder adds its own defaults: Sequential
shows its last participant, Handoff every agent, Concurrent / GroupChat / Magentic their
aggregator or orchestrator (an extra output executor that is not a participant).

Builders call ``coalesce_output_from`` and ``coerce_intermediate_output_from`` in their
constructors (so a bad literal fails at once, as in MAF) and ``resolve_participant_output_config``
in ``build()``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Final, Literal, Self

from agent_framework import SupportsAgentRun

from ..agents.executor import resolve_agent_id
from ..executor import Executor

__all__ = [
    "ALL_OTHER_OUTPUTS",
    "ALL_OUTPUTS",
    "ParticipantIntermediateOutputSelection",
    "ParticipantOutputSelection",
    "ParticipantOutputSpecifier",
    "UNSET",
    "UnsetType",
    "coalesce_output_from",
    "coerce_intermediate_output_from",
    "coerce_output_from",
    "participant_id",
    "resolve_participant_output_config",
]


class UnsetType:
    """The type of ``UNSET``: an argument the caller did not pass (None is a value there)."""

    _instance: UnsetType | None = None

    def __new__(cls) -> Self:
        if not isinstance(cls._instance, cls):
            cls._instance = super().__new__(cls)
        return cls._instance

    def __repr__(self) -> str:
        return "UNSET"

    def __bool__(self) -> bool:
        return False


UNSET: Final = UnsetType()

ALL_OUTPUTS: Final = "all"
ALL_OTHER_OUTPUTS: Final = "all_other"

ParticipantOutputSpecifier = str | SupportsAgentRun | Executor
ParticipantOutputSelection = Sequence[ParticipantOutputSpecifier] | Literal["all"] | None
ParticipantIntermediateOutputSelection = (
    Sequence[ParticipantOutputSpecifier] | Literal["all", "all_other"] | None
)


def coalesce_output_from(*, output_from: Any = UNSET) -> ParticipantOutputSelection:
    """A builder's ``output_from`` argument as a selection; not passed means None.

    Raises:
        ValueError: an unknown literal, or ``"all_other"`` (only intermediates take it).
    """
    if isinstance(output_from, UnsetType):
        return None
    return coerce_output_from(output_from)


def coerce_output_from(output_from: Any) -> ParticipantOutputSelection:
    """``output_from`` as None, ``"all"`` or a list of participants.

    Raises:
        ValueError: a string other than ``"all"``.
    """
    if output_from is None:
        return None
    if isinstance(output_from, str):
        if output_from == ALL_OUTPUTS:
            return ALL_OUTPUTS
        if output_from == ALL_OTHER_OUTPUTS:
            raise ValueError(
                "output_from='all_other' is invalid; use intermediate_output_from='all_other' "
                "instead."
            )
        raise ValueError(
            f"Unsupported output_from literal {output_from!r}; use 'all' or a list of participants."
        )
    return list(output_from)


def coerce_intermediate_output_from(
    intermediate_output_from: Any,
) -> ParticipantIntermediateOutputSelection:
    """``intermediate_output_from`` as None, ``"all"``, ``"all_other"`` or a list.

    Raises:
        ValueError: any other string.
    """
    if intermediate_output_from is None:
        return None
    if isinstance(intermediate_output_from, str):
        if intermediate_output_from in (ALL_OUTPUTS, ALL_OTHER_OUTPUTS):
            return intermediate_output_from
        raise ValueError(
            f"Unsupported intermediate_output_from literal {intermediate_output_from!r}; use "
            "'all', 'all_other', or a list of participants."
        )
    return list(intermediate_output_from)


def resolve_participant_output_config(
    *,
    participants: Sequence[Executor],
    output_from: ParticipantOutputSelection,
    intermediate_output_from: ParticipantIntermediateOutputSelection,
    default_output_from: Sequence[Executor] = (),
    extra_output_executors: Sequence[Executor] = (),
) -> tuple[list[Executor], list[Executor]]:
    """The executors whose yields are outputs, and those whose yields are intermediate.

    Args:
        participants: the orchestration's participants, as executors.
        output_from: the builder's (coerced) ``output_from``.
        intermediate_output_from: the builder's (coerced) ``intermediate_output_from``.
        default_output_from: the outputs when ``output_from`` is not given, less any
            participant listed as intermediate.
        extra_output_executors: executors that are always outputs (an aggregator or an
            orchestrator), placed first.

    Returns:
        ``(output executors, intermediate executors)`` for ``WorkflowBuilder``.

    Raises:
        ValueError: both selections given but empty, an unknown or repeated participant, or a
            participant selected as both.
    """
    explicit = output_from is not None or intermediate_output_from is not None
    if explicit and not (output_from or intermediate_output_from):
        raise ValueError("output_from and intermediate_output_from cannot both be empty.")
    by_id = {participant.id: participant for participant in participants}
    outputs = _outputs(
        output_from, intermediate_output_from, participants, by_id, default_output_from
    )
    intermediates = _intermediates(intermediate_output_from, participants, by_id, outputs)
    output_ids = {participant.id for participant in outputs}
    both = sorted(output_ids.intersection(p.id for p in intermediates))
    if both:
        raise ValueError(f"Participants cannot be both output and intermediate designated: {both}")
    return [*extra_output_executors, *outputs], intermediates


def _outputs(
    output_from: ParticipantOutputSelection,
    intermediate_output_from: ParticipantIntermediateOutputSelection,
    participants: Sequence[Executor],
    by_id: dict[str, Executor],
    default_output_from: Sequence[Executor],
) -> list[Executor]:
    if output_from == ALL_OUTPUTS:
        return list(participants)
    if output_from is not None:
        return _designated(output_from, "output", by_id)
    if intermediate_output_from in (ALL_OUTPUTS, ALL_OTHER_OUTPUTS):
        return []
    # A default output (Sequential's last participant, Handoff's agents) the caller asked to
    # see as intermediate is intermediate only: the default must not make that an overlap.
    listed: set[str] = set()
    if intermediate_output_from is not None:
        listed = {p.id for p in _designated(intermediate_output_from, "intermediate", by_id)}
    return [participant for participant in default_output_from if participant.id not in listed]


def _intermediates(
    intermediate_output_from: ParticipantIntermediateOutputSelection,
    participants: Sequence[Executor],
    by_id: dict[str, Executor],
    outputs: list[Executor],
) -> list[Executor]:
    if intermediate_output_from is None:
        return []
    if intermediate_output_from == ALL_OUTPUTS:
        return list(participants)
    if intermediate_output_from == ALL_OTHER_OUTPUTS:
        output_ids = {participant.id for participant in outputs}
        return [participant for participant in participants if participant.id not in output_ids]
    return _designated(intermediate_output_from, "intermediate", by_id)


def _designated(
    selection: Sequence[ParticipantOutputSpecifier] | str,
    kind: str,
    by_id: dict[str, Executor],
) -> list[Executor]:
    """The participants a list names, in its order."""
    assert not isinstance(selection, str)  # literals are handled by the callers
    known = sorted(by_id)
    chosen: list[Executor] = []
    seen: set[str] = set()
    for item in selection:
        pid = participant_id(item)
        if pid in seen:
            raise ValueError(f"Duplicate {kind} participant '{pid}' in {kind}_participants.")
        seen.add(pid)
        if pid not in by_id:
            raise ValueError(f"Unknown {kind} participant '{pid}'. Known participants: {known}")
        chosen.append(by_id[pid])
    return chosen


def participant_id(participant: ParticipantOutputSpecifier) -> str:
    """The executor id a participant is known by: a name as is, an executor's id, an agent's
    name (else its id).

    Raises:
        TypeError: ``participant`` is none of those.
    """
    if isinstance(participant, str):
        return participant
    if isinstance(participant, Executor):
        return participant.id
    if isinstance(participant, SupportsAgentRun):
        return resolve_agent_id(participant)
    # MAF reads any object's name (else id); keep accepting agent-like objects.
    name = getattr(participant, "name", None) or getattr(participant, "id", None)
    if isinstance(name, str) and name:
        return name
    raise TypeError(
        f"participants are named by id, executor or agent, not {type(participant).__name__}"
    )
