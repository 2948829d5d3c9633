"""Real runs driven to their approval gate and to their end through the embedded worker, for
the tests of deciding (governance, claims, take-overs)."""

from __future__ import annotations

from typing import Any

from dashboard import services
from dashboard.execution import embedded
from dashboard.models import ApprovalRequest, ApprovalStatus, RunStatus, WorkflowRun


def settle() -> None:
    assert embedded.wait_for_background_tasks(60), "background work did not finish within 60 s"


def pause(user: Any, order_id: str = "ORD-1") -> tuple[WorkflowRun, ApprovalRequest]:
    """A return-replace run started by ``user``, waiting at its approval gate."""
    run = services.run_start(
        workflow_name="return-replace", input={"order_id": order_id, "work_ms": 0}, user=user
    )
    settle()
    run.refresh_from_db()
    assert run.status == RunStatus.WAITING, (run.status, run.error_message)
    return run, ApprovalRequest.objects.get(run=run, status=ApprovalStatus.PENDING)


def finished(run: WorkflowRun) -> WorkflowRun:
    settle()
    run.refresh_from_db()
    assert run.status == RunStatus.COMPLETED, (run.status, run.error_message)
    return run
