"""A checkpoint holding a dataclass and a pydantic message in flight, then a pydantic request,
read in Chromium by an operator and a viewer: each value shows its class as a badge beside it,
and no codec tag (``$model``, ``$t``) appears as a key. The conftest scans every checkpoint
page of the suite for such tags; this test makes sure one with both kinds of model is seen."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from tests.browser.deadlines import ms
from tests.browser.pages import start_run

pytestmark = [pytest.mark.browser, pytest.mark.slow]


def checkpoint_links(page: Any) -> dict[str, str]:
    """The run page's checkpoints, superstep number -> address, from the executor timeline."""
    found = page.evaluate(
        """() => Array.from(document.querySelectorAll('#run-gantt g.gantt-column a'),
             a => [a.closest('g').getAttribute('data-superstep'), a.getAttribute('href')])"""
    )
    return {label: href for label, href in found}


def test_checkpoint_trees_show_model_classes_as_badges_never_codec_keys(
    deployment: Callable[..., Any],
    new_context: Callable[..., Any],
    login_as: Callable[..., None],
    problems: Any,
) -> None:
    server = deployment(SUPERSTEP_WORKFLOWS="tests.browser.codec_flows")
    operator = new_context(base_url=server.url).new_page()
    login_as(operator, "ops")
    viewer = new_context(base_url=server.url).new_page()
    login_as(viewer, "viewer")

    start_run(operator, "parcels")
    operator.wait_for_selector("#run-header .pill.status-waiting", timeout=ms(30_000))
    operator.reload()
    links = checkpoint_links(operator)

    # After superstep 1: the dataclass and the pydantic model in flight to the packer.
    for page in (operator, viewer):
        page.goto(links["1"])
        page.wait_for_selector("[data-json-tree='messages-json'] .json-type")
        badges = page.locator("[data-json-tree='messages-json'] .json-type").all_inner_texts()
        assert {"Crate", "ShippingLabel"} <= set(badges), badges
        messages = " ".join(page.inner_text("[data-json-tree='messages-json']").split())
        assert "ORD-CODEC" in messages and "$model" not in messages and "$t" not in messages
        assert "fragile : null" in messages  # JSON's notation, not Python's None

    # After superstep 2: the pydantic request waiting for a decision.
    operator.goto(links["2"])
    operator.wait_for_selector("[data-json-tree='requests-json'] .json-type")
    operator.click("[data-json-expand='requests-json']")
    requests = operator.inner_text("[data-json-tree='requests-json']")
    assert "PackingQuestion" in requests and "Pack ORD-CODEC?" in requests, requests
    assert "$model" not in requests
    operator.evaluate("window.__superstepScanCodecKeys()")  # after Expand all, too
    assert problems.all() == []
