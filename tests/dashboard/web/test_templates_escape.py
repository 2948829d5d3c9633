"""Templates: hostile run data comes out as text, never as markup, attributes or script.

Renders base.html, the components and the workflow graph through a standalone template
``Engine`` over our templates folder, so no view, database or URL of the project is needed.
The test supplies the few things the templates look up: a URLconf with the names base.html
links to, and a ``static`` tag (the real one depends on the static files storage, which is
not what is under test). Filters such as ``date`` read settings: pytest-django provides the
project's; without it, the settings named by DJANGO_SETTINGS_MODULE or, failing that, a
minimal configuration made below.
"""

from __future__ import annotations

import datetime as dt
import json
import os
from collections.abc import Iterator
from dataclasses import dataclass
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import django
import pytest
from django.apps import apps
from django.conf import settings
from django.http import HttpResponse
from django.template import Context, Engine, Library
from django.urls import include, path, set_urlconf

if not apps.ready:  # pytest-django has not set Django up (e.g. run with -p no:django)
    if not settings.configured and not os.environ.get("DJANGO_SETTINGS_MODULE"):
        settings.configure(USE_TZ=True, TIME_ZONE="UTC", USE_I18N=False, INSTALLED_APPS=[])
    django.setup()

from dashboard.renderers.graph_layout import layout_graph
from dashboard.renderers.jsondiff import diff_json

TEMPLATES = Path(__file__).resolve().parents[3] / "templates"

SCRIPT = "<script>alert(1)</script>"
BREAKOUT = '"><img src=x onerror=alert(1)>'
HTMX = 'hx-get="/x" hx-trigger="load"'
SEPARATOR = "line\u2028separator"
CLOSE_SCRIPT = "</script><script>alert(2)</script>"
HOSTILE = [SCRIPT, BREAKOUT, HTMX, SEPARATOR, CLOSE_SCRIPT]
EVIL = " ".join(HOSTILE)

# --- what the standalone engine needs ------------------------------------------------------

register = Library()


@register.simple_tag
def static(name: str) -> str:
    return "/static/" + name


def _view(request: Any) -> HttpResponse:
    return HttpResponse()


dashboard_urls = [
    path("", _view, name="run_list"),
    path("approvals/", _view, name="approval_inbox"),
    path("storage/", _view, name="storage"),
    path("schedules/", _view, name="schedules"),
    path("tokens/", _view, name="tokens"),
]
urlpatterns = [
    path("", include((dashboard_urls, "dashboard"))),
    path("admin/", include(([path("", _view, name="index")], "admin"))),
    path("login/", _view, name="login"),
    path("logout/", _view, name="logout"),
]


@pytest.fixture(autouse=True)
def urlconf() -> Iterator[None]:
    set_urlconf(__name__)
    yield
    set_urlconf(None)


@pytest.fixture(scope="module")
def engine() -> Engine:
    return Engine(
        dirs=[str(TEMPLATES)],
        libraries={"static": __name__, "l10n": "django.templatetags.l10n"},
        autoescape=True,
        string_if_invalid="",
    )


def render(engine: Engine, source: str, **context: Any) -> str:
    return engine.from_string(source).render(Context(context, autoescape=True))


def component(name: str, **params: Any) -> str:
    """Template source including a component, passing each named context variable through."""
    args = " ".join(f"{key}={key}" for key in params)
    return f'{{% include "components/{name}" with {args} %}}'


# --- a structural look at the output -------------------------------------------------------

ALLOWED_HX = {"hx-disable", "hx-boost", "hx-target", "hx-swap", "hx-push-url", "hx-ext"}


