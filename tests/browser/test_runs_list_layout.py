"""The runs list on a phone and on a desk, in Chromium: on a 390×844 phone the navigation folds
behind a Menu button that reaches every link (by pointer and by keyboard) and the filters fold
behind "Filters" without losing their values; at 1280×800 both stay open. A run a schedule
started names and links its schedule, and the "Started by" filter tells such runs from those a
person started. Photographed at both sizes on the way."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

import pytest

from tests.browser.conftest import PHONE
from tests.browser.deadlines import ms
from tests.browser.pages import RUN_URL, save_schedule, start_run

pytestmark = [pytest.mark.browser, pytest.mark.slow]

TOGGLE = "button[data-nav-toggle]"


def nav_hrefs(page: Any) -> list[str]:
    return [str(h) for h in page.eval_on_selector_all(".nav-links a", "as => as.map(a => a.href)")]


def test_on_a_phone_the_menu_reaches_every_link_and_on_a_desk_they_all_show(
    new_context: Callable[..., Any],
    login_as: Callable[..., None],
    screenshot: Callable[[Any, str], Any],
    problems: Any,
) -> None:
    desk = new_context().new_page()
    login_as(desk, "admin")
    desk.goto("/")
    links = nav_hrefs(desk)
    assert len(links) >= 7, links  # Runs … Audit, Admin: more than a phone's width holds
    assert not desk.locator(TOGGLE).is_visible()
    assert all(desk.locator(".nav-links a").nth(i).is_visible() for i in range(len(links)))
    screenshot(desk, "runs-list-layout")

    phone = new_context(viewport=PHONE).new_page()
    login_as(phone, "admin")
    phone.goto("/")
    assert nav_hrefs(phone) == links
    toggle = phone.locator(TOGGLE)
    assert toggle.get_attribute("aria-expanded") == "false"
    assert not phone.locator(".nav-links").is_visible()
    screenshot(phone, "runs-list-layout")

    # Opened by pointer: every link shows inside the screen's width.
    toggle.click()
    assert toggle.get_attribute("aria-expanded") == "true"
    for i in range(len(links)):
        link = phone.locator(".nav-links a").nth(i)
        assert link.is_visible(), links[i]
        box = link.bounding_box()
        assert box is not None and box["x"] >= 0 and box["x"] + box["width"] <= PHONE["width"]
    screenshot(phone, "runs-list-menu")
    # Escape folds it and gives the focus back to the button.
    phone.keyboard.press("Escape")
    assert toggle.get_attribute("aria-expanded") == "false"
    assert phone.evaluate("document.activeElement.hasAttribute('data-nav-toggle')")

    # By keyboard: Enter opens it, Tab walks to the last link, Enter follows it.
    phone.keyboard.press("Enter")
    assert toggle.get_attribute("aria-expanded") == "true"
    for _ in links:
        phone.keyboard.press("Tab")
    assert phone.evaluate("document.activeElement.href") == links[-1]
    phone.keyboard.press("Enter")
    phone.wait_for_url(links[-1] + "*")
    assert problems.all() == []


def test_the_filters_fold_on_a_phone_keeping_their_values_and_stay_open_on_a_desk(
    new_context: Callable[..., Any], login_as: Callable[..., None], problems: Any
) -> None:
    desk = new_context().new_page()
    login_as(desk, "ops")
    desk.goto("/")
    assert desk.locator("#run-filters").is_visible()
    assert not desk.locator("#run-filters-fold > summary").is_visible()
    desk.select_option("#id_status", "completed")
    desk.click("#run-filters button[type=submit]")
    desk.wait_for_url("**/?*status=completed*")
    assert desk.locator("#run-filters").is_visible()
    # A window narrowed to a phone's width folds them; widened again, they open.
    desk.set_viewport_size(PHONE)
    desk.locator("#run-filters").wait_for(state="hidden")
    desk.set_viewport_size({"width": 1280, "height": 800})
    desk.locator("#run-filters").wait_for(state="visible")

    # Folded on a phone; opened, they filter, and fold again keeping the value.
    phone = new_context(viewport=PHONE).new_page()
    login_as(phone, "ops")
    phone.goto("/")
    assert phone.locator("#run-filters-fold").get_attribute("open") is None
    assert not phone.locator("#run-filters").is_visible()
    phone.click("#run-filters-fold > summary")
    phone.select_option("#id_status", "completed")
    phone.click("#run-filters button[type=submit]")
    phone.wait_for_url("**/?*status=completed*")
    assert not phone.locator("#run-filters").is_visible()
    assert "on" in phone.inner_text("#run-filters-fold > summary")
    phone.click("#run-filters-fold > summary")
    assert phone.locator("#id_status").input_value() == "completed"
    assert problems.all() == []


def test_a_scheduled_run_names_its_schedule_and_the_list_filters_by_who_started_it(
    new_context: Callable[..., Any],
    login_as: Callable[..., None],
    screenshot: Callable[[Any, str], Any],
    problems: Any,
) -> None:
    page = new_context().new_page()
    login_as(page, "ops")
    save_schedule(page, "layout nightly squares", "squares", '{"limit": 1, "work_ms": 0}')
    page.locator(
        'tr[data-schedule="layout nightly squares"] button:has-text("Trigger now")'
    ).click()
    page.locator("dialog[open] button[value=confirm]").click()
    page.wait_for_url(RUN_URL)
    scheduled = str(page.url).rstrip("/").rsplit("/", 1)[-1]
    by_hand = start_run(page, "squares", limit=1, work_ms=0)

    page.goto("/")
    row = page.locator(f'#runs-table tr:has(a[href="/runs/{scheduled}/"])')
    link = row.locator("a[data-schedule-link]")
    assert link.inner_text() == "layout nightly squares"
    assert "system" not in row.inner_text()
    screenshot(page, "runs-list-started-by")

    def listed() -> set[str]:
        hrefs = page.eval_on_selector_all(
            "#runs-table a.run-id", "as => as.map(a => a.getAttribute('href'))"
        )
        return {str(h).strip("/").rsplit("/", 1)[-1] for h in hrefs}

    page.select_option("#id_trigger", "schedule")
    page.click("#run-filters button[type=submit]")
    page.wait_for_url("**/?*trigger=schedule*")
    assert scheduled in listed() and by_hand not in listed()
    page.select_option("#id_trigger", "manual")
    page.click("#run-filters button[type=submit]")
    page.wait_for_url("**/?*trigger=manual*")
    assert by_hand in listed() and scheduled not in listed()

    phone = new_context(viewport=PHONE).new_page()
    login_as(phone, "ops")
    phone.goto("/?trigger=schedule")
    phone.locator(f'#runs-table a[href="/runs/{scheduled}/"]').wait_for()
    screenshot(phone, "runs-list-started-by")

    # The link leads to the schedule.
    page.select_option("#id_trigger", "schedule")
    page.click("#run-filters button[type=submit]")
    page.wait_for_url("**/?*trigger=schedule*")
    page.locator(f'#runs-table tr:has(a[href="/runs/{scheduled}/"]) a[data-schedule-link]').click()
    page.wait_for_url(re.compile(r"/schedules/#schedule-\d+$"), timeout=ms(20_000))
    assert problems.all() == []
