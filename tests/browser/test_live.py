"""Live updates in Chromium, beyond the journeys: a dropped socket resumes where the page left
off (every event once, in order), repeats are skipped, and the nav's approvals badge follows
decisions made in another tab (static/js/live.js on top of htmx's ws extension)."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

import pytest

from tests.browser.deadlines import ms
from tests.browser.pages import approve_in_inbox

pytestmark = [pytest.mark.browser, pytest.mark.slow]

NO_RELOAD = "window.__stillTheSamePage = true"
SAME_PAGE = "window.__stillTheSamePage === true"
ROW_SEQS = (
    "() => Array.from(document.querySelectorAll('#event-log-rows .event-row'), r => +r.id.slice(6))"
)
# What the extension would hand live.js for a batch that starts with the given sequence number.
OFFER = (
    """(seq) => {
  const event = new CustomEvent("htmx:wsBeforeMessage", {bubbles: true, cancelable: true,
    detail: {message: '<ol hx-swap-oob="afterbegin:#event-log-rows" """
    """data-seq="' + seq + '"></ol>'}});
  document.getElementById("run-live").dispatchEvent(event);
  return event.defaultPrevented;
}"""
)
DROP_SOCKET = (
    "() => document.getElementById('run-live')['htmx-internal-data'].webSocket.socket.close()"
)


def badge_is(page: Any, count: int) -> None:
    page.wait_for_function(
        "(n) => document.getElementById('approval-count').textContent.trim() === String(n)",
        arg=count,
        timeout=ms(15_000),
    )


def test_a_dropped_socket_resumes_where_the_page_left_off(
    new_context: Callable[..., Any], login_as: Callable[..., None], problems: Any
) -> None:
    context = new_context()
    page = context.new_page()
    sockets: list[str] = []
    page.on("websocket", lambda socket: sockets.append(socket.url))
    login_as(page, "ops")
    page.goto("/runs/start/?workflow=return-replace")
    page.fill("#id_input-order_id", "ORD-RESUME")
    page.fill("#id_input-work_ms", "0")
    page.click("form .card-footer button[type=submit]")
    page.wait_for_url(re.compile(r"/runs/[0-9a-f-]{36}/$"))
    page.evaluate(NO_RELOAD)
    page.wait_for_selector("#run-header .pill.status-waiting", timeout=ms(30_000))
    page.wait_for_selector("#live-indicator[data-state=live]")
    request_link = str(page.get_attribute("#run-outcome a:has-text('Decide in the inbox')", "href"))

    # The badge is the server's count (a fresh page) and the live one (this page) alike.
    inbox = context.new_page()
    inbox.goto(request_link)
    pending = int(inbox.text_content("#approval-count") or "0")
    assert pending >= 1
    badge_is(page, pending)

    seqs = page.evaluate(ROW_SEQS)
    last = int(page.get_attribute("#run-live", "data-last-seq") or "0")
    assert seqs == list(range(last, 0, -1))  # newest first, every event once
    # Repeats are dropped before anything is swapped; a newer batch goes through.
    assert page.evaluate(OFFER, last) is True and page.evaluate(OFFER, last - 1) is True
    assert page.evaluate(OFFER, last + 1000) is False
    page.evaluate(
        "(n) => document.getElementById('run-live').setAttribute('data-last-seq', n)", last
    )

    # The socket drops (a close the extension would not retry) just before the run moves on.
    page.evaluate(DROP_SOCKET)
    approve_in_inbox(inbox)

    page.wait_for_selector("#run-header .pill.status-completed", timeout=ms(30_000))
    page.wait_for_selector("#live-indicator[data-state=live]")
    final = int(page.get_attribute("#run-live", "data-last-seq") or "0")
    # It came back asking for what followed the last event the page had shown.
    assert [url for url in sockets if "/ws/runs/" in url][-1].endswith(f"?view=html&after={last}")
    assert final > last and page.evaluate(ROW_SEQS) == list(range(final, 0, -1))
    badge_is(page, pending - 1)
    assert page.evaluate(SAME_PAGE), "the page reloaded instead of updating live"
    assert problems.all() == []
