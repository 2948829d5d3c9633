"""The run page: graph states, timeline with branches, event log, and the cancel/retry actions
(real runs through the services and the worker)."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

import pytest
from django.test import Client

from dashboard import services
from dashboard.models import RunStatus, WorkflowRun
from dashboard.web.run_page.graph_state import fold_states, next_executors

pytestmark = pytest.mark.django_db(transaction=True)

Drive = Callable[..., WorkflowRun]
NODE = re.compile(r'<g class="node state-(\w+)" data-executor="([^"]+)"')


def start(
    drive: Drive, client: Client, workflow: str = "return-replace", **data: Any
) -> WorkflowRun:
    return drive(
        services.run_start, workflow_name=workflow, input={"work_ms": 0, **data}, user=client.user
    )  # type: ignore[attr-defined]


def graph_states(html: str) -> dict[str, str]:
    """Executor → state class of each node in the page's workflow graph."""
    return {name: state for state, name in NODE.findall(html)}


def test_run_page_of_a_waiting_run_shows_graph_timeline_events_and_what_it_waits_on(
    client_as: Callable[..., Client], drive: Drive
) -> None:
    client = client_as("Operator")
    run = start(drive, client)
    assert run.status == RunStatus.WAITING
    response = client.get(f"/runs/{run.pk}/")
    html = response.content.decode()
    assert graph_states(html) == {
        "check-eligibility": "done",
        "initiate-return": "done",
        "search-replacements": "done",
        "hitl-gate": "waiting",
        "apply-discount": "idle",
        "finalize": "idle",
    }
    timeline = response.context["timeline"]
    assert [e.superstep for e in timeline.entries] == [0, 1, 2, 3, 4]
    assert timeline.entries[-1].pending == 1 and timeline.entries[-1].marker == "waiting"
    # An Operator without the Approver role is told who decides, not sent to the inbox.
    assert "1 pending" in html and "Waiting for a decision." in html
    assert "Decide in the inbox" not in html and "an approver decides it" in html
    assert (
        f'hx-ext="ws" ws-connect="/ws/runs/{run.pk}/?view=html" '
        f'data-last-seq="{run.last_event_seq}"' in html
    )
    assert "hitl-gate asks for a decision (ApprovalDecision)" in html
    assert "Cancel run" in html and "Retry" not in html


def test_cancel_says_what_happens_then_a_second_cancel_is_a_plain_409(
    client_as: Callable[..., Client], drive: Drive
) -> None:
    client = client_as("Operator")
    run = start(drive, client)
    page = client.get(f"/runs/{run.pk}/").content.decode()
    assert (
        'data-confirm="#cancel-dialog"' in page
        and "1 pending approval request(s) are cancelled." in page
    )
    response = client.post(f"/runs/{run.pk}/cancel/", {"reason": "a duplicate"})
    assert response.status_code == 302 and response["Location"] == f"/runs/{run.pk}/"
    assert WorkflowRun.objects.get(pk=run.pk).status == RunStatus.CANCELLED
    again = client.post(f"/runs/{run.pk}/cancel/")
    assert again.status_code == 409
    assert "You cancelled this run just now." in again.content.decode()  # said for a person


def test_retry_is_refused_plainly_unless_the_run_failed_and_then_continues_it(
    client_as: Callable[..., Client], drive: Drive
) -> None:
    client = client_as("Operator")
    done = start(drive, client, "squares", limit=2)
    refused = client.post(f"/runs/{done.pk}/retry/")
    assert (
        refused.status_code == 409
        and "only a failed run can be retried" in refused.content.decode()
    )
    failed = start(drive, client, "fail-at-step", steps=4, fail_at=2, outage_seconds=0.0)
    if failed.status != RunStatus.FAILED:  # the outage may already be over on a slow machine
        failed = start(drive, client, "fail-at-step", steps=4, fail_at=2, outage_seconds=600.0)
    html = client.get(f"/runs/{failed.pk}/").content.decode()
    assert "RuntimeError" in html and "simulated outage at step 2" in html and "Traceback" in html
    assert 'data-confirm="#retry-dialog"' in html and "continues from its latest checkpoint" in html
    assert graph_states(html)["counter"] == "failed"
    response = client.post(f"/runs/{failed.pk}/retry/", {"reason": "outage over"})
    assert response.status_code == 302


def test_a_viewer_sees_the_run_but_may_not_cancel_it(
    client_as: Callable[..., Client], drive: Drive
) -> None:
    operator = client_as("Operator")
    run = start(drive, operator)
    viewer = client_as("Viewer")
    page = viewer.get(f"/runs/{run.pk}/")
    assert page.status_code == 200 and "Cancel run" not in page.content.decode()
    refused = viewer.post(f"/runs/{run.pk}/cancel/")
    assert refused.status_code == 403 and "may not cancel" in refused.content.decode()
    assert WorkflowRun.objects.get(pk=run.pk).status == RunStatus.WAITING


def test_actions_partial_and_older_events_page(
    client_as: Callable[..., Client], drive: Drive
) -> None:
    client = client_as("Operator")
    run = start(drive, client, "squares", limit=3)
    actions = client.get(
        f"/runs/{run.pk}/actions/", headers={"HX-Request": "true"}
    ).content.decode()
    assert (
        actions.lstrip().startswith('<div id="run-actions"')
        and "Inspect latest checkpoint" in actions
    )
    events = client.get(f"/runs/{run.pk}/events/?before=5").content.decode()
    assert "#4" in events and "#5" not in events and "Back to the live log" in events
    assert client.get("/runs/00000000-0000-4000-8000-000000000009/").status_code == 404


def test_fold_states_follows_events_and_resets_on_resume() -> None:
    events = [
        ("executor_invoked", "a", None, None),
        ("executor_completed", "a", None, None),
        ("executor_invoked", "gate", None, None),
        ("request_info", "gate", None, None),
        ("executor_completed", "gate", None, None),
        ("executor_invoked", "b", None, None),
        ("executor_failed", "b", None, None),
    ]
    assert fold_states(events) == {"a": "done", "gate": "waiting", "b": "failed"}
    retried = fold_states([*events, ("run_status", None, "queued", "retry")])
    assert retried == {"a": "done", "gate": "waiting", "b": "idle"}
    assert fold_states([*events, ("run_status", None, "queued", "resume")]) == {}
    cancelled = fold_states(
        [("executor_invoked", "a", None, None), ("run_status", None, "cancelled", None)]
    )
    assert cancelled == {"a": "idle"}


def test_next_executors_are_what_the_in_flight_messages_reach() -> None:
    edges = [("a", "b"), ("a", "c"), ("c", "d")]
    document = {
        "messages": [
            {"source": "a", "target": None, "kind": "standard"},
            {"source": "internal:a", "target": "a", "kind": "standard"},
            {
                "source": "x",
                "target": None,
                "kind": "response",
                "request": {"source_executor_id": "d"},
            },
        ]
    }
    assert next_executors(document, edges) == ["b", "c", "a", "d"]
