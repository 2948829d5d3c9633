"""An agent workflow is started by typing a message, not by writing JSON."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from dashboard.models import WorkflowRun

pytestmark = pytest.mark.django_db


@pytest.fixture
def operator_client(client: Any, role_user: Callable[..., Any]) -> Any:
    client.force_login(role_user("olga", "Operator"))
    return client


def test_the_start_form_of_an_agent_workflow_asks_for_a_message(operator_client: Any) -> None:
    page = operator_client.get("/runs/start/?workflow=research-report").content.decode()
    assert ">Message<" in page and 'name="input-json"' in page
    assert "The value as JSON" not in page


def test_a_typed_message_starts_the_run_with_it_as_its_input(operator_client: Any) -> None:
    answer = operator_client.post(
        "/runs/start/",
        {"workflow": "research-report", "mode": "form", "input-json": "  Write about <b>tea</b> "},
    )
    run = WorkflowRun.objects.get()
    assert answer.status_code == 302 and answer["Location"].endswith(f"/runs/{run.pk}/")
    assert run.input == "Write about <b>tea</b>"


def test_an_empty_message_is_refused_on_the_form(operator_client: Any) -> None:
    answer = operator_client.post(
        "/runs/start/", {"workflow": "research-report", "mode": "form", "input-json": "   "}
    )
    assert answer.status_code == 422
    assert "This field is required" in answer.content.decode()
    assert not WorkflowRun.objects.exists()
