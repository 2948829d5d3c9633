"""Agent runs in Chromium: an operator starts a research report with a typed message and watches
each agent's reply grow as the local model streams it; a viewer who opens the run meanwhile
sees the reply so far and then the rest, and both pages end with the agents' conversation,
without a reload."""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.browser.deadlines import ms
from tests.browser.pages import approve_in_inbox, start_run

pytestmark = [pytest.mark.browser, pytest.mark.slow]

RUN_URL = re.compile(r"/runs/[0-9a-f-]{36}/$")
NO_RELOAD = "window.__stillTheSamePage = true"
SAME_PAGE = "window.__stillTheSamePage === true"
# The reply being written now: its id and its text so far (null while none is).
WRITING = """() => {
  const badge = Array.from(document.querySelectorAll('#run-live-replies .live-reply .badge'))
    .find(b => b.textContent.includes('writing'));
  if (!badge) return null;
  const reply = badge.closest('.live-reply');
  return {id: reply.dataset.replyId, text: reply.querySelector('.live-reply-text').textContent};
}"""
TEXT_OF = """(id) => {
  const reply = document.querySelector(`#run-live-replies .live-reply[data-reply-id="${id}"]`);
  return reply ? reply.querySelector('.live-reply-text').textContent : '';
}"""


def writing(page: Any) -> tuple[str, int]:
    """Wait until a reply is being written; its id and the length of its text so far."""
    found = page.wait_for_function(WRITING, timeout=ms(30_000)).json_value()
    return str(found["id"]), len(found["text"])


def grows(page: Any, reply_id: str, longer_than: int) -> None:
    """Wait until that reply's text is longer than it was."""
    page.wait_for_function(
        f"([id, n]) => ({TEXT_OF})(id).length > n", arg=[reply_id, longer_than], timeout=ms(30_000)
    )


def test_an_operator_watches_an_agents_reply_stream_in_and_a_viewer_joins_midway(
    new_context: Callable[..., Any], login_as: Callable[..., None], problems: Any
) -> None:
    operator = new_context().new_page()
    login_as(operator, "ops")
    viewer = new_context().new_page()
    login_as(viewer, "viewer")  # signed in first: the replies take seconds, not minutes
    operator.goto("/runs/start/?workflow=research-report")
    operator.fill("#id_input-json", "Write a short report on how durable workflows help operators")
    operator.click("form .card-footer button[type=submit]")
    operator.wait_for_url(RUN_URL)
    operator.evaluate(NO_RELOAD)

    # The card appears while the researcher writes, and its text grows chunk by chunk.
    reply, so_far = writing(operator)
    grows(operator, reply, so_far)

    # A viewer opening the run mid-reply starts from what was written so far.
    viewer.goto(operator.url)
    viewer.evaluate(NO_RELOAD)
    reply, so_far = writing(viewer)
    assert so_far > 0  # what the model had written when the page opened
    grows(viewer, reply, so_far)

    # Both end on the finished run with each agent's conversation, never reloading.
    for page in (operator, viewer):
        page.wait_for_selector("#run-header .pill.status-completed", timeout=ms(60_000))
        page.wait_for_selector(".conversation[data-executor=editor]", timeout=ms(30_000))
        assert page.evaluate(SAME_PAGE)
        assert "Conversation · researcher" in page.text_content("main")
        assert page.is_hidden("#run-live-replies")  # nothing is being written any more
    assert problems.all() == []


