"""dashboard/services/approvals.py and dashboard/notifications/delivery.py: who may decide
a request (claims, assignment, no self-approval, N distinct approvals), deadlines whose default
outcome is applied exactly once however many workers sweep, and notifications sent after commit,
signed per the Standard Webhooks spec, sent with no transaction open, and retried until
delivered (at least once, one webhook-id).

Every test pauses a real ``return-replace`` run at its approval gate through the embedded
worker (so the rules are applied where production applies them: when the request is raised),
on SQLite and PostgreSQL (``services_transactional_db``).
"""

from __future__ import annotations

import base64
import datetime as dt
import json
import threading
import time
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Self

import pytest
from django.core import mail
from django.db import DatabaseError, connections, transaction
from django.test import Client, override_settings
from django.utils import timezone
from standardwebhooks import Webhook, WebhookVerificationError

from dashboard import services
from dashboard.models import (
    ApprovalRequest,
    ApprovalRule,
    ApprovalStatus,
    ApprovalVote,
    AuditEntry,
    Notification,
    RunEvent,
    RunStatus,
    WorkflowRun,
)
from dashboard.notifications import delivery as notifications
from tests.helpers.paused_runs import finished, pause, settle

RoleUser = Callable[..., Any]


def rule(**fields: Any) -> ApprovalRule:
    return ApprovalRule.objects.create(workflow_name="return-replace", **fields)


def api(user: Any) -> Client:
    client = Client()
    client.force_login(user)
    return client


def post(client: Client, url: str, body: dict[str, Any]) -> Any:
    return client.post(url, data=json.dumps(body), content_type="application/json")


def decide(client: Client, request: ApprovalRequest, decision: str = "approve", **body: Any) -> Any:
    # A rejection says why (the services refuse one without a reason).
    why = {"reason": "not this time"} if decision == "reject" else {}
    return post(
        client,
        f"/api/approvals/{request.request_id}/decide/",
        {"decision": decision, **why, **body},
    )


def claim(client: Client, request: ApprovalRequest, release: bool = False) -> Any:
    return post(client, f"/api/approvals/{request.request_id}/claim/", {"release": release})


def audit(action: str, outcome: str = "ok", **filters: Any) -> list[AuditEntry]:
    return list(AuditEntry.objects.filter(action=action, outcome=outcome, **filters).order_by("id"))


# -------------------------------------------------------------------------------------- claim


def test_a_request_claimed_by_another_approver_answers_409_with_their_name(
    people: dict[str, Any],
) -> None:
    run, request = pause(people["olga"])

    taken = claim(api(people["abe"]), request)
    again = claim(api(people["bea"]), request)
    refused = decide(api(people["bea"]), request)
    mine = decide(api(people["abe"]), request, response={"discount_percent": 5})

    assert taken.status_code == 200 and taken.json()["claimed_by"] == "abe"
    assert again.status_code == 409 and "already claimed by abe" in again.json()["error"]
    assert refused.status_code == 409 and "claimed by abe" in refused.json()["error"]
    assert mine.status_code == 200 and mine.json()["decided_by"] == "abe"
    assert finished(run).output["discount_percent"] == 5


def test_a_released_claim_lets_another_approver_claim_and_decide(people: dict[str, Any]) -> None:
    run, request = pause(people["olga"])
    claim(api(people["abe"]), request)

    not_hers = claim(api(people["bea"]), request, release=True)
    released = claim(api(people["abe"]), request, release=True)
    taken = claim(api(people["bea"]), request)
    decided = decide(api(people["bea"]), request, "reject")

    assert not_hers.status_code == 409 and "not claimed by you" in not_hers.json()["error"]
    assert released.status_code == 200 and released.json()["claimed_by"] is None
    assert taken.status_code == 200 and decided.status_code == 200
    assert finished(run).output["outcome"] == "replacement rejected; refund only"
    assert [
        (e.actor_name, e.action)
        for e in AuditEntry.objects.filter(action__in=["claim", "unclaim"]).order_by("id")
    ] == [("abe", "claim"), ("abe", "unclaim"), ("bea", "claim")]


def test_a_decided_request_can_no_longer_be_claimed(people: dict[str, Any]) -> None:
    _, request = pause(people["olga"])
    decide(api(people["abe"]), request)

    late = claim(api(people["bea"]), request)

    assert late.status_code == 409 and "already approved by abe" in late.json()["error"]


# --------------------------------------------------------------------------------- assignment


