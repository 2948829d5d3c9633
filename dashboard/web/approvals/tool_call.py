"""A tool call in the inbox: the agent, the function with its description, its arguments as a
form generated from the tool's JSON schema (editable only when the workflow marks the tool so,
``services.tool_calls``) and the agent's conversation so far, read from the checkpoint the
request was raised in."""

from __future__ import annotations

import json
from typing import Any

from django import forms
from django.urls import reverse

from dashboard import selectors
from dashboard.models import ApprovalRequest, ApprovalStatus
from dashboard.renderers import conversation
from dashboard.services import tool_calls
from dashboard.web.forms import SchemaFieldsForm

__all__ = ["CONVERSATION_TURNS", "ToolArgumentsForm", "arguments_form", "tool_call_context"]

# The newest turns shown beside the decision; the run page has the rest.
CONVERSATION_TURNS = 20
PREFIX = "arguments"


class ToolArgumentsForm(SchemaFieldsForm):
    """The call's arguments, one field per property of the tool's schema, prefilled with what
    the agent asked for; ``value()`` is the answer the service takes: the agent's arguments
    with what the approver changed, and nothing the form itself would change."""

    def __init__(self, schema: dict[str, Any], *args: Any, asked: dict[str, Any], **kwargs: Any):
        super().__init__(schema, *args, defaults=asked, **kwargs)
        self.asked = dict(asked)
        for name, field in self.fields.items():
            # A one-line input drops a text's line breaks: text that has some gets a box.
            if isinstance(asked.get(name), str) and "\n" in asked[name]:
                field.widget = forms.Textarea(attrs={"rows": 4})

    def value(self) -> dict[str, Any]:
        # What the form has no field for stays as asked; a field left blank is left out, for
        # the service to say whether the tool can do without it.
        arguments = {k: v for k, v in self.asked.items() if k not in self.fields}
        for name, given in super().value().items():
            new = _one_line_end(given) if isinstance(given, str) else given
            old = self.asked.get(name, _ABSENT)
            if old is _ABSENT and (new is False or new is None or new == ""):
                continue  # left out by the agent and left alone: an unticked box says nothing
            same = old is not _ABSENT and (
                _one_line_end(old) == new if isinstance(old, str) else old == new
            )
            # As the agent asked: kept exactly as it was (1 stays 1, not 1.0).
            arguments[name] = old if same else new
        return {"arguments": arguments}

    def field_errors(self, errors: dict[str, str]) -> dict[str, str]:
        """The service's ``arguments.<name>`` paths as this form's field names."""
        return {path.removeprefix(f"{PREFIX}."): message for path, message in errors.items()}


_ABSENT = object()


def _one_line_end(text: str) -> str:
    """A browser posts a text box's lines ended "\r\n"."""
    return text.replace("\r\n", "\n")


def arguments_form(
    approval: ApprovalRequest, call: tool_calls.ToolCall, data: Any = None
) -> ToolArgumentsForm | None:
    """The arguments form of a pending call the workflow lets approvers edit, else None."""
    if not call.editable or approval.status != ApprovalStatus.PENDING:
        return None
    return ToolArgumentsForm(call.schema, data, prefix=PREFIX, asked=call.arguments)


def _conversation(approval: ApprovalRequest) -> conversation.Conversation | None:
    document = selectors.checkpoint_document(approval.checkpoint, approval.run)
    states = document.get("executor_states")
    state = states.get(approval.executor_id) if isinstance(states, dict) else None
    return conversation.conversation_of(approval.executor_id, state, newest=CONVERSATION_TURNS)


def tool_call_context(approval: ApprovalRequest, call: tool_calls.ToolCall) -> dict[str, Any]:
    """What the panel shows of a tool call besides the decision form."""
    chat = _conversation(approval)
    return {
        "tool_call": call,
        "tool_arguments": [
            (name, json.dumps(value, ensure_ascii=False)) for name, value in call.arguments.items()
        ],
        "tool_conversations": [chat] if chat is not None and chat.turns else [],
        "tool_run_url": reverse("dashboard:run_detail", args=[approval.run_id]),
    }
