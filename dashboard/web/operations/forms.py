"""The forms of the operations pages: alert rules, schedules, retention policies and holds,
model prices, and the audit log's filters.

They check types only (text, whole numbers, choices, a run id); what a rule, a schedule or a
policy may say is the services' rule, whose messages land beside these fields
(``add_service_errors``). ``crud`` shows and saves the first three the same way.
"""

from __future__ import annotations

import datetime as dt
import uuid
from typing import Any

from django import forms

from dashboard import catalog, services
from dashboard.models import (
    AlertCondition,
    AlertRule,
    AuditEntry,
    ModelPrice,
    RetentionPolicy,
    Schedule,
)
from dashboard.selectors import audit_log
from dashboard.services import alerts, schedules, validation
from dashboard.web.forms import JsonField, apply_errors, day_start

__all__ = [
    "UNITS",
    "AlertRuleForm",
    "AuditFilterForm",
    "HoldForm",
    "PolicyForm",
    "PriceForm",
    "ScheduleForm",
]


class AlertRuleForm(forms.Form):
    """Types only; what a rule may say is ``services.alerts.alert_rule_check``'s rule, whose
    messages land beside these fields."""

    name = forms.CharField(strip=True, widget=forms.TextInput(attrs={"maxlength": 100}))
    condition = forms.ChoiceField(label="When", choices=AlertCondition.choices)
    threshold_minutes = forms.IntegerField(
        required=False,
        label="Minutes",
        help_text=(
            "Stuck, slower than and approval waiting: after how many minutes. Empty otherwise."
        ),
        widget=forms.NumberInput(attrs={"min": 1}),
    )
    # Text: services.alerts reads it (NaN, negative, huge, too many places are its refusals).
    threshold_cost = forms.CharField(
        required=False,
        label="Cost",
        help_text="Run cost above: the cost, at the price table's prices. Empty otherwise.",
        widget=forms.TextInput(attrs={"inputmode": "decimal", "placeholder": "2.50"}),
    )
    workflow_name = forms.ChoiceField(label="Workflow", required=False, choices=())
    emails = forms.CharField(
        required=False,
        label="Email addresses",
        help_text="One per line.",
        widget=forms.Textarea(attrs={"rows": 3, "spellcheck": "false"}),
    )
    slack_webhook_url = forms.CharField(
        required=False,
        label="Slack incoming webhook URL",
        widget=forms.URLInput(attrs={"maxlength": 500, "spellcheck": "false"}),
    )
    webhook_url = forms.CharField(
        required=False,
        label="Webhook URL",
        help_text="Receives the incident as JSON, signed per Standard Webhooks.",
        widget=forms.URLInput(attrs={"maxlength": 500, "spellcheck": "false"}),
    )
    webhook_secret = forms.CharField(
        required=False,
        label="Webhook secret",
        help_text="whsec_<base64>, or any text (its UTF-8 bytes are the key). Empty: unsigned.",
        widget=forms.PasswordInput(
            render_value=True, attrs={"maxlength": 200, "autocomplete": "off"}
        ),
    )
    notify_resolved = forms.BooleanField(
        required=False, initial=True, label="Also tell them when it is resolved"
    )
    enabled = forms.BooleanField(required=False, initial=True, label="Enabled")

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        choices = [("", "Every workflow"), *((name, name) for name in catalog.names())]
        self.fields["workflow_name"].choices = choices  # type: ignore[attr-defined]

    def spec(self) -> alerts.AlertRuleSpec:
        return alerts.AlertRuleSpec(**self.cleaned_data)

    @classmethod
    def initial_for(cls, rule: AlertRule) -> dict[str, Any]:
        return {field: getattr(rule, field) for field in cls.base_fields}

    def add_service_errors(self, errors: dict[str, str]) -> None:
        apply_errors(self, errors)


UNITS = {"seconds": 1, "minutes": 60, "hours": 3600, "days": 86400}


