"""The "run cost above X" alert condition: a run whose cost goes above X opens one incident,
told like the others, once per run; runs at or below X, of another workflow or ended before
the rule existed are left alone; X is a checked Decimal on the service, the form and the API;
an agent run priced at the table's prices trips it through the worker."""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Callable, Iterator
from decimal import Decimal
from typing import Any

import pytest
from django.core import mail
from django.test import Client, override_settings
from django.utils import timezone

from dashboard import services
from dashboard.core.errors import InvalidInput
from dashboard.demo import agents
from dashboard.models import AlertIncident, AlertRule, ModelPrice, Notification, WorkflowRun
from dashboard.notifications import delivery as notifications
from dashboard.services import alert_evaluation, alerts


@pytest.fixture
def outbox() -> Iterator[list[Any]]:
    with override_settings(
        MAILERS={"default": {"BACKEND": "django.core.mail.backends.locmem.EmailBackend"}},
        SUPERSTEP_BASE_URL="https://superstep.example",
    ):
        mail.outbox = []
        yield mail.outbox


def cost_rule(threshold: object = "2.5", **changes: Any) -> AlertRule:
    spec = alerts.AlertRuleSpec(
        **{
            "name": "dear runs",
            "condition": "run_cost",
            "threshold_cost": threshold,
            "emails": "ops@example.com",
            **changes,
        }
    )
    return alerts.alert_rule_create(spec)


def deliver_all() -> None:
    for pk in Notification.objects.filter(sent_at__isnull=True).values_list("pk", flat=True):
        notifications.deliver(pk)


def test_a_run_costing_more_than_the_threshold_opens_one_incident_told_once(
    services_db: str, make_run: Callable[..., Any], outbox: list[Any]
) -> None:
    rule = cost_rule("2.5")
    run = make_run(status="running", cost=Decimal("2.500001"))
    make_run(status="running", cost=Decimal("2.5"))  # at the threshold: not above it

    opened = alert_evaluation.alerts_evaluate()
    WorkflowRun.objects.filter(pk=run.pk).update(cost=Decimal(40))  # it goes on costing
    again = alert_evaluation.alerts_evaluate()
    deliver_all()

    (incident,) = AlertIncident.objects.all()
    assert opened.opened == [incident.pk] and again.opened == again.resolved == []
    assert incident.run_id == run.pk and incident.rule_id == rule.pk
    assert incident.summary == f"Run {str(run.pk)[:8]} of squares cost 2.500001, above 2.5"
    assert incident.details == {"status": "running", "cost": "2.500001"}
    assert incident.state == "delivered"
    [message] = outbox
    assert "cost 2.500001, above 2.5" in message.body and f"/runs/{run.pk}/" in message.body
    [payload] = Notification.objects.filter(kind=Notification.EMAIL).values_list(
        "payload", flat=True
    )
    assert payload["condition"] == "run_cost" and payload["threshold_cost"] == "2.5"


def test_a_run_is_told_once_even_after_its_incident_resolved(
    services_db: str, make_run: Callable[..., Any]
) -> None:
    rule = cost_rule("1")
    run = make_run(status="completed", cost=Decimal(3))
    [first] = alert_evaluation.alerts_evaluate().opened

    raised = alerts.AlertRuleSpec(
        name="dear runs", condition="run_cost", threshold_cost="10", emails="ops@example.com"
    )
    alerts.alert_rule_update(rule.pk, raised)
    assert alert_evaluation.alerts_evaluate().resolved == [first]
    lowered = alerts.AlertRuleSpec(**{**raised.__dict__, "threshold_cost": "1"})
    alerts.alert_rule_update(rule.pk, lowered)
    second_run = make_run(status="running", cost=Decimal(2))

    report = alert_evaluation.alerts_evaluate()

    assert [i.run_id for i in AlertIncident.objects.filter(pk__in=report.opened)] == [second_run.pk]
    assert AlertIncident.objects.filter(run=run).count() == 1
    assert "no longer costs more" in AlertIncident.objects.get(pk=first).resolution


def test_runs_of_other_workflows_and_runs_ended_before_the_rule_are_left_alone(
    services_db: str, make_run: Callable[..., Any]
) -> None:
    long_ago = timezone.now() - dt.timedelta(days=3)
    make_run(status="completed", cost=Decimal(99), created_at=long_ago)
    make_run(status="running", cost=Decimal(99), workflow_name="fail-at-step")
    cost_rule("1", workflow_name="squares")

    assert alert_evaluation.alerts_evaluate().opened == []


