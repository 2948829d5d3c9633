"""The storage page: checkpoint bytes and counts per workflow and per status, largest runs."""

from __future__ import annotations

import uuid
from collections.abc import Callable
from typing import Any

import pytest
from django.test import Client

from dashboard.models import Checkpoint, CheckpointBlob

pytestmark = pytest.mark.django_db


def add_checkpoint(run: Any, size: int) -> Checkpoint:
    return Checkpoint.objects.create(
        checkpoint_id=uuid.uuid4().hex,
        run=run,
        engine_run_id=run.engine_run_id,
        workflow_name=run.workflow_name,
        superstep=1,
        graph_signature_hash="x",
        document={"version": "1", "blob_refs": []},
        size_bytes=size,
    )


def test_storage_totals_by_workflow_status_and_largest_runs(
    client_as: Callable[..., Client], make_run: Callable[..., Any]
) -> None:
    big = make_run(workflow_name="squares", status="completed")
    small = make_run(workflow_name="refund", status="failed")
    for _ in range(3):
        add_checkpoint(big, 3000)
    add_checkpoint(small, 1000)
    CheckpointBlob.objects.create(digest="sha256:x", data='{"a":1}', size_bytes=512)
    response = client_as("Viewer").get("/storage/")
    context = response.context
    assert context["totals"] == {
        "checkpoints": 4,
        "checkpoint_bytes": 10000,
        "blobs": 1,
        "blob_bytes": 512,
        "runs": 2,
    }
    assert [
        (r["workflow_name"], r["checkpoints"], r["bytes"], r["share"])
        for r in context["by_workflow"]
    ] == [("squares", 3, 9000, 90.0), ("refund", 1, 1000, 10.0)]
    assert [(r["status"], r["label"]) for r in context["by_status"]] == [
        ("completed", "Completed"),
        ("failed", "Failed"),
    ]
    assert [r["run_id"] for r in context["largest"]] == [big.pk, small.pk]
    html = response.content.decode()
    assert '<meter min="0" max="100" value="90.0"' in html and "8.8\xa0KB" in html


def test_storage_page_without_checkpoints(client_as: Callable[..., Client]) -> None:
    html = client_as("Viewer").get("/storage/").content.decode()
    assert "No checkpoints yet" in html and "Growth, last 30 days" in html
    assert "will come" not in html  # the chart is here, not promised


def test_storage_growth_chart_shows_bytes_written_per_day_for_thirty_days(
    client_as: Callable[..., Client], make_run: Callable[..., Any]
) -> None:
    import datetime as dt

    from django.utils import timezone

    run = make_run(workflow_name="squares", status="completed")
    today = add_checkpoint(run, 4000)
    old = add_checkpoint(run, 1000)
    Checkpoint.objects.filter(pk=old.pk).update(created_at=timezone.now() - dt.timedelta(days=3))
    Checkpoint.objects.filter(pk=today.pk).update(created_at=timezone.now())
    too_old = add_checkpoint(run, 9000)
    Checkpoint.objects.filter(pk=too_old.pk).update(
        created_at=timezone.now() - dt.timedelta(days=40)
    )

    response = client_as("Viewer").get("/storage/")

    growth = response.context["growth"]
    assert len(growth["bars"]) == 30
    assert [bar["bytes"] for bar in growth["bars"]][-4:] == [1000, 0, 0, 4000]
    assert growth["total"] == 5000  # the 40-day-old checkpoint is outside the window
    assert growth["bars"][-1]["height"] == growth["height"]  # the busiest day fills the chart
    assert b'class="growth-bar"' in response.content
