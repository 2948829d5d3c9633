"""dashboard/services/approvals.py under contention, on PostgreSQL with real row locks: many
approvers deciding or claiming one request at the same moment, through the JSON API, each
thread with its own database connection.

Exactly one attempt wins; every other one is a 409 that names who actually won (a person, or
"the system (deadline)" only when the deadline's default outcome did), never a 500. A loser
waits for the winner's row lock; what it reads after the wait must be the winner's commit,
including the user rows it points to.
"""

from __future__ import annotations

import datetime as dt
import json
import threading
from collections.abc import Callable
from typing import Any

import pytest
from django.db import connections
from django.test import Client
from django.utils import timezone

from dashboard import services
from dashboard.execution import embedded
from dashboard.models import ApprovalRequest, ApprovalRule, ApprovalStatus, RunStatus

RoleUser = Callable[..., Any]
CONTENDERS = 8
REQUESTS = 6
WAIT = 60.0


@pytest.fixture(autouse=True)
def database(services_postgres_transactional_db: str) -> str:
    return services_postgres_transactional_db


@pytest.fixture
def approvers(role_user: RoleUser) -> list[Any]:
    return [role_user(f"approver{i}", "Approver") for i in range(CONTENDERS)]


def settle() -> None:
    assert embedded.wait_for_background_tasks(WAIT), "background work did not finish in time"


def waiting_requests(count: int) -> list[ApprovalRequest]:
    """``count`` return-replace runs paused at their approval gate."""
    for i in range(count):
        services.run_start(
            workflow_name="return-replace", input={"order_id": f"ORD-{i}", "work_ms": 0}
        )
    settle()
    pending = list(ApprovalRequest.objects.filter(status=ApprovalStatus.PENDING))
    assert len(pending) == count
    return pending


def signed_in(user: Any) -> Client:
    client = Client(raise_request_exception=False)
    client.force_login(user)
    return client


Attempt = tuple[Client, str, dict[str, Any]]  # who posts, where, what


def all_at_once(
    attempts: list[Attempt], *, alongside: Callable[[], object] | None = None
) -> list[tuple[str, int, str]]:
    """Make every attempt (and call ``alongside``) at the same moment, one thread each;
    returns (username, status, error message) per attempt ("" for a success)."""
    barrier = threading.Barrier(len(attempts) + (alongside is not None))
    results: list[tuple[str, int, str]] = []
    lock = threading.Lock()

    def attempt(client: Client, url: str, body: dict[str, Any]) -> None:
        try:
            barrier.wait(WAIT)
            response = client.post(url, data=json.dumps(body), content_type="application/json")
            try:
                error = str(response.json().get("error", "")) if response.status_code != 200 else ""
            except ValueError:  # not the API's JSON: a crash page
                error = response.content.decode(errors="replace")[:300]
            with lock:
                results.append((client.user.username, response.status_code, error))  # type: ignore[attr-defined]
        finally:
            connections.close_all()

    def call() -> None:
        try:
            barrier.wait(WAIT)
            assert alongside is not None
            alongside()
        finally:
            connections.close_all()

    threads = [threading.Thread(target=attempt, args=a) for a in attempts]
    if alongside is not None:
        threads.append(threading.Thread(target=call))
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(WAIT)
    assert len(results) == len(attempts), "an attempt did not finish"
    return results


def contenders(approvers: list[Any]) -> list[Client]:
    clients = [signed_in(user) for user in approvers]
    for client, user in zip(clients, approvers, strict=True):
        client.user = user  # type: ignore[attr-defined]
    return clients


def test_concurrent_decisions_give_one_decision_and_409s_naming_the_real_decider(
    approvers: list[Any],
) -> None:
    clients = contenders(approvers)
    for request in waiting_requests(REQUESTS):
        url = f"/api/approvals/{request.request_id}/decide/"

        results = all_at_once(
            [(c, url, {"decision": "approve", "reason": "race"}) for c in clients]
        )

        request.refresh_from_db()
        winner = request.decided_by.username  # type: ignore[union-attr]
        assert [name for name, status, _ in results if status == 200] == [winner], results
        for _, status, error in results:
            if status != 200:
                assert status == 409 and f"already approved by {winner} at " in error, error
    settle()


def test_concurrent_claims_give_one_claim_and_409s_naming_the_claimer(
    approvers: list[Any],
) -> None:
    clients = contenders(approvers)
    for request in waiting_requests(REQUESTS):
        url = f"/api/approvals/{request.request_id}/claim/"

        results = all_at_once([(c, url, {"release": False}) for c in clients])

        request.refresh_from_db()
        claimer = request.claimed_by.username  # type: ignore[union-attr]
        assert [name for name, status, _ in results if status == 200] == [claimer], results
        for _, status, error in results:
            if status != 200:
                assert status == 409 and error.endswith(f"already claimed by {claimer}"), error


