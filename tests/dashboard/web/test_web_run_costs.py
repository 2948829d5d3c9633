"""The runs list's tokens and cost: the columns, the "cost at least / at most" and "tokens at
least" filters (typed amounts refused with a message, never a 500), the sort by cost with its
keyset pages, a workflow filter's totals, saved views and bulk actions keeping the filters."""

from __future__ import annotations

import re
from collections.abc import Callable
from decimal import Decimal
from typing import Any

import pytest
from django.test import Client
from django.urls import reverse

from dashboard.models import SavedView, WorkflowRun
from dashboard.web.runs.rows import forget_rows

pytestmark = pytest.mark.django_db

RUN_ID = re.compile(r'href="/runs/([0-9a-f-]{36})/"')
LIST = reverse("dashboard:run_list")


def run_ids(html: str) -> list[str]:
    return list(dict.fromkeys(RUN_ID.findall(html)))


@pytest.fixture(autouse=True)
def _fresh_rows() -> None:
    forget_rows()  # a kept row of another test's run with the same id must not be shown


@pytest.fixture
def priced(make_run: Callable[..., Any]) -> dict[str, WorkflowRun]:
    """Four runs: free (no agents), cheap, dear and dearest (of another workflow)."""
    return {
        "free": make_run(),
        "cheap": make_run(input_tokens=1_200, output_tokens=300, cost=Decimal("0.0105")),
        "dear": make_run(input_tokens=40_000, output_tokens=9_000, cost=Decimal("2.5")),
        "dearest": make_run(
            workflow_name="fail-at-step",
            input_tokens=500_000,
            output_tokens=120_000,
            cost=Decimal("31.25"),
        ),
    }


def listed(client: Client, **query: str) -> list[str]:
    response = client.get(LIST, query)
    assert response.status_code == 200, response.content[:500]
    return run_ids(response.content.decode())


def test_run_list_shows_each_runs_tokens_in_and_out_and_its_cost(
    operator_client: Client, priced: dict[str, WorkflowRun]
) -> None:
    html = operator_client.get(LIST).content.decode()

    assert "Tokens in / out" in html and 'id="sort-cost"' in html
    assert "40,000 / 9,000" in html and ">2.50<" in html
    assert "1,200 / 300" in html and ">0.0105<" in html
    assert "500,000 / 120,000" in html and ">31.25<" in html
    # A kept (finished) row is drawn again once its cost changes.
    WorkflowRun.objects.filter(pk=priced["cheap"].pk).update(cost=Decimal("0.75"))
    assert ">0.75<" in operator_client.get(LIST).content.decode()


def test_run_list_filters_by_cost_at_least_and_at_most_and_tokens_at_least(
    operator_client: Client, priced: dict[str, WorkflowRun]
) -> None:
    ids = {name: str(run.pk) for name, run in priced.items()}

    assert set(listed(operator_client, cost_min="2.5")) == {ids["dear"], ids["dearest"]}
    assert set(listed(operator_client, cost_max="2.5")) == {ids["free"], ids["cheap"], ids["dear"]}
    assert listed(operator_client, cost_min="0.01", cost_max="3") == [ids["dear"], ids["cheap"]]
    assert set(listed(operator_client, tokens_min="1500")) == {
        ids["cheap"],
        ids["dear"],
        ids["dearest"],
    }
    assert listed(operator_client, tokens_min="1,501", cost_max="10") == [ids["dear"]]
    assert listed(operator_client, cost_min="1000000000") == []


