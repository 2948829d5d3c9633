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


def start_run(page: Any, workflow: str, **fields: object) -> str:
    """Start a run of ``workflow`` from the start form with ``fields`` typed in; its id."""
    page.goto(f"/runs/start/?workflow={workflow}")
    for name, value in fields.items():
        page.fill(f"#id_input-{name}", str(value))
    page.click("form .card-footer button[type=submit]")
    page.wait_for_url(RUN_URL)
    return str(page.url).rstrip("/").rsplit("/", 1)[-1]


def open_in_inbox(page: Any, run_id: str, query: str = "") -> None:
    """Go to the inbox (``query``: its filters, e.g. ``?workflow=...``) and open the request of
    run ``run_id`` in the panel. Picking it swaps the panel with htmx: this returns once the
    swap has happened (the panel may already show this request, and typing before the swap
    would be lost)."""
    page.goto(f"/approvals/{query}")
    page.evaluate("window.__oldPanel = document.getElementById('approval-panel')")
    page.click(f'.request-item:has-text("{run_id[:8]}")')
    page.wait_for_function(
        "() => document.getElementById('approval-panel') !== window.__oldPanel"
        " && !document.querySelector('#approval-panel.htmx-settling, #approval-panel .htmx-added')"
    )
    page.wait_for_selector(f'#approval-panel a[href="/runs/{run_id}/"]')


APPROVE = "#approval-panel button[value=approve], #decision-bar button[value=approve]"


def approve_in_inbox(page: Any, then: str = "#decide-notice:has-text('approved')") -> None:
    """Approve the request the inbox panel shows, as a person does: one click, confirmed in
    the dialog when the answer's fields were edited; returns once ``then`` shows (by default
    the notice the panel gives when it goes on to the next request)."""
    from tests.browser.deadlines import ms

    page.click(APPROVE)
    page.wait_for_selector(f"#approve-dialog[open], {then}", timeout=ms(30_000))
    dialog = page.locator("#approve-dialog[open]")
    if dialog.count():
        dialog.locator("button[value=confirm]").click()
        page.wait_for_selector(then, timeout=ms(30_000))


REJECT = "#approval-panel button[value=reject], #decision-bar button[value=reject]"


def reject_in_inbox(page: Any, reason: str) -> None:
    """Reject the request the inbox panel shows: the button opens a dialog that asks for the
    reason, and the decision is sent when it is confirmed."""
    page.locator(REJECT).first.click()
    dialog = page.locator("#reject-dialog[open]")
    dialog.locator("#reject-reason").fill(reason)
    dialog.locator("button[value=confirm]").click()


def save_schedule(page: Any, name: str, workflow: str, input: str, *, every: int = 0) -> None:
    """Create a schedule through the form: every ``every`` seconds, or (0) daily at 03:00, when
    a test means to fire it only by hand."""
    page.goto("/schedules/new/")
    page.fill("#id_name", name)
    page.select_option("#id_workflow_name", workflow)
    page.fill("#id_input", input)
    if every:
        page.select_option("#id_kind", "interval")
        page.fill("#id_cron", "")
        page.fill("#id_every", str(every))
        page.select_option("#id_unit", "seconds")
    else:
        page.select_option("#id_kind", "cron")
        page.fill("#id_cron", "0 3 * * *")
    page.click("#schedule-form button[type=submit]")
    page.wait_for_url(re.compile(r"/schedules/"))
