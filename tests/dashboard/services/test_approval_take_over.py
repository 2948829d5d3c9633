"""dashboard/services/approvals.py: a claimed request is decided only by who holds the claim,
and ``approval_take_over`` is the one explicit, audited way for another approver to get it.

Each test pauses a real ``return-replace`` run at its approval gate through the embedded
worker, on SQLite and PostgreSQL (``services_transactional_db``).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from dashboard import services
from dashboard.models import ApprovalStatus, AuditEntry
from tests.helpers.paused_runs import finished, pause

RoleUser = Callable[..., Any]


def test_approval_decide_refuses_who_does_not_hold_the_claim_and_says_how_to_get_it(
    people: dict[str, Any],
) -> None:
    _, request = pause(people["olga"])
    services.approval_claim(request.request_id, user=people["abe"])

    with pytest.raises(services.Conflict) as refused:
        services.approval_decide(
            request.request_id, user=people["bea"], approved=False, reason="not in stock"
        )

    assert "claimed by abe" in refused.value.message
    assert "take it over" in refused.value.message
    request.refresh_from_db()
    assert request.status == ApprovalStatus.PENDING and request.decided_by is None


def test_approvals_decide_many_skips_a_request_someone_else_holds(
    people: dict[str, Any],
) -> None:
    _, held = pause(people["olga"], "ORD-1")
    _, free = pause(people["olga"], "ORD-2")
    services.approval_claim(held.request_id, user=people["abe"])

    outcomes = services.approvals_decide_many(
        [held.request_id, free.request_id], user=people["bea"], approved=False, reason="recall"
    )

    by_id = {o.request_id: o for o in outcomes}
    assert not by_id[held.request_id].decided
    assert "take it over" in by_id[held.request_id].reason
    assert by_id[free.request_id].decided


def test_approval_take_over_moves_the_claim_is_audited_and_lets_the_new_holder_decide(
    people: dict[str, Any],
) -> None:
    run, request = pause(people["olga"])
    services.approval_claim(request.request_id, user=people["abe"])

    taken = services.approval_take_over(request.request_id, user=people["bea"])
    services.approval_decide(
        request.request_id, user=people["bea"], approved=False, reason="abe is away"
    )

    assert taken.claimed_by == people["bea"]
    entry = AuditEntry.objects.get(action="take_over", outcome=AuditEntry.OK)
    assert entry.actor == people["bea"] and entry.details == {"from": "abe"}
    assert entry.target == f"request {request.request_id}"
    with pytest.raises(services.Conflict, match="already rejected by bea"):
        services.approval_decide(request.request_id, user=people["abe"], approved=True)
    assert finished(run).output["outcome"] == "replacement rejected; refund only"


def test_approval_take_over_refuses_what_is_not_someone_elses_claim(
    people: dict[str, Any],
) -> None:
    _, request = pause(people["olga"])

    with pytest.raises(services.Conflict, match="not claimed by anyone: claim it instead"):
        services.approval_take_over(request.request_id, user=people["bea"])
    services.approval_claim(request.request_id, user=people["bea"])
    with pytest.raises(services.Conflict, match="already claimed by you"):
        services.approval_take_over(request.request_id, user=people["bea"])
    services.approval_decide(request.request_id, user=people["bea"], approved=False, reason="no")
    with pytest.raises(services.Conflict, match="already rejected by bea"):
        services.approval_take_over(request.request_id, user=people["abe"])
    assert not AuditEntry.objects.filter(action="take_over", outcome=AuditEntry.OK).exists()


def test_approval_take_over_is_refused_to_a_role_that_cannot_decide(
    people: dict[str, Any], role_user: RoleUser
) -> None:
    _, request = pause(people["olga"])
    services.approval_claim(request.request_id, user=people["abe"])

    with pytest.raises(services.Forbidden):
        services.approval_take_over(request.request_id, user=role_user("vic", "Viewer"))

    request.refresh_from_db()
    assert request.claimed_by == people["abe"]
    assert AuditEntry.objects.filter(action="claim", outcome=AuditEntry.DENIED).exists()
