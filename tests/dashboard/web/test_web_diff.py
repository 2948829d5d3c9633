"""The checkpoint diff on the inspector page: items matched by identity, older to newer whatever
was opened, sections with folded unchanged values, one value side by side, a fork against its
origin, and never a codec tag (real runs through the services and the worker)."""

from __future__ import annotations

import json
import re
from collections.abc import Callable

import pytest
from django.test import Client

from dashboard import selectors, services
from dashboard.demo import agents
from dashboard.models import Checkpoint, WorkflowRun

pytestmark = pytest.mark.django_db(transaction=True)

Drive = Callable[..., WorkflowRun]
DIFF = {"HX-Request": "true", "HX-Target": "checkpoint-diff"}


@pytest.fixture
def operator(client_as: Callable[..., Client]) -> Client:
    return client_as("Operator")


@pytest.fixture
def squares(operator: Client, drive: Drive) -> WorkflowRun:
    """squares with limit 89: each superstep pops the first of the remaining numbers (a list in
    the message in flight) and adds its square to an int-keyed dict in the worker's state."""
    return drive(
        services.run_start,
        workflow_name="squares",
        input={"limit": 89, "work_ms": 0},
        user=operator.user,  # type: ignore[attr-defined]
    )


@pytest.fixture
def waiting(operator: Client, drive: Drive) -> WorkflowRun:
    """A return-replace run at its approval gate (superstep 4)."""
    return drive(
        services.run_start,
        workflow_name="return-replace",
        input={"order_id": "ORD-7", "work_ms": 0},
        user=operator.user,  # type: ignore[attr-defined]
    )


def at(run: WorkflowRun, superstep: int) -> Checkpoint:
    found = Checkpoint.objects.filter(run=run, superstep=superstep).order_by("created_at").first()
    assert found is not None
    return found


def page(run: WorkflowRun, checkpoint: Checkpoint, compare: Checkpoint | None = None) -> str:
    url = f"/runs/{run.pk}/checkpoints/{checkpoint.checkpoint_id}/"
    return url + (f"?compare={compare.checkpoint_id}" if compare else "")


def changes(response: object) -> list[tuple[str, str]]:
    return [(e.path, e.kind) for e in response.context["diff"].entries]  # type: ignore[attr-defined]


def test_removing_the_first_of_89_items_is_one_removed_row_on_a_small_page(
    operator: Client, squares: WorkflowRun
) -> None:
    first, second = at(squares, 1), at(squares, 2)
    response = operator.get(page(squares, second), headers=DIFF)
    assert changes(response) == [
        ("$.executor_states.worker.results[1]", "added"),
        ("$.messages[0].from", "changed"),  # the start executor sent the first, the worker this
        ("$.messages[0].data.remaining[0]", "removed"),
        ("$.superstep", "changed"),
    ]
    html = response.content.decode()
    assert "From superstep 1 (the previous checkpoint) to superstep 2 (this checkpoint)." in html
    assert "88 unchanged items" in html
    # The old positional diff wrote 89 change rows here, some 40 KB of table.
    (table,) = re.findall(r'<table class="[^"]*diff-table">.*?</table>', html, re.DOTALL)
    assert len(re.findall(r'<tr class="diff-row', table)) <= 10
    assert len(table) < 8_000, len(table)
    whole = operator.get(page(squares, second)).content.decode()
    assert whole.count('class="diff-row') == html.count('class="diff-row')
    assert operator.get(page(squares, first)).status_code == 200


def test_comparing_with_a_later_checkpoint_still_reads_older_to_newer(
    operator: Client, squares: WorkflowRun
) -> None:
    early, late = at(squares, 3), at(squares, 15)
    response = operator.get(page(squares, early, compare=late), headers=DIFF)
    html = response.content.decode()
    assert "From superstep 3 (this checkpoint) to superstep 15." in html
    assert "The older checkpoint always comes first, whichever you opened." in html
    found = changes(response)
    added = [path for path, kind in found if kind == "added"]
    removed = [path for path, kind in found if kind == "removed"]
    # Numbers 3..14 were squared in between: their keys arrived and they left the work list.
    assert added == [f"$.executor_states.worker.results[{n}]" for n in range(3, 15)]
    assert removed == [f"$.messages[0].data.remaining[{i}]" for i in range(12)]
    # The same pair opened from the other end is the same diff.
    reverse = operator.get(page(squares, late, compare=early), headers=DIFF)
    assert changes(reverse) == found
    assert "From superstep 3 to superstep 15 (this checkpoint)." in reverse.content.decode()


def test_the_diff_is_grouped_by_section_with_unchanged_values_folded(
    operator: Client, waiting: WorkflowRun
) -> None:
    response = operator.get(page(waiting, at(waiting, 4), compare=at(waiting, 1)), headers=DIFF)
    diff = response.context["diff"]
    titles = [(s.title, s.changed) for s in diff.sections]
    assert titles == [
        ("Executor state", False),
        ("Shared state", True),
        ("Messages in flight", True),
        ("Pending requests", True),
        ("Checkpoint", True),
    ]
    html = response.content.decode()
    for title, _ in titles:
        assert f'<th scope="rowgroup" colspan="5">{title} <span' in html
    shared = diff.sections[1]
    assert [(e.path, e.kind) for e in shared.diff.entries] == [
        ('$.state["pending:ORD-7"]', "added")
    ]
    assert "empty on both sides" in html  # nobody saved executor state in either


