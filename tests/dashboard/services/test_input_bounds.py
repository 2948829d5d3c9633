"""Input out of the range its type declares is refused before a run exists, with the same
message from the start form, the API and the service, and the form's inputs carry the bounds
so the browser says so before sending (issue: ``squares`` with limit 5000 started, then failed
with a traceback)."""

from __future__ import annotations

import html
import json
import re
from typing import Any

import pytest
from django.test import Client

from dashboard import services
from dashboard.access.tokens import create_token
from dashboard.models import WorkflowRun

pytestmark = pytest.mark.django_db

TOO_MANY = "Input should be less than or equal to 1000"


def test_the_service_refuses_a_limit_out_of_range_naming_the_field(operator_client: Client) -> None:
    with pytest.raises(services.InvalidInput) as refused:
        services.run_start(
            workflow_name="squares", input={"limit": 5000}, user=operator_client.user
        )  # type: ignore[attr-defined]
    assert refused.value.errors == {"limit": TOO_MANY}
    assert not WorkflowRun.objects.exists()


def test_the_api_answers_400_with_the_same_message(operator_client: Client) -> None:
    token = create_token(operator_client.user, "t")  # type: ignore[attr-defined]
    response = Client().post(
        "/api/runs/",
        json.dumps({"workflow": "squares", "input": {"limit": 5000, "work_ms": -1}}),
        content_type="application/json",
        headers={"Authorization": f"Bearer {token}"},
    )
    assert response.status_code == 400
    errors: dict[str, Any] = response.json()["errors"]
    assert errors["limit"] == TOO_MANY
    assert errors["work_ms"] == "Input should be greater than or equal to 0"
    assert not WorkflowRun.objects.exists()


def test_the_start_form_shows_the_message_beside_the_field(operator_client: Client) -> None:
    response = operator_client.post(
        "/runs/start/",
        {
            "workflow": "squares",
            "input-limit": "5000",
            "input-work_ms": "0",
        },
    )
    page = html.unescape(response.content.decode())
    assert response.status_code in (400, 422)
    assert re.search(r'id="id_input-limit_error"[^>]*>\s*<li>' + re.escape(TOO_MANY), page), page[
        -3000:
    ]
    assert not WorkflowRun.objects.exists()


def test_the_start_form_gives_the_browser_the_bounds(operator_client: Client) -> None:
    page = operator_client.get("/runs/start/", {"workflow": "squares"}).content.decode()
    limit = re.search(r'<input[^>]*name="input-limit"[^>]*>', page)
    assert limit is not None, page[-2000:]
    assert 'min="1"' in limit.group(0) and 'max="1000"' in limit.group(0)
    # What static/js/field_messages.js makes the browser say: the server's own words.
    assert f'data-msg-max="{TOO_MANY}"' in limit.group(0)
    assert 'data-msg-min="Input should be greater than or equal to 1"' in limit.group(0)
