"""An orchestration drawn as what it is, from its run's events: who handed off to whom (a
handoff), who spoke in which round (a group chat), the plan and the progress ledger of each
round (Magentic). Sequential and concurrent orchestrations need nothing more than the executor
timeline, where each participant is an executor with its own turns.

Pure: the events as the run's log keeps them (codec JSON, read without decoding, so that a
class gone from the code still reads), oldest first, each with the superstep it happened in.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping
from typing import Any

__all__ = [
    "Handoff",
    "Ledger",
    "Orchestration",
    "Plan",
    "Round",
    "orchestration_of",
]

_TEXT_LIMIT = 6000


@dataclasses.dataclass(frozen=True)
class Handoff:
    source: str
    target: str
    superstep: int | None


@dataclasses.dataclass(frozen=True)
class Round:
    """A group chat's round: who the orchestrator asked to speak, in order."""

    number: int  # from 1
    speakers: tuple[str, ...]
    superstep: int | None


@dataclasses.dataclass(frozen=True)
class Plan:
    """A Magentic manager's plan (its task ledger): the first one or a replan."""

    text: str
    replanned: bool
    superstep: int | None


@dataclasses.dataclass(frozen=True)
class Ledger:
    """A Magentic manager's verdict after a round."""

    superstep: int | None
    next_speaker: str
    instruction: str
    satisfied: bool | None
    progressing: bool | None
    in_loop: bool | None
    reason: str


@dataclasses.dataclass(frozen=True)
class Orchestration:
    handoffs: tuple[Handoff, ...] = ()
    rounds: tuple[Round, ...] = ()
    plans: tuple[Plan, ...] = ()
    ledgers: tuple[Ledger, ...] = ()

    @property
    def shown(self) -> bool:
        return bool(self.handoffs or self.rounds or self.plans or self.ledgers)

    @property
    def plan(self) -> Plan | None:
        """The plan in force: the latest."""
        return self.plans[-1] if self.plans else None


def _plain(value: Any) -> Any:
    """A codec value without its tag: a model's or MAF value's fields, an enum's value."""
    if isinstance(value, Mapping) and value.get("$t") in ("model", "agent", "enum"):
        return value.get("v")
    return value


def _name(value: Any) -> str:
    return str(value.get("name") or "") if isinstance(value, Mapping) else ""


def _text_of(message: Any) -> str:
    fields = _plain(message)
    if not isinstance(fields, Mapping):
        return ""
    parts = [
        str(content.get("text") or "")
        for content in fields.get("contents") or []
        if isinstance(content, Mapping) and content.get("type") == "text"
    ]
    text = "\n".join(part for part in parts if part)
    return text if len(text) <= _TEXT_LIMIT else text[:_TEXT_LIMIT] + "…"


def _answer(ledger: Mapping[str, Any], key: str) -> Any:
    item = _plain(ledger.get(key))
    return item.get("answer") if isinstance(item, Mapping) else None


def _reason(ledger: Mapping[str, Any], key: str) -> str:
    item = _plain(ledger.get(key))
    return str(item.get("reason") or "") if isinstance(item, Mapping) else ""


def _flag(value: Any) -> bool | None:
    return value if isinstance(value, bool) else None


def orchestration_of(
    events: Iterable[tuple[str, Mapping[str, Any]]], *, up_to: int | None = None
) -> Orchestration:
    """What the events (``(type, data)``, oldest first) say of the orchestration, up to the
    end of superstep ``up_to`` when given (a checkpoint's view)."""
    superstep: int | None = None
    handoffs: list[Handoff] = []
    rounds: dict[int, list[str]] = {}
    round_steps: dict[int, int | None] = {}
    plans: list[Plan] = []
    ledgers: list[Ledger] = []
    for kind, data in events:
        if kind == "superstep_started":
            iteration = data.get("iteration")
            superstep = iteration if isinstance(iteration, int) else superstep
            if up_to is not None and superstep is not None and superstep > up_to:
                break
            continue
        payload = data.get("data")
        fields = _plain(payload)
        if not isinstance(fields, Mapping):
            continue
        if kind == "handoff_sent":
            handoffs.append(
                Handoff(str(fields.get("source") or ""), str(fields.get("target") or ""), superstep)
            )
        elif kind == "group_chat" and _name(payload).endswith("GroupChatRequestSentEvent"):
            index = fields.get("round_index")
            if isinstance(index, int):
                rounds.setdefault(index, []).append(str(fields.get("participant_name") or ""))
                round_steps.setdefault(index, superstep)
        elif kind == "magentic_orchestrator":
            # The codec writes an enum member by name (PLAN_CREATED); MAF's values are lower.
            what = str(_plain(fields.get("event_type")) or "").lower()
            content = fields.get("content")
            if what in ("plan_created", "replanned"):
                plans.append(Plan(_text_of(content), what == "replanned", superstep))
            elif what == "progress_ledger_updated" and isinstance(_plain(content), Mapping):
                ledger = _plain(content)
                ledgers.append(
                    Ledger(
                        superstep=superstep,
                        next_speaker=str(_answer(ledger, "next_speaker") or ""),
                        instruction=str(_answer(ledger, "instruction_or_question") or ""),
                        satisfied=_flag(_answer(ledger, "is_request_satisfied")),
                        progressing=_flag(_answer(ledger, "is_progress_being_made")),
                        in_loop=_flag(_answer(ledger, "is_in_loop")),
                        reason=_reason(ledger, "is_request_satisfied"),
                    )
                )
    return Orchestration(
        handoffs=tuple(handoffs),
        rounds=tuple(
            Round(index + 1, tuple(rounds[index]), round_steps[index]) for index in sorted(rounds)
        ),
        plans=tuple(plans),
        ledgers=tuple(ledgers),
    )
