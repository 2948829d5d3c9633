"""Reasons on cancel, retry, resume and fork: typed in the confirmation, kept in the run's
history (its event log line) and in the audit log; text no database keeps is refused with a
message, and nothing happens."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from django.test import Client

from dashboard import services
from dashboard.execution import embedded
from dashboard.models import AuditEntry, Checkpoint, RunEvent, RunStatus, WorkflowRun

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def waiting(operator_client: Client, drive: Callable[..., WorkflowRun]) -> WorkflowRun:
    return drive(
        services.run_start,
        workflow_name="return-replace",
        input={"order_id": "ORD-R", "work_ms": 0},
        user=operator_client.user,
    )  # type: ignore[attr-defined]


def last_status_event(run: WorkflowRun) -> dict[str, object]:
    event = RunEvent.objects.filter(run=run, type="run_status").order_by("-seq").first()
    assert event is not None
    return dict(event.data)


def test_the_dialogs_ask_for_a_reason(operator_client: Client, waiting: WorkflowRun) -> None:
    page = operator_client.get(f"/runs/{waiting.pk}/").content.decode()
    assert 'form="cancel-form"' in page and 'name="reason"' in page
    gate = Checkpoint.objects.filter(run=waiting).order_by("-superstep").first()
    assert gate is not None
    inspector = operator_client.get(
        f"/runs/{waiting.pk}/checkpoints/{gate.checkpoint_id}/"
    ).content.decode()
    assert 'form="resume-form"' in inspector


def test_a_cancel_keeps_its_reason_in_the_history_and_the_audit_log(
    operator_client: Client, waiting: WorkflowRun
) -> None:
    answer = operator_client.post(
        f"/runs/{waiting.pk}/cancel/", {"reason": "  customer withdrew the return  "}
    )

    assert answer.status_code == 302
    assert last_status_event(waiting)["reason"] == "customer withdrew the return"
    entry = AuditEntry.objects.get(action="cancel", run_id=waiting.pk)
    assert entry.details == {"reason": "customer withdrew the return"}
    log = operator_client.get(f"/runs/{waiting.pk}/events/").content.decode()
    assert "Run cancelled by" in log and "customer withdrew the return" in log


def test_resume_and_fork_keep_their_reasons(operator_client: Client, waiting: WorkflowRun) -> None:
    gate = Checkpoint.objects.filter(run=waiting).order_by("-superstep").first()
    assert gate is not None
    operator_client.post(f"/runs/{waiting.pk}/cancel/")
    resumed = operator_client.post(
        f"/runs/{waiting.pk}/checkpoints/{gate.checkpoint_id}/resume/",
        {"reason": "cancelled by mistake"},
    )
    assert resumed.status_code == 302
    assert embedded.wait_for_background_tasks(60)
    assert AuditEntry.objects.get(action="resume").details == {"reason": "cancelled by mistake"}

    fork = services.run_fork(
        waiting.pk,
        checkpoint_id=gate.checkpoint_id,
        user=operator_client.user,
        reason="try a bigger discount",
    )  # type: ignore[attr-defined]
    assert last_status_event(fork)["reason"] == "try a bigger discount"
    assert AuditEntry.objects.get(action="fork").details["reason"] == "try a bigger discount"
    assert embedded.wait_for_background_tasks(60)


@pytest.mark.parametrize("reason", ["nul%00here", "x" * 2001])
def test_a_reason_no_database_keeps_is_refused_and_nothing_happens(
    operator_client: Client, waiting: WorkflowRun, reason: str
) -> None:
    answer = operator_client.post(
        f"/runs/{waiting.pk}/cancel/",
        f"reason={reason}",
        content_type="application/x-www-form-urlencoded",
    )

    assert 400 <= answer.status_code < 500
    assert "reason" in answer.content.decode()
    assert WorkflowRun.objects.get(pk=waiting.pk).status == RunStatus.WAITING
    assert not AuditEntry.objects.filter(action="cancel", outcome=AuditEntry.OK).exists()


def test_a_lone_surrogate_reason_is_refused_by_the_service(
    operator_client: Client, waiting: WorkflowRun
) -> None:
    # A browser's form cannot carry one (the bytes decode as replacement characters); the
    # services are called by the API and scripts too.
    with pytest.raises(services.InvalidInput, match="lone surrogate"):
        services.run_cancel(waiting.pk, user=operator_client.user, reason="\ud800")  # type: ignore[attr-defined]
    assert WorkflowRun.objects.get(pk=waiting.pk).status == RunStatus.WAITING
