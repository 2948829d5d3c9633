"""Delivering approval notifications: email through Django's backend, and webhooks signed with
an HMAC-SHA256 of the body (header ``X-Superstep-Signature: sha256=<hex>``).

Rows are written by services in the transaction that raised the request; delivery is a Celery
task enqueued after commit (``dashboard.approvals.tasks``), and a failed attempt is retried with
backoff by the periodic sweep.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import hmac
import json
import urllib.error
import urllib.request

from django.conf import settings
from django.core.mail import send_mail
from django.db import transaction
from django.utils import timezone

from dashboard.models import ApprovalRule, Notification

__all__ = ["deliver", "due_for_retry", "sign"]

MAX_ATTEMPTS = 8
WEBHOOK_TIMEOUT_SECONDS = 10


def sign(secret: str, body: bytes) -> str:
    return "sha256=" + hmac.new(secret.encode("utf-8"), body, hashlib.sha256).hexdigest()


def deliver(notification_id: int) -> bool:
    """Try to send one notification; True once it is sent. Idempotent: a sent one is skipped,
    and a row is locked while it is being sent so two workers never send it twice."""
    with transaction.atomic():
        # of=("self",): lock only this row. Locking the joined request and run too would make
        # SKIP LOCKED skip the notification whenever a worker holds the run row (or a sibling
        # notification of the same request is being sent), leaving it for a retry sweep.
        note = (
            Notification.objects.select_for_update(skip_locked=True, of=("self",))
            .select_related("request__run")
            .filter(pk=notification_id, sent_at__isnull=True)
            .first()
        )
        if note is None:
            return False
        try:
            _send(note)
        except Exception as exc:  # any transport failure: record it and retry later
            note.attempts += 1
            note.last_error = f"{type(exc).__name__}: {exc}"[:2000]
            note.next_attempt_at = timezone.now() + dt.timedelta(seconds=min(3600, 5 * 2**note.attempts))
            note.save(update_fields=["attempts", "last_error", "next_attempt_at"])
            return False
        note.attempts += 1
        note.sent_at = timezone.now()
        note.save(update_fields=["attempts", "sent_at"])
        return True


def _send(note: Notification) -> None:
    body = json.dumps(note.payload, sort_keys=True, separators=(",", ":")).encode("utf-8")
    if note.kind == Notification.EMAIL:
        subject = {
            "approval_raised": "Approval needed",
            "approval_overdue": "Approval overdue",
        }.get(note.event, "Superstep approval")
        send_mail(
            f"[Superstep] {subject}: {note.payload.get('workflow')} ({note.payload.get('executor_id')})",
            json.dumps(note.payload, indent=2, sort_keys=True),
            settings.DEFAULT_FROM_EMAIL,
            [note.target],
        )
        return
    rule = ApprovalRule.objects.filter(workflow_name=note.request.run.workflow_name).first()
    secret = rule.webhook_secret if rule is not None else ""
    request = urllib.request.Request(
        note.target,
        data=body,
        method="POST",
        headers={
            "Content-Type": "application/json",
            "X-Superstep-Event": note.event,
            "X-Superstep-Delivery": str(note.pk),
            "X-Superstep-Signature": sign(secret, body),
        },
    )
    with urllib.request.urlopen(request, timeout=WEBHOOK_TIMEOUT_SECONDS) as answer:  # noqa: S310
        if not 200 <= answer.status < 300:
            raise urllib.error.HTTPError(note.target, answer.status, "not 2xx", answer.headers, None)


def due_for_retry() -> list[int]:
    """Unsent notifications whose next attempt is due (the periodic sweep re-enqueues them)."""
    return list(
        Notification.objects.filter(
            sent_at__isnull=True, attempts__lt=MAX_ATTEMPTS, next_attempt_at__lte=timezone.now()
        ).values_list("pk", flat=True)[:200]
    )
