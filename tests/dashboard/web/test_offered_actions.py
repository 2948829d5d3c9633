"""Pages offer only what the person may do, and say why when something useful is missing:
a Viewer is refused the start page (403, with a message) and sees no Start button; an
Operator who may not decide is told who decides instead of being sent to the inbox; a role
that may not cancel or retry a run is told so on its page. The services check again."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from django.test import Client

from dashboard import services
from dashboard.models import AuditEntry, RunEvent, RunStatus, WorkflowRun
from dashboard.web.live import fragments

pytestmark = pytest.mark.django_db(transaction=True)

Drive = Callable[..., WorkflowRun]
DECIDE = "Decide in the inbox"
NOT_YOURS = "an approver decides it: your role may not"


def waiting_run(drive: Drive) -> WorkflowRun:
    run = drive(services.run_start, workflow_name="return-replace", input={"work_ms": 0})
    assert run.status == RunStatus.WAITING
    return run


def test_a_viewer_is_refused_the_start_page_with_a_message(
    client_as: Callable[..., Client],
) -> None:
    viewer = client_as("Viewer", username="vic")

    page = viewer.get("/runs/start/?workflow=squares")
    sent = viewer.post("/runs/start/", {"workflow": "squares", "input-limit": "2"})

    assert page.status_code == 403 and sent.status_code == 403
    html = page.content.decode()
    assert "may look at runs but not start them" in html
    assert "<form" not in html.split('id="start-denied"')[1].split("</section>")[0]
    assert 'type="submit" class="btn btn-primary">Start run' not in html
    assert not WorkflowRun.objects.exists()
    assert AuditEntry.objects.filter(action="start", outcome=AuditEntry.DENIED).exists()


def test_the_runs_list_offers_start_only_to_who_may_start(
    client_as: Callable[..., Client],
) -> None:
    start_link = 'href="/runs/start/"'

    assert start_link not in client_as("Viewer", username="vic").get("/").content.decode()
    assert start_link in client_as("Operator", username="olga").get("/").content.decode()


@pytest.mark.parametrize(
    "roles, offered",
    [(("Operator",), False), (("Viewer",), False), (("Approver",), True), (("Admin",), True)],
)
def test_the_run_page_offers_the_inbox_only_to_who_may_decide(
    client_as: Callable[..., Client], drive: Drive, roles: tuple[str, ...], offered: bool
) -> None:
    client = client_as(*roles, username="someone")
    run = waiting_run(drive)

    html = client.get(f"/runs/{run.pk}/").content.decode()

    assert (DECIDE in html) is offered
    assert (NOT_YOURS in html) is not offered


def test_the_live_outcome_is_drawn_for_who_watches(
    role_user: Callable[..., Any], drive: Drive
) -> None:
    run = waiting_run(drive)
    events = list(RunEvent.objects.filter(run=run).order_by("seq"))

    operator = fragments.run_update(run.pk, events, role_user("olga", "Operator"))
    approver = fragments.run_update(run.pk, events, role_user("ann", "Approver"))

    assert NOT_YOURS in operator and DECIDE not in operator
    assert DECIDE in approver and NOT_YOURS not in approver


def test_the_run_page_says_why_a_viewer_has_no_cancel(
    client_as: Callable[..., Client], drive: Drive
) -> None:
    run = waiting_run(drive)

    viewer = client_as("Viewer", username="vic").get(f"/runs/{run.pk}/").content.decode()
    operator = client_as("Operator", username="olga").get(f"/runs/{run.pk}/").content.decode()

    assert "Cancel run</button>" not in viewer
    assert "Your role may look at this run but not cancel it." in viewer
    assert "Cancel run</button>" in operator and "run-actions-missing" not in operator
