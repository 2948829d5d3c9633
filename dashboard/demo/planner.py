"""The demo Magentic team's manager: a checklist planner that needs no model.

MAF's Magentic orchestration lets any ``MagenticManagerBase`` run the team; the standard one
asks a model for JSON ledgers, which a small local model cannot write. This one plans in
plain steps, one per participant in the order the team was given, and then asks each in turn.
A reviewer who edits the plan changes the team's work: a revised plan (the reviewer's
feedback) is read back as the steps it names, in its order, so removing or reordering lines
removes or reorders the work. The agents themselves still run on the demo's model.
"""

from __future__ import annotations

import re
from typing import Any

from agent_framework import Message

# From the modules that define them: the package's lazy exports are untyped to mypy.
from workflows.orchestrations.magentic_manager import MagenticManagerBase
from workflows.orchestrations.magentic_types import (
    MagenticContext,
    MagenticProgressLedger,
    MagenticProgressLedgerItem,
)

__all__ = ["ChecklistManager"]


def _item(answer: str | bool, reason: str) -> MagenticProgressLedgerItem:
    return MagenticProgressLedgerItem(reason=reason, answer=answer)


class ChecklistManager(MagenticManagerBase):
    """Plan: one step per participant. Each round: the next participant on the plan who has
    not spoken since it was made. Done when every step is done."""

    def __init__(self, *, max_round_count: int = 12) -> None:
        super().__init__(max_round_count=max_round_count, max_stall_count=2, max_reset_count=2)
        self._order: list[str] = []

    def on_checkpoint_save(self) -> dict[str, Any]:
        return {"order": list(self._order)}

    def on_checkpoint_restore(self, state: dict[str, Any]) -> None:
        order = state.get("order")
        self._order = [str(name) for name in order] if isinstance(order, list) else []

    async def plan(self, magentic_context: MagenticContext) -> Message:
        self._order = list(magentic_context.participant_descriptions)
        return self._ledger(magentic_context, "")

    async def replan(self, magentic_context: MagenticContext) -> Message:
        feedback = _feedback(magentic_context)
        named = _named_in(feedback, list(magentic_context.participant_descriptions))
        if named:
            self._order = named
        return self._ledger(magentic_context, feedback)

    def _ledger(self, context: MagenticContext, feedback: str) -> Message:
        steps = [
            f"{number}. {name}: {context.participant_descriptions.get(name, '')}".rstrip(": ")
            for number, name in enumerate(self._order, start=1)
        ]
        lines = [f"Task: {context.task}", "Plan:", *steps]
        if feedback:
            lines += ["", f"Revised after review: {' '.join(feedback.split())[:300]}"]
        return Message(role="assistant", contents=["\n".join(lines)], author_name="planner")

    async def create_progress_ledger(
        self, magentic_context: MagenticContext
    ) -> MagenticProgressLedger:
        spoken = _spoken_since_plan(magentic_context)
        left = [name for name in self._order if name not in spoken]
        done = not left
        next_speaker = left[0] if left else (self._order[-1] if self._order else "")
        step = len(self._order) - len(left) + 1
        instruction = (
            "All steps are done."
            if done
            else f"Step {step} of {len(self._order)}: {magentic_context.task}"
        )
        return MagenticProgressLedger(
            is_request_satisfied=_item(done, f"{len(spoken)} of {len(self._order)} steps done"),
            is_in_loop=_item(False, "each step is taken once"),
            is_progress_being_made=_item(True, "a step was taken"),
            next_speaker=_item(next_speaker, "the next step of the plan"),
            instruction_or_question=_item(instruction, "from the plan"),
        )

    async def prepare_final_answer(self, magentic_context: MagenticContext) -> Message:
        replies = [m for m in magentic_context.chat_history if m.role == "assistant" and m.text]
        last = replies[-1].text if replies else "The team had nothing to say."
        return Message(role="assistant", contents=[last], author_name="planner")


def _feedback(context: MagenticContext) -> str:
    """The reviewer's words: the user messages after the task."""
    texts = [m.text for m in context.chat_history if m.role == "user" and m.text]
    return "\n".join(text for text in texts if text.strip() != context.task.strip())


def _named_in(text: str, names: list[str]) -> list[str]:
    """The participants ``text`` names, in the order it first names them."""
    found = []
    for name in names:
        match = re.search(rf"\b{re.escape(name)}\b", text, flags=re.IGNORECASE)
        if match:
            found.append((match.start(), name))
    return [name for _, name in sorted(found)]


def _spoken_since_plan(context: MagenticContext) -> set[str]:
    """Participants who answered after the latest plan in the conversation."""
    spoken: set[str] = set()
    for message in reversed(context.chat_history):
        if message.author_name == "planner":
            break
        if message.role == "assistant" and message.author_name in context.participant_descriptions:
            spoken.add(message.author_name)
    return spoken
