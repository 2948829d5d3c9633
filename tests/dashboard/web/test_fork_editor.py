"""The typed fork editor (dashboard/web/checkpoints/fork_editor.py, fork_form.py, the check
and fork views): values read back as the types they replace, the editor's fields and errors,
the checkpoint page without a codec tag, and the event log and sub-workflow panel that showed
tags too."""

from __future__ import annotations

import datetime as dt
import decimal
import enum
import json
import re
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from types import SimpleNamespace
from typing import Any

import pytest
from django.test import Client
from django.utils import timezone

from dashboard import services
from dashboard.models import RunEvent, RunStatus, WorkflowRun
from dashboard.renderers.diff_values import tree
from dashboard.web.checkpoints.fork_editor import Invalid, value_from_text, value_from_tree
from dashboard.web.checkpoints.fork_form import ForkEditor
from dashboard.web.run_page import events, subworkflows
from tests.helpers.fork_pages import form_of, page_url, post_data
from workflows import register_type
from workflows.storage import decode, encode

Drive = Callable[..., WorkflowRun]
db = pytest.mark.django_db(transaction=True)


class Colour(enum.Enum):
    RED = "red"
    BLUE = "blue"


@dataclass
class Task:
    remaining: list[int]
    due: dt.date
    price: decimal.Decimal = decimal.Decimal("1.50")
    tags: set[str] = field(default_factory=set)
    span: tuple[int, int] = (1, 2)


for _cls in (Colour, Task):
    register_type(_cls)


def edited(value: Any, change: Callable[[Any], None]) -> Any:
    """``value`` through the codec, shown as the editor shows it, changed as an operator
    would (on the JSON a browser sends back), read back and decoded."""
    stored = encode(value)
    shown = json.loads(json.dumps(tree(stored)))
    change(shown)
    return decode(value_from_tree(shown, stored))


def refusal(value: Any, change: Callable[[Any], None]) -> str:
    stored = encode(value)
    shown = json.loads(json.dumps(tree(stored)))
    change(shown)
    with pytest.raises(Invalid) as caught:
        value_from_tree(shown, stored)
    return caught.value.text


# ------------------------------------------------------------------ reading values back


def test_text_left_alone_gives_back_the_stored_value_exactly() -> None:
    value = {
        "results": {1: 1, 2: 4},
        "when": dt.datetime(2026, 8, 21, 14, 3, tzinfo=dt.UTC),
        "tasks": [Task([3, 4], dt.date(2026, 1, 2), tags={"b", "a"})],
        "blob": b"\x00" * 300,  # shown shortened: it must still come back whole
        "colour": Colour.RED,
        "$ref": {"$t": "not a tag, user data"},
        "pair": (1, "x"),
        "id": uuid.UUID(int=7),
        "wait": dt.timedelta(days=1, seconds=5),
    }
    stored = encode(value)

    assert value_from_tree(json.loads(json.dumps(tree(stored))), stored) == stored
    assert decode(value_from_tree(json.loads(json.dumps(tree(stored))), stored)) == value


def test_int_keys_stay_int_keys_and_new_keys_become_ints() -> None:
    def change(shown: Any) -> None:
        shown["results"]["2"] = 5
        shown["results"]["3"] = 9

    assert edited({"results": {1: 1, 2: 4}}, change) == {"results": {1: 1, 2: 5, 3: 9}}
    assert (
        refusal({1: 1}, lambda shown: shown.update(x=2))
        == "The keys here are integers; 'x' is not one."
    )


def test_dates_times_decimals_and_durations_are_read_as_what_they_replace() -> None:
    value = {
        "due": dt.date(2026, 1, 2),
        "at": dt.datetime(2026, 1, 2, 3, 4, tzinfo=dt.UTC),
        "price": decimal.Decimal("1.50"),
        "wait": dt.timedelta(minutes=5),
        "id": uuid.UUID(int=1),
        "data": b"hi",
    }

    def change(shown: Any) -> None:
        shown.update(
            due="2027-02-03",
            at="2027-02-03 04:05:06+02:00",
            price="2.75",
            wait="1 day, 0:00:05",
            id=str(uuid.UUID(int=2)),
            data="aGVsbG8=",
        )

    assert edited(value, change) == {
        "due": dt.date(2027, 2, 3),
        "at": dt.datetime(2027, 2, 3, 4, 5, 6, tzinfo=dt.timezone(dt.timedelta(hours=2))),
        "price": decimal.Decimal("2.75"),
        "wait": dt.timedelta(days=1, seconds=5),
        "id": uuid.UUID(int=2),
        "data": b"hello",
    }
    assert (
        refusal(value, lambda s: s.update(due="soon"))
        == '["due"]: Enter a date, such as 2026-08-21.'
    )
    assert refusal(value, lambda s: s.update(price="cheap")) == (
        '["price"]: Enter a decimal number, such as 12.50.'
    )
    assert refusal(value, lambda s: s.update(at="2027-02-03 04:05:06")) == (
        '["at"]: The value had a time zone: add one, such as +00:00.'
    )


