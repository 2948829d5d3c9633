"""The event log page: filtered by type and executor (on the database, a page at a time),
grouped by superstep, normal or compact, and bad filters taken as no filter, never a 500."""

from __future__ import annotations

import re
from collections.abc import Callable

import pytest
from django.test import Client

from dashboard import services
from dashboard.models import RunEvent, WorkflowRun

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def client(client_as: Callable[..., Client]) -> Client:
    return client_as("Viewer")


@pytest.fixture
def run(client_as: Callable[..., Client], drive: Callable[..., WorkflowRun]) -> WorkflowRun:
    operator = client_as("Operator")
    return drive(
        services.run_start,
        workflow_name="squares",
        input={"limit": 3, "work_ms": 0},
        user=operator.user,
    )  # type: ignore[attr-defined]


def seqs(html: str) -> list[int]:
    return [int(n) for n in re.findall(r'id="event-(\d+)"', html)]


def group_titles(html: str) -> list[str]:
    return [
        re.sub(r"\s+", " ", t).strip()
        for t in re.findall(r'class="event-group-title">(.*?)<span', html, re.DOTALL)
    ]


def test_the_whole_log_comes_grouped_by_superstep_newest_first(
    client: Client, run: WorkflowRun
) -> None:
    html = client.get(f"/runs/{run.pk}/events/").content.decode()

    everything = list(
        RunEvent.objects.filter(run=run).order_by("-seq").values_list("seq", flat=True)
    )
    assert seqs(html) == everything
    steps = [t for t in group_titles(html) if t.startswith("Superstep")]
    assert steps == sorted(steps, key=lambda t: -int(t.split()[1]))  # newest superstep first
    assert len(steps) >= 3
    # Every executor event sits under the superstep it names.
    for event in RunEvent.objects.filter(run=run, type="executor_invoked"):
        section = html.split(f'id="event-{event.seq}"')[0].rsplit('class="event-group-title">', 1)[
            1
        ]
        assert section.strip().startswith(f"Superstep {event.data['iteration']}")


def test_filters_by_type_and_executor_narrow_the_log(client: Client, run: WorkflowRun) -> None:
    executors = set(
        RunEvent.objects.filter(run=run, type="executor_invoked").values_list(
            "data__executor_id", flat=True
        )
    )
    one = min(executors)

    by_type = client.get(
        f"/runs/{run.pk}/events/", {"type": ["executor_invoked", "executor_completed"]}
    ).content.decode()
    by_executor = client.get(f"/runs/{run.pk}/events/", {"executor": one}).content.decode()

    expected = RunEvent.objects.filter(run=run, type__in=["executor_invoked", "executor_completed"])
    assert sorted(seqs(by_type)) == sorted(expected.values_list("seq", flat=True))
    assert "filtered" in by_type
    named = RunEvent.objects.filter(run=run, data__executor_id=one)
    assert sorted(seqs(by_executor)) == sorted(named.values_list("seq", flat=True))
    # The filters offer what this run has, with counts.
    assert 'value="executor_invoked" checked' in by_type
    assert f'<option value="{one}" selected>' in by_executor


def test_compact_density_and_one_list_keep_the_filters(client: Client, run: WorkflowRun) -> None:
    page = client.get(
        f"/runs/{run.pk}/events/", {"type": "output", "density": "compact", "group": "none"}
    )
    html = page.content.decode()

    assert "event-log-compact" in html and 'class="event-group-title"' not in html
    assert "<details" not in html.split('id="event-log"')[1]
    switch = re.search(r'id="event-density" href="\?([^"]*)"', html)
    assert (
        switch is not None and "type=output" in switch.group(1) and "density" not in switch.group(1)
    )
    assert page.context["filters"].types == ("output",)


@pytest.mark.parametrize(
    "query",
    [
        "type=%ED%A0%80",
        "executor=" + "x" * 5000,
        "before=-3",
        "before=abc",
        "before=99999999999999999999",
        "type=nonexistent&executor=ghost",
        "density=%00&group=%00",
    ],
)
def test_bad_filters_are_no_filters_not_errors(
    client: Client, run: WorkflowRun, query: str
) -> None:
    page = client.get(f"/runs/{run.pk}/events/?{query}")

    assert page.status_code == 200
    assert len(seqs(page.content.decode())) == RunEvent.objects.filter(run=run).count()