class ScheduleForm(forms.Form):
    """Types only; what a schedule may say is ``services.schedules.schedule_check``'s rule, whose
    messages land beside these fields."""

    name = forms.CharField(strip=True, widget=forms.TextInput(attrs={"maxlength": 100}))
    workflow_name = forms.ChoiceField(label="Workflow", choices=())
    input = JsonField(
        rows=6, label="Input (JSON)", initial="{}", help_text="What each run starts with."
    )
    kind = forms.ChoiceField(label="Fires", choices=Schedule.Kind.choices, initial="cron")
    cron = forms.CharField(
        required=False,
        label="Cron expression",
        help_text="minute hour day-of-month month day-of-week, e.g. 0 9 * * MON-FRI",
        widget=forms.TextInput(attrs={"maxlength": 200, "spellcheck": "false", "class": "code"}),
    )
    every = forms.IntegerField(
        required=False, min_value=1, label="Every", widget=forms.NumberInput(attrs={"min": 1})
    )
    unit = forms.ChoiceField(choices=[(unit, unit) for unit in UNITS], initial="minutes")
    time_zone = forms.ChoiceField(
        label="Time zone", initial="UTC", help_text="The cron fields are read on this clock."
    )
    skip_if_running = forms.BooleanField(
        required=False,
        initial=True,
        label="Skip a tick while the previous run is unfinished",
    )

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.fields["workflow_name"].choices = [(name, name) for name in catalog.names()]  # type: ignore[attr-defined]
        self.fields["time_zone"].choices = [(zone, zone) for zone in sorted(schedules.time_zones())]  # type: ignore[attr-defined]

    def spec(self) -> schedules.ScheduleSpec:
        data = self.cleaned_data
        every = data.get("every")
        seconds = every * UNITS[data["unit"]] if every is not None else None
        return schedules.ScheduleSpec(
            name=data["name"],
            workflow_name=data["workflow_name"],
            input=data["input"],
            kind=data["kind"],
            cron=data["cron"] if data["kind"] == Schedule.Kind.CRON else "",
            interval_seconds=seconds if data["kind"] == Schedule.Kind.INTERVAL else None,
            time_zone=data["time_zone"],
            skip_if_running=data["skip_if_running"],
        )

    @classmethod
    def initial_for(cls, schedule: Schedule) -> dict[str, Any]:
        seconds = schedule.interval_seconds or 0
        unit = next((u for u in reversed(UNITS) if seconds and seconds % UNITS[u] == 0), "seconds")
        return {
            "name": schedule.name,
            "workflow_name": schedule.workflow_name,
            "input": schedule.input,
            "kind": schedule.kind,
            "cron": schedule.cron,
            "time_zone": schedule.time_zone,
            "every": seconds // UNITS[unit] if seconds else None,
            "unit": unit,
            "skip_if_running": schedule.skip_if_running,
        }

    def add_service_errors(self, errors: dict[str, str]) -> None:
        # The service names the API's fields; two of them are asked differently here.
        names = {"interval_seconds": "every", "workflow": "workflow_name"}
        apply_errors(self, {names.get(key, key): value for key, value in errors.items()})


class PolicyForm(forms.Form):
    """Types only (text, whole numbers, a choice); what a policy may say is the service's
    rule (``services.policy_check``), whose messages land beside these fields."""

    name = forms.CharField(strip=True, widget=forms.TextInput(attrs={"maxlength": 100}))
    workflow_pattern = forms.CharField(
        label="Workflows",
        initial="*",
        help_text="A workflow name, or a pattern such as return-* (* is every workflow).",
        widget=forms.TextInput(attrs={"maxlength": 200, "spellcheck": "false"}),
    )
    status = forms.ChoiceField(
        label="Runs that ended", choices=RetentionPolicy.Status.choices, initial="completed"
    )
    keep_last_checkpoints = forms.IntegerField(
        required=False,
        label="Keep the newest checkpoints of each run",
        help_text="Empty: no limit by number.",
        widget=forms.NumberInput(attrs={"min": 1}),
    )
    delete_checkpoints_older_than_days = forms.IntegerField(
        required=False,
        label="Delete checkpoints older than (days)",
        widget=forms.NumberInput(attrs={"min": 0}),
    )
    delete_runs_older_than_days = forms.IntegerField(
        required=False,
        label="Delete whole runs finished more than (days) ago",
        widget=forms.NumberInput(attrs={"min": 0}),
    )
    enabled = forms.BooleanField(
        required=False,
        initial=True,
        label="Enabled",
        help_text="The hourly retention job applies enabled policies.",
    )

    def spec(self) -> services.PolicySpec:
        return services.PolicySpec(**self.cleaned_data)

    @classmethod
    def initial_for(cls, policy: RetentionPolicy) -> dict[str, Any]:
        return {field: getattr(policy, field) for field in cls.base_fields}

    def add_service_errors(self, errors: dict[str, str]) -> None:
        for field, message in errors.items():
            self.add_error(field if field in self.fields else None, message)