def test_sets_and_tuples_are_edited_as_lists_and_stay_sets_and_tuples() -> None:
    def change(shown: Any) -> None:
        shown["tags"].append("c")
        shown["pair"][1] = 3

    assert edited({"tags": {"a", "b"}, "pair": (1, 2)}, change) == {
        "tags": {"a", "b", "c"},
        "pair": (1, 3),
    }


def test_dataclass_fields_by_name_nested_and_new_items_like_their_neighbours() -> None:
    def change(shown: Any) -> None:
        shown["tasks"][0]["remaining"].remove(3)
        shown["tasks"][0]["due"] = "2026-03-01"
        shown["tasks"].append(
            {
                "$model": "Task",
                "remaining": [9],
                "due": "2026-05-05",
                "price": "3",
                "tags": ["x"],
                "span": [3, 4],
            }
        )

    result = edited({"tasks": [Task([3, 4], dt.date(2026, 1, 2))]}, change)

    assert result == {
        "tasks": [
            Task([4], dt.date(2026, 3, 1)),
            Task([9], dt.date(2026, 5, 5), decimal.Decimal(3), {"x"}, (3, 4)),
        ]
    }
    task = Task([1], dt.date(2026, 1, 1))
    assert refusal({"t": task}, lambda s: s["t"].update(due="later")) == (
        '["t"].due: Enter a date, such as 2026-08-21.'
    )
    assert (
        refusal({"t": task}, lambda s: s["t"].update(colour="red"))
        == "[\"t\"]: Task has no field 'colour'."
    )
    assert (
        refusal({"t": task}, lambda s: s["t"].pop("due")) == "[\"t\"]: Task needs its field 'due'."
    )
    assert refusal({"t": task}, lambda s: s["t"].update({"$model": "Other"})) == (
        '["t"]: This is a Task; its class cannot be changed here.'
    )


def test_json_scalars_take_any_json_and_dollar_keys_stay_data() -> None:
    def change(shown: Any) -> None:
        shown["count"] = "three"  # an untyped state value: the declared types (none here) judge
        shown["$$ref"] = {"$t": "still data"}

    assert edited({"count": 3, "$ref": 1}, change) == {
        "count": "three",
        "$ref": {"$t": "still data"},
    }


def test_scalar_fields_read_their_text_as_the_kind_they_show() -> None:
    assert value_from_text("42", 1) == 42
    assert value_from_text(" 2.5 ", 1.0) == 2.5
    assert value_from_text("hello\nworld", "x") == "hello\nworld"
    assert value_from_text("", None) is None
    assert value_from_text("true", None) is True
    assert value_from_text("not json", None) == "not json"
    assert value_from_text("BLUE", encode(Colour.RED)) == encode(Colour.BLUE)
    assert value_from_text("2026-09-01", encode(dt.date(2026, 1, 1))) == encode(dt.date(2026, 9, 1))
    with pytest.raises(Invalid, match="Enter a whole number, such as 42."):
        value_from_text("many", 1)


# --------------------------------------------------------------------------- the editor


def squares_document() -> dict[str, Any]:
    """What a squares checkpoint holds after squaring 1 and 2: int-keyed results, and the work
    list in the message the worker sends itself."""
    return {
        "executor_states": {"start": {}, "worker": {"results": encode({1: 1, 2: 4})}},
        "state": {"due": encode(dt.date(2026, 1, 1)), "note": "hi"},
        "messages": [
            {
                "source": "worker",
                "target": None,
                "kind": "standard",
                "data": encode(Task([3, 4], dt.date(2026, 1, 1))),
            }
        ],
    }


def by_path(editor: ForkEditor) -> dict[str, Any]:
    return {item.dotted: item for item in editor.fields}


def test_editor_fields_show_values_as_the_operator_thinks_of_them() -> None:
    fields = by_path(ForkEditor(squares_document()))

    shown = {path: (f.label, f.type_label, f.widget, f.text) for path, f in fields.items()}
    assert shown["executor_states.worker.results"] == (
        "results",
        "dict[int, int]",
        "textarea",
        '{"1": 1, "2": 4}',
    )
    assert shown["state.due"] == ("due", "date", "date", "2026-01-01")
    assert shown["messages.0.data.remaining"] == ("remaining", "list[int]", "textarea", "[3, 4]")
    assert shown["messages.0.data.price"] == ("price", "Decimal", "input", "1.50")
    assert shown["messages.0.data.span"][1] == "tuple[int, ...]"
    assert not any("$t" in f.text for f in fields.values())