def test_a_request_assigned_to_a_user_is_decided_by_that_user_only(
    people: dict[str, Any], role_user: RoleUser
) -> None:
    admin = role_user("ada", "Admin")
    run, request = pause(people["olga"])
    services.approval_assign(request.request_id, user=admin, assignee=people["bea"])

    other = decide(api(people["abe"]), request)
    assignee = decide(api(people["bea"]), request)

    assert other.status_code == 403 and "assigned to another user" in other.json()["error"]
    assert assignee.status_code == 200
    (denied,) = audit("approve", "denied")
    assert (denied.actor_name, denied.run_id, denied.details["reason"]) == (
        "abe",
        run.pk,
        "this request is assigned to another user",
    )
    assert [e.actor_name for e in audit("assign")] == ["ada"]
    finished(run)


def test_a_request_assigned_to_a_group_is_decided_by_its_members_only(
    people: dict[str, Any], role_user: RoleUser
) -> None:
    team = role_user.group("Approver")  # type: ignore[attr-defined]
    night_shift = type(team).objects.create(name="night-shift")
    people["cal"].groups.add(night_shift)
    rule(assign_to_group=night_shift)
    run, request = pause(people["olga"])

    outsider = decide(api(people["abe"]), request, "reject")
    member = decide(api(people["cal"]), request, "reject")

    assert request.assigned_group == night_shift
    assert outsider.status_code == 403 and "group you are not in" in outsider.json()["error"]
    assert member.status_code == 200
    assert [e.actor_name for e in audit("reject", "denied")] == ["abe"]
    assert [e.actor_name for e in audit("reject")] == ["cal"]
    finished(run)


def test_a_request_assigned_to_someone_else_cannot_be_claimed(
    people: dict[str, Any], role_user: RoleUser
) -> None:
    # Otherwise an approver outside the assignment could claim it and so lock out the very
    # people it is assigned to (they get 409 "claimed by ...").
    admin = role_user("ada", "Admin")
    run, request = pause(people["olga"])
    services.approval_assign(request.request_id, user=admin, assignee=people["bea"])

    outsider = claim(api(people["abe"]), request)
    assignee = decide(api(people["bea"]), request)

    assert outsider.status_code == 403
    assert [e.actor_name for e in audit("claim", "denied")] == ["abe"]
    assert assignee.status_code == 200
    finished(run)


# ------------------------------------------------------------------------------ self-approval


def test_the_starter_may_not_decide_their_own_run_when_the_rule_forbids_it(
    people: dict[str, Any], role_user: RoleUser
) -> None:
    sam = role_user("sam", "Operator", "Approver")
    rule(forbid_self_approval=True)
    run, request = pause(sam)

    own = decide(api(sam), request)
    own_claim = claim(api(sam), request)
    other = decide(api(people["abe"]), request)

    assert own.status_code == 403 and "forbid deciding a run you started" in own.json()["error"]
    assert own_claim.status_code == 403
    assert other.status_code == 200
    (denied,) = audit("approve", "denied")
    assert denied.actor_name == "sam" and denied.run_id == run.pk
    finished(run)


def test_the_starter_may_decide_their_own_run_when_no_rule_forbids_it(
    people: dict[str, Any], role_user: RoleUser
) -> None:
    sam = role_user("sam", "Operator", "Approver")
    run, request = pause(sam)

    assert decide(api(sam), request).status_code == 200
    finished(run)


# ------------------------------------------------------------------------------------ N of M


def test_two_of_m_needs_approvals_from_two_distinct_users(people: dict[str, Any]) -> None:
    rule(required_approvals=2)
    run, request = pause(people["olga"])

    first = decide(api(people["abe"]), request, response={"discount_percent": 20})
    twice = decide(api(people["abe"]), request)
    settle()
    still_waiting = WorkflowRun.objects.get(pk=run.pk).status
    second = decide(api(people["bea"]), request, response={"discount_percent": 20})

    assert request.required_approvals == 2
    assert first.status_code == 200 and first.json()["status"] == "pending"
    assert twice.status_code == 409 and "abe has already voted" in twice.json()["error"]
    assert still_waiting == RunStatus.WAITING
    assert second.status_code == 200 and second.json()["status"] == "approved"
    assert second.json()["decided_by"] == "bea"
    assert sorted(
        ApprovalVote.objects.filter(request=request).values_list("user__username", flat=True)
    ) == ["abe", "bea"]
    assert [e.actor_name for e in audit("vote_approve")] == ["abe", "bea"]
    assert [e.actor_name for e in audit("approve")] == ["bea"]
    assert finished(run).output["outcome"] == "replacement approved"


