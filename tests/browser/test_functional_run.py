"""A functional workflow (``@workflow`` / ``@step``) in Chromium, in two browsers: an operator
starts the ``order-pipeline`` demo, whose run page lists its steps instead of a graph and waits
for an approver; the approver approves it in the inbox; the operator's page, without a reload,
shows the run resume: the step done before the pause replayed from its checkpoint, the
steps after it computed, each with its result and duration."""

from __future__ import annotations

import json
import re
import uuid
from collections.abc import Callable
from typing import Any

import pytest

from tests.browser.deadlines import ms
from tests.browser.pages import NO_RELOAD, SAME_PAGE, approve_in_inbox, open_in_inbox, start_run

pytestmark = [pytest.mark.browser, pytest.mark.slow]


def step(name: str, status: str) -> str:
    return f'#run-steps [data-step="{name}"][data-step-status="{status}"]'


def test_an_approved_functional_run_shows_its_replayed_and_computed_steps_live(
    new_context: Callable[..., Any],
    login_as: Callable[..., None],
    problems: Any,
    screenshot: Callable[[Any, str], Any],
) -> None:
    customer = f"Ada {uuid.uuid4().hex[:6]}"
    operator = new_context().new_page()
    login_as(operator, "operator")
    run_id = start_run(operator, "order-pipeline", customer=customer, work_ms=800)
    operator.wait_for_selector("#run-header .pill.status-waiting", timeout=ms(30_000))
    operator.wait_for_selector(step("price_order", "computed"))
    assert operator.locator("#run-graph").count() == 0  # no graph to draw
    assert operator.locator("#run-steps [data-step]").count() == 1
    operator.evaluate(NO_RELOAD)

    inbox = new_context().new_page()
    login_as(inbox, "approver2")
    open_in_inbox(inbox, run_id, "?workflow=order-pipeline")
    assert f"Approve {customer}'s order of 135.00?" in inbox.inner_text("#approval-panel")
    inbox.fill("#id_reason", "Known customer")
    approve_in_inbox(inbox)

    # The operator's page follows the resumed run: replayed, then computed, step by step.
    operator.wait_for_selector("#run-header .pill.status-completed", timeout=ms(30_000))
    operator.wait_for_selector(step("ship_order", "computed"), timeout=ms(10_000))
    assert operator.evaluate(SAME_PAGE), "the page reloaded instead of updating live"
    order = operator.eval_on_selector_all(
        "#run-steps [data-step]", "rows => rows.map(r => [r.dataset.step, r.dataset.stepStatus])"
    )
    assert order == [
        ["price_order", "replayed"],
        ["reserve_stock", "computed"],
        ["pack_order", "computed"],
        ["ship_order", "computed"],
    ]
    steps = operator.inner_text("#run-steps")
    assert "1 replayed from a checkpoint" in steps
    pack = operator.inner_text('#run-steps [data-step="pack_order"]')
    assert "parcel for res-lamp-42-3" in pack and "res-lamp-42-3" in pack  # result, input
    assert re.search(r"computed \d+ ms", pack), pack  # its duration (work_ms=800)
    output = json.loads(operator.text_content("#run-output-json") or "{}")
    assert output["status"] == "shipped" and output["customer"] == customer
    screenshot(operator, "run-functional-steps")
    assert problems.all() == []
