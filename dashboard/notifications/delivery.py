"""Delivering notifications about approval requests and alert incidents: email through
Django's backend, Slack incoming webhooks (``{"text": ...}``), and webhooks signed per
the Standard Webhooks spec (https://www.standardwebhooks.com/, the ``standardwebhooks``
package): headers ``webhook-id`` (the same on every retry of one notification),
``webhook-timestamp`` (the attempt's Unix time) and ``webhook-signature``
(``v1,<base64 HMAC-SHA256 of "id.timestamp.body">``). README.md, "Webhooks", says how a
receiver verifies them.

Rows are written by services in the transaction that raised the request or opened the
incident (``services.approvals``, ``services.alert_notifications``); delivery is a Celery
task enqueued after commit (``notifications.tasks``), and a failed attempt is retried with
backoff by the periodic sweep: ``retry_delay``, exponential with jitter, so the notifications
that failed together (a receiver that was down) do not all come back in the same sweep.

One delivery is three steps, and the email or HTTP call happens with no transaction open (a
slow receiver must not hold a row lock or a SQLite write lock for up to the timeout):

1. ``claim``: one conditional UPDATE marks the row in flight with a fresh token, valid for
   ``CLAIM_SECONDS``; a second worker finds it claimed and does nothing.
2. send.
3. ``_record``: an UPDATE guarded by the token stores the outcome.

A worker that dies between 1 and 3 leaves a claim that expires; the retry sweep then sends the
notification again (at least once, same ``webhook-id``, so receivers can drop the duplicate).
"""

from __future__ import annotations

import datetime as dt
import json
import logging
import random
import uuid
from dataclasses import dataclass

from django.conf import settings
from django.core.mail import send_mail
from django.db.models import Case, F, Q, Value, When
from django.utils import timezone
from standardwebhooks import Webhook

from dashboard import outbound
from dashboard.models import ApprovalRule, Notification
from dashboard.services.alert_notifications import alert_notification_sent

__all__ = ["Claim", "claim", "deliver", "due_for_retry", "retry_delay", "signed_headers"]

logger = logging.getLogger(__name__)

MAX_ATTEMPTS = 8
WEBHOOK_TIMEOUT_SECONDS = 10
# How long an attempt owns its notification. Well past the webhook timeout (and a mail
# server's usual one), so a live attempt is never taken over; a dead one is retried after it.
CLAIM_SECONDS = 120
SECRET_PREFIX = "whsec_"
# The retry after the n-th failed attempt: 5 s doubled each time, at most an hour, of which a
# random part (up to half) is taken off.
RETRY_BASE_SECONDS = 5
RETRY_MAX_SECONDS = 3600


def retry_delay(attempts: int, *, rand: random.Random | None = None) -> dt.timedelta:
    """How long to wait after ``attempts`` failed attempts: the capped exponential backoff
    times a random factor in [0.5, 1) ("equal jitter": never less than half the backoff)."""
    backoff = min(RETRY_MAX_SECONDS, RETRY_BASE_SECONDS * 2 ** min(attempts, 20))
    factor = 0.5 + (rand or random).random() / 2
    return dt.timedelta(seconds=backoff * factor)


@dataclass(frozen=True, slots=True)
class Claim:
    """The attempt in flight: the notification it owns and its token."""

    notification_id: int
    token: str


def deliver(notification_id: int) -> bool:
    """Try to send one notification; True once it is sent. Idempotent: a sent one is skipped,
    and one being sent by another worker is left to it, so two workers never both send it."""
    attempt = claim(notification_id)
    if attempt is None:
        return False
    note = Notification.objects.select_related(
        "request__run", "incident__rule", "incident__run"
    ).get(pk=notification_id)
    try:
        _send(note)
    except Exception as exc:  # noqa: BLE001 -- any transport failure: record it, retry later
        error = f"{type(exc).__name__}: {exc}"[:2000]
        delay = retry_delay(note.attempts)
        _record(attempt, last_error=error, next_attempt_at=timezone.now() + delay)
        return False
    sent = _record(attempt, sent_at=timezone.now())
    if sent:
        alert_notification_sent(note)
    return sent


def claim(notification_id: int, *, now: dt.datetime | None = None) -> Claim | None:
    """Mark an unsent notification in flight, unless another attempt holds a live claim.

    One UPDATE, so one short transaction: PostgreSQL re-checks its conditions after waiting
    for a concurrent claim, and SQLite has one writer; either way one worker wins. The
    attempt is counted now, so a worker that dies mid-send still uses up an attempt, and
    ``next_attempt_at`` moves to the claim's expiry so the retry sweep leaves it alone until
    then. The first claim also fixes the notification's ``webhook-id``.
    """
    now = now or timezone.now()
    token = uuid.uuid4().hex
    until = now + dt.timedelta(seconds=CLAIM_SECONDS)
    claimed = (
        Notification.objects.filter(pk=notification_id, sent_at__isnull=True)
        .filter(Q(claim_token="") | Q(claimed_until__lt=now))
        .update(
            claim_token=token,
            claimed_until=until,
            next_attempt_at=until,
            attempts=F("attempts") + 1,
            message_id=Case(
                When(message_id="", then=Value(f"msg_{uuid.uuid4().hex}")),
                default=F("message_id"),
            ),
        )
    )
    return Claim(notification_id, token) if claimed else None