def test_a_rejection_vetoes_an_n_of_m_request_at_once(people: dict[str, Any]) -> None:
    rule(required_approvals=3)
    run, request = pause(people["olga"])

    decide(api(people["abe"]), request)
    veto = decide(api(people["bea"]), request, "reject")
    late = decide(api(people["cal"]), request)

    assert veto.status_code == 200 and veto.json()["status"] == "rejected"
    assert late.status_code == 409 and "already rejected by bea" in late.json()["error"]
    assert finished(run).output["outcome"] == "replacement rejected; refund only"


# --------------------------------------------------------------------------------- deadlines


def overdue(request: ApprovalRequest) -> None:
    """Move a request's deadline into the past (the clock is not faked)."""
    ApprovalRequest.objects.filter(pk=request.pk).update(
        due_at=timezone.now() - dt.timedelta(seconds=1)
    )


@pytest.mark.parametrize("outcome", ["approve", "reject"])
def test_a_deadline_applies_the_default_outcome_once_and_resumes_the_run(
    people: dict[str, Any], outcome: str
) -> None:
    rule(deadline_minutes=30, default_outcome=outcome)
    run, request = pause(people["olga"])
    assert request.due_at == request.created_at + dt.timedelta(minutes=30)

    nothing_due = services.approvals_sweep()
    overdue(request)
    applied = services.approvals_sweep()
    again = services.approvals_sweep()

    request.refresh_from_db()
    assert (nothing_due, applied, again) == ([], [request.request_id], [])
    assert request.status == ("approved" if outcome == "approve" else "rejected")
    assert request.decided_by is None and request.default_applied and request.overdue_at is not None
    expected = (
        "replacement approved" if outcome == "approve" else "replacement rejected; refund only"
    )
    assert finished(run).output["outcome"] == expected
    (entry,) = audit(outcome)
    assert (
        entry.actor_name == "system"
        and entry.details["reason"] == "deadline passed: default outcome"
    )


def test_a_deadline_without_a_default_outcome_only_marks_the_request_overdue(
    people: dict[str, Any],
) -> None:
    rule(deadline_minutes=5)
    run, request = pause(people["olga"])
    overdue(request)

    applied = services.approvals_sweep() + services.approvals_sweep()

    request.refresh_from_db()
    assert applied == [] and request.overdue_at is not None and request.status == "pending"
    assert RunEvent.objects.filter(run=run, type="approval_overdue").count() == 1
    assert decide(api(people["abe"]), request).status_code == 200
    finished(run)


