"""The records a Magentic run keeps and shows: ledgers, the manager's context, its events, the
plan-review request and answer, and the reset signal.

They are MAF 1.23's public types with its field names, ``to_dict`` / ``from_dict`` shapes and
validation messages, because users print them (``progress_ledger.to_dict()``), build them and
match on them. Every one is a registered dataclass or enum, so it can sit in a checkpoint, in a
pending request or in a message between supersteps and come back as itself.
"""

from __future__ import annotations

import contextlib
import copy
import enum
import json
from dataclasses import dataclass, field
from typing import Any, Self, cast

from agent_framework import Message

from ..registry import register_type

__all__ = [
    "MAGENTIC_MANAGER_NAME",
    "ORCH_MSG_KIND_INSTRUCTION",
    "ORCH_MSG_KIND_NOTICE",
    "ORCH_MSG_KIND_TASK_LEDGER",
    "ORCH_MSG_KIND_USER_TASK",
    "MagenticContext",
    "MagenticOrchestratorEvent",
    "MagenticOrchestratorEventType",
    "MagenticPlanReviewRequest",
    "MagenticPlanReviewResponse",
    "MagenticProgressLedger",
    "MagenticProgressLedgerItem",
    "MagenticResetSignal",
    "TaskLedger",
    "message_from_payload",
    "message_to_payload",
]

# The author of every message the manager writes (task ledger, instructions, final answer).
MAGENTIC_MANAGER_NAME = "magentic_manager"

# Kinds of manager messages, named as MAF names them for callbacks that tell them apart.
ORCH_MSG_KIND_USER_TASK = "user_task"
ORCH_MSG_KIND_TASK_LEDGER = "task_ledger"
ORCH_MSG_KIND_INSTRUCTION = "instruction"
ORCH_MSG_KIND_NOTICE = "notice"


def message_to_payload(message: Message) -> Any:
    """``message`` as the JSON-shaped dict MAF's ``to_dict`` forms hold."""
    return message.to_dict()


def message_from_payload(payload: Any) -> Message:
    """A ``Message`` back from a ``Message``, its dict form, or that dict as JSON text.

    Raises:
        TypeError: ``payload`` is none of these.
    """
    if isinstance(payload, Message):
        return payload
    if isinstance(payload, str):
        try:
            payload = json.loads(payload)
        except ValueError:
            raise TypeError("Unable to reconstruct Message from payload") from None
    if isinstance(payload, dict):
        with contextlib.suppress(TypeError, ValueError, KeyError, AttributeError):
            return Message.from_dict(cast(dict[str, Any], payload))
    raise TypeError("Unable to reconstruct Message from payload")


class _DictModel:
    """MAF's ``DictConvertible`` surface: dict and JSON forms, and copies."""

    def to_dict(self) -> dict[str, Any]:
        raise NotImplementedError

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Self:
        return cls(**data)

    def clone(self, *, deep: bool = True) -> Self:
        """A copy; ``deep`` copies the messages and dicts inside too."""
        return copy.deepcopy(self) if deep else copy.copy(self)

    def to_json(self) -> str:
        return json.dumps(self.to_dict())

    @classmethod
    def from_json(cls, raw: str) -> Self:
        """Raises ValueError: the JSON is not an object."""
        data = json.loads(raw)
        if not isinstance(data, dict):
            raise ValueError("JSON payload must decode to a mapping")  # noqa: TRY004 - MAF's type
        return cls.from_dict(cast(dict[str, Any], data))


@register_type
@dataclass
class TaskLedger(_DictModel):
    """The standard manager's current facts and plan, as the model wrote them."""

    facts: Message
    plan: Message

    def to_dict(self) -> dict[str, Any]:
        return {"facts": message_to_payload(self.facts), "plan": message_to_payload(self.plan)}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Self:
        """Raises TypeError: a field is not a message or its dict form."""
        return cls(
            facts=message_from_payload(data.get("facts")),
            plan=message_from_payload(data.get("plan")),
        )


@register_type
@dataclass
class MagenticProgressLedgerItem(_DictModel):
    """One answer of the progress ledger, with the model's reason for it."""

    reason: str
    answer: str | bool

    def to_dict(self) -> dict[str, Any]:
        return {"reason": self.reason, "answer": self.answer}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Self:
        """An answer that is neither text nor a boolean becomes ``""`` (as in MAF)."""
        answer = data.get("answer")
        if not isinstance(answer, (str, bool)):
            answer = ""
        return cls(reason=data.get("reason", ""), answer=answer)


_LEDGER_FIELDS = (
    "is_request_satisfied",
    "is_in_loop",
    "is_progress_being_made",
    "next_speaker",
    "instruction_or_question",
)