def test_no_codec_tag_reaches_the_diff_the_side_by_side_view_or_the_trees(
    operator: Client, squares: WorkflowRun
) -> None:
    early, late = at(squares, 10), at(squares, 12)
    diff_html = operator.get(page(squares, late, compare=early), headers=DIFF).content.decode()
    numbers = re.findall(r"side=(\d+)#", diff_html)
    assert numbers
    sides = [
        operator.get(
            page(squares, late, compare=early) + f"&side={n}",
            headers={"HX-Request": "true", "HX-Target": f"diff-side-{n}"},
        ).content.decode()
        for n in numbers
    ]
    whole = operator.get(page(squares, late)).content.decode()
    trees = re.findall(
        r'<script id="(?:executor-states|shared-state|messages|requests)-json" '
        r'type="application/json">(.*?)</script>',
        whole,
    )
    for html in [diff_html, *sides, *trees]:
        assert "$t" not in html and "$keys" not in html
    # The int keys read as ints; the message is the dataclass by its name.
    assert '<code class="diff-path">$.executor_states.worker.results[11]</code>' in diff_html
    executor_states = json.loads(trees[0])
    assert executor_states["worker"]["results"]["11"] == 121
    message = json.loads(trees[1])[0]["data"]
    assert message["$model"] == "dashboard.demo.workflows.SquaresTask"
    assert message["remaining"][0] == 12


def test_one_changed_value_side_by_side(operator: Client, waiting: WorkflowRun) -> None:
    gate, first = at(waiting, 4), at(waiting, 1)
    url = page(waiting, gate, compare=first)
    diff = operator.get(url, headers=DIFF).context["diff"]
    (parked,) = [e for e in diff.entries if e.path == '$.state["pending:ORD-7"]']
    side = operator.get(
        f"{url}&side={parked.number}",
        headers={"HX-Request": "true", "HX-Target": f"diff-side-{parked.number}"},
    )
    html = side.content.decode()
    assert html.lstrip().startswith(f'<tr id="diff-side-{parked.number}" class="diff-side-row">')
    assert "Superstep 1 · before" in html and "Superstep 4 · after" in html
    assert (
        "<code>ReturnState(</code>" in html
        and "<code>    order_id=&quot;ORD-7&quot;,</code>" in html
    )
    assert "(absent)" in html  # nothing was parked at superstep 1
    # It widens to what the change is in: here the whole shared state, empty before.
    assert f'href="{url}&amp;side={parked.number}&amp;up=1#diff-side-{parked.number}"' in html
    wider = operator.get(
        f"{url}&side={parked.number}&up=1",
        headers={"HX-Request": "true", "HX-Target": f"diff-side-{parked.number}"},
    ).content.decode()
    assert 'Side by side: <code class="diff-path">$.state</code>' in wider
    assert "<code>{}</code>" in wider and "<code>{</code>" in wider
    # Without JavaScript the same link opens the page with the view under its row.
    whole = operator.get(f"{url}&side={parked.number}").content.decode()
    assert f'<tr id="diff-side-{parked.number}" class="diff-side-row">' in whole
    missing = operator.get(
        f"{url}&side=999", headers={"HX-Request": "true", "HX-Target": "diff-side-999"}
    )
    assert missing.status_code == 404


def test_a_fork_compares_with_its_origin_in_the_other_run(
    operator: Client, waiting: WorkflowRun, drive: Drive
) -> None:
    gate = at(waiting, 4)
    document = selectors.checkpoint_document(gate)
    state = document["state"]
    before = state["pending:ORD-7"]["v"]["refund_amount"]
    state["pending:ORD-7"]["v"]["refund_amount"] = 1.5
    fork = drive(
        services.run_fork,
        waiting.pk,
        checkpoint_id=gate.checkpoint_id,
        state=state,
        user=operator.user,  # type: ignore[attr-defined]
        reason="try a smaller refund",
    )
    assert fork.pk != waiting.pk
    forked = Checkpoint.objects.filter(run=fork).order_by("created_at").first()
    assert forked is not None
    html = operator.get(page(fork, forked)).content.decode()
    assert f'<option value="{gate.checkpoint_id}"' in html and "origin of this fork" in html
    response = operator.get(page(fork, forked, compare=gate), headers=DIFF)
    text = response.content.decode()
    assert (
        f'From superstep 4 of run <a href="/runs/{waiting.pk}/checkpoints/{gate.checkpoint_id}/">'
        f"{str(waiting.pk)[:8]}</a> (where this run was forked) to superstep 4 (this checkpoint)."
    ) in text
    edited = [
        (e.kind, e.old, e.new)
        for e in response.context["diff"].entries
        if e.path == '$.state["pending:ORD-7"].refund_amount'
    ]
    assert edited == [("changed", before, 1.5)]
    # The origin's own page is one click away, and any checkpoint of the fork offers the origin.
    later = operator.get(page(fork, forked, compare=forked)).content.decode()
    assert 'id="compare-origin"' in later


def test_a_viewer_may_read_the_diff(client_as: Callable[..., Client], squares: WorkflowRun) -> None:
    viewer = client_as("Viewer")
    response = viewer.get(page(squares, at(squares, 2)), headers=DIFF)
    assert response.status_code == 200 and len(changes(response)) == 4


def test_an_agents_turn_reads_as_messages_added_not_as_a_list_diff(
    operator: Client, drive: Drive, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(agents, "_WORD_DELAY", 0.0)
    report = drive(
        services.run_start,
        workflow_name="research-report",
        input="Write about tide pools",
        user=operator.user,  # type: ignore[attr-defined]
    )

    response = operator.get(page(report, at(report, 2), compare=at(report, 1)), headers=DIFF)

    entries = response.context["diff"].entries
    grown = [e for e in entries if e.path == "$.executor_states.researcher.full_conversation"]
    assert [(e.kind, e.note) for e in grown] == [("added", "2 messages added (user, researcher)")]
    shown = response.content.decode()
    assert "2 messages added (user, researcher)" in shown and "unreadable" not in shown
