"""dashboard/observability: who may read ``/metrics``, that each metric moves when its event
happens (through the services where they record) and the run gauges read from the database.
Several processes sharing one directory are in test_metrics_processes.py.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import datetime as dt
import time
from collections.abc import Callable
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.db import OperationalError, connections
from django.db.models import F
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.utils import timezone
from prometheus_client.parser import text_string_to_metric_families

from dashboard import services
from dashboard.execution import embedded
from dashboard.instruments import metrics
from dashboard.models import (
    ApprovalRequest,
    ApprovalStatus,
    RetentionPolicy,
    RunStatus,
    WorkflowRun,
)
from dashboard.observability import collector
from tests.dashboard.services.test_retention import make_run as run_with_checkpoints

TOKEN = "metrics-token-for-tests-0123456789"

type Samples = dict[tuple[str, frozenset[tuple[str, str]]], float]


@pytest.fixture(autouse=True)
def metrics_token(settings: Any) -> None:
    settings.SUPERSTEP_METRICS_TOKEN = TOKEN


def parse(text: str) -> Samples:
    return {
        (sample.name, frozenset(sample.labels.items())): sample.value
        for family in text_string_to_metric_families(text)
        for sample in family.samples
    }


def scrape() -> Samples:
    response = Client().get("/metrics", HTTP_AUTHORIZATION=f"Bearer {TOKEN}")
    assert response.status_code == 200, response.content
    return parse(response.content.decode())


def value(samples: Samples, name: str, **labels: str) -> float:
    """A sample's value; a series that is absent reads 0, as a counter never touched."""
    return samples.get((name, frozenset(labels.items())), 0.0)


# ------------------------------------------------------------------------------ protection


@pytest.mark.django_db
def test_metrics_without_credentials_is_401_asking_for_a_bearer_token() -> None:
    response = Client().get("/metrics")
    assert response.status_code == 401
    assert response["WWW-Authenticate"] == 'Bearer realm="metrics"'
    assert b"Bearer" in response.content


@pytest.mark.django_db
@pytest.mark.parametrize("header", ["Basic dXNlcjpwYXNz", "Bearer", "Bearer   ", TOKEN])
def test_metrics_with_a_malformed_authorization_header_is_401(header: str) -> None:
    response = Client().get("/metrics", HTTP_AUTHORIZATION=header)
    assert response.status_code == 401
    assert b"Bearer <token>" in response.content


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("configured", "answer"),
    [
        (TOKEN, b"wrong metrics token\n"),
        ("", b"no metrics token is configured (SUPERSTEP_METRICS_TOKEN)\n"),
    ],
    ids=["wrong", "none-configured"],
)
def test_metrics_with_a_token_that_does_not_match_is_403_saying_why(
    settings: Any, configured: str, answer: bytes
) -> None:
    settings.SUPERSTEP_METRICS_TOKEN = configured
    response = Client().get("/metrics", HTTP_AUTHORIZATION=f"Bearer {TOKEN}x")
    assert (response.status_code, response.content) == (403, answer)


@pytest.mark.django_db
def test_metrics_with_the_token_is_200_in_the_prometheus_text_format() -> None:
    response = Client().get("/metrics", HTTP_AUTHORIZATION=f"bearer {TOKEN}")
    assert response.status_code == 200
    assert response["Content-Type"] == "text/plain; version=0.0.4; charset=utf-8"
    assert response["Cache-Control"] == "no-store"
    names = {family.name for family in text_string_to_metric_families(response.content.decode())}
    assert {"superstep_runs", "superstep_database_up", "superstep_checkpoint_size_bytes"} <= names


@pytest.mark.django_db
def test_metrics_answers_openmetrics_when_the_scraper_asks_for_it() -> None:
    response = Client().get(
        "/metrics",
        HTTP_AUTHORIZATION=f"Bearer {TOKEN}",
        HTTP_ACCEPT="application/openmetrics-text; version=1.0.0,text/plain;q=0.5",
    )
    assert response.status_code == 200
    assert response["Content-Type"].startswith("application/openmetrics-text; version=1.0.0")
    assert response.content.endswith(b"# EOF\n")