def test_editor_reads_back_only_what_changed() -> None:
    document = squares_document()
    untouched = ForkEditor(document, {f.name: f.text for f in ForkEditor(document).fields}).read()
    assert untouched is not None and not untouched.changed

    names = {f.dotted: f.name for f in ForkEditor(document).fields}
    post = {
        names["executor_states.worker.results"]: '{"1": 1, "2": 4, "3": 9}',
        names["messages.0.data.remaining"]: "[4]",
    }
    editor = ForkEditor(document, post)
    edits = editor.read()

    assert edits is not None and edits.state is None
    assert decode(edits.executor_states["worker"]["results"]) == {1: 1, 2: 4, 3: 9}  # type: ignore[index]
    assert decode(edits.messages[0]["data"]) == Task([4], dt.date(2026, 1, 1))  # type: ignore[index]
    assert editor.changes(edits) == [
        "worker.results[3]: added 9",
        "message 1.remaining[0]: removed 3",
    ]


def test_service_errors_land_once_beside_the_field_their_path_names() -> None:
    editor = ForkEditor(squares_document())
    editor.add_errors(
        {
            "messages.0.data.remaining.1": "Input should be a valid integer",
            "messages.0.data": "nothing it goes to takes a str",
            "executor_states.worker.results": "checkpoint data could not be restored",
            "edge_states": "something else",
        },
        "the edited checkpoint is not valid",
    )
    fields = by_path(editor)

    assert fields["messages.0.data.remaining"].errors == ["[1]: Input should be a valid integer"]
    assert editor.groups[-1].errors == ["nothing it goes to takes a str"]  # the message's group
    assert fields["executor_states.worker.results"].errors == [
        "checkpoint data could not be restored"
    ]
    assert editor.errors == ["edge_states: something else"]  # the service's summary is not repeated


# -------------------------------------------------------------------------- the pages


@pytest.fixture
def squares(operator_client: Client, drive: Drive) -> WorkflowRun:
    run = drive(
        services.run_start,
        workflow_name="squares",
        input={"limit": 4, "work_ms": 0},
        user=operator_client.user,
    )  # type: ignore[attr-defined]
    assert run.status == RunStatus.COMPLETED, run.error_message
    return run


@db
@pytest.mark.parametrize(
    "workflow, input, superstep",
    [
        ("squares", {"limit": 4, "work_ms": 0}, 2),
        ("fail-at-step", {"steps": 2, "fail_at": 0, "work_ms": 0}, 1),  # a datetime in state
        ("return-replace", {"order_id": "ORD-5", "work_ms": 0}, 4),  # a model in state
    ],
)
def test_checkpoint_page_shows_no_codec_tag(
    operator_client: Client, drive: Drive, workflow: str, input: dict[str, Any], superstep: int
) -> None:
    run = drive(services.run_start, workflow_name=workflow, input=input, user=operator_client.user)  # type: ignore[attr-defined]

    html = operator_client.get(page_url(run, superstep)).content.decode()

    assert "$t" not in html and "$keys" not in html
    assert 'id="fork-editor"' in html


@db
def test_review_with_an_invalid_value_answers_the_error_once_beside_its_field(
    operator_client: Client, squares: WorkflowRun
) -> None:
    url = page_url(squares, 2)
    page = operator_client.get(url).content.decode()
    names = form_of(page)

    answer = operator_client.post(
        url + "fork/check/",
        post_data(page, executor_states__worker__results='{"1": 1, "x": 4}'),
        headers={"HX-Request": "true"},
    )

    html = answer.content.decode()
    field = names["executor_states.worker.results"]
    assert answer.status_code == 422
    assert html.count("is not one.") == 1
    beside = re.search(
        rf'name="{field}".*?</textarea>\s*<ul class="field-errors" id="fork-{field}-error">'
        r"<li>(.*?)</li>",
        html,
        re.DOTALL,
    )
    assert beside and beside.group(1) == "The keys here are integers; &#x27;x&#x27; is not one."
    assert "<dialog" not in html and 'role="alert"' not in html


@db
def test_review_finds_type_errors_of_the_handlers_message_beside_the_field(
    operator_client: Client, squares: WorkflowRun
) -> None:
    url = page_url(squares, 2)
    page = operator_client.get(url).content.decode()

    answer = operator_client.post(
        url + "fork/check/",
        post_data(page, messages__0__data__remaining='[3, "four"]'),
        headers={"HX-Request": "true"},
    )

    html = answer.content.decode()
    assert answer.status_code == 422 and "<dialog" not in html
    assert html.count("Input should be a valid integer") == 1
    assert "<li>[1]: Input should be a valid integer</li>" in html


