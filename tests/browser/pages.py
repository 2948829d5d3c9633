"""Steps several browser tests take the same way."""

from __future__ import annotations

import re
from typing import Any

RUN_URL = re.compile(r"/runs/[0-9a-f-]{36}/$")
# Set on a page, then checked: still true means the page was never reloaded.
NO_RELOAD = "window.__stillTheSamePage = true"
SAME_PAGE = "window.__stillTheSamePage === true"


def start_waiting_run(page: Any, order_id: str) -> str:
    """Start a return-replace run from the start form and wait for it to ask for a decision;
    its id."""
    page.goto("/runs/start/?workflow=return-replace")
    page.fill("#id_input-order_id", order_id)
    page.fill("#id_input-work_ms", "0")
    page.click("form .card-footer button[type=submit]")
    page.wait_for_url(RUN_URL)
    page.wait_for_selector("#run-outcome a:has-text('Decide in the inbox')", timeout=30_000)
    return str(page.url).rstrip("/").rsplit("/", 1)[-1]