@pytest.mark.django_db
def test_metrics_is_open_to_a_staff_session_and_closed_to_other_users() -> None:
    staff, clerk = Client(), Client()
    staff.force_login(User.objects.create_user("sam", is_staff=True))
    clerk.force_login(User.objects.create_user("cleo"))
    assert staff.get("/metrics").status_code == 200
    refused = clerk.get("/metrics")
    assert refused.status_code == 403
    assert b"staff" in refused.content
    # A token is judged alone, even beside a staff session.
    assert staff.get("/metrics", HTTP_AUTHORIZATION="Bearer wrong").status_code == 403


@pytest.mark.django_db
def test_metrics_refuses_writes() -> None:
    response = Client().post("/metrics", HTTP_AUTHORIZATION=f"Bearer {TOKEN}")
    assert response.status_code == 405


# ------------------------------------------------------------------ runs from the database


def test_run_gauges_count_each_workflow_and_status_in_one_query(
    services_db: str, make_run: Callable[..., WorkflowRun]
) -> None:
    moment = timezone.now()
    for _ in range(3):
        make_run(status="completed")
    make_run(status="failed")
    make_run(status="queued")
    make_run(status="waiting", workflow_name="return-replace")
    make_run(status="running", lease_owner="w1", lease_expires_at=moment + dt.timedelta(minutes=5))
    make_run(status="running", lease_owner="w2", lease_expires_at=moment - dt.timedelta(minutes=1))
    make_run(status="completed", workflow_name="gone-from-the-registry")

    with CaptureQueriesContext(connections["default"]) as queries:
        families = list(collector.RunsCollector().collect())
    assert len(queries.captured_queries) == 1
    samples = {
        (sample.name, frozenset(sample.labels.items())): sample.value
        for family in families
        for sample in family.samples
    }

    assert value(samples, "superstep_database_up") == 1
    assert value(samples, "superstep_runs", workflow="squares", status="completed") == 3
    assert value(samples, "superstep_runs", workflow="squares", status="failed") == 1
    assert value(samples, "superstep_runs", workflow="squares", status="running") == 2
    assert (
        value(samples, "superstep_runs", workflow="gone-from-the-registry", status="completed") == 1
    )
    assert value(samples, "superstep_runs_queued", workflow="squares") == 1
    assert value(samples, "superstep_runs_waiting", workflow="return-replace") == 1
    assert value(samples, "superstep_runs_leased", workflow="squares") == 1
    assert value(samples, "superstep_runs_lease_expired", workflow="squares") == 1
    # Every registered workflow has every status, at 0 when it has no such run.
    zero = (
        "superstep_runs",
        frozenset({"workflow": "return-replace", "status": "cancelled"}.items()),
    )
    assert samples[zero] == 0
    assert (
        samples[("superstep_runs_leased", frozenset({"workflow": "return-replace"}.items()))] == 0
    )