def _record(
    attempt: Claim,
    *,
    sent_at: dt.datetime | None = None,
    last_error: str | None = None,
    next_attempt_at: dt.datetime | None = None,
) -> bool:
    """Store an attempt's outcome and release its claim; False if the claim was lost."""
    outcome: dict[str, object] = {"claim_token": "", "claimed_until": None}
    if sent_at is not None:
        outcome["sent_at"] = sent_at
    if last_error is not None:
        outcome.update(last_error=last_error, next_attempt_at=next_attempt_at)
    recorded = Notification.objects.filter(
        pk=attempt.notification_id, claim_token=attempt.token
    ).update(**outcome)
    if not recorded:
        # Only after CLAIM_SECONDS: another attempt took over and will send (again).
        logger.warning(
            "notification %s: claim expired before its outcome was recorded",
            attempt.notification_id,
        )
    return bool(recorded) and sent_at is not None


def _send(note: Notification) -> None:
    if note.kind == Notification.EMAIL:
        subject, text = _email(note)
        send_mail(subject, text, settings.DEFAULT_FROM_EMAIL, [note.target])
        return
    body = json.dumps(note.payload, sort_keys=True, separators=(",", ":"))
    headers = {"Content-Type": "application/json"}
    if note.kind == Notification.WEBHOOK:
        headers["X-Superstep-Event"] = note.event
        headers.update(
            signed_headers(
                _secret(note), message_id=note.message_id, body=body, timestamp=timezone.now()
            )
        )
    # Through the guarded client: the target is checked again now, as it resolves today.
    answer = outbound.send(
        "POST",
        note.target,
        body=body.encode("utf-8"),
        headers=headers,
        timeout=WEBHOOK_TIMEOUT_SECONDS,
        max_bytes=64 * 1024,  # a receiver's answer is only read for its status
    )
    if not 200 <= answer.status < 300:
        raise outbound.OutboundError(f"{answer.url} answered {answer.status}, not 2xx")


def _email(note: Notification) -> tuple[str, str]:
    """Subject and text of an email notification."""
    payload = note.payload
    if note.incident_id is not None:
        resolved = note.event == "alert_resolved"
        lines = [
            str(payload.get("summary")),
            *([str(payload.get("resolution"))] if resolved and payload.get("resolution") else []),
            "",
            f"Rule: {payload.get('rule')}",
            f"Open in Superstep: {payload.get('url')}",
            "",
            json.dumps(payload, indent=2, sort_keys=True),
        ]
        prefix = "Resolved" if resolved else "Alert"
        return f"[Superstep] {prefix}: {payload.get('summary')}", "\n".join(lines)
    subject = {
        "approval_raised": "Approval needed",
        "approval_overdue": "Approval overdue",
    }.get(note.event, "Superstep approval")
    return (
        f"[Superstep] {subject}: {payload.get('workflow')} ({payload.get('executor_id')})",
        json.dumps(payload, indent=2, sort_keys=True),
    )


def _secret(note: Notification) -> str:
    """The key that signs a webhook: its alert rule's, or its workflow's approval rule's."""
    if note.incident is not None:
        return note.incident.rule.webhook_secret
    if note.request is None:
        return ""
    rule = ApprovalRule.objects.filter(workflow_name=note.request.run.workflow_name).first()
    return rule.webhook_secret if rule is not None else ""


def signed_headers(
    secret: str, *, message_id: str, body: str, timestamp: dt.datetime
) -> dict[str, str]:
    """The Standard Webhooks headers for one attempt; no signature without a secret.

    A ``whsec_<base64>`` secret is the spec's form; any other text is used as the key's raw
    UTF-8 bytes, so secrets set before the spec was adopted keep working (a receiver passes
    those bytes to its library instead of the string).
    """
    headers = {
        "webhook-id": message_id,
        "webhook-timestamp": str(int(timestamp.timestamp())),
    }
    if secret:
        key: str | bytes = secret if secret.startswith(SECRET_PREFIX) else secret.encode("utf-8")
        headers["webhook-signature"] = Webhook(key).sign(message_id, timestamp, body)
    return headers


def due_for_retry() -> list[int]:
    """Unsent notifications whose next attempt is due (the periodic sweep re-enqueues them):
    failed ones whose backoff elapsed, and in-flight ones whose claim expired."""
    return list(
        Notification.objects.filter(
            sent_at__isnull=True, attempts__lt=MAX_ATTEMPTS, next_attempt_at__lte=timezone.now()
        ).values_list("pk", flat=True)[:200]
    )
