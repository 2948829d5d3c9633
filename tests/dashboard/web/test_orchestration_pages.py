"""The run page and each checkpoint page draw an orchestration as what it is: a handoff's
chain, a Magentic plan waiting for review."""

from __future__ import annotations

import html as markup
import re
from collections.abc import Callable

import pytest
from django.test import Client

from dashboard import services
from dashboard.demo import agents
from dashboard.models import RunStatus, WorkflowRun
from tests.helpers.fork_pages import page_url

pytestmark = pytest.mark.django_db(transaction=True)

Drive = Callable[..., WorkflowRun]


@pytest.fixture(autouse=True)
def fast_model(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(agents, "_WORD_DELAY", 0.0)


def start(client: Client, drive: Drive, workflow: str, words: str) -> WorkflowRun:
    return drive(
        services.run_start,
        workflow_name=workflow,
        input=words,
        user=client.user,  # type: ignore[attr-defined]
    )


def card(html: str) -> str:
    found = re.search(r'<section id="run-orchestration".*?</section>', html, re.DOTALL)
    assert found, "no orchestration card"
    return markup.unescape(found.group(0))


def test_a_handoff_run_page_shows_the_chain_and_a_checkpoint_shows_it_so_far(
    operator_client: Client, drive: Drive
) -> None:
    run = start(operator_client, drive, "handoff-triage", "My invoice shows a double charge")
    assert run.status == RunStatus.WAITING, run.error_message

    whole = card(operator_client.get(f"/runs/{run.pk}/").content.decode())
    early = card(operator_client.get(page_url(run, 1)).content.decode())

    assert "Handoffs" in whole and re.search(r"triage</span> <span[^>]*>→</span> <span", whole)
    assert whole.count('class="handoff"') == 2 and "so far" in whole
    assert early.count('class="handoff"') == 1 and "as of superstep 1" in early


def test_a_magentic_run_waiting_for_review_shows_the_plan(
    operator_client: Client, drive: Drive
) -> None:
    run = start(operator_client, drive, "product-brief", "A brief for a run dashboard")
    assert run.status == RunStatus.WAITING, run.error_message

    shown = card(operator_client.get(f"/runs/{run.pk}/").content.decode())

    assert "1. analyst: Lists what customers asked for" in shown and "3. reviewer:" in shown


def test_a_workflow_without_orchestration_events_shows_no_card(
    operator_client: Client, drive: Drive
) -> None:
    run = start(operator_client, drive, "research-report", "Write about tide pools")

    html = operator_client.get(f"/runs/{run.pk}/").content.decode()

    assert re.search(r'<section id="run-orchestration"[^>]* hidden', html)