class HoldForm(forms.Form):
    run = forms.CharField(label="Run id", widget=forms.TextInput(attrs={"spellcheck": "false"}))
    reason = forms.CharField(
        max_length=500,
        widget=forms.TextInput(
            attrs={"maxlength": 500, "placeholder": "Litigation, audit, incident…"}
        ),
    )

    def clean_run(self) -> uuid.UUID:
        text = self.cleaned_data["run"].strip()
        try:
            return uuid.UUID(text)
        except ValueError:
            raise forms.ValidationError(
                "Not a run id (the 36 characters on the run's page)."
            ) from None


FIRST_DAY, LAST_DAY = dt.date(1970, 1, 1), dt.date(9998, 12, 31)
NOT_A_RUN = "Not a run id (the 36 characters on the run's page)."


def _text(placeholder: str = "", **attrs: str) -> forms.TextInput:
    return forms.TextInput(attrs={"placeholder": placeholder, **attrs} if placeholder else attrs)


def _day() -> forms.DateInput:
    return forms.DateInput(attrs={"type": "date"})


class AuditFilterForm(forms.Form):
    OUTCOMES = (("", "Any outcome"), (AuditEntry.OK, "Done"), (AuditEntry.DENIED, "Refused"))

    actor = forms.CharField(required=False, max_length=150, widget=_text("username or system"))
    action = forms.CharField(required=False, max_length=40, widget=_text(list="audit-actions"))
    outcome = forms.ChoiceField(required=False, choices=OUTCOMES)
    run = forms.CharField(
        required=False, max_length=36, label="Run id", widget=_text(spellcheck="false")
    )
    workflow = forms.CharField(required=False, max_length=200, widget=_text(list="audit-workflows"))
    created_from = forms.DateField(required=False, label="From", widget=_day())
    created_to = forms.DateField(required=False, label="To", widget=_day())
    q = forms.CharField(
        required=False, max_length=200, label="Target contains", widget=_text(type="search")
    )

    def clean(self) -> dict[str, Any]:
        data = super().clean() or {}
        for name in ("actor", "action", "workflow", "q"):
            found = validation.unstorable(data.get(name) or "")
            if found is not None:
                self.add_error(name, f"It {found[1]}.")
        for name in ("created_from", "created_to"):
            day = data.get(name)
            if day is not None and not FIRST_DAY <= day <= LAST_DAY:
                self.add_error(name, f"Choose a day between {FIRST_DAY:%Y} and {LAST_DAY:%Y}.")
        start, end = data.get("created_from"), data.get("created_to")
        if start and end and end < start and not self.has_error("created_to"):
            self.add_error("created_to", "The range ends before it starts.")
        return data

    def clean_run(self) -> uuid.UUID | None:
        text = (self.cleaned_data.get("run") or "").strip()
        if not text:
            return None
        try:
            return uuid.UUID(text)
        except ValueError:
            raise forms.ValidationError(NOT_A_RUN) from None

    def filters(self) -> audit_log.AuditFilters:
        data = self.cleaned_data
        return audit_log.AuditFilters(
            actor=data["actor"].strip(),
            action=data["action"].strip(),
            outcome=data["outcome"],
            run_id=data["run"],
            workflow=data["workflow"].strip(),
            created_from=day_start(data["created_from"]),
            created_to=day_start(data["created_to"], plus_days=1),
            target=data["q"].strip(),
        )


class PriceForm(forms.Form):
    """A model's price per million tokens, as text: ``services.price_set`` reads the amounts
    (NaN, negative, too many places...) and its messages land beside these fields."""

    model = forms.CharField(
        label="Model",
        help_text="The name the model reports, exactly (e.g. gpt-4o-mini).",
        widget=forms.TextInput(attrs={"maxlength": 200, "spellcheck": "false"}),
    )
    input_per_million = forms.CharField(
        label="Input, per million tokens",
        widget=forms.TextInput(attrs={"inputmode": "decimal", "placeholder": "0.15"}),
    )
    output_per_million = forms.CharField(
        label="Output, per million tokens",
        widget=forms.TextInput(attrs={"inputmode": "decimal", "placeholder": "0.60"}),
    )

    def spec(self) -> dict[str, str]:
        return dict(self.cleaned_data)

    @classmethod
    def initial_for(cls, price: ModelPrice) -> dict[str, Any]:
        return {field: getattr(price, field) for field in cls.base_fields}

    def add_service_errors(self, errors: dict[str, str]) -> None:
        apply_errors(self, errors)