def test_run_list_sorts_by_cost_both_ways_with_keyset_pages(
    operator_client: Client, make_run: Callable[..., Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    from dashboard.web.runs import views

    monkeypatch.setattr(views, "PAGE_SIZE", 2)
    costs = ["0.5", "3", "0.5", "12", "0"]
    runs = [make_run(cost=Decimal(cost)) for cost in costs]
    dearest_first = sorted(runs, key=lambda run: (run.cost, run.pk), reverse=True)

    seen: list[str] = []
    response = operator_client.get(LIST, {"sort": "-cost"})
    while True:
        html = response.content.decode()
        seen += run_ids(html)
        found = re.search(r'href="([^"]+)" rel="next"', html)
        if found is None:
            break
        response = operator_client.get(found[1].replace("&amp;", "&"))
    assert seen == [str(run.pk) for run in dearest_first]
    cheapest = listed(operator_client, sort="cost")
    assert cheapest == [str(run.pk) for run in reversed(dearest_first)][:2]
    assert (
        'aria-sort="ascending"><a id="sort-cost"'
        in operator_client.get(LIST, {"sort": "cost"}).content.decode()
    )


@pytest.mark.parametrize(
    ("field", "value", "says"),
    [
        ("cost_min", "NaN", "finite"),
        ("cost_min", "-Infinity", "finite"),
        ("cost_min", "-1", "cannot be negative"),
        ("cost_max", "1e999", "At most 1,000,000,000"),
        ("cost_max", "99999999999999999999", "At most 1,000,000,000"),
        ("cost_min", "cheap", "Enter an amount"),
        ("cost_min", "0.0000001", "six decimal places"),
        ("cost_min", "1" * 500, "Enter an amount"),
        ("tokens_min", "lots", "whole number of tokens"),
        ("tokens_min", "1.5", "whole number of tokens"),
        ("tokens_min", "-5", "cannot be negative"),
        ("tokens_min", "9" * 30, "At most 1,000,000,000,000,000 tokens"),
        ("tokens_min", "١٢", "whole number of tokens"),  # Arabic-Indic digits: int() reads them
        ("cost_min", "\x00", "Null characters are not allowed"),
    ],
)
def test_run_list_refuses_an_amount_that_does_not_read_with_a_message_beside_it(
    operator_client: Client, priced: dict[str, WorkflowRun], field: str, value: str, says: str
) -> None:
    response = operator_client.get(LIST, {field: value})

    assert response.status_code == 400
    html = response.content.decode()
    assert f'id="id_{field}_error"' in html and says in html
    assert len(run_ids(html)) == 4  # the refused filter is left out, the list still shows
    live = operator_client.get(LIST, {field: value}, headers={"HX-Target": "runs-table"})
    assert live.status_code == 400 and says in live.content.decode()


def test_run_list_refuses_cost_at_most_below_cost_at_least(operator_client: Client) -> None:
    response = operator_client.get(LIST, {"cost_min": "5", "cost_max": "1"})
    assert response.status_code == 400
    assert "Not below “cost at least”" in response.content.decode()


def test_run_list_sums_a_workflows_runs_tokens_and_cost(
    operator_client: Client, priced: dict[str, WorkflowRun]
) -> None:
    html = operator_client.get(LIST, {"workflow": "squares"}).content.decode()
    totals = re.search(r'<p class="runs-totals" id="runs-totals">(.*?)</p>', html, re.DOTALL)
    assert totals is not None
    assert totals[1] == "squares: 3 runs matching · 41,200 tokens in, 9,300 out · cost 2.5105"
    narrowed = operator_client.get(LIST, {"workflow": "squares", "cost_min": "1"})
    assert "squares: 1 run matching · 40,000 tokens in" in narrowed.content.decode()
    assert 'id="runs-totals"' not in operator_client.get(LIST).content.decode()


def test_a_saved_view_keeps_the_cost_and_token_filters_and_refuses_bad_ones(
    operator_client: Client, priced: dict[str, WorkflowRun]
) -> None:
    query = "cost_min=0.5&cost_max=40&tokens_min=100&sort=-cost&after=zzz"
    response = operator_client.post(
        reverse("dashboard:saved_views"), {"name": "Dear runs", "query": query}
    )
    assert response.status_code == 302
    view = SavedView.objects.get(name="Dear runs")
    assert view.query == "cost_min=0.5&cost_max=40&tokens_min=100&sort=-cost"
    opened = operator_client.get(response["Location"])
    assert run_ids(opened.content.decode()) == [str(priced["dearest"].pk), str(priced["dear"].pk)]

    refused = operator_client.post(
        reverse("dashboard:saved_views"), {"name": "Bad", "query": "cost_min=NaN"}
    )
    assert refused.status_code == 422 and "finite" in refused.content.decode()
    assert not SavedView.objects.filter(name="Bad").exists()


def test_a_bulk_action_on_every_run_matching_refuses_a_cost_filter_that_does_not_read(
    operator_client: Client, priced: dict[str, WorkflowRun]
) -> None:
    client = operator_client
    response = client.post(
        reverse("dashboard:bulk_review"),
        {"action": "hold", "all_matching": "1", "query": "cost_min=NaN"},
    )
    assert response.status_code == 422
    assert "finite" in response.content.decode()
    assert not WorkflowRun.objects.filter(on_hold=True).exists()

    narrowed = client.post(
        reverse("dashboard:bulk_review"),
        {"action": "hold", "all_matching": "1", "query": "cost_min=2.5"},
    )
    assert narrowed.status_code == 200
    assert "every run matching the filter (2)" in narrowed.content.decode()
