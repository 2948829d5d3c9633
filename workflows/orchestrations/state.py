"""``OrchestrationState``: what an orchestrator (GroupChat, Handoff, Magentic) keeps across a
checkpoint, in one shape: the conversation, the round count, its name, the task, and a
``metadata`` dict for what only one pattern needs.

``to_dict()`` keeps MAF's chat types as objects: the checkpoint codec stores ``Message`` natively,
so the dict is ready for ``on_checkpoint_save``; ``from_dict`` takes it back, missing keys
defaulting.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from agent_framework import Message

from ..registry import register_type

__all__ = ["OrchestrationState"]


def _no_messages() -> list[Message]:
    return []


def _no_metadata() -> dict[str, Any]:
    return {}


@dataclass
class OrchestrationState:
    """An orchestrator's checkpointed state.

    Attributes:
        conversation: every message of the orchestration so far.
        round_index: coordination rounds completed (0 where a pattern does not count them).
        orchestrator_name: the orchestrator's name.
        metadata: what one pattern adds (its values must be checkpoint-encodable).
        task: the task being orchestrated, when there is one.
    """

    conversation: list[Message] = field(default_factory=_no_messages)
    round_index: int = 0
    orchestrator_name: str = ""
    metadata: dict[str, Any] = field(default_factory=_no_metadata)
    task: Message | None = None

    def to_dict(self) -> dict[str, Any]:
        """The state as a dict for a checkpoint (``task`` only when set).

        Returns:
            ``conversation``, ``round_index``, ``orchestrator_name``, ``metadata`` (a copy)
            and maybe ``task``.
        """
        data: dict[str, Any] = {
            "conversation": self.conversation,
            "round_index": self.round_index,
            "orchestrator_name": self.orchestrator_name,
            "metadata": dict(self.metadata),
        }
        if self.task is not None:
            data["task"] = self.task
        return data

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> OrchestrationState:
        """The state ``to_dict`` gave, back; missing keys take their defaults.

        Args:
            data: a dict from ``to_dict`` (as restored from a checkpoint).

        Returns:
            The state.
        """
        return cls(
            conversation=list(data.get("conversation") or []),
            round_index=int(data.get("round_index", 0)),
            orchestrator_name=str(data.get("orchestrator_name", "")),
            metadata=dict(data.get("metadata") or {}),
            task=data.get("task"),
        )


# An orchestrator may keep the state object itself rather than its dict.
register_type(OrchestrationState)
