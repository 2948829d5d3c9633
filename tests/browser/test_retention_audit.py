"""Retention and audit in the dashboard's own pages, in Chromium (issue 15): an admin creates a
policy and sees what its draft would delete while typing, sees the saved policy's preview in the
list, runs it after a confirmation that names the count, finds the run in the audit log by
filtering, and downloads the filtered log as CSV. And the Django admin's changelists kept for raw
data (retention's "would delete", the audit log's target, run and client) fit a 1280 px screen.

The retention test runs on a server of its own: a real run of a policy deletes checkpoints,
which no other test's runs should lose.
"""

from __future__ import annotations

import csv
import io
import re
from collections.abc import Callable
from typing import Any

import pytest

from tests.browser.deadlines import ms

pytestmark = [pytest.mark.browser, pytest.mark.slow]

PHONE = {"width": 390, "height": 844}


def start_squares(page: Any, limit: int) -> str:
    page.goto("/runs/start/")
    page.select_option("#start-workflow", "squares")
    page.wait_for_selector("#id_input-limit")
    page.fill("#id_input-limit", str(limit))
    page.fill("#id_input-work_ms", "0")
    page.click("form .card-footer button[type=submit]")
    page.wait_for_url(re.compile(r"/runs/[0-9a-f-]{36}/$"))
    page.wait_for_selector("#run-header .pill.status-completed", timeout=ms(120_000))
    return str(page.url.rstrip("/").rsplit("/", 1)[-1])


def checkpoint_count(page: Any, run_id: str) -> int:
    page.goto(f"/runs/{run_id}/?timeline=all")
    return int(page.locator("#run-timeline a.timeline-card").count())


def test_an_admin_creates_a_policy_sees_its_preview_runs_it_and_finds_it_in_the_audit_log(
    deployment: Callable[..., Any],
    new_context: Callable[..., Any],
    login_as: Callable[..., None],
    problems: Any,
    screenshot: Callable[[Any, str], Any],
) -> None:
    server = deployment()
    page = new_context(base_url=server.url).new_page()
    login_as(page, "admin")
    run_id = start_squares(page, 4)
    before = checkpoint_count(page, run_id)
    assert before >= 3

    # A new policy: the draft's preview follows the form, nothing saved yet.
    page.goto("/retention/")
    assert "No retention policies" in page.inner_text("#retention-policies")
    page.click("text=New policy")
    page.fill("#id_name", "squares-newest")
    page.fill("#id_workflow_pattern", "squares")
    page.fill("#id_keep_last_checkpoints", "0")
    page.wait_for_selector("#draft-preview >> text=Keep at least 1")
    page.fill("#id_keep_last_checkpoints", "1")
    draft = page.wait_for_selector("#draft-preview >> text=Saved and applied now, it would delete")
    assert f"{before - 1} checkpoints" in " ".join(draft.inner_text().split())
    screenshot(page, "retention-policy-form")
    page.click("#policy-form button[type=submit]")
    page.wait_for_url(re.compile(r"/retention/$"))

    # Its row: what it keeps, enabled, never applied, and the service's preview.
    row = page.locator('tr[data-policy="squares-newest"]')
    assert "Keeps the newest 1 checkpoint of each run" in row.inner_text()
    assert "Never applied" in row.inner_text()
    preview = row.locator(f'.retention-preview [data-preview="{before - 1}"]')
    assert f"{before - 1} checkpoints" in preview.locator("strong").inner_text()
    screenshot(page, "retention-policy-preview")  # "retention" is the screenshot test's

    # Run now: the confirmation says how many go; cancelling deletes nothing.
    row.locator("button:has-text('Run now')").click()
    dialog = page.locator("dialog[open]")
    assert f"This deletes {before - 1} checkpoints" in dialog.inner_text()
    dialog.locator("button[value=cancel]").click()
    assert checkpoint_count(page, run_id) == before
    page.goto("/retention/")
    row = page.locator('tr[data-policy="squares-newest"]')
    row.locator("button:has-text('Run now')").click()
    page.locator("dialog[open] button[value=confirm]").click()
    page.wait_for_selector(f"#toasts >> text=squares-newest deleted {before - 1} checkpoints")
    row = page.locator('tr[data-policy="squares-newest"]')
    assert f"{before - 1} checkpoints deleted · by admin" in " ".join(row.inner_text().split())
    row.locator('.retention-preview [data-preview="0"]').wait_for()
    assert checkpoint_count(page, run_id) == 1

    # The audit log, filtered to that prune, links nowhere else and exports the same rows.
    page.goto("/audit/")
    page.fill("#id_action", "prune")
    page.fill("#id_actor", "admin")
    page.click("#audit-filters button[type=submit]")
    page.wait_for_url(re.compile(r"action=prune"))
    rows = page.locator("tr[data-audit-entry]")
    assert rows.count() == 1 and "policy squares-newest" in rows.first.inner_text()
    screenshot(page, "audit-log")
    with page.expect_download() as download:
        page.click("a[data-export]")
    content = download.value.path().read_text(encoding="utf-8")
    exported = list(csv.reader(io.StringIO(content)))
    assert exported[0][:4] == ["created_at", "actor", "action", "outcome"]
    assert [(r[1], r[2], r[3], r[6]) for r in exported[1:]] == [
        ("admin", "prune", "ok", "policy squares-newest")
    ]

    # The run's own row in the log links to it.
    page.goto(f"/audit/?run={run_id}")
    page.click(f'a.run-id[href="/runs/{run_id}/"] >> nth=0')
    page.wait_for_url(re.compile(rf"/runs/{run_id}/$"))

    # On a phone both pages stack their tables into cards, and nothing runs off the side.
    phone = new_context(viewport=PHONE, base_url=server.url).new_page()
    login_as(phone, "admin")
    for url, name in (("/retention/", "retention"), ("/audit/", "audit-log")):
        phone.goto(url)
        phone.wait_for_selector("tr[data-policy], tr[data-audit-entry]")
        assert phone.evaluate("document.documentElement.scrollWidth") <= PHONE["width"], url
        screenshot(phone, name)
    assert problems.all() == []


def test_the_django_admins_changelists_fit_a_1280_px_screen(
    new_context: Callable[..., Any],
    login_as: Callable[..., None],
    problems: Any,
    screenshot: Callable[[Any, str], Any],
) -> None:
    page = new_context().new_page()
    login_as(page, "admin")
    # A disabled policy (nothing is ever pruned by it) with the longest name there can be; its
    # creation puts that name into an audit entry's target too.
    page.goto("/retention/new/")
    name = "a-policy-with-a-long-name-" + "x" * 74
    page.fill("#id_name", name)
    page.fill("#id_workflow_pattern", "no-such-workflow-" + "y" * 60)
    page.fill("#id_keep_last_checkpoints", "5")
    page.fill("#id_delete_checkpoints_older_than_days", "30")
    page.fill("#id_delete_runs_older_than_days", "365")
    page.uncheck("#id_enabled")
    page.click("#policy-form button[type=submit]")
    page.wait_for_url(re.compile(r"/retention/$"))

    for model in ("retentionpolicy", "auditentry"):
        page.goto(f"/admin/dashboard/{model}/")
        page.wait_for_selector("#result_list tbody tr")
        sizes = page.evaluate(
            """() => {
                const results = document.querySelector('#changelist .results');
                return [results.scrollWidth, results.clientWidth, """
            """document.documentElement.scrollWidth];
            }"""
        )
        screenshot(page, f"admin-{model}")
        scroll, visible, document_width = sizes
        assert scroll <= visible and document_width <= 1280, (model, sizes)
    assert problems.all() == []
