"""Acting on many runs from the pages: review says how many and which are skipped and why,
nothing happens before the confirmation, the progress page follows the work to its end."""

from __future__ import annotations

from collections.abc import Callable
from urllib.parse import urlencode

import pytest
from django.test import Client

from dashboard.execution import embedded
from dashboard.models import BulkAction, RunStatus, WorkflowRun

pytestmark = pytest.mark.django_db(transaction=True)


def test_review_then_confirm_then_watch(
    operator_client: Client, make_run: Callable[..., WorkflowRun]
) -> None:
    waiting = [make_run(status="waiting") for _ in range(3)]
    done = make_run(status="completed")
    picked = [str(r.pk) for r in [*waiting, done]]

    review = operator_client.post(
        "/runs/bulk/", {"action": "cancel", "run": picked, "query": "status=waiting"}
    )
    html = review.content.decode()
    assert review.status_code == 200
    assert "Cancel: 3 of 4 runs" in html and "already completed" in html
    assert all(WorkflowRun.objects.get(pk=r.pk).status == RunStatus.WAITING for r in waiting)

    started = operator_client.post(
        "/runs/bulk/",
        {"action": "cancel", "run": picked, "confirm": "1", "reason": "stuck since the outage"},
    )
    assert started.status_code == 302 and started["Location"].startswith("/runs/bulk/")
    assert embedded.wait_for_background_tasks(60)
    progress = operator_client.get(started["Location"])
    text = progress.content.decode()
    assert progress.status_code == 200
    assert "<strong>3</strong> done · <strong>1</strong> skipped" in text and "finished" in text
    assert "hx-trigger" not in text.split('id="bulk-progress"')[1].split(">")[0]  # no more polling
    assert all(WorkflowRun.objects.get(pk=r.pk).status == RunStatus.CANCELLED for r in waiting)


def test_every_run_matching_the_filter(
    operator_client: Client, make_run: Callable[..., WorkflowRun]
) -> None:
    failed = [
        make_run(status="failed", workflow_name="fail-at-step", input={"steps": 1})
        for _ in range(3)
    ]
    make_run(status="failed", workflow_name="squares")
    query = urlencode({"status": "failed", "workflow": "fail-at-step"})

    review = operator_client.post(
        "/runs/bulk/", {"action": "cancel", "all_matching": "1", "query": query}
    )

    assert "every run matching the filter (3)" in review.content.decode()
    assert sorted(review.context["run_ids"]) == sorted(str(r.pk) for r in failed)


@pytest.mark.parametrize(
    "form",
    [
        {"action": "cancel"},
        {"action": "launch-missiles", "run": ["00000000-0000-4000-8000-000000000001"]},
        {"action": "cancel", "run": ["not-a-run"]},
        {"action": "cancel", "run": ["00000000-0000-4000-8000-000000000001"], "confirm": "1"},
    ],
)
def test_a_bad_request_says_why_and_starts_nothing(
    operator_client: Client, form: dict[str, object]
) -> None:
    answer = operator_client.post("/runs/bulk/", form)

    assert 400 <= answer.status_code < 500
    assert 'id="bulk-error"' in answer.content.decode()
    assert not BulkAction.objects.exists()


def test_a_viewer_is_refused_and_an_unknown_progress_page_is_404(
    client_as: Callable[..., Client], make_run: Callable[..., WorkflowRun]
) -> None:
    viewer = client_as("Viewer")
    run = make_run(status="waiting")

    refused = viewer.post("/runs/bulk/", {"action": "cancel", "run": [str(run.pk)], "confirm": "1"})

    assert refused.status_code == 403 and not BulkAction.objects.exists()
    assert viewer.get("/runs/bulk/00000000-0000-4000-8000-000000000001/").status_code == 404