def test_two_workers_sweeping_at_once_apply_each_default_outcome_exactly_once(
    services_postgres_transactional_db: str, role_user: RoleUser
) -> None:
    operator = role_user("olga", "Operator")
    rule(deadline_minutes=1, default_outcome="approve")
    paused = [pause(operator, f"ORD-{i}") for i in range(6)]
    for _, request in paused:
        overdue(request)
    gate = threading.Barrier(2)
    results: list[list[str]] = []
    errors: list[BaseException] = []

    def sweep() -> None:
        try:
            gate.wait(10)
            results.append(services.approvals_sweep())
        except BaseException as exc:  # noqa: BLE001 - reported below
            errors.append(exc)
        finally:
            connections.close_all()

    workers = [threading.Thread(target=sweep) for _ in range(2)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join(30)

    assert errors == []
    applied = [rid for result in results for rid in result]
    assert sorted(applied) == sorted(request.request_id for _, request in paused)
    for run, request in paused:
        finished(run)
        assert ApprovalRequest.objects.get(pk=request.pk).status == "approved"
        resumes = RunEvent.objects.filter(run=run, type="run_status", data__action="approval")
        assert resumes.count() == 1
        assert RunEvent.objects.filter(run=run, type="approval_decided").count() == 1
        assert RunEvent.objects.filter(run=run, type="approval_overdue").count() == 1
        assert AuditEntry.objects.filter(action="approve", run_id=run.pk).count() == 1


# ----------------------------------------------------------------------------- notifications


@pytest.fixture
def outbox() -> Iterator[list[Any]]:
    with override_settings(
        MAILERS={"default": {"BACKEND": "django.core.mail.backends.locmem.EmailBackend"}}
    ):
        mail.outbox = []
        yield mail.outbox


def test_email_goes_to_every_address_once_the_request_is_committed(
    people: dict[str, Any], outbox: list[Any]
) -> None:
    rule(notify_emails="ops@example.com\n\n  lead@example.com  ")

    _, request = pause(people["olga"])

    assert sorted(m.to[0] for m in mail.outbox) == ["lead@example.com", "ops@example.com"]
    message = mail.outbox[0]
    assert message.subject == "[Superstep] Approval needed: return-replace (hitl-gate)"
    assert json.loads(message.body)["request_id"] == request.request_id
    assert Notification.objects.filter(sent_at__isnull=False, attempts=1).count() == 2


def test_a_rolled_back_transaction_sends_no_notification(
    people: dict[str, Any], outbox: list[Any]
) -> None:
    run, request = pause(people["olga"])
    rule(notify_emails="ops@example.com")

    with pytest.raises(RuntimeError, match="changed my mind"), transaction.atomic():
        extra = ApprovalRequest.objects.create(
            request_id=f"{request.request_id}-again",
            engine_request_id="again",
            engine_run_id=run.engine_run_id,
            run=run,
            checkpoint_id=request.checkpoint_id,
            executor_id="hitl-gate",
        )
        services.approval_opened(extra, run)
        assert Notification.objects.count() == 1  # written inside the transaction ...
        raise RuntimeError("changed my mind")
    settle()

    assert mail.outbox == []  # ... and never sent, since it never committed
    assert not Notification.objects.exists()


def test_an_overdue_request_notifies_once(people: dict[str, Any], outbox: list[Any]) -> None:
    rule(deadline_minutes=10, notify_emails="ops@example.com")
    _, request = pause(people["olga"])
    overdue(request)

    services.approvals_sweep()
    services.approvals_sweep()
    settle()

    assert [m.subject.split(":")[0] for m in mail.outbox] == [
        "[Superstep] Approval needed",
        "[Superstep] Approval overdue",
    ]


def test_a_notification_is_sent_while_a_worker_holds_its_run_row(
    services_postgres_transactional_db: str, role_user: RoleUser, outbox: list[Any]
) -> None:
    # The worker keeps the run row locked while it finishes the superstep that raised the
    # request: delivery must lock only the notification, not skip it for a later sweep.
    run, request = pause(role_user("olga", "Operator"))
    note = Notification.objects.create(
        kind=Notification.EMAIL,
        event="approval_raised",
        request=request,
        target="ops@example.com",
        payload={"workflow": "return-replace"},
    )
    locked, release = threading.Event(), threading.Event()

    def hold_the_run() -> None:
        try:
            with transaction.atomic():
                WorkflowRun.objects.select_for_update().get(pk=run.pk)
                locked.set()
                release.wait(10)
        finally:
            connections.close_all()

    holder = threading.Thread(target=hold_the_run)
    holder.start()
    try:
        assert locked.wait(10)
        sent = notifications.deliver(note.pk)
    finally:
        release.set()
        holder.join(10)

    assert sent is True
    assert [m.to for m in mail.outbox] == [["ops@example.com"]]


class Hook:
    """A local webhook receiver: records each delivery; answers the given statuses in turn,
    each after ``delay`` seconds; ``on_request`` runs while the sender waits for the answer."""

    def __init__(
        self, statuses: list[int], delay: float = 0.0, on_request: Callable[[], None] | None = None
    ) -> None:
        self.statuses = statuses
        self.deliveries: list[tuple[int, dict[str, str], bytes]] = []
        hook = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers["Content-Length"]))
                if on_request is not None:
                    on_request()
                time.sleep(delay)
                status = hook.statuses.pop(0) if hook.statuses else 200
                hook.deliveries.append((status, dict(self.headers), body))
                self.send_response(status)
                self.end_headers()

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/hooks/superstep"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def __enter__(self) -> Self:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.shutdown()
        self.server.server_close()


SECRET = "s3cret-shared-with-the-receiver"


def signature_ok(
    headers: dict[str, str], body: bytes, secret: str | bytes = SECRET.encode()
) -> bool:
    """What a receiver does: the Standard Webhooks library checks signature and timestamp."""
    try:
        Webhook(secret).verify(body, headers)
    except WebhookVerificationError:
        return False
    return True


def header(headers: dict[str, str], name: str) -> str:
    return {key.lower(): value for key, value in headers.items()}[name]


