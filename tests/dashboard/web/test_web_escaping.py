"""Everything that comes from a run is text on every page: input, state, request data, output,
reasons, notes, search terms. No markup, attribute, script or htmx instruction gets through."""

from __future__ import annotations

import json
from collections.abc import Callable
from html.parser import HTMLParser

import pytest
from django.test import Client

from dashboard import services
from dashboard.execution import embedded
from dashboard.models import ApprovalRequest, Checkpoint, WorkflowRun

pytestmark = pytest.mark.django_db(transaction=True)

SCRIPT = "<script>alert(1)</script>"
BREAKOUT = '"><img src=x onerror=alert(1)>'
HTMX = '<div hx-get="/logout/" hx-trigger="load">x</div>'
CLOSE = "</script><script>alert(2)</script>"
TEMPLATE = "{{ request.user }}{% csrf_token %}"
HOSTILE = [SCRIPT, BREAKOUT, HTMX, CLOSE, TEMPLATE, "line\u2028break", "javascript:alert(3)"]
EVIL = " ".join(HOSTILE)
ALLOWED_HX = {
    "hx-get",
    "hx-post",
    "hx-trigger",
    "hx-target",
    "hx-swap",
    "hx-include",
    "hx-disinherit",
    "hx-boost",
    "hx-push-url",
    "hx-disable",
    "hx-ext",  # the live sockets: hx-ext="ws" ws-connect="/ws/…"
    "hx-preserve",  # picked rows keep their tick when a live list redraws
}


class Page(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.tags: list[tuple[str, dict[str, str | None]]] = []
        self.scripts: list[tuple[dict[str, str | None], str]] = []
        self._open: dict[str, str | None] | None = None
        self._text: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, dict(attrs)))
        if tag == "script":
            self._open, self._text = dict(attrs), []

    def handle_data(self, data: str) -> None:
        if self._open is not None:
            self._text.append(data)

    def handle_endtag(self, tag: str) -> None:
        if tag == "script" and self._open is not None:
            self.scripts.append((self._open, "".join(self._text)))
            self._open = None


def assert_inert(html: str) -> None:
    for raw in (SCRIPT, BREAKOUT, CLOSE, "<img", 'hx-get="/logout/"', "<div hx-"):
        assert raw not in html, raw
    page = Page()
    page.feed(html)
    for tag, attrs in page.tags:
        assert tag not in {"img", "iframe", "object", "embed", "base"}, tag
        for name, value in attrs.items():
            assert not name.startswith("on"), (tag, name)
            assert not name.startswith("hx-") or name in ALLOWED_HX, (tag, name)
            if name.startswith("hx-") or name == "ws-connect":
                assert "alert" not in (value or ""), (name, value)  # no run data in hx-*
            if name in {"href", "action", "src", "formaction"}:
                # Links may carry a search term, URL-encoded; never a scheme of their own.
                assert not (value or "").strip().lower().startswith("javascript:"), (name, value)
        assert "style" not in attrs, (tag, attrs)
    for attrs, text in page.scripts:
        if attrs.get("type") == "application/json":
            assert "</" not in text and "\u2028" not in text
            json.loads(text)
        else:
            assert (attrs.get("src") or "").startswith("/static/") and not text.strip(), attrs


@pytest.fixture
def hostile_run(client_as: Callable[..., Client], drive: Callable[..., WorkflowRun]) -> WorkflowRun:
    operator = client_as("Operator", "Approver", username="mallory")
    return drive(
        services.run_start,
        workflow_name="return-replace",
        # order_id reaches the state, the request's question and the output; the SKU and reason
        # must stay real for the run to reach its approval gate.
        input={"order_id": EVIL, "work_ms": 0},
        user=operator.user,  # type: ignore[attr-defined]
    )


def test_hostile_run_data_is_inert_on_every_page(
    client_as: Callable[..., Client], hostile_run: WorkflowRun
) -> None:
    client = client_as("Operator", "Approver", username="eve")
    approval = ApprovalRequest.objects.get(run=hostile_run)
    gate = Checkpoint.objects.filter(run=hostile_run).order_by("-created_at").first()
    assert gate is not None
    pages = [
        "/",
        "/?q=" + SCRIPT,
        f"/runs/{hostile_run.pk}/",
        f"/runs/{hostile_run.pk}/events/",
        f"/runs/{hostile_run.pk}/checkpoints/{gate.checkpoint_id}/",
        f"/approvals/?request={approval.request_id}",
        "/storage/",
    ]
    for path in pages:
        response = client.get(path)
        assert response.status_code == 200, path
        html = response.content.decode()
        assert_inert(html)
    detail = client.get(
        f"/runs/{hostile_run.pk}/checkpoints/{gate.checkpoint_id}/"
    ).content.decode()
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in detail  # the fork editor shows it as text
    # Decide with hostile text, let the run finish, and look at the output and the archive.
    response = client.post(
        f"/approvals/{approval.request_id}/decide/",
        {
            "decision": "approve",
            "response-discount_percent": "5",
            "response-note": SCRIPT,
            "reason": EVIL,
        },
    )
    assert response.status_code == 302
    assert embedded.wait_for_background_tasks(60)
    for path in (
        f"/runs/{hostile_run.pk}/",
        "/approvals/archive/",
        f"/approvals/?request={approval.request_id}",
    ):
        assert_inert(client.get(path).content.decode())


def test_hostile_form_input_comes_back_escaped(client_as: Callable[..., Client]) -> None:
    client = client_as("Operator")
    response = client.post(
        "/runs/start/", {"workflow": "squares", "input-limit": BREAKOUT, "input-work_ms": SCRIPT}
    )
    assert response.status_code == 422
    assert_inert(response.content.decode())
    unknown = client.post("/runs/start/", {"workflow": SCRIPT})
    assert unknown.status_code == 422
    assert_inert(unknown.content.decode())