class Parsed(HTMLParser):
    """Every start tag with its (unescaped) attributes, and every script with its text."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.tags: list[tuple[str, dict[str, str | None]]] = []
        self.scripts: list[tuple[dict[str, str | None], str]] = []
        self._script: dict[str, str | None] | None = None
        self._script_text: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, dict(attrs)))
        if tag == "script":
            self._script, self._script_text = dict(attrs), []

    def handle_data(self, data: str) -> None:
        if self._script is not None:
            self._script_text.append(data)

    def handle_endtag(self, tag: str) -> None:
        if tag == "script" and self._script is not None:
            self.scripts.append((self._script, "".join(self._script_text)))
            self._script = None


def parse(html: str) -> Parsed:
    parser = Parsed()
    parser.feed(html)
    parser.close()
    return parser


def assert_inert(html: str) -> Parsed:
    """No hostile string survives as markup; every tag and attribute is one we wrote."""
    for raw in (SCRIPT, BREAKOUT, CLOSE_SCRIPT, 'hx-get="/x"', "<img"):
        assert raw not in html, raw
    parsed = parse(html)
    for tag, attrs in parsed.tags:
        assert tag not in {"img", "iframe", "object", "embed", "base"}, tag
        for name in attrs:
            assert not name.startswith("on"), (tag, name)
            assert not name.startswith("hx-") or name in ALLOWED_HX, (tag, name)
            assert not name.startswith("data-hx"), (tag, name)
    for attrs, text in parsed.scripts:
        if attrs.get("type") == "application/json":
            assert "\u2028" not in text and "</" not in text
            json.loads(text)  # a data block, intact
        else:
            assert (attrs.get("src") or "").startswith("/static/") and not text.strip(), attrs
    return parsed


def attribute_values(parsed: Parsed, name: str) -> list[str | None]:
    return [attrs[name] for _, attrs in parsed.tags if name in attrs]


# --- fakes for what views and middleware put in the context ----------------------------------


@dataclass
class FakeUser:
    name: str
    is_authenticated: bool = True
    is_staff: bool = True

    def get_username(self) -> str:
        return self.name


@dataclass
class FakeMessage:
    text: str
    level_tag: str = "error"

    def __str__(self) -> str:
        return self.text


@dataclass
class FakePage:
    has_previous: bool = True
    has_next: bool = True
    previous_url: str = "?before=" + BREAKOUT
    next_url: str = "?after=" + SCRIPT


# --- tests ---------------------------------------------------------------------------------


def test_base_html_escapes_user_messages_and_page_content(engine: Engine) -> None:
    source = (
        '{% extends "base.html" %}{% block title %}{{ evil }}{% endblock %}'
        "{% block content %}<p>{{ evil }}</p>{% endblock %}"
    )
    html = render(
        engine,
        source,
        evil=EVIL,
        user=FakeUser(EVIL),
        messages=[FakeMessage(EVIL), FakeMessage(EVIL, level_tag=BREAKOUT)],
        pending_approval_count=BREAKOUT,
        csrf_token="tok" + BREAKOUT,
        csp_nonce="n0nce",
    )
    parsed = assert_inert(html)
    assert '<meta name="csrf-token" content="tok&quot;&gt;&lt;img' in html
    scripts = [attrs for attrs, _ in parsed.scripts]
    assert [a["src"] for a in scripts] == [
        "/static/vendor/htmx/htmx.min.js",
        "/static/vendor/htmx/ws.min.js",
        "/static/js/live.js",
        "/static/js/app.js",
    ]
    assert all(a.get("nonce") == "n0nce" and "defer" in a for a in scripts)
    assert 'id="approval-count"' in html and 'id="live-indicator"' in html
    assert 'href="/admin/"' in html


def test_base_html_hides_the_navigation_from_anonymous_visitors(engine: Engine) -> None:
    html = render(engine, '{% extends "base.html" %}', user=FakeUser("", is_authenticated=False))
    assert "approval-count" not in html and 'action="/logout/"' not in html
    assert 'href="/login/"' in html


def test_base_html_approval_count_partial_renders_alone(engine: Engine) -> None:
    html = engine.get_template("base.html#approval_count").render(
        Context({"pending_approval_count": 3})
    )
    assert html.strip().startswith('<span id="approval-count"') and ">3</span>" in html


@pytest.mark.parametrize("status", ["running", "waiting", BREAKOUT, SCRIPT])
def test_status_pill_escapes_status_and_label(engine: Engine, status: str) -> None:
    html = render(
        engine, component("status_pill.html", status=status, title=EVIL), status=status, title=EVIL
    )
    parsed = assert_inert(html)
    classes = attribute_values(parsed, "class")[0] or ""
    assert classes.startswith("pill status-") and '"' not in classes and "<" not in classes


def test_pagination_escapes_urls_and_summary(engine: Engine) -> None:
    html = render(
        engine,
        component("pagination.html", page=1, summary=1, hx_target=1),
        page=FakePage(),
        summary=EVIL,
        hx_target="#runs",
    )
    parsed = assert_inert(html)
    assert sorted(attribute_values(parsed, "rel")) == ["next", "prev"]
    assert attribute_values(parsed, "href") == [FakePage.previous_url, FakePage.next_url]


def test_pagination_disables_missing_directions(engine: Engine) -> None:
    html = render(
        engine,
        component("pagination.html", page=1),
        page=FakePage(has_previous=False, has_next=False),
    )
    assert html.count('aria-disabled="true"') == 2 and "href" not in html


def test_empty_state_and_confirm_dialog_escape_every_text(engine: Engine) -> None:
    context = {"title": EVIL, "message": EVIL, "action_url": "/x?" + BREAKOUT, "action_label": EVIL}
    assert_inert(render(engine, component("empty_state.html", **context), **context))
    dialog = {
        "id": "resume-dialog",
        "title": EVIL,
        "message": EVIL,
        "items": [SCRIPT, BREAKOUT],
        "confirm_label": EVIL,
        "reason_for": "resume-form",
        "reason_required": True,
        "variant": "danger",
    }
    html = render(engine, component("confirm_dialog.html", **dialog), **dialog)
    parsed = assert_inert(html)
    assert attribute_values(parsed, "form") == ["resume-form"]
    assert [a.get("value") for t, a in parsed.tags if t == "button"] == ["cancel", "confirm"]


def test_json_tree_keeps_hostile_data_inside_an_inert_json_block(engine: Engine) -> None:
    value = {key: [key, {"nested": key}] for key in HOSTILE}
    html = render(engine, component("json_tree.html", value=1, id=1), value=value, id="state-json")
    parsed = assert_inert(html)
    ((attrs, text),) = parsed.scripts
    assert attrs == {"id": "state-json", "type": "application/json"}
    assert json.loads(text) == value
    assert attribute_values(parsed, "data-json-tree") == ["state-json"]
    assert "hx-disable" in dict(parsed.tags[0][1])


def test_time_component_renders_machine_and_human_times(engine: Engine) -> None:
    moment = dt.datetime(2026, 8, 21, 14, 3, 22, tzinfo=dt.UTC)
    html = render(engine, component("time.html", value=1), value=moment)
    assert 'datetime="2026-08-21T14:03:22+00:00"' in html and "data-relative" in html
    later = moment + dt.timedelta(minutes=5)
    html = render(
        engine,
        component("time.html", value=1, until=1, mode=1),
        value=moment,
        until=later,
        mode="duration",
    )
    assert 'data-duration-until="2026-08-21T14:08:22+00:00"' in html and "5\xa0minutes" in html
    live = render(engine, component("time.html", value=1, mode=1), value=moment, mode="duration")
    assert "data-duration-since" in live and "data-duration-until" not in live
    assert "—" in render(engine, component("time.html", value=1), value=None)


def test_diff_table_escapes_paths_and_values(engine: Engine) -> None:
    a = {key: "old " + key for key in HOSTILE} | {"list": [SCRIPT]}
    b = {key: "new " + key for key in HOSTILE} | {"list": [], BREAKOUT: SCRIPT}
    html = render(engine, component("diff_table.html", diff=1), diff=diff_json(a, b))
    parsed = assert_inert(html)
    kinds = [c for c in attribute_values(parsed, "class") if c and c.startswith("diff-row")]
    assert kinds.count("diff-row diff-changed") == len(HOSTILE)
    assert kinds.count("diff-row diff-removed") == 1  # the list lost its item: no length row
    empty = render(engine, component("diff_table.html", diff=1), diff=diff_json(a, a))
    assert "No differences" in empty


def test_field_component_escapes_label_help_value_and_errors(engine: Engine) -> None:
    from django import forms

    class HostileForm(forms.Form):
        name = forms.CharField(label=EVIL, help_text=EVIL)

    form = HostileForm(data={"name": BREAKOUT})
    form.is_valid()
    form.add_error("name", EVIL)
    html = render(engine, component("field.html", field=1), field=form["name"])
    parsed = assert_inert(html)
    (value,) = [a["value"] for t, a in parsed.tags if t == "input"]
    assert value == BREAKOUT
    assert 'id="id_name_error"' in html and 'id="id_name_helptext"' in html


def test_workflow_graph_puts_executor_names_only_in_text_and_attribute_values(
    engine: Engine,
) -> None:
    names = ["start", *HOSTILE]
    edges = [("start", name) for name in HOSTILE] + [(HOSTILE[0], HOSTILE[0])]
    graph = layout_graph(names, edges, "start").annotate({SCRIPT: "running", BREAKOUT: BREAKOUT})
    html = render(
        engine, component("workflow_graph.html", graph=1, title=1), graph=graph, title=EVIL
    )
    parsed = assert_inert(html)
    groups = [a for t, a in parsed.tags if t == "g" and "data-executor" in a]
    assert [g["data-executor"] for g in groups] == names
    states = {g["data-executor"]: g["class"] for g in groups}
    assert states[SCRIPT] == "node state-running" and states[BREAKOUT] == "node state-idle"
    for d in attribute_values(parsed, "d"):
        assert d is not None and set(d) <= set("MCLHVQZ0123456789.- "), d
    assert html.count('data-executor="') == 2 * len(names)  # the boxes and the text list
