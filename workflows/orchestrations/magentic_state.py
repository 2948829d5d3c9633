"""What a Magentic orchestrator keeps in a checkpoint, and how it is read back.

The shape is MAF's: the group chat's ``OrchestrationState`` dict plus ``terminated``,
``magentic_context``, ``task_ledger``, ``progress_ledger`` and ``manager_state``. The records are
stored as themselves (registered dataclasses and MAF messages, which the checkpoint codec
keeps typed); reading also accepts their ``to_dict`` forms. A part that cannot be read is
dropped with a warning rather than failing the resume, as in MAF, since the run can still
go on from the conversation it has.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from agent_framework import Message

from .magentic_manager import MagenticManagerBase
from .magentic_types import MagenticContext, MagenticProgressLedger, message_from_payload

__all__ = ["MagenticRunState"]

logger = logging.getLogger(__name__)


@dataclass
class MagenticRunState:
    """The orchestrator's own part of a run: whether it finished, the manager's context, and
    the current task and progress ledgers."""

    terminated: bool = False
    context: MagenticContext | None = None
    task_ledger: Message | None = None
    progress_ledger: MagenticProgressLedger | None = None

    def save_into(self, state: dict[str, Any], manager: MagenticManagerBase) -> dict[str, Any]:
        """Add this run's keys and the manager's state to the group chat's ``state``.

        Returns:
            ``state``. A manager whose state cannot be taken is left out, with a warning.
        """
        state["terminated"] = self.terminated
        if self.context is not None:
            state["magentic_context"] = self.context
        if self.task_ledger is not None:
            state["task_ledger"] = self.task_ledger
        if self.progress_ledger is not None:
            state["progress_ledger"] = self.progress_ledger
        try:
            state["manager_state"] = manager.on_checkpoint_save()
        except Exception as exc:  # noqa: BLE001 - a user manager's failure must not stop the run
            logger.warning(f"Failed to save manager state for checkpoint: {exc}\nSkipping...")
        return state

    @classmethod
    def read_from(cls, state: dict[str, Any], manager: MagenticManagerBase) -> MagenticRunState:
        """The run's part of ``state``; the manager's state goes back into ``manager``.

        Returns:
            The run state; parts missing or unreadable are None.
        """
        manager_state = state.get("manager_state")
        if manager_state is not None:
            try:
                manager.on_checkpoint_restore(manager_state)
            except Exception as exc:  # noqa: BLE001 - as on save
                logger.warning(
                    f"Failed to restore manager state from checkpoint: {exc}\nSkipping..."
                )
        return cls(
            terminated=bool(state.get("terminated", False)),
            context=_read(state.get("magentic_context"), _context, "Magentic context"),
            task_ledger=_read(state.get("task_ledger"), message_from_payload, "task ledger"),
            progress_ledger=_read(state.get("progress_ledger"), _progress, "progress ledger"),
        )


def _context(saved: Any) -> MagenticContext:
    return saved if isinstance(saved, MagenticContext) else MagenticContext.from_dict(saved)


def _progress(saved: Any) -> MagenticProgressLedger:
    if isinstance(saved, MagenticProgressLedger):
        return saved
    return MagenticProgressLedger.from_dict(saved)


def _read[T](saved: Any, read: Callable[[Any], T], what: str) -> T | None:
    if saved is None:
        return None
    try:
        return read(saved)
    except (TypeError, ValueError, AttributeError, KeyError):
        logger.warning(f"Failed to restore {what} from checkpoint data")
        return None
