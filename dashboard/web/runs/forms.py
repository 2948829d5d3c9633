"""The runs list's filter form (GET), read by the list and by the bulk actions alike."""

from __future__ import annotations

from typing import Any

from django import forms

from dashboard.models import RunStatus
from dashboard.selectors import RUN_TRIGGERS

__all__ = ["RunFilterForm"]


class RunFilterForm(forms.Form):
    """The runs list's filters (GET); invalid values are ignored, not errors."""

    SORTS = (("-created", "Newest first"), ("created", "Oldest first"))

    q = forms.CharField(required=False, max_length=200, label="Search")
    status = forms.ChoiceField(required=False, choices=[("", "Any status"), *RunStatus.choices])
    workflow = forms.ChoiceField(required=False, choices=[("", "Any workflow")])
    created_from = forms.DateField(
        required=False, label="From", widget=forms.DateInput(attrs={"type": "date"})
    )
    created_to = forms.DateField(
        required=False, label="To", widget=forms.DateInput(attrs={"type": "date"})
    )
    sort = forms.ChoiceField(required=False, choices=SORTS)
    executor = forms.ChoiceField(required=False, label="Held up by", choices=[("", "Any executor")])
    trigger = forms.ChoiceField(
        required=False, label="Started by", choices=[("", "Anyone or anything"), *RUN_TRIGGERS]
    )

    def __init__(
        self, *args: Any, workflows: list[str], executors: list[str] | None = None, **kwargs: Any
    ) -> None:
        super().__init__(*args, **kwargs)
        workflow = self.fields["workflow"]
        assert isinstance(workflow, forms.ChoiceField)
        workflow.choices = [("", "Any workflow"), *[(w, w) for w in workflows]]
        executor = self.fields["executor"]
        assert isinstance(executor, forms.ChoiceField)
        executor.choices = [("", "Any executor"), *[(e, e) for e in executors or []]]
        self.fields["q"].widget.attrs.update(
            {"placeholder": "Run id, or text in the input, output or error", "type": "search"}
        )

    def value(self, name: str) -> Any:
        """A filter's cleaned value, or None when it is absent or invalid."""
        self.is_valid()
        return getattr(self, "cleaned_data", {}).get(name)
