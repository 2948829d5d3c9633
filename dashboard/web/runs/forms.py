"""The runs list's filter form (GET), read by the list and by the bulk actions alike.

Most filters are choices from our own links, and a value that is not one is ignored. The
amounts (cost at least and at most, tokens at least) are typed, so a value that is not an
amount is refused with a message beside its field (``refusals``), never quietly dropped: a
bulk action on "every run costing at least NaN" would otherwise act on every run.
"""

from __future__ import annotations

from typing import Any

from django import forms

from dashboard.models import RunStatus
from dashboard.selectors import RUN_TRIGGERS
from dashboard.services import amounts

__all__ = ["RunFilterForm"]


class RunFilterForm(forms.Form):
    """The runs list's filters (GET); invalid values are ignored, not errors."""

    SORTS = (
        ("-created", "Newest first"),
        ("created", "Oldest first"),
        ("-cost", "Dearest first"),
        ("cost", "Cheapest first"),
    )
    AMOUNTS = ("cost_min", "cost_max", "tokens_min")

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
    # Text, read by services.amounts (which bounds its length): its messages, not Django's.
    cost_min = forms.CharField(required=False, label="Cost at least")
    cost_max = forms.CharField(required=False, label="Cost at most")
    tokens_min = forms.CharField(required=False, label="Tokens at least")

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
        for name, placeholder in zip(self.AMOUNTS, ("0.10", "5", "10000"), strict=True):
            self.fields[name].widget.attrs.update(
                {"inputmode": "decimal", "placeholder": placeholder, "size": "8"}
            )

    def _amount(self, name: str, read: Any) -> Any:
        text = self.cleaned_data.get(name, "").strip()
        if not text:
            return None
        errors: dict[str, str] = {}
        value = read(text, name, errors)
        if errors:
            raise forms.ValidationError(errors[name])
        return value

    def clean_cost_min(self) -> Any:
        return self._amount("cost_min", amounts.read_cost)

    def clean_cost_max(self) -> Any:
        return self._amount("cost_max", amounts.read_cost)

    def clean_tokens_min(self) -> Any:
        return self._amount("tokens_min", amounts.read_tokens)

    def clean(self) -> dict[str, Any]:
        data = super().clean() or {}
        low, high = data.get("cost_min"), data.get("cost_max")
        if low is not None and high is not None and low > high:
            self.add_error("cost_max", "Not below “cost at least”.")
        return data

    def refusals(self) -> dict[str, str]:
        """The typed amounts refused, with why (empty when every one reads)."""
        self.is_valid()
        return {name: str(self.errors[name][0]) for name in self.AMOUNTS if name in self.errors}

    def sort_order(self) -> tuple[str, bool]:
        """The field the list is sorted by (``selectors.RUN_SORT_FIELDS``), and whether
        descending (newest or dearest first)."""
        sort = self.value("sort") or "-created"
        return sort.lstrip("-"), sort.startswith("-")

    def value(self, name: str) -> Any:
        """A filter's cleaned value, or None when it is absent or invalid."""
        self.is_valid()
        return getattr(self, "cleaned_data", {}).get(name)