def test_the_webhook_is_signed_per_the_standard_webhooks_spec(people: dict[str, Any]) -> None:
    with Hook([]) as hook:
        rule(webhook_url=hook.url, webhook_secret=SECRET)
        run, request = pause(people["olga"])

    ((status, headers, body),) = hook.deliveries
    assert status == 200 and signature_ok(headers, body)
    (note,) = Notification.objects.all()
    assert header(headers, "webhook-id") == note.message_id and note.message_id.startswith("msg_")
    assert abs(int(header(headers, "webhook-timestamp")) - time.time()) < 60
    assert header(headers, "webhook-signature").startswith("v1,")
    assert headers["X-Superstep-Event"] == "approval_raised"
    assert headers["Content-Type"] == "application/json"
    payload = json.loads(body)
    assert (payload["event"], payload["request_id"], payload["run_id"]) == (
        "approval_raised",
        request.request_id,
        str(run.pk),
    )
    assert not signature_ok(headers, body + b" ")
    assert not signature_ok(headers, body, secret=b"another-secret")
    assert note.sent_at is not None and note.attempts == 1
    assert (note.claim_token, note.claimed_until) == ("", None)


def test_a_webhook_signature_is_refused_once_its_timestamp_is_stale() -> None:
    # A captured delivery replayed later fails: the timestamp is signed, receivers allow 5 min.
    body = '{"event":"approval_raised"}'
    fresh = notifications.signed_headers(
        SECRET, message_id="msg_1", body=body, timestamp=timezone.now()
    )
    stale = notifications.signed_headers(
        SECRET, message_id="msg_1", body=body, timestamp=timezone.now() - dt.timedelta(minutes=6)
    )
    forged = {**stale, "webhook-timestamp": fresh["webhook-timestamp"]}

    assert signature_ok(fresh, body.encode())
    with pytest.raises(WebhookVerificationError, match="too old"):
        Webhook(SECRET.encode()).verify(body, stale)
    assert not signature_ok(forged, body.encode())


def test_a_whsec_secret_is_the_base64_key_of_the_spec_and_no_secret_sends_no_signature() -> None:
    secret = "whsec_" + base64.b64encode(b"k" * 32).decode()
    body = "{}"

    signed = notifications.signed_headers(
        secret, message_id="msg_2", body=body, timestamp=timezone.now()
    )
    unsigned = notifications.signed_headers(
        "", message_id="msg_2", body=body, timestamp=timezone.now()
    )

    assert signature_ok(signed, body.encode(), secret=secret)
    assert signature_ok(signed, body.encode(), secret=b"k" * 32)
    assert set(unsigned) == {"webhook-id", "webhook-timestamp"}


def test_a_failing_webhook_is_retried_later_and_delivered_exactly_once(
    people: dict[str, Any],
) -> None:
    with Hook([500, 500]) as hook:
        rule(webhook_url=hook.url, webhook_secret=SECRET)
        pause(people["olga"])  # first attempt: 500
        (note,) = Notification.objects.all()
        not_yet = notifications.due_for_retry()
        rounds = []
        for _ in range(3):
            Notification.objects.filter(pk=note.pk).update(
                next_attempt_at=timezone.now()
            )  # backoff elapsed
            due = notifications.due_for_retry()
            rounds.append((due, [notifications.deliver(pk) for pk in due]))

    note.refresh_from_db()
    assert not_yet == []  # the backoff is in the future
    assert rounds == [([note.pk], [False]), ([note.pk], [True]), ([], [])]
    assert note.sent_at is not None and note.attempts == 3 and "500" in note.last_error
    assert [status for status, _, _ in hook.deliveries] == [500, 500, 200]
    bodies = {body for _, _, body in hook.deliveries}
    assert len(bodies) == 1 and all(signature_ok(h, b) for _, h, b in hook.deliveries)
    # Every retry carries the first attempt's id, so a receiver can drop a repeat.
    assert {header(h, "webhook-id") for _, h, _ in hook.deliveries} == {note.message_id}
    assert notifications.deliver(note.pk) is False  # sent once; delivering again does nothing
    assert len(hook.deliveries) == 3


def webhook_note(run_user: Any, url: str) -> Notification:
    """A webhook notification of a paused run, not yet delivered."""
    _, request = pause(run_user)
    rule(webhook_url=url, webhook_secret=SECRET)
    return Notification.objects.create(
        kind=Notification.WEBHOOK,
        event="approval_raised",
        request=request,
        target=url,
        payload={"event": "approval_raised"},
    )


