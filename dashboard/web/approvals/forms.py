"""The approval inbox's forms: its filters, and the reason given with a decision."""

from __future__ import annotations

import datetime as dt
from typing import Any, ClassVar

from django import forms

__all__ = ["ApprovalFilterForm", "DecisionForm"]


class ApprovalFilterForm(forms.Form):
    AGES = (
        ("", "Any age"),
        ("5m", "Older than 5 minutes"),
        ("1h", "Older than 1 hour"),
        ("1d", "Older than 1 day"),
        ("7d", "Older than 7 days"),
    )
    AGE_DELTAS: ClassVar[dict[str, dt.timedelta]] = {
        "5m": dt.timedelta(minutes=5),
        "1h": dt.timedelta(hours=1),
        "1d": dt.timedelta(days=1),
        "7d": dt.timedelta(days=7),
    }

    workflow = forms.ChoiceField(required=False, choices=[("", "Any workflow")])
    age = forms.ChoiceField(required=False, choices=AGES)

    def __init__(self, *args: Any, workflows: list[str], **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        workflow = self.fields["workflow"]
        assert isinstance(workflow, forms.ChoiceField)
        workflow.choices = [("", "Any workflow"), *[(w, w) for w in workflows]]

    def cleaned(self) -> dict[str, Any]:
        self.is_valid()
        data = getattr(self, "cleaned_data", {})
        return {name: data.get(name) or "" for name in self.fields if name not in self.errors}


class DecisionForm(forms.Form):
    """The reason an approver gives with Approve or Reject."""

    decision = forms.ChoiceField(choices=[("approve", "Approve"), ("reject", "Reject")])
    reason = forms.CharField(
        required=False,
        max_length=2000,
        widget=forms.Textarea(attrs={"rows": 2}),
        help_text="Recorded with the decision and shown in the archive.",
    )