@register_type
@dataclass
class MagenticProgressLedger(_DictModel):
    """The manager's verdict after a round: done? looping? progressing? who speaks next, and
    what to tell them."""

    is_request_satisfied: MagenticProgressLedgerItem
    is_in_loop: MagenticProgressLedgerItem
    is_progress_being_made: MagenticProgressLedgerItem
    next_speaker: MagenticProgressLedgerItem
    instruction_or_question: MagenticProgressLedgerItem

    def to_dict(self) -> dict[str, Any]:
        return {name: getattr(self, name).to_dict() for name in _LEDGER_FIELDS}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Self:
        """Missing items become empty ones (reason ``""``, answer ``""``)."""
        items = {
            name: MagenticProgressLedgerItem.from_dict(data.get(name, {}))
            for name in _LEDGER_FIELDS
        }
        return cls(**items)


def _no_messages() -> list[Message]:
    return []


def _no_descriptions() -> dict[str, str]:
    return {}


@register_type
@dataclass
class MagenticContext(_DictModel):
    """What the manager reasons over: the task, the conversation so far, the team, and the
    round, stall and reset counters."""

    task: str
    chat_history: list[Message] = field(default_factory=_no_messages)
    participant_descriptions: dict[str, str] = field(default_factory=_no_descriptions)
    round_count: int = 0
    stall_count: int = 0
    reset_count: int = 0

    def to_dict(self) -> dict[str, Any]:
        return {
            "task": self.task,
            "chat_history": [message_to_payload(m) for m in self.chat_history],
            "participant_descriptions": dict(self.participant_descriptions),
            "round_count": self.round_count,
            "stall_count": self.stall_count,
            "reset_count": self.reset_count,
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Self:
        """Raises ValueError: no ``task`` text, or no non-empty str-to-str
        ``participant_descriptions``; TypeError: a history item that is not a message."""
        task = data.get("task")
        if not isinstance(task, str):
            raise ValueError("MagenticContext requires a 'task' string field.")  # noqa: TRY004
        history = [message_from_payload(item) for item in data.get("chat_history", [])]
        descriptions = data.get("participant_descriptions")
        if not isinstance(descriptions, dict) or not descriptions:
            raise ValueError(
                "MagenticContext requires a 'participant_descriptions' dictionary field."
            )
        pairs = descriptions.items()
        if not all(isinstance(k, str) and isinstance(v, str) for k, v in pairs):
            raise ValueError(
                "MagenticContext 'participant_descriptions' must be a dict of str to str."
            )
        return cls(
            task=task,
            chat_history=history,
            participant_descriptions=cast(dict[str, str], descriptions),
            round_count=data.get("round_count", 0),
            stall_count=data.get("stall_count", 0),
            reset_count=data.get("reset_count", 0),
        )

    def reset(self) -> None:
        """Start a new attempt: forget the conversation and the stalls, count the reset.

        The task, the round count and the team stay.
        """
        self.chat_history.clear()
        self.stall_count = 0
        self.reset_count += 1


@register_type
@dataclass
class MagenticResetSignal:
    """Sent by the orchestrator to every participant when it replans: each agent forgets its
    conversation and session and starts the new plan fresh."""


@register_type
class MagenticOrchestratorEventType(str, enum.Enum):
    """What a ``magentic_orchestrator`` event reports."""

    PLAN_CREATED = "plan_created"
    REPLANNED = "replanned"
    PROGRESS_LEDGER_UPDATED = "progress_ledger_updated"


@register_type
@dataclass
class MagenticOrchestratorEvent:
    """The data of a ``magentic_orchestrator`` event: a task ledger message (plan created or
    replanned) or a progress ledger (each round)."""

    event_type: MagenticOrchestratorEventType
    content: Message | MagenticProgressLedger


@register_type
@dataclass
class MagenticPlanReviewResponse:
    """A person's answer to a plan review: no messages approves the plan; messages are
    feedback, after which the manager replans and asks again."""

    review: list[Message]

    @staticmethod
    def approve() -> MagenticPlanReviewResponse:
        """Returns: an approval."""
        return MagenticPlanReviewResponse(review=[])

    @staticmethod
    def revise(
        feedback: str | list[str] | Message | list[Message],
    ) -> MagenticPlanReviewResponse:
        """Feedback asking for a new plan; text becomes user messages.

        Returns: the revision request.
        """
        if isinstance(feedback, str):
            review = [Message(role="user", contents=[feedback])]
        elif isinstance(feedback, Message):
            review = [feedback]
        else:
            review = [
                Message(role="user", contents=[item]) if isinstance(item, str) else item
                for item in feedback
            ]
        return MagenticPlanReviewResponse(review=review)


@register_type
@dataclass
class MagenticPlanReviewRequest:
    """Asks a person to review a plan before the team works on it.

    Attributes:
        plan: the task ledger message.
        current_progress: the progress ledger that led to a replan; None at the first review.
        is_stalled: whether the plan comes from a replan after the team stalled.
    """

    plan: Message
    current_progress: MagenticProgressLedger | None
    is_stalled: bool

    def approve(self) -> MagenticPlanReviewResponse:
        """Returns: an approval of this plan."""
        return MagenticPlanReviewResponse.approve()

    def revise(
        self, feedback: str | list[str] | Message | list[Message]
    ) -> MagenticPlanReviewResponse:
        """Returns: feedback on this plan (see ``MagenticPlanReviewResponse.revise``)."""
        return MagenticPlanReviewResponse.revise(feedback)