@pytest.mark.django_db
def test_a_database_that_cannot_be_read_is_reported_not_a_failed_scrape(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    def unreachable() -> None:
        raise OperationalError("connection refused")

    monkeypatch.setattr(collector, "run_counts", unreachable)
    samples = scrape()
    assert value(samples, "superstep_database_up") == 0
    assert not [key for key in samples if key[0] == "superstep_runs"]


# --------------------------------------------------------------- each metric moves with its event


def test_prune_counts_deleted_checkpoints_runs_and_bytes_once_committed(
    services_db: str, django_capture_on_commit_callbacks: Callable[..., Any]
) -> None:
    run_with_checkpoints(checkpoints=5, size_bytes=1000)
    run_with_checkpoints(checkpoints=3, size_bytes=1000, finished_days_ago=30)
    policy = RetentionPolicy.objects.create(
        name="metrics-prune",
        status="completed",
        keep_last_checkpoints=1,
        delete_runs_older_than_days=7,
    )
    before = scrape()
    with django_capture_on_commit_callbacks(execute=True):
        (report,) = services.checkpoint_prune(policy=policy)
        # Inside the caller's transaction nothing is counted yet: it could still roll back.
        assert value(
            scrape(), "superstep_pruned_checkpoints_total", policy="metrics-prune"
        ) == value(before, "superstep_pruned_checkpoints_total", policy="metrics-prune")
    after = scrape()

    assert (report.runs, report.checkpoints) == (1, 3 + 4)
    moved = {
        name: value(after, name, policy="metrics-prune")
        - value(before, name, policy="metrics-prune")
        for name in (
            "superstep_pruned_checkpoints_total",
            "superstep_pruned_runs_total",
            "superstep_pruned_bytes_total",
        )
    }
    assert moved == {
        "superstep_pruned_checkpoints_total": 7,
        "superstep_pruned_runs_total": 1,
        "superstep_pruned_bytes_total": 7000,
    }


@pytest.mark.parametrize("approved", [True, False], ids=["approved", "rejected"])
def test_deciding_an_approval_observes_how_long_it_waited(
    services_transactional_db: str, role_user: Callable[..., Any], approved: bool
) -> None:
    run = services.run_start(
        workflow_name="return-replace", input={"order_id": "ORD-1", "work_ms": 0}
    )
    assert embedded.wait_for_background_tasks(60)
    run.refresh_from_db()
    assert run.status == RunStatus.WAITING, (run.status, run.error_message)
    request = ApprovalRequest.objects.get(run=run, status=ApprovalStatus.PENDING)
    ApprovalRequest.objects.filter(pk=request.pk).update(
        created_at=F("created_at") - dt.timedelta(seconds=120)
    )
    decision = "approved" if approved else "rejected"
    labels = {"workflow": "return-replace", "decision": decision}
    before = scrape()

    services.approval_decide(
        request.request_id,
        user=role_user("abe", "Approver"),
        approved=approved,
        reason="checked",  # a person rejects with a reason
    )
    assert embedded.wait_for_background_tasks(60)
    after = scrape()

    assert value(after, "superstep_approval_wait_seconds_count", **labels) == (
        value(before, "superstep_approval_wait_seconds_count", **labels) + 1
    )
    waited = value(after, "superstep_approval_wait_seconds_sum", **labels) - value(
        before, "superstep_approval_wait_seconds_sum", **labels
    )
    assert 120 <= waited < 180
    assert value(after, "superstep_approval_wait_seconds_bucket", le="60.0", **labels) == value(
        before, "superstep_approval_wait_seconds_bucket", le="60.0", **labels
    )
    assert WorkflowRun.objects.get(pk=run.pk).status != RunStatus.WAITING


@pytest.mark.django_db
def test_a_superstep_checkpoint_observes_duration_and_size_other_checkpoints_size_only() -> None:
    labels = {"workflow": "metrics-flow"}
    before = scrape()
    metrics.checkpoint_committed("metrics-flow", 5000, 0.3)
    metrics.checkpoint_committed("metrics-flow", 200, 9.0, kind="entry")
    after = scrape()

    def moved(name: str, **more: str) -> float:
        return value(after, name, **labels, **more) - value(before, name, **labels, **more)

    assert moved("superstep_checkpoint_size_bytes_count") == 2
    assert moved("superstep_checkpoint_size_bytes_sum") == 5200
    assert moved("superstep_checkpoint_size_bytes_bucket", le="256.0") == 1
    assert moved("superstep_superstep_duration_seconds_count") == 1
    assert moved("superstep_superstep_duration_seconds_sum") == pytest.approx(0.3)
    assert moved("superstep_superstep_duration_seconds_bucket", le="0.25") == 0
    assert moved("superstep_superstep_duration_seconds_bucket", le="0.5") == 1


def test_a_lap_measures_the_time_since_the_previous_lap() -> None:
    lap = metrics.Lap()
    time.sleep(0.05)
    first = lap()
    second = lap()
    assert 0.05 <= first < 5
    assert 0 <= second < first


@pytest.mark.django_db
def test_lease_takeovers_are_counted_by_who_took_the_run_back() -> None:
    before = scrape()
    metrics.lease_taken_over("metrics-flow", by="worker")
    metrics.lease_taken_over("metrics-flow", by="sweeper")
    metrics.lease_taken_over("metrics-flow", by="sweeper")
    after = scrape()
    for by, count in (("worker", 1), ("sweeper", 2)):
        name, labels = "superstep_lease_takeovers_total", {"workflow": "metrics-flow", "by": by}
        assert value(after, name, **labels) - value(before, name, **labels) == count


@pytest.mark.django_db
def test_run_attempts_executing_rise_and_fall() -> None:
    metrics.attempt_started("metrics-flow")
    metrics.attempt_started("metrics-flow")
    assert value(scrape(), "superstep_runs_executing", workflow="metrics-flow") == 2
    metrics.attempt_ended("metrics-flow")
    metrics.attempt_ended("metrics-flow")
    assert value(scrape(), "superstep_runs_executing", workflow="metrics-flow") == 0


def _broadcasts() -> float:
    return metrics.INSTRUMENTS.get_sample_value("superstep_broadcast_delay_seconds_count") or 0.0


def test_a_broadcast_sent_synchronously_observes_its_delay_from_the_commit() -> None:
    before = _broadcasts()
    timer = metrics.BroadcastTimer()
    timer()
    assert _broadcasts() == before + 1


async def test_a_broadcast_handed_to_a_loop_is_observed_when_sent_and_not_when_it_failed() -> None:
    before = _broadcasts()

    async def fail() -> None:
        raise ConnectionError("channel layer down")

    loop = asyncio.get_running_loop()
    sent, failed = loop.create_task(asyncio.sleep(0.01)), loop.create_task(fail())
    sent.add_done_callback(metrics.BroadcastTimer())
    failed.add_done_callback(metrics.BroadcastTimer())
    await asyncio.gather(sent, failed, return_exceptions=True)
    await asyncio.sleep(0)  # done callbacks run on the loop's next turn
    assert _broadcasts() == before + 1
    delay = metrics.INSTRUMENTS.get_sample_value(
        "superstep_broadcast_delay_seconds_bucket", {"le": "0.005"}
    )
    assert delay is not None


def test_a_broadcast_sent_from_another_thread_is_observed_through_its_future() -> None:
    before = _broadcasts()
    done, broken = concurrent.futures.Future[None](), concurrent.futures.Future[None]()
    done.add_done_callback(metrics.BroadcastTimer())
    broken.add_done_callback(metrics.BroadcastTimer())
    done.set_result(None)
    broken.set_exception(ConnectionError("redis gone"))
    assert _broadcasts() == before + 1


def test_a_real_run_records_its_supersteps_and_checkpoints_and_leaves_nothing_executing(
    services_transactional_db: str,
) -> None:
    labels = {"workflow": "squares"}
    before = scrape()

    run = services.run_start(workflow_name="squares", input={"limit": 3, "work_ms": 0})
    assert embedded.wait_for_background_tasks(60)
    after = scrape()

    assert WorkflowRun.objects.get(pk=run.pk).status == RunStatus.COMPLETED
    supersteps = value(after, "superstep_superstep_duration_seconds_count", **labels) - value(
        before, "superstep_superstep_duration_seconds_count", **labels
    )
    checkpoints = value(after, "superstep_checkpoint_size_bytes_count", **labels) - value(
        before, "superstep_checkpoint_size_bytes_count", **labels
    )
    assert supersteps >= 3 and checkpoints > supersteps  # the entry checkpoint has no duration
    assert value(after, "superstep_runs_executing", **labels) == 0
