"""The audit trail: every operator action and every refusal, written where it happens.

Successful actions are recorded inside the transaction that performs them (no entry without the
change, no change without the entry). Refusals are recorded on their own, before the error is
raised, so they survive the rollback of whatever the caller was doing.
"""

from __future__ import annotations

import contextvars
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from dashboard.models import AuditEntry

__all__ = ["RequestMeta", "record", "request_meta"]

_meta: contextvars.ContextVar[dict[str, str] | None] = contextvars.ContextVar("audit_meta", default=None)


class RequestMeta:
    """Middleware: remembers the client address and user agent for entries written during a
    request (services are called without the request)."""

    def __init__(self, get_response: Any) -> None:
        self.get_response = get_response

    def __call__(self, request: Any) -> Any:
        with request_meta(request.META.get("REMOTE_ADDR", ""), request.headers.get("User-Agent", "")):
            return self.get_response(request)


@contextmanager
def request_meta(ip: str, user_agent: str) -> Iterator[None]:
    token = _meta.set({"ip": ip, "user_agent": user_agent[:300]})
    try:
        yield
    finally:
        _meta.reset(token)


def record(
    actor: Any,
    action: str,
    *,
    outcome: str = AuditEntry.OK,
    run: Any = None,
    target: str = "",
    checkpoint_before: str | None = "",
    checkpoint_after: str | None = "",
    details: dict[str, Any] | None = None,
) -> AuditEntry:
    """Append one entry; ``actor`` None means the system (a worker, the sweeper, retention)."""
    meta = _meta.get() or {}
    is_user = bool(getattr(actor, "is_authenticated", False))
    return AuditEntry.objects.create(
        actor=actor if is_user else None,
        actor_name=actor.get_username() if is_user else ("anonymous" if actor is not None else "system"),
        action=action,
        outcome=outcome,
        run_id=getattr(run, "pk", None),
        workflow_name=getattr(run, "workflow_name", "") or "",
        target=target[:300],
        checkpoint_before=checkpoint_before or "",
        checkpoint_after=checkpoint_after or "",
        details=details or {},
        ip=meta.get("ip") or None,
        user_agent=meta.get("user_agent", ""),
    )
