"""Tokens and cost in Chromium (issue 24): an admin prices the demo's local model on the
prices page (a NaN refused beside its field) and sets a "run cost above" alert rule (a
negative cost refused); an operator starts a research report on a real worker and the local
model; the admin, watching the runs list in a second browser context, sees the run's tokens
and cost fill in without a reload, the same figures as the run page's usage card; filtering
by cost keeps or drops the run; and the alert reaches its webhook once and shows on the
operator's run page, live, and on the alerts page.

On a server of its own: its price and its rule must not touch the other tests' runs.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

import pytest

from dashboard.demo.agents import LOCAL_MODEL
from tests.browser.deadlines import ms
from tests.browser.receivers import SECRET, Receiver
from tests.browser.servers import Deployment

pytestmark = [pytest.mark.browser, pytest.mark.slow]

RUN_URL = re.compile(r"/runs/[0-9a-f-]{36}/$")
NO_RELOAD = "window.__stillTheSamePage = true"
SAME_PAGE = "window.__stillTheSamePage === true"
# The run's cost in the runs list (data-cost of its row's cost cell), or null without the row.
ROW_COST = """(runId) => {
  const link = document.querySelector(`#runs-table a.run-id[href="/runs/${runId}/"]`);
  const cell = link && link.closest('tr').querySelector('td.run-cost');
  return cell ? {cost: cell.dataset.cost, text: cell.textContent.trim(),
                 tokens: link.closest('tr').querySelector('td.run-tokens').textContent.trim()}
              : null;
}"""


def row_cost(page: Any, run_id: str) -> dict[str, str] | None:
    found: dict[str, str] | None = page.evaluate(ROW_COST, run_id)
    return found


def test_an_operators_agent_run_fills_in_the_cost_columns_and_trips_a_cost_alert(
    deployment: Deployment,
    new_context: Callable[..., Any],
    login_as: Callable[..., None],
    problems: Any,
    receiver: Receiver,
    screenshot: Callable[[Any, str], Any],
) -> None:
    server = deployment(SUPERSTEP_BASE_URL=deployment.url)
    admin = new_context(base_url=server.url).new_page()
    login_as(admin, "admin")
    operator = new_context(base_url=server.url).new_page()
    login_as(operator, "ops")

    # The admin prices the local model; a price that is not a number is refused beside it.
    admin.goto("/prices/")
    admin.click("text=New model price")
    admin.fill("#id_model", LOCAL_MODEL)
    admin.fill("#id_input_per_million", "NaN")
    admin.fill("#id_output_per_million", "2000")
    admin.click("#price-form button[type=submit]")
    assert "Enter a finite price" in admin.inner_text("#id_input_per_million_error")
    admin.fill("#id_input_per_million", "1000")
    admin.click("#price-form button[type=submit]")
    admin.wait_for_url(re.compile(r"/prices/$"))
    assert "1000.0000" in admin.inner_text(f'tr[data-model-price="{LOCAL_MODEL}"]')
    screenshot(admin, "prices")

    # And an alert for research reports costing more than 0.05.
    admin.goto("/alerts/new/")
    admin.fill("#id_name", "dear reports")
    admin.select_option("#id_condition", "run_cost")
    admin.select_option("#id_workflow_name", "research-report")
    admin.fill("#id_threshold_cost", "-1")
    admin.fill("#id_webhook_url", receiver.url)
    admin.fill("#id_webhook_secret", SECRET)
    admin.click("#alert-rule-form button[type=submit]")
    assert "cannot be negative" in admin.inner_text("#id_threshold_cost_error")
    screenshot(admin, "alert-rule-cost-refused")
    admin.fill("#id_threshold_cost", "0.05")
    admin.click("#alert-rule-form button[type=submit]")
    admin.wait_for_url(re.compile(r"/alerts/$"))
    assert "Run cost above 0.05" in admin.inner_text('tr[data-alert-rule="dear reports"]')

    # The admin watches the runs list while the operator starts a research report.
    admin.goto("/")
    admin.evaluate(NO_RELOAD)
    operator.goto("/runs/start/?workflow=research-report")
    operator.fill("#id_input-json", "Write a short report on what agent runs cost")
    operator.click("form .card-footer button[type=submit]")
    operator.wait_for_url(RUN_URL)
    operator.evaluate(NO_RELOAD)
    run_id = operator.url.rstrip("/").rsplit("/", 1)[-1]

    # Its row appears, then its tokens and cost fill in as the agents answer, with no reload.
    admin.wait_for_function(f"() => ({ROW_COST})({run_id!r}) !== null", timeout=ms(30_000))
    admin.wait_for_function(f"() => Number(({ROW_COST})({run_id!r}).cost) > 0", timeout=ms(60_000))
    operator.wait_for_selector("#run-header .pill.status-completed", timeout=ms(90_000))
    operator.wait_for_selector("#run-usage tr[data-executor=editor]", timeout=ms(30_000))
    final_cost = operator.inner_text("#run-usage-cost")
    final_tokens = (
        f"{operator.inner_text('#run-usage-input')} / {operator.inner_text('#run-usage-output')}"
    )
    admin.wait_for_function(
        f"() => ({ROW_COST})({run_id!r}).text === {final_cost!r}", timeout=ms(30_000)
    )
    row = row_cost(admin, run_id)
    assert row is not None and (row["text"], row["tokens"]) == (final_cost, final_tokens)
    assert float(row["cost"]) > 0.05  # above the rule's threshold: the alert is due
    executors = operator.locator("#run-usage tbody tr").evaluate_all(
        "rows => rows.map(row => row.dataset.executor).sort()"
    )
    assert executors == ["editor", "researcher", "writer"]
    assert admin.evaluate(SAME_PAGE) and operator.evaluate(SAME_PAGE)
    screenshot(admin, "runs-list-cost")
    screenshot(operator, "run-usage")

    # Filtering by cost: at least what it cost keeps it, a cent more drops it.
    admin.fill("#id_cost_min", final_cost)
    admin.click("#run-filters button[type=submit]")
    admin.wait_for_url(re.compile(r"cost_min="))
    assert row_cost(admin, run_id) is not None
    above = f"{float(final_cost.replace(',', '')) + 0.01:.2f}"
    admin.fill("#id_cost_min", above)
    admin.click("#run-filters button[type=submit]")
    admin.wait_for_selector("text=No runs match these filters")
    admin.fill("#id_cost_min", "NaN")
    admin.click("#run-filters button[type=submit]")
    admin.wait_for_selector("#id_cost_min_error:has-text('Enter a finite amount')")

    # The alert reaches its webhook once and shows on the operator's page, still unreloaded.
    opened = receiver.wait_for("alert_opened", timeout=60)
    assert opened["run_id"] == run_id and opened["condition"] == "run_cost"
    assert opened["threshold_cost"] == "0.05" and "above 0.05" in opened["summary"]
    operator.wait_for_selector("#run-alerts [data-alert-state]", timeout=ms(30_000))
    assert "dear reports" in operator.inner_text("#run-alerts")
    assert operator.evaluate(SAME_PAGE)
    admin.goto("/alerts/")
    assert "dear reports" in admin.inner_text("#alert-incidents")
    assert [p["event"] for p in receiver.payloads] == ["alert_opened"]
    # The refused price, alert cost and filter above answered 422, 422 and 400.
    assert problems.all(allow=("status of 422", "status of 400")) == []