def test_a_fork_with_an_edited_prompt_writes_a_different_report(
    new_context: Callable[..., Any], login_as: Callable[..., None], problems: Any
) -> None:
    operator = new_context().new_page()
    login_as(operator, "ops")
    viewer = new_context().new_page()
    login_as(viewer, "viewer")
    operator.goto("/runs/start/?workflow=research-report")
    operator.fill("#id_input-json", "Write about durable workflows")
    operator.click("form .card-footer button[type=submit]")
    operator.wait_for_url(RUN_URL)
    run_id = operator.url.rstrip("/").rsplit("/", 1)[-1]
    operator.wait_for_selector("#run-header .pill.status-completed", timeout=ms(60_000))
    viewer.goto("/?workflow=research-report")
    viewer.evaluate(NO_RELOAD)

    # The prompt the orchestration handed its first agent is in flight after superstep 1: the
    # editor shows it as the user's message, not as a tree of JSON.
    operator.goto(f"/runs/{run_id}/?timeline=all")
    operator.locator("#run-timeline a.timeline-card", has_text=re.compile(r"Superstep 1\b")).click()
    operator.click("a[data-fork-open]")
    operator.wait_for_selector("#fork-details[open]")
    prompt = operator.locator('#fork-editor [data-fork-group="messages"] [data-fork-message]')
    assert prompt.count() == 1 and "user" in prompt.locator("label").inner_text()
    assert prompt.locator("textarea").input_value() == "Write about durable workflows"
    assert operator.locator('#fork-editor [data-fork-group="messages"] textarea.code').count() == 0
    prompt.locator("textarea").fill("Write about tide pools")
    operator.click("button[data-fork-review]")
    dialog = operator.locator("#fork-dialog[open]")
    dialog.wait_for(state="visible")
    assert "Write about tide pools" in dialog.locator("[data-fork-changes]").inner_text()
    assert "Model calls that may run again in the fork: researcher" in dialog.inner_text()
    operator.fill("#fork-reason", "the customer asked about tide pools")
    dialog.locator("button[data-fork-confirm-button]").click()
    operator.wait_for_url(lambda url: run_id not in url and RUN_URL.search(url) is not None)
    fork_id = operator.url.rstrip("/").rsplit("/", 1)[-1]

    # The agents write again, from the edited prompt; the viewer's list shows the fork finish.
    operator.wait_for_selector("#run-header .pill.status-completed", timeout=ms(60_000))
    editor = operator.locator(".conversation[data-executor=editor]")
    editor.wait_for(timeout=ms(30_000))
    assert "tide pools" in editor.inner_text() and "durable workflows" not in editor.inner_text()
    row = viewer.locator(f'#runs-table tr:has(a[href="/runs/{fork_id}/"])')
    row.locator(".pill.status-completed").wait_for(timeout=ms(60_000))
    assert "fork" in row.inner_text() and viewer.evaluate(SAME_PAGE)
    assert problems.all() == []


def test_a_magentic_team_works_to_the_plan_an_approver_edited(
    new_context: Callable[..., Any],
    login_as: Callable[..., None],
    problems: Any,
    screenshot: Callable[..., Path],
) -> None:
    operator = new_context(viewport={"width": 1280, "height": 800}).new_page()
    login_as(operator, "ops")
    approver = new_context(viewport={"width": 1280, "height": 800}).new_page()
    login_as(approver, "approver2")
    run_id = start_run(operator, "product-brief", json="A brief for a run dashboard")
    operator.evaluate(NO_RELOAD)
    plan = operator.locator('#run-orchestration [data-orchestration="plan"]')
    plan.wait_for(timeout=ms(60_000))
    assert "1. analyst:" in plan.inner_text() and "3. reviewer:" in plan.inner_text()

    # The approver moves the writer first and drops the reviewer's step.
    open_request(approver, run_id)
    assert "2. writer:" in approver.input_value("#id_response-text")
    approver.evaluate(
        "document.querySelector('#id_response-text').scrollIntoView({block: 'center'})"
    )
    screenshot(approver, "inbox-magentic-plan-review", full_page=False)
    approver.fill("#id_response-text", "1. writer: a first draft\n2. analyst: check the asks")
    approve_in_inbox(approver)

    # The manager replans to the edited order and asks again; approved as it is, the team
    # works in that order. The operator's page follows, never reloading.
    operator.locator('#run-orchestration .badge:has-text("replanned")').wait_for(timeout=ms(60_000))
    open_request(approver, run_id)
    assert approver.input_value("#id_response-text").splitlines()[2:4] == [
        "1. writer: Writes the brief from the analyst's list.",
        "2. analyst: Lists what customers asked for and what competitors offer.",
    ]
    approve_in_inbox(approver)
    operator.wait_for_selector("#run-header .pill.status-completed", timeout=ms(90_000))
    speakers = operator.locator("#run-orchestration [data-ledger] td:nth-child(2)")
    speakers.first.wait_for(timeout=ms(30_000))
    assert [s.strip() for s in speakers.all_inner_texts()] == ["writer", "analyst", "analyst"]
    assert "reviewer" not in operator.inner_text(".conversation[data-executor=analyst]")
    assert operator.evaluate(SAME_PAGE)
    operator.locator("#run-orchestration").scroll_into_view_if_needed()
    screenshot(operator, "run-orchestration-magentic", full_page=False)
    operator.locator(".conversation").first.scroll_into_view_if_needed()
    screenshot(operator, "run-conversation", full_page=False)
    assert problems.all() == []


def open_request(page: Any, run_id: str) -> None:
    """Open the newest pending request of the run in the inbox."""
    page.goto("/approvals/?workflow=product-brief")  # the suite leaves pages of others pending
    entry = page.locator(".request-row", has_text=f"run {run_id[:8]}")
    entry.wait_for(timeout=ms(30_000))
    with page.expect_response(lambda r: "request=" in r.url and r.request.method == "GET"):
        entry.locator("a.request-item").first.click()
    page.wait_for_selector("#message-request")
