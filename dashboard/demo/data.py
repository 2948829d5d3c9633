"""Demo runs for ``manage.py demo``: something to look at in every state, on first start.

Runs go through the real services and worker (no fixtures written by hand), so the demo
shows exactly what production would store. Seeding happens once: a database that already
has runs is left alone.
"""

from __future__ import annotations

from django.contrib.auth import get_user_model

from dashboard import services
from dashboard.execution import embedded
from dashboard.models import ApprovalRequest, ApprovalStatus, WorkflowRun

__all__ = ["seed"]

SEED_TIMEOUT_SECONDS = 120


def seed() -> None:
    if WorkflowRun.objects.exists():
        return
    users = get_user_model().objects
    # Existing users are never changed; one without the role just does not appear as author.
    operator = users.filter(username="operator").first()
    operator = operator if services.can(operator, "start") and operator is not None else None
    approver = users.filter(username="approver").first()
    approver = approver if approver is not None and services.can(approver, "approve") else None
    start = [
        ("refund", {"item_refund": 5.0, "initial_refund": 10.0, "work_ms": 0}),
        ("refund", {"item_refund": 12.5, "initial_refund": 0.0, "work_ms": 0}),
        ("squares", {"limit": 8, "work_ms": 0}),
        ("fan-out-fan-in", {"weight_kg": 4.0, "destination": "Porto", "work_ms": 0}),
        # Fails at step 3 during a 20 s "outage": retry it from the dashboard afterwards.
        ("fail-at-step", {"steps": 6, "fail_at": 3, "outage_seconds": 20, "work_ms": 0}),
        ("return-replace", {"order_id": "ORD-1001", "item_sku": "KETTLE-2L", "work_ms": 0}),
        (
            "return-replace",
            {"order_id": "ORD-1002", "item_sku": "TOASTER-4", "refund_amount": 89.0, "work_ms": 0},
        ),
        (
            "return-replace",
            {"order_id": "ORD-1003", "item_sku": "KETTLE-2L", "refund_amount": 35.0, "work_ms": 0},
        ),
        ("return-replace", {"order_id": "ORD-1004", "reason": "changed-mind", "work_ms": 0}),
        # The manager's review is a sub-workflow: its question waits in the inbox.
        (
            "expense-claim",
            {"employee": "Dana", "amount": 420.0, "category": "travel", "work_ms": 0},
        ),
        # A functional workflow (@workflow / @step): its order waits for approval in the inbox;
        # approved, its run page shows the price step replayed and the others computed.
        (
            "order-pipeline",
            {"customer": "Ada", "quantity": 3, "unit_price": 45.0, "work_ms": 0},
        ),
        # Agents on the built-in local model: a report, and a refund tool call in the inbox.
        ("research-report", "Write a short report on durable workflows for operators"),
        ("support-refund", "Please refund order A-17, it arrived broken"),
        # A customer handed to billing, and a Magentic team's plan waiting for its review.
        ("handoff-triage", "My invoice shows a double charge for March"),
        ("product-brief", "A product brief for a dashboard of durable workflow runs"),
        # A customer's contact and card details, masked on every page; admin reveals them.
        ("card-dispute", {"customer": "Dana Whitfield", "amount": 89.9}),
    ]
    for name, data in start:
        services.run_start(workflow_name=name, input=data, user=operator)
    embedded.wait_for_background_tasks(SEED_TIMEOUT_SECONDS)
    # One approval decided, so the inbox has history and one return completes.
    first = (
        ApprovalRequest.objects.filter(
            status=ApprovalStatus.PENDING, run__workflow_name="return-replace"
        )
        .order_by("created_at")
        .first()
    )
    if first is not None and approver is not None:
        services.approval_decide(
            first.request_id,
            user=approver,
            approved=True,
            response={"discount_percent": 10, "note": "Loyal customer"},
            reason="Within the replacement policy",
        )
        embedded.wait_for_background_tasks(SEED_TIMEOUT_SECONDS)
