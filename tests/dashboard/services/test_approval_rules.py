"""dashboard/services/approval_rules.py: no self-approval and assignment bind everyone,
superusers included; an administrator who must decide against such a rule overrides it
explicitly, with a reason, recorded in the audit log and the run's event log. Through the JSON
API (the inbox's side is in test_web_approvals.py).

Every test pauses a real ``return-replace`` run at its approval gate through the embedded
worker, on SQLite and PostgreSQL (``services_transactional_db``).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.test import Client

from dashboard import services
from dashboard.execution import embedded
from dashboard.models import (
    ApprovalRequest,
    ApprovalRule,
    ApprovalStatus,
    AuditEntry,
    RunEvent,
    RunStatus,
    WorkflowRun,
)

RoleUser = Callable[..., Any]


@pytest.fixture(autouse=True)
def database(services_transactional_db: str) -> str:
    return services_transactional_db


@pytest.fixture
def root() -> User:
    return User.objects.create_superuser("root", password="root")


@pytest.fixture
def ada(role_user: RoleUser) -> Any:
    """An administrator (the Admin role, not a superuser)."""
    return role_user("ada", "Admin")


def settle() -> None:
    assert embedded.wait_for_background_tasks(60), "background work did not finish within 60 s"


def pause(user: Any, *, forbid_self_approval: bool = True) -> tuple[WorkflowRun, ApprovalRequest]:
    """A return-replace run started by ``user``, waiting at its gate, under a rule."""
    ApprovalRule.objects.get_or_create(
        workflow_name="return-replace", defaults={"forbid_self_approval": forbid_self_approval}
    )
    run = services.run_start(
        workflow_name="return-replace", input={"order_id": "ORD-1", "work_ms": 0}, user=user
    )
    settle()
    run.refresh_from_db()
    assert run.status == RunStatus.WAITING, (run.status, run.error_message)
    return run, ApprovalRequest.objects.get(run=run, status=ApprovalStatus.PENDING)


def signed_in(user: Any) -> Client:
    client = Client()
    client.force_login(user)
    return client


def decide(user: Any, request: ApprovalRequest, decision: str = "approve", **body: Any) -> Any:
    return signed_in(user).post(
        f"/api/approvals/{request.request_id}/decide/",
        data=json.dumps({"decision": decision, **body}),
        content_type="application/json",
    )


def audit(action: str, outcome: str = "ok") -> list[AuditEntry]:
    return list(AuditEntry.objects.filter(action=action, outcome=outcome).order_by("id"))


def event_types(run: WorkflowRun) -> list[str]:
    return list(RunEvent.objects.filter(run=run).order_by("seq").values_list("type", flat=True))


# ---------------------------------------------------------------------- the rule binds everyone


def test_a_superuser_may_not_decide_or_claim_a_run_they_started_when_the_rule_forbids_it(
    root: User, role_user: RoleUser
) -> None:
    run, request = pause(root)

    own = decide(root, request)
    own_claim = signed_in(root).post(
        f"/api/approvals/{request.request_id}/claim/", data="{}", content_type="application/json"
    )

    assert own.status_code == 403, own.content
    assert "forbid deciding a run you started" in own.json()["error"]
    assert "you may override the rule, giving a reason" in own.json()["error"]
    assert own_claim.status_code == 403
    (denied,) = audit("approve", "denied")
    assert (denied.actor_name, denied.run_id) == ("root", run.pk)
    assert ApprovalRequest.objects.get(pk=request.pk).status == ApprovalStatus.PENDING
    assert decide(role_user("abe", "Approver"), request).status_code == 200
    settle()


def test_a_superuser_may_not_decide_a_request_assigned_to_someone_else(
    root: User, ada: Any, role_user: RoleUser
) -> None:
    bea = role_user("bea", "Approver")
    _, request = pause(ada, forbid_self_approval=False)
    services.approval_assign(request.request_id, user=ada, assignee=bea)

    refused = decide(root, request)

    assert refused.status_code == 403 and "assigned to another user" in refused.json()["error"]
    assert decide(bea, request).status_code == 200
    settle()


def test_a_refused_approver_is_not_told_about_overrides(role_user: RoleUser) -> None:
    sam = role_user("sam", "Operator", "Approver")
    _, request = pause(sam)

    refused = decide(sam, request)

    assert refused.status_code == 403 and "override" not in refused.json()["error"]


# ------------------------------------------------------------------------------- the override


@pytest.mark.parametrize("who", ["admin", "superuser"])
def test_an_override_with_a_reason_decides_and_is_in_the_audit_log_and_the_events(
    who: str, root: User, ada: Any
) -> None:
    admin = ada if who == "admin" else root
    run, request = pause(admin)

    decided = decide(admin, request, "reject", override=True, reason="  on call, starter away ")
    settle()

    assert decided.status_code == 200, decided.content
    assert decided.json()["status"] == "rejected"
    assert decided.json()["decided_by"] == admin.username
    (override,) = audit("override")
    assert (override.actor_name, override.run_id, override.target) == (
        admin.username,
        run.pk,
        f"request {request.request_id}",
    )
    assert override.details == {
        "decision": "reject",
        "rule": "the rules of this workflow forbid deciding a run you started",
        "reason": "on call, starter away",
    }
    assert [e.actor_name for e in audit("reject")] == [admin.username]
    types = event_types(run)
    assert types.index("approval_override") < types.index("approval_decided")
    event = RunEvent.objects.get(run=run, type="approval_override")
    assert event.data == {
        "request_id": request.request_id,
        "by": admin.username,
        "decision": "reject",
        "rule": "the rules of this workflow forbid deciding a run you started",
        "reason": "on call, starter away",
    }
    log = signed_in(admin).get(f"/runs/{run.pk}/events/").content.decode()
    assert f"{admin.username} overrode a rule to reject request" in log
    assert "on call, starter away" in log
    run.refresh_from_db()
    assert run.status == RunStatus.COMPLETED
    assert run.output["outcome"] == "replacement rejected; refund only"


def test_an_override_lifts_an_assignment_too(ada: Any, role_user: RoleUser) -> None:
    bea = role_user("bea", "Approver")
    olga = role_user("olga", "Operator")
    run, request = pause(olga, forbid_self_approval=False)
    services.approval_assign(request.request_id, user=ada, assignee=bea)

    decided = decide(ada, request, override=True, reason="bea is on leave")
    settle()

    assert decided.status_code == 200 and decided.json()["decided_by"] == "ada"
    (override,) = audit("override")
    assert override.details["rule"] == "this request is assigned to another user"
    run.refresh_from_db()
    assert run.status == RunStatus.COMPLETED


@pytest.mark.parametrize("reason", ["", "   "])
def test_an_override_without_a_reason_is_refused_naming_the_field(ada: Any, reason: str) -> None:
    run, request = pause(ada)

    refused = decide(ada, request, override=True, reason=reason)

    assert refused.status_code == 400, refused.content
    assert "reason" in refused.json()["errors"]
    assert audit("override") == [] and "approval_override" not in event_types(run)
    assert ApprovalRequest.objects.get(pk=request.pk).status == ApprovalStatus.PENDING


def test_only_administrators_may_override(role_user: RoleUser) -> None:
    sam = role_user("sam", "Operator", "Approver")
    run, request = pause(sam)

    refused = decide(sam, request, override=True, reason="I know best")

    assert refused.status_code == 403, refused.content
    assert refused.json()["error"] == "sam may not override (role required)"
    (denied,) = audit("override", "denied")
    assert (denied.actor_name, denied.run_id) == ("sam", run.pk)
    assert audit("override") == [] and "approval_override" not in event_types(run)
    assert ApprovalRequest.objects.get(pk=request.pk).status == ApprovalStatus.PENDING


def test_an_override_no_rule_calls_for_is_a_conflict(ada: Any, role_user: RoleUser) -> None:
    olga = role_user("olga", "Operator")
    run, request = pause(olga)

    refused = decide(ada, request, override=True, reason="just because")

    assert refused.status_code == 409 and "no rule refuses you" in refused.json()["error"]
    assert audit("override") == [] and "approval_override" not in event_types(run)
    assert decide(ada, request).status_code == 200
    settle()


def test_the_system_cannot_override(ada: Any) -> None:
    _, request = pause(ada)

    with pytest.raises(services.InvalidInput):
        services.approval_decide(
            request.request_id, user=None, approved=True, override=True, reason="cron"
        )


def test_an_override_counts_as_one_vote_of_several(ada: Any, role_user: RoleUser) -> None:
    ApprovalRule.objects.create(
        workflow_name="return-replace", forbid_self_approval=True, required_approvals=2
    )
    run, request = pause(ada)

    first = decide(ada, request, override=True, reason="quorum is short today")
    second = decide(role_user("abe", "Approver"), request)
    settle()

    assert first.status_code == 200 and first.json()["status"] == "pending"
    assert second.status_code == 200 and second.json()["status"] == "approved"
    assert [e.actor_name for e in audit("override")] == ["ada"]
    assert [e.actor_name for e in audit("vote_approve")] == ["ada", "abe"]
    run.refresh_from_db()
    assert run.status == RunStatus.COMPLETED
