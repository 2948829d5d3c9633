"""What an approval request asks, readably: its fields as short lines for the decision panel,
and for the inbox list the question itself and a few key fields, so an approver can tell
requests apart (and pick several alike) without opening each one."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from django.utils.safestring import SafeString

from dashboard import services
from dashboard.models import ApprovalRequest
from dashboard.renderers.diff_values import tree
from dashboard.renderers.jsondiff import preview
from dashboard.services import tool_calls
from dashboard.web.components import time_html

__all__ = ["InboxItem", "inbox_items", "request_fields"]

# Fields whose text is the question a human is asked, in the order looked for.
QUESTION_FIELDS = ("question", "prompt", "message", "title", "summary", "description", "reason")
LIST_FIELDS = 3
LIST_QUESTIONS = {
    "handoff": "Reply to {agent} as the user",
    "plan_review": "Sign off the plan",
    "agent_review": "Review {agent}'s answer",
}
LIST_TEXT = 80


def _field_text(value: Any) -> tuple[str, bool]:
    """A request field as one line of text, and whether it is JSON (shown monospaced)."""
    if value is None:
        return "null", True
    if isinstance(value, bool):
        return ("yes" if value else "no"), False
    if isinstance(value, str | int | float):
        return str(value), False
    if isinstance(value, list) and all(isinstance(v, str | int | float) for v in value):
        return ", ".join(str(v) for v in value) or "(none)", False
    return preview(value, limit=300), True


def request_fields(approval: ApprovalRequest) -> tuple[Any, list[tuple[str, str, bool]]]:
    """The request data made readable, and its top-level fields for a quick key/value list."""
    shown = tree(approval.request_data)
    fields: list[tuple[str, str, bool]] = []
    if isinstance(shown, dict):
        for key, value in shown.items():
            if not str(key).startswith("$"):
                fields.append((str(key), *_field_text(value)))
    elif shown is not None:
        fields.append(("value", *_field_text(shown)))
    return shown, fields


@dataclass(frozen=True)
class InboxItem:
    """One row of the inbox list: the request, its question and a few of its fields."""

    approval: ApprovalRequest
    question: str
    fields: list[tuple[str, str]]
    # components/time.html's output, made in Python: fifty includes cost the page 2 ms.
    age: SafeString
    due: SafeString | None


def _short(text: str) -> str:
    return text if len(text) <= LIST_TEXT else text[: LIST_TEXT - 1] + "…"


def inbox_items(approvals: list[ApprovalRequest]) -> list[InboxItem]:
    items = []
    for approval in approvals:
        asked = tool_calls.requested_call(approval)
        if asked is not None:  # a tool call: the function is the question, its arguments the rest
            name, arguments = asked
            fields = [(key, *_field_text(value)) for key, value in arguments.items()]
            items.append(_item(approval, f"Call {name}", fields))
            continue
        words = services.message_request_of(approval)
        if words is not None:  # an orchestration's: what it asks, and the text it is about
            question = LIST_QUESTIONS[words.kind].format(agent=words.agent)
            items.append(_item(approval, question, [("text", words.text, False)]))
            continue
        _, fields = request_fields(approval)
        by_name = {name.lower(): text for name, text, _ in fields}
        question_name = next((n for n in QUESTION_FIELDS if by_name.get(n)), "")
        if not question_name and len(fields) == 1 and not fields[0][2]:
            question_name = fields[0][0].lower()  # a request that is one string is its question
        rest = [field for field in fields if field[0].lower() != question_name]
        items.append(_item(approval, by_name.get(question_name, ""), rest))
    return items


def _item(
    approval: ApprovalRequest, question: str, fields: list[tuple[str, str, bool]]
) -> InboxItem:
    return InboxItem(
        approval,
        _short(question),
        [(name, _short(text)) for name, text, _ in fields[:LIST_FIELDS]],
        age=time_html(approval.created_at, mode="duration"),
        due=None if approval.due_at is None else time_html(approval.due_at),
    )
