"""Fields a type does not have are refused, naming them and the nearest known field, wherever a
person gives a value: a run's start (service, page and API), a schedule's input (service,
page and API) and a response to a request (service, page and API). Values stored before the
rule (a schedule's input) still load and fire."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote

import pytest
from django.test import Client
from pydantic import BaseModel, ConfigDict

from dashboard import catalog, services
from dashboard.core.errors import InvalidInput
from dashboard.execution import embedded
from dashboard.models import ApprovalRequest, ApprovalStatus, Schedule, WorkflowRun
from dashboard.services import schedules

WAIT = 30.0


# ----------------------------------------------------------------------- the rule, on types


@dataclass
class Item:
    sku: str
    qty: int = 1


@dataclass
class Order:
    customer: str
    items: list[Item]
    notes: dict[str, Item] | None = None


class Loose(BaseModel):
    model_config = ConfigDict(extra="allow")
    name: str = ""


def test_unknown_fields_names_each_path_and_the_nearest_field() -> None:
    found = catalog.unknown_fields(
        Order,
        {
            "customer": "ada",
            "custmer": "typo",
            "items": [{"sku": "A", "qyt": 2}],
            "notes": {"x": {"sku": "B", "colour": "red"}},
        },
    )

    assert found == {
        "custmer": "unknown field; did you mean 'customer'?",
        "items.0.qyt": "unknown field; did you mean 'qty'?",
        "notes.x.colour": "unknown field; did you mean 'sku'? The fields are sku, qty",
    }


def test_unknown_fields_accepts_what_the_type_has_or_takes_freely() -> None:
    assert catalog.unknown_fields(Order, {"customer": "a", "items": [], "notes": None}) == {}
    assert catalog.unknown_fields(Loose, {"name": "a", "anything": 1}) == {}  # extra="allow"
    assert catalog.unknown_fields(dict[str, int], {"a": 1}) == {}
    assert catalog.unknown_fields(int, 3) == {}


def test_validate_value_refuses_unknown_fields_only_when_asked() -> None:
    value = {"customer": "a", "items": [], "extra": 1}

    assert catalog.validate_value(Order, value) == Order(customer="a", items=[])
    with pytest.raises(catalog.InputError) as refused:
        catalog.validate_value(Order, value, known_fields_only=True)

    assert set(refused.value.errors) == {"extra"} and refused.value.unknown == {"extra"}
    assert "'extra'" in refused.value.summary("the input", "")


# ----------------------------------------------------------------------- starting a run


@pytest.fixture
def operator(role_user: Callable[..., Any]) -> Any:
    return role_user("olga", "Operator", "Approver")


def test_run_start_refuses_an_unknown_field_beside_valid_ones(
    services_db: str, operator: Any
) -> None:
    with pytest.raises(InvalidInput) as refused:
        services.run_start(workflow_name="squares", input={"limit": 2, "extra": 1}, user=operator)

    assert "extra" in refused.value.errors
    assert "unknown field: 'extra'" in refused.value.message
    assert "did you mean" in refused.value.message
    assert not WorkflowRun.objects.exists()


def test_run_start_suggests_the_field_a_typo_meant(services_db: str, operator: Any) -> None:
    with pytest.raises(InvalidInput) as refused:
        services.run_start(workflow_name="squares", input={"limt": 2}, user=operator)

    assert refused.value.errors == {"limt": "unknown field; did you mean 'limit'?"}


def api_post(client: Client, path: str, body: Any) -> Any:
    return client.post(path, json.dumps(body), content_type="application/json")


def test_api_start_answers_400_naming_the_unknown_field(
    services_db: str, client_as: Callable[..., Client]
) -> None:
    client = client_as("Operator", username="olga")

    response = api_post(
        client, "/api/runs/", {"workflow": "squares", "input": {"limit": 2, "extra": 1}}
    )

    assert response.status_code == 400
    assert "extra" in response.json()["errors"] and "extra" in response.json()["error"]
    assert not WorkflowRun.objects.exists()


def test_start_page_in_raw_json_says_which_field_is_unknown(
    services_db: str, client_as: Callable[..., Client]
) -> None:
    client = client_as("Operator", username="olga")

    response = client.post(
        "/runs/start/",
        {"workflow": "squares", "mode": "json", "input-json": '{"limit": 2, "extra": 1}'},
    )

    html = response.content.decode()
    assert response.status_code == 422
    assert "extra" in html and "did you mean" in html
    assert not WorkflowRun.objects.exists()


# ----------------------------------------------------------------------- schedules


def spec(**changes: Any) -> schedules.ScheduleSpec:
    fields: dict[str, Any] = {
        "name": "nightly",
        "workflow_name": "squares",
        "input": {"limit": 2, "work_ms": 0},
        "kind": "cron",
        "cron": "0 * * * *",
        "time_zone": "UTC",
    }
    return schedules.ScheduleSpec(**{**fields, **changes})


def test_schedule_create_refuses_an_unknown_input_field(services_db: str, operator: Any) -> None:
    with pytest.raises(InvalidInput) as refused:
        schedules.schedule_create(spec(input={"limit": 2, "bogus": True}), user=operator)

    assert "input.bogus" in refused.value.errors
    assert not Schedule.objects.exists()


def test_api_schedule_refuses_an_unknown_input_field_with_400(
    services_db: str, client_as: Callable[..., Client]
) -> None:
    client = client_as("Operator", username="olga")

    response = api_post(
        client,
        "/api/schedules/",
        {"name": "x", "workflow": "squares", "cron": "* * * * *", "input": {"bogus": 1}},
    )

    assert response.status_code == 400 and "input.bogus" in response.json()["errors"]
    assert not Schedule.objects.exists()


def test_schedule_page_refuses_an_unknown_input_field(
    services_db: str, client_as: Callable[..., Client]
) -> None:
    client = client_as("Operator", username="olga")

    response = client.post(
        "/schedules/new/",
        {
            "name": "nightly",
            "workflow_name": "squares",
            "input": '{"limit": 2, "bogus": 1}',
            "kind": "cron",
            "cron": "0 * * * *",
            "unit": "minutes",
            "time_zone": "UTC",
        },
    )

    assert response.status_code == 422
    assert "bogus" in response.content.decode()
    assert not Schedule.objects.exists()


@pytest.mark.django_db(transaction=True)
def test_a_schedule_stored_with_a_field_since_unknown_still_fires(operator: Any) -> None:
    schedule = schedules.schedule_create(spec(), user=operator)
    Schedule.objects.filter(pk=schedule.pk).update(input={"limit": 1, "work_ms": 0, "gone": 1})

    tick = schedules.schedule_trigger(schedule.pk, user=operator)

    assert tick.run is not None, tick.detail
    assert embedded.wait_for_background_tasks(WAIT)


# ----------------------------------------------------------------------- responses


@pytest.fixture
def waiting(transactional_db: None) -> ApprovalRequest:
    services.run_start(workflow_name="return-replace", input={"work_ms": 0})
    assert embedded.wait_for_background_tasks(WAIT)
    return ApprovalRequest.objects.get(status=ApprovalStatus.PENDING)


def test_approval_decide_refuses_an_unknown_response_field(
    waiting: ApprovalRequest, operator: Any
) -> None:
    with pytest.raises(InvalidInput) as refused:
        services.approval_decide(
            waiting.request_id,
            user=operator,
            approved=True,
            response={"discount_percent": 5, "notes": "typo"},
        )

    assert refused.value.errors["notes"] == "unknown field; did you mean 'note'?"
    waiting.refresh_from_db()
    assert waiting.status == ApprovalStatus.PENDING


def test_api_decide_answers_400_naming_the_unknown_response_field(
    waiting: ApprovalRequest, client_as: Callable[..., Client]
) -> None:
    client = client_as("Approver", username="ann")

    response = api_post(
        client,
        f"/api/approvals/{quote(waiting.request_id, safe='')}/decide/",
        {"decision": "approve", "response": {"notes": "typo"}},
    )

    assert response.status_code == 400 and "notes" in response.json()["errors"]
    assert "did you mean 'note'" in response.json()["error"]


def test_decide_page_in_raw_json_says_which_response_field_is_unknown(
    waiting: ApprovalRequest, client_as: Callable[..., Client]
) -> None:
    client = client_as("Approver", username="ann")

    response = client.post(
        f"/approvals/{quote(waiting.request_id, safe='')}/decide/",
        {"decision": "approve", "mode": "json", "response-json": '{"notes": "typo"}'},
    )

    assert response.status_code == 422
    assert "notes" in response.content.decode() and "did you mean" in response.content.decode()
    waiting.refresh_from_db()
    assert waiting.status == ApprovalStatus.PENDING
