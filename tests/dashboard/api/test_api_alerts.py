"""The alert rules API (dashboard/api/alerts.py): Admins manage rules as on the Alerts page,
and a rule's credentials never come back out of the API."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest
from django.test import Client

from dashboard.models import AlertRule, AuditEntry

pytestmark = pytest.mark.django_db

SLACK = "https://hooks.slack.com/services/T000/B000/very-secret-path"
SECRET = "whsec_" + "c2VjcmV0LXNpZ25pbmcta2V5LW9mLW91cnM="
RULE = {
    "name": "failures",
    "condition": "run_failed",
    "emails": ["ops@example.com"],
    "slack_webhook_url": SLACK,
    "webhook_url": "https://example.com/hook",
    "webhook_secret": SECRET,
}


def send(client: Client, method: str, url: str, body: Any = None) -> Any:
    return getattr(client, method)(url, json.dumps(body or {}), content_type="application/json")


def test_a_rules_credentials_never_come_back(admin_role_client: Client) -> None:
    created = send(admin_role_client, "post", "/api/alerts/rules/", RULE)
    assert created.status_code == 201
    listed = admin_role_client.get("/api/alerts/rules/")
    for answer in (
        created,
        listed,
        admin_role_client.get(f"/api/alerts/rules/{created.json()['id']}/"),
    ):
        assert (
            SECRET not in answer.content.decode()
            and "very-secret-path" not in answer.content.decode()
        )
    assert created.json() | {"slack": True, "webhook_signed": True} == created.json()
    assert created.json()["emails"] == ["ops@example.com"]


def test_a_put_keeps_the_credentials_it_leaves_out_and_removes_those_set_empty(
    admin_role_client: Client,
) -> None:
    rule_id = send(admin_role_client, "post", "/api/alerts/rules/", RULE).json()["id"]
    url = f"/api/alerts/rules/{rule_id}/"
    # What a GET answers, written back: nothing changes.
    read = admin_role_client.get(url).json()
    body = {
        key: read[key]
        for key in ("name", "condition", "workflow", "threshold_minutes", "emails", "webhook_url")
    }
    assert send(admin_role_client, "put", url, body).status_code == 200
    rule = AlertRule.objects.get(pk=rule_id)
    assert (rule.slack_webhook_url, rule.webhook_secret) == (SLACK, SECRET)

    changed = send(
        admin_role_client, "put", url, {**body, "slack_webhook_url": "", "webhook_secret": ""}
    ).json()
    assert changed["slack"] is False and changed["webhook_signed"] is False
    rule.refresh_from_db()
    assert (rule.slack_webhook_url, rule.webhook_secret) == ("", "")


def test_bad_fields_are_named_and_nothing_is_saved(admin_role_client: Client) -> None:
    answer = send(
        admin_role_client,
        "post",
        "/api/alerts/rules/",
        {**RULE, "condition": "run_slow", "emails": ["not an address"]},
    )
    assert answer.status_code == 400
    assert {"threshold_minutes", "emails"} <= set(answer.json()["errors"])
    assert not AlertRule.objects.exists()


def test_only_admins_manage_rules_and_every_change_is_audited(
    admin_role_client: Client, role_user: Callable[..., Any]
) -> None:
    role_user("otto", "Operator")
    operator = Client()
    assert operator.login(username="otto", password="otto")
    assert send(operator, "post", "/api/alerts/rules/", RULE).status_code == 403
    assert operator.get("/api/alerts/rules/").status_code == 403

    rule_id = send(admin_role_client, "post", "/api/alerts/rules/", RULE).json()["id"]
    url = f"/api/alerts/rules/{rule_id}/"
    assert send(admin_role_client, "put", url, {**RULE, "name": "renamed"}).status_code == 200
    assert operator.delete(url).status_code == 403
    assert admin_role_client.delete(url).status_code == 204
    assert not AlertRule.objects.exists()
    actions = list(
        AuditEntry.objects.filter(outcome=AuditEntry.OK, action__startswith="alert_rule_")
        .order_by("pk")
        .values_list("action", flat=True)
    )
    assert actions == ["alert_rule_create", "alert_rule_update", "alert_rule_delete"]