@db
def test_review_of_a_valid_edit_opens_the_confirmation_saying_what_changes(
    operator_client: Client, squares: WorkflowRun
) -> None:
    url = page_url(squares, 2)
    page = operator_client.get(url).content.decode()

    answer = operator_client.post(
        url + "fork/check/",
        post_data(
            page,
            executor_states__worker__results='{"1": 100}',
            messages__0__data__remaining="[2, 3, 4, 5]",
        ),
        headers={"HX-Request": "true"},
    )

    html = answer.content.decode()
    assert answer.status_code == 200 and "data-fork-confirm" in html
    changes = re.findall(r"<li><code>(.*?)</code></li>", html)
    assert changes == ["worker.results[1]: 1 → 100", "message 1.remaining[3]: added 5"]
    assert WorkflowRun.objects.count() == 1  # a check forks nothing


@db
def test_fork_runs_with_the_edited_state_and_work_list(
    operator_client: Client, squares: WorkflowRun
) -> None:
    from dashboard.execution import embedded

    url = page_url(squares, 2)
    page = operator_client.get(url).content.decode()

    answer = operator_client.post(
        url + "fork/",
        post_data(
            page, executor_states__worker__results='{"1": 100}', messages__0__data__remaining="[7]"
        ),
    )

    fork = WorkflowRun.objects.exclude(pk=squares.pk).get()
    assert answer.status_code == 302 and answer["Location"] == f"/runs/{fork.pk}/"
    assert embedded.wait_for_background_tasks(60)
    fork.refresh_from_db()
    assert fork.status == RunStatus.COMPLETED and decode(fork.output) == {1: 100, 7: 49}


@db
def test_without_javascript_a_refused_fork_comes_back_at_the_editor_with_each_error_once(
    operator_client: Client, squares: WorkflowRun
) -> None:
    url = page_url(squares, 2)
    page = operator_client.get(url).content.decode()

    answer = operator_client.post(url + "fork/", post_data(page, messages__0__data__work_ms="slow"))

    html = answer.content.decode()
    assert answer.status_code == 422 and WorkflowRun.objects.count() == 1
    assert html.count("Enter a whole number, such as 42.") == 1
    assert '<details class="fork-editor" id="fork-details" open>' in html
    assert 'fork/#fork"' in html  # the answer to the next try opens at the editor


@db
def test_fork_link_opens_the_editor_without_javascript(
    operator_client: Client, squares: WorkflowRun
) -> None:
    url = page_url(squares, 2)
    html = operator_client.get(url).content.decode()
    assert f'href="{url}?fork=open#fork" data-fork-open' in html
    assert '<details class="fork-editor" id="fork-details">' in html
    opened = operator_client.get(url + "?fork=open").content.decode()
    assert '<details class="fork-editor" id="fork-details" open>' in opened


# ------------------------------------------------------- other places that showed codec tags


def test_event_log_shows_values_without_codec_tags() -> None:
    event = RunEvent(
        seq=1,
        type="output",
        created_at=timezone.now(),
        data={"data": {"$t": "dict", "v": [[1, 1], [2, 4]]}},
    )

    view = events.describe_event(event)

    assert view.summary == "Output: {1: 1, 2: 4}"
    assert json.loads(view.details) == {"data": {"1": 1, "2": 4}}


@db
def test_sub_workflow_panel_shows_inner_state_without_codec_tags(
    make_run: Callable[..., WorkflowRun], monkeypatch: pytest.MonkeyPatch
) -> None:
    run = make_run(workflow_name="expense-claim", status="completed")
    inner = {
        "state": {
            "totals": {"$t": "dict", "v": [[1, 10]]},
            "due": {"$t": "date", "v": "2026-01-02"},
        },
        "executor_states": {},
        "messages": [],
        "pending_request_info_events": {},
        "iteration_count": 1,
    }
    outer = {"executor_states": {"manager-review": {"sub_workflow_checkpoint": inner}}}
    monkeypatch.setattr(
        subworkflows,
        "_checkpoint_for",
        lambda run, checkpoint_id: SimpleNamespace(checkpoint_id="c", superstep=1),
    )
    monkeypatch.setattr(
        subworkflows.selectors, "checkpoint_document", lambda checkpoint, run=None: outer
    )

    panel = subworkflows.panel(run, "manager-review", rows=[])

    assert panel is not None and panel.state == {"totals": {"1": 10}, "due": "2026-01-02"}
