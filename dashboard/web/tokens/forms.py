"""The new-token form: types only; what a user may ask for is ``services.token_create``'s rule,
whose messages land beside these fields."""

from __future__ import annotations

from typing import Any

from django import forms

from dashboard.access import tokens
from dashboard.web.forms import apply_errors

__all__ = ["TokenForm"]


class TokenForm(forms.Form):
    name = forms.CharField(
        label="Name",
        max_length=100,
        help_text="What will use it, so you know which to revoke (e.g. nightly export).",
        widget=forms.TextInput(attrs={"maxlength": 100, "autocomplete": "off"}),
    )
    scopes = forms.MultipleChoiceField(
        label="Scopes",
        required=False,
        choices=[(scope, f"{scope}: {what}") for scope, what in tokens.SCOPES.items()],
        widget=forms.CheckboxSelectMultiple,
        help_text="Every token may read. It never does more than your roles allow when it is used.",
    )
    days = forms.IntegerField(label="Expires in (days)", min_value=1)

    def __init__(self, *args: Any, max_days: int, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.fields["days"].help_text = f"At most {max_days} days, the longest an Admin allows."
        self.fields["days"].widget.attrs["max"] = max_days
        self.fields["days"].initial = min(30, max_days)
        self.fields["scopes"].initial = ["read"]

    def add_service_errors(self, errors: dict[str, str]) -> None:
        apply_errors(self, errors)