def test_claims_racing_decisions_give_one_winner_named_by_every_refusal(
    approvers: list[Any],
) -> None:
    # Half claim, half reject: whoever locks the row first wins, and each refusal names the
    # claim or the decision that beat it.
    clients = contenders(approvers)
    for request in waiting_requests(REQUESTS):
        base = f"/api/approvals/{request.request_id}"
        half = CONTENDERS // 2

        results = all_at_once(
            [(c, f"{base}/claim/", {"release": False}) for c in clients[:half]]
            + [
                (c, f"{base}/decide/", {"decision": "reject", "reason": "no stock"})
                for c in clients[half:]
            ]
        )

        request.refresh_from_db()
        assert sorted(status for _, status, _ in results) == [200] + [409] * (CONTENDERS - 1)
        if request.status == ApprovalStatus.PENDING:  # a claim won: nobody decided
            assert request.claimed_by is not None and request.decided_by is None
            winner = f"claimed by {request.claimed_by.username}"
        else:
            assert request.status == ApprovalStatus.REJECTED and request.claimed_by is None
            winner = f"already rejected by {request.decided_by.username} at "  # type: ignore[union-attr]
        for _, status, error in results:
            assert status == 200 or winner in error, (winner, error)
    settle()


def test_a_deadline_racing_approvers_is_named_only_when_the_system_decided(
    approvers: list[Any],
) -> None:
    ApprovalRule.objects.create(
        workflow_name="return-replace", deadline_minutes=1, default_outcome="reject"
    )
    clients = contenders(approvers[: CONTENDERS - 1])
    for request in waiting_requests(REQUESTS):
        ApprovalRequest.objects.filter(pk=request.pk).update(
            due_at=timezone.now() - dt.timedelta(minutes=1)
        )
        url = f"/api/approvals/{request.request_id}/decide/"

        results = all_at_once(
            [(c, url, {"decision": "approve"}) for c in clients], alongside=services.approvals_sweep
        )

        request.refresh_from_db()
        by = request.decided_by.username if request.decided_by else "the system (deadline)"
        assert len([s for _, s, _ in results if s == 200]) == (
            0 if request.decided_by is None else 1
        )
        for _, status, error in results:
            if status != 200:
                assert status == 409 and f"already {request.status} by {by} at " in error, error
    settle()
    assert not ApprovalRequest.objects.filter(status=ApprovalStatus.PENDING).exists()
    assert set(ApprovalRequest.objects.values_list("run__status", flat=True)) == {
        RunStatus.COMPLETED
    }


@pytest.mark.django_db
def test_the_system_cannot_decide_a_request_outside_a_deadline() -> None:
    # approval_decide is for people; a system decision with no deadline behind it used to reach
    # the database's check constraint (IntegrityError, a 500 for any caller).
    with pytest.raises(services.InvalidInput, match="decided by a person"):
        services.approval_decide("any:request", user=None, approved=True)


def test_concurrent_decisions_of_a_tool_call_with_other_arguments_run_the_tool_once(
    approvers: list[Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    from dashboard.demo import agents

    monkeypatch.setattr(agents, "_WORD_DELAY", 0.0)
    services.run_start(workflow_name="support-refund", input="Refund order A-17, it broke")
    settle()
    [request] = ApprovalRequest.objects.filter(status=ApprovalStatus.PENDING)
    url = f"/api/approvals/{request.request_id}/decide/"
    clients = contenders(approvers)

    # Each approver edits the amount to a number of their own, all at the same moment.
    results = all_at_once(
        [
            (
                c,
                url,
                {
                    "decision": "approve",
                    "response": {"arguments": {"order": "A-17", "amount": n + 1}},
                },
            )
            for n, c in enumerate(clients)
        ]
    )
    settle()

    request.refresh_from_db()
    winner = request.decided_by.username  # type: ignore[union-attr]
    assert [name for name, status, _ in results if status == 200] == [winner], results
    assert all(status in (200, 409) for _, status, _ in results), results
    amount = request.response["v"]["function_call"]["arguments"]["amount"]
    assert amount == int(winner.removeprefix("approver")) + 1
    run = request.run
    run.refresh_from_db()
    assert run.status == RunStatus.COMPLETED, run.error_message
    text = "".join(c.get("text", "") for m in run.output["v"]["messages"] for c in m["contents"])
    assert text == f"Based on refund_order: refunded {amount:.2f} EUR on order A-17"
