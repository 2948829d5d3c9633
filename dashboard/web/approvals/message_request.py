"""The orchestrations' own requests in the inbox (``services.message_answers``): a handoff's
reply box, a Magentic plan editable as text, an agent's answer to accept or send back; and the
words on the buttons, which say what each decision does to the run."""

from __future__ import annotations

from typing import Any

from django import forms

from dashboard.models import ApprovalRequest, ApprovalStatus
from dashboard.services import MessageRequest
from dashboard.services.message_answers import MAX_TEXT

__all__ = ["MessageForm", "message_context", "message_form"]

# kind -> (title, what Approve does, what Reject does)
WORDS = {
    "handoff": ("waits for the user's next message", "Send the reply", "End the conversation…"),
    "plan_review": ("asks you to sign off the plan", "Approve the plan", "Ask for a new plan…"),
    "agent_review": ("asks you to review its answer", "Accept the answer", "Send it back…"),
}


class MessageForm(forms.Form):
    """The text of the answer: the user's reply, or the plan as the approver wants it."""

    text = forms.CharField(required=False, strip=True, max_length=MAX_TEXT)

    def __init__(self, request: MessageRequest, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        field = self.fields["text"]
        if request.kind == "handoff":
            field.label = "Your reply, as the user"
            field.widget = forms.Textarea(attrs={"rows": 4, "maxlength": MAX_TEXT})
            field.help_text = "The agent reads it as the user's next message."
        else:
            field.label = "Plan"
            field.initial = request.text
            field.widget = forms.Textarea(attrs={"rows": 14, "maxlength": MAX_TEXT})
            field.help_text = (
                "Edit it to have the manager work to your plan: an edited plan goes back to "
                "the manager, which replans and asks you again."
            )

    def value(self) -> dict[str, Any]:
        return {"text": self.cleaned_data.get("text") or ""}


def message_form(
    approval: ApprovalRequest, request: MessageRequest, data: Any = None
) -> MessageForm | None:
    """The text box of a pending handoff or plan review; None for an agent's answer under
    review (Accept, or Send back with the reason, say it all)."""
    if request.kind == "agent_review" or approval.status != ApprovalStatus.PENDING:
        return None
    return MessageForm(request, data, prefix="response")


def message_context(request: MessageRequest) -> dict[str, Any]:
    title, approve, reject = WORDS[request.kind]
    return {
        "message_request": request,
        "message_title": title,
        "approve_label": approve,
        "reject_label": reject,
    }
