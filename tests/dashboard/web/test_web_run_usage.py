"""The run page's "Tokens and cost" card: the run's totals and a row per executor and model
from its ``model_call`` events, drawn with the page and sent again by the run's websocket
after a model call; a run without agents reads no event for it."""

from __future__ import annotations

import re
from collections.abc import Callable
from decimal import Decimal
from typing import Any

import pytest
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext

from dashboard import selectors, services
from dashboard.core import run_events
from dashboard.demo import agents
from dashboard.models import ModelPrice, RunEvent, WorkflowRun
from dashboard.web.live import fragments

CARD = re.compile(r'<section id="run-usage".*?</section>', re.DOTALL)


def call_event(
    run: WorkflowRun, seq: int, executor: str, model: str, tokens: tuple[int, int], cost: str | None
) -> RunEvent:
    data = dict(run_events.model_call(executor, model, tokens[0], tokens[1], cost, 0.0))
    data.pop("type")
    return RunEvent.objects.create(run=run, seq=seq, type="model_call", data=data)


def usage_rows(html: str) -> list[tuple[str, ...]]:
    card = CARD.search(html)
    assert card is not None, "no usage card"
    return [
        tuple(re.findall(r"<td[^>]*>(.*?)</td>", row))
        for row in re.findall(r"<tr data-executor=.*?</tr>", card[0], re.DOTALL)
    ]


@pytest.mark.django_db
def test_run_usage_sums_each_executor_and_model_dearest_first(
    make_run: Callable[..., Any],
) -> None:
    run = make_run(status="running")
    call_event(run, 1, "writer", "small", (100, 20), "0.0001")
    call_event(run, 2, "writer", "small", (300, 40), "0.0003")
    call_event(run, 3, "writer", "big", (10, 5), "0.5")
    call_event(run, 4, "critic", "unpriced", (7, 3), None)

    rows = selectors.run_usage(run.pk)

    assert [(r.executor_id, r.model, r.calls, r.input_tokens, r.output_tokens) for r in rows] == [
        ("writer", "big", 1, 10, 5),
        ("writer", "small", 2, 400, 60),
        ("critic", "unpriced", 1, 7, 3),
    ]
    assert [r.cost for r in rows] == [Decimal("0.5"), Decimal("0.0004"), None]


@pytest.mark.django_db
def test_run_page_shows_tokens_and_cost_per_executor_and_model(
    operator_client: Client, make_run: Callable[..., Any]
) -> None:
    run = make_run(status="running", input_tokens=417, output_tokens=68, cost=Decimal("0.5004"))
    call_event(run, 1, "writer", "small", (400, 60), "0.0004")
    call_event(run, 2, "writer", "big", (10, 5), "0.5")
    call_event(run, 3, "critic", "unpriced", (7, 3), None)

    html = operator_client.get(f"/runs/{run.pk}/").content.decode()

    card = CARD.search(html)
    assert card is not None and " hidden" not in card[0][:60]
    assert '<dd class="num" id="run-usage-cost">0.5004</dd>' in card[0]
    assert '<dd class="num" id="run-usage-input">417</dd>' in card[0]
    assert usage_rows(html) == [
        ("writer", "big", "1", "10", "5", "0.50"),
        ("writer", "small", "1", "400", "60", "0.0004"),
        ("critic", "unpriced", "1", "7", "3", "—"),
    ]


@pytest.mark.django_db
def test_a_run_without_model_calls_has_its_usage_card_hidden_and_reads_no_event_for_it(
    operator_client: Client, make_run: Callable[..., Any]
) -> None:
    run = make_run(status="completed")

    with CaptureQueriesContext(connection) as queries:
        html = operator_client.get(f"/runs/{run.pk}/").content.decode()

    assert '<section id="run-usage" class="card" aria-labelledby="usage-title" hidden>' in html
    assert not [q for q in queries.captured_queries if "model_call" in q["sql"]]


@pytest.mark.django_db
def test_the_run_socket_sends_the_usage_card_again_after_a_model_call(
    make_run: Callable[..., Any],
) -> None:
    run = make_run(status="running", input_tokens=10, output_tokens=5, cost=Decimal("0.5"))
    event = call_event(run, 1, "writer", "big", (10, 5), "0.5")
    status = RunEvent.objects.create(run=run, seq=2, type="executor_invoked", data={})

    html = fragments.run_update(run.pk, [event])

    card = CARD.search(html)
    assert card is not None and 'hx-swap-oob="true"' in card[0]
    assert usage_rows(html) == [("writer", "big", "1", "10", "5", "0.50")]
    assert 'id="run-usage"' not in fragments.run_update(run.pk, [status])


@pytest.mark.django_db(transaction=True)
def test_a_research_report_shows_each_agents_tokens_and_cost_at_the_table_price(
    drive: Callable[..., Any],
    role_user: Callable[..., Any],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(agents, "_WORD_DELAY", 0.0)
    ModelPrice.objects.create(
        model=agents.LOCAL_MODEL, input_per_million=Decimal(3), output_per_million=Decimal(15)
    )
    operator = role_user("olga", "Operator")
    run = drive(services.run_start, workflow_name="research-report", input="Cost", user=operator)
    client = Client()
    client.force_login(operator)

    rows = usage_rows(client.get(f"/runs/{run.pk}/").content.decode())

    assert sorted(row[0] for row in rows) == ["editor", "researcher", "writer"]
    assert {row[1] for row in rows} == {agents.LOCAL_MODEL}
    assert sum(Decimal(row[5]) for row in rows) == run.cost > 0
    assert sum(int(row[3].replace(",", "")) for row in rows) == run.input_tokens
