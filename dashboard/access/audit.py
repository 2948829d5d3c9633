"""The audit trail: every operator action and every refusal, written where it happens.

Successful actions are recorded inside the transaction that performs them (no entry without the
change, no change without the entry). Refusals are recorded on their own, before the error is
raised, so they survive the rollback of whatever the caller was doing.
"""

from __future__ import annotations

import contextvars
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from django.http import HttpRequest, HttpResponseBase

from dashboard.core.types import Actor, is_user
from dashboard.models import AuditEntry, WorkflowRun

__all__ = ["RequestMeta", "record", "request_meta"]

_meta: contextvars.ContextVar[dict[str, str] | None] = contextvars.ContextVar(
    "audit_meta", default=None
)


class RequestMeta:
    """Middleware: remembers the client address and user agent for entries written during a
    request (services are called without the request)."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponseBase]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponseBase:
        with request_meta(
            request.META.get("REMOTE_ADDR", ""), request.headers.get("User-Agent", "")
        ):
            return self.get_response(request)


@contextmanager
def request_meta(ip: str, user_agent: str) -> Iterator[None]:
    token = _meta.set({"ip": ip, "user_agent": user_agent[:300]})
    try:
        yield
    finally:
        _meta.reset(token)


def record(
    actor: Actor,
    action: str,
    *,
    outcome: str = AuditEntry.OK,
    run: WorkflowRun | None = None,
    target: str = "",
    checkpoint_before: str | None = "",
    checkpoint_after: str | None = "",
    details: dict[str, Any] | None = None,
) -> AuditEntry:
    """Append one entry; ``actor`` None means the system (a worker, the sweeper, retention)."""
    meta = _meta.get() or {}
    user = actor if is_user(actor) else None
    return AuditEntry.objects.create(
        actor=user,
        actor_name=user.get_username()
        if user
        else ("anonymous" if actor is not None else "system"),
        action=action,
        outcome=outcome,
        run_id=run.pk if run is not None else None,
        workflow_name=run.workflow_name if run is not None else "",
        target=target[:300],
        checkpoint_before=checkpoint_before or "",
        checkpoint_after=checkpoint_after or "",
        details=details or {},
        ip=meta.get("ip") or None,
        user_agent=meta.get("user_agent", ""),
    )
