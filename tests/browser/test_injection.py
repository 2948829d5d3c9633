"""Script-injection strings in run input, state, request data, responses and reasons execute
nothing in Chromium: no dialog, no console error, no CSP violation, and the text shows as text."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

import pytest

from tests.browser.deadlines import ms
from tests.browser.pages import approve_in_inbox

pytestmark = [pytest.mark.browser, pytest.mark.slow]

# Each would run script (or an htmx request) if it reached the page as markup.
CORPUS = [
    "<script>alert('script')</script>",
    '"><img src=x onerror=alert("img")>',
    "<svg onload=alert('svg')>",
    "</script><script>alert('close')</script>",
    '<div hx-get="/logout/" hx-trigger="load">htmx</div>',
    "javascript:alert('href')",
    "<iframe srcdoc=\"<script>parent.alert('frame')</script>\">",
    "{{7*7}}{% debug %}",
    "\u2028\u2029<style>body{display:none}</style>",
]
ORDER_ID = " ".join(CORPUS)


def test_injection_corpus_runs_nothing(
    new_context: Callable[..., Any], login_as: Callable[..., None], problems: Any
) -> None:
    page = new_context().new_page()
    login_as(page, "ops")
    # Input: the order id is typed into the generated form; it flows into the executors'
    # state, the approval request's question, the output and the event log.
    page.goto("/runs/start/?workflow=return-replace")
    page.fill("#id_input-order_id", ORDER_ID)
    page.fill("#id_input-work_ms", "0")
    page.click("form .card-footer button[type=submit]")
    page.wait_for_url(re.compile(r"/runs/[0-9a-f-]{36}/$"))
    run_url = page.url
    page.wait_for_selector("#run-header .pill.status-waiting", timeout=ms(30_000))
    page.wait_for_selector("#run-input-json + .json-tree .json-leaf")
    shown = page.inner_text("#run-input-json + .json-tree")
    assert "<script>alert('script')</script>" in shown and "<svg onload=alert('svg')>" in shown

    # State and pending request data, in the checkpoint inspector's trees and fork editor.
    page.click("#run-timeline .timeline-card:has-text('Superstep 4')")
    page.wait_for_selector("#shared-state-json + .json-tree .json-node")
    page.click("button[data-json-expand='shared-state-json']")
    assert "<svg onload=alert('svg')>" in page.inner_text("#shared-state-json + .json-tree")
    order_id = page.locator(
        '#fork-editor [data-fork-field^="state."][data-fork-field$=".order_id"]'
    )
    assert order_id.input_value() == ORDER_ID  # the ReturnState's field, as plain text

    # Request data in the inbox; a hostile note and reason with the decision.
    page.goto(run_url)
    page.click("#run-outcome a:has-text('Decide in the inbox')")
    page.wait_for_selector("#approval-panel .request-kv")
    assert "<iframe srcdoc=" in page.inner_text("#approval-panel .request-kv")
    page.fill("#id_response-note", CORPUS[1])
    page.fill("#id_reason", CORPUS[0] + CORPUS[4])
    approve_in_inbox(page)

    # The output and the archive, and a search for the same strings.
    page.goto(run_url)
    page.wait_for_selector("#run-header .pill.status-completed", timeout=ms(30_000))
    page.goto("/approvals/archive/")
    assert CORPUS[0] in page.inner_text("#archive-table")
    page.goto("/?q=" + "<script>alert('q')</script>")
    assert page.locator("#id_q").input_value() == "<script>alert('q')</script>"
    page.goto("/")
    page.wait_for_timeout(500)  # let any deferred handler fire

    assert page.evaluate("document.querySelectorAll('img, iframe, svg[onload]').length") == 0
    assert page.evaluate("document.body.style.display") == ""
    assert problems.all() == []