def test_the_webhook_call_is_made_with_no_transaction_open_and_the_row_unlocked(
    people: dict[str, Any],
) -> None:
    seen: list[tuple[str, object]] = []
    note_id: list[int] = []

    def while_the_sender_waits() -> None:
        # Another worker locks the row (NOWAIT) and writes: it must neither fail nor wait on
        # SQLite's write lock, which an open transaction in the sender would hold.
        try:
            with transaction.atomic():
                locked = Notification.objects.select_for_update(nowait=True).get(pk=note_id[0])
                Notification.objects.filter(pk=locked.pk).update(last_error="touched")
            seen.append(("locked", locked.claim_token != ""))
        except DatabaseError as exc:
            seen.append(("refused", exc))
        finally:
            connections.close_all()

    with Hook([], on_request=while_the_sender_waits) as hook:
        note = webhook_note(people["olga"], hook.url)
        note_id.append(note.pk)
        sender_in_transaction = []
        original = notifications.outbound.send

        def send(*args: Any, **kwargs: Any) -> Any:
            sender_in_transaction.append(transaction.get_connection().in_atomic_block)
            return original(*args, **kwargs)

        with pytest.MonkeyPatch.context() as patch:
            patch.setattr(notifications.outbound, "send", send)
            sent = notifications.deliver(note.pk)

    assert sent is True
    assert sender_in_transaction == [False]
    assert seen == [("locked", True)]  # in flight, claimed, yet not locked


def test_two_concurrent_deliveries_make_one_http_call(people: dict[str, Any]) -> None:
    with Hook([], delay=0.5) as hook:
        note = webhook_note(people["olga"], hook.url)
        start = threading.Barrier(2)
        results: list[bool] = []

        def worker() -> None:
            try:
                start.wait(10)
                results.append(notifications.deliver(note.pk))
            finally:
                connections.close_all()

        threads = [threading.Thread(target=worker) for _ in range(2)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(30)

    assert sorted(results) == [False, True]
    assert len(hook.deliveries) == 1
    note.refresh_from_db()
    assert note.sent_at is not None and note.attempts == 1


def test_a_delivery_that_died_mid_call_is_retried_with_the_same_webhook_id(
    people: dict[str, Any],
) -> None:
    with Hook([]) as hook:
        note = webhook_note(people["olga"], hook.url)
        dead = notifications.claim(note.pk)  # a worker claimed it, then its process died
        assert dead is not None
        while_live = (notifications.deliver(note.pk), notifications.due_for_retry())
        expired = timezone.now() - dt.timedelta(seconds=1)
        Notification.objects.filter(pk=note.pk).update(
            claimed_until=expired, next_attempt_at=expired
        )
        due = notifications.due_for_retry()
        sent = notifications.deliver(note.pk)

    note.refresh_from_db()
    assert while_live == (False, [])  # a live claim is left to its worker and the sweep skips it
    assert due == [note.pk] and sent is True
    ((_, headers, _),) = hook.deliveries
    assert header(headers, "webhook-id") == note.message_id != ""
    assert note.attempts == 2 and note.sent_at is not None
    # The dead worker's outcome, should it ever arrive, no longer counts.
    assert notifications._record(dead, sent_at=timezone.now()) is False


# ------------------------------------------------------------------ requests on new branches


def test_a_fork_of_a_paused_checkpoint_waits_for_a_request_it_can_have_decided(
    people: dict[str, Any],
) -> None:
    run, request = pause(people["olga"])

    fork = services.run_fork(
        run.pk, checkpoint_id=request.checkpoint_id, user=people["olga"], reason="try again"
    )
    settle()
    fork.refresh_from_db()
    fork_request = ApprovalRequest.objects.get(run=fork, status=ApprovalStatus.PENDING)
    decided = decide(api(people["abe"]), fork_request, response={"discount_percent": 30})

    assert fork.status == RunStatus.WAITING
    assert fork_request.engine_run_id == fork.engine_run_id != request.engine_run_id
    assert decided.status_code == 200
    assert finished(fork).output["discount_percent"] == 30
    assert (
        ApprovalRequest.objects.get(pk=request.pk).status == ApprovalStatus.PENDING
    )  # the parent's own


def test_a_fork_of_a_paused_checkpoint_follows_the_rules_of_its_workflow(
    people: dict[str, Any], outbox: list[Any]
) -> None:
    run, request = pause(people["olga"])
    rule(required_approvals=2, notify_emails="ops@example.com")

    fork = services.run_fork(
        run.pk, checkpoint_id=request.checkpoint_id, user=people["olga"], reason="try again"
    )
    settle()

    fork_request = ApprovalRequest.objects.get(run=fork)
    assert fork_request.required_approvals == 2
    assert [m.to for m in mail.outbox] == [["ops@example.com"]]
