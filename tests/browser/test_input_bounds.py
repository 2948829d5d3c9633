"""Input validated from the types in the browser, in the server's words: ``squares`` with a
limit of 5000 is stopped before it is sent (it used to start and fail with a traceback), and
the message is the one the API and the server-side form give."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

import pytest

pytestmark = [pytest.mark.browser, pytest.mark.slow]


def test_an_out_of_range_limit_is_refused_before_sending_with_the_servers_words(
    new_context: Callable[..., Any], login_as: Callable[..., None], problems: Any
) -> None:
    page = new_context().new_page()
    login_as(page, "ops")
    page.goto("/runs/start/")
    page.select_option("#start-workflow", "squares")
    page.wait_for_selector("#id_input-limit")
    page.fill("#id_input-limit", "5000")
    page.click("form .card-footer button[type=submit]")

    # Said beside the field, in the server's words, before anything was sent.
    page.wait_for_selector("#id_input-limit_error[data-client]")
    assert page.inner_text("#id_input-limit_error") == "Input should be less than or equal to 1000"
    assert page.eval_on_selector("#id_input-limit", "el => el.validationMessage") == (
        "Input should be less than or equal to 1000"
    )
    assert page.evaluate("performance.getEntriesByType('navigation').length") == 1
    assert re.search(r"/runs/start/$", page.url)

    page.fill("#id_input-limit", "0")
    page.click("form .card-footer button[type=submit]")
    assert page.inner_text("#id_input-limit_error") == "Input should be greater than or equal to 1"

    # The server says the same when the browser's check is bypassed (a script, an old page).
    page.evaluate("document.querySelector('#id_input-limit').removeAttribute('data-msg-invalid')")
    page.fill("#id_input-limit", "5000")
    page.click("form .card-footer button[type=submit]")
    page.wait_for_selector("#id_input-limit_error:not([data-client])")
    assert page.inner_text("#id_input-limit_error") == "Input should be less than or equal to 1000"

    # Back in range, the run starts.
    page.fill("#id_input-limit", "3")
    page.fill("#id_input-work_ms", "0")
    page.click("form .card-footer button[type=submit]")
    page.wait_for_url(re.compile(r"/runs/[0-9a-f-]{36}/$"))
    assert problems.all(allow=("status of 422",)) == []  # the server's refusal above