@pytest.mark.parametrize(
    ("changes", "says"),
    [
        ({"threshold_cost": "NaN"}, "finite"),
        ({"threshold_cost": "sNaN"}, "finite"),
        ({"threshold_cost": "Infinity"}, "finite"),
        ({"threshold_cost": "-1"}, "cannot be negative"),
        ({"threshold_cost": "0"}, "above 0"),
        ({"threshold_cost": "2000000"}, "at most 1,000,000"),
        ({"threshold_cost": "1e999"}, "At most"),
        ({"threshold_cost": "lots"}, "Enter an amount"),
        ({"threshold_cost": True}, "Enter an amount"),
        ({"threshold_cost": "0.0000001"}, "six decimal places"),
        ({"threshold_cost": ""}, "Say above which cost"),
        ({"threshold_cost": None}, "Say above which cost"),
        ({"condition": "run_failed", "threshold_cost": "5"}, "takes no cost"),
    ],
)
def test_the_cost_threshold_is_refused_when_it_does_not_read(
    services_db: str, changes: dict[str, Any], says: str
) -> None:
    with pytest.raises(InvalidInput) as refused:
        cost_rule(**changes)

    assert says in refused.value.errors["threshold_cost"]
    assert not AlertRule.objects.exists()


def test_the_cost_condition_takes_no_minutes(services_db: str) -> None:
    with pytest.raises(InvalidInput) as refused:
        cost_rule("2", threshold_minutes=5)
    assert "threshold_minutes" in refused.value.errors


def test_the_alert_form_saves_a_cost_rule_and_refuses_a_bad_cost_beside_its_field(
    services_db: str, client_as: Callable[..., Client]
) -> None:
    admin = client_as("Admin")
    form = {
        "name": "dear runs",
        "condition": "run_cost",
        "threshold_cost": "NaN",
        "threshold_minutes": "",
        "workflow_name": "",
        "emails": "ops@example.com",
        "enabled": "on",
    }
    refused = admin.post("/alerts/new/", form)
    assert refused.status_code == 422
    assert 'id="id_threshold_cost_error"' in refused.content.decode()

    saved = admin.post("/alerts/new/", {**form, "threshold_cost": "2.50"})
    assert saved.status_code == 302
    assert "Run cost above 2.5<" in admin.get("/alerts/").content.decode()
    rule = AlertRule.objects.get()
    edit = admin.get(f"/alerts/{rule.pk}/edit/").content.decode()
    assert 'name="threshold_cost" value="2.500000"' in edit


def test_the_alert_api_takes_and_answers_the_cost_threshold(
    services_db: str, admin_role_client: Client
) -> None:
    body = {"name": "dear", "condition": "run_cost", "threshold_cost": "7.25"}
    body["emails"] = ["ops@example.com"]  # type: ignore[assignment]

    def post(payload: dict[str, Any]) -> Any:
        return admin_role_client.post(
            "/api/alerts/rules/", json.dumps(payload), content_type="application/json"
        )

    created = post(body)
    assert created.status_code == 201, created.json()
    assert created.json()["threshold_cost"] == "7.25"
    refused = post({**body, "name": "bad", "threshold_cost": "NaN"})
    assert refused.status_code == 400 and "threshold_cost" in refused.json()["errors"]


@pytest.mark.django_db(transaction=True)
def test_an_agent_run_priced_at_the_table_trips_the_cost_rule(
    drive: Callable[..., Any], role_user: Callable[..., Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(agents, "_WORD_DELAY", 0.0)
    ModelPrice.objects.create(
        model=agents.LOCAL_MODEL, input_per_million=Decimal(300), output_per_million=Decimal(900)
    )
    cost_rule("0.000001", workflow_name="research-report")
    operator = role_user("olga", "Operator")

    run = drive(services.run_start, workflow_name="research-report", input="Cost", user=operator)
    [incident_id] = alert_evaluation.alerts_evaluate().opened

    incident = AlertIncident.objects.get(pk=incident_id)
    assert run.cost > Decimal("0.000001") and incident.run_id == run.pk
    assert incident.details["cost"] == str(run.cost)
