"""Agent runs in Chromium: an operator starts a research report with a typed message and watches
each agent's reply grow as the local model streams it; a viewer who opens the run meanwhile
sees the reply so far and then the rest, and both pages end with the agents' conversation,
without a reload."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

import pytest

from tests.browser.deadlines import ms

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
