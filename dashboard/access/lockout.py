"""Login lockout, on django-axes: after ``AXES_FAILURE_LIMIT`` failed password sign-ins for one
username from one address, that pair is refused for ``AXES_COOLOFF_TIME``, its right password
too (settings: ``SUPERSTEP_LOGIN_*``). It covers every password sign-in: the sign-in page and
``/admin/``, which both go through ``django.contrib.auth.authenticate`` with the request.

What this module adds to the library:

- **The backend** refuses locked-out pairs, like axes' own, and lets an authentication call
  that carries no request pass by (``manage.py shell``, the test client's ``login``): no
  address, nothing to count. The JSON API never calls it: its bearer tokens are checked by
  ``dashboard.api.auth``, so a locked-out password does not lock anyone's tokens.
- **The audit trail**: each lockout, and each sign-in refused while locked, is an entry
  (``login_locked_out``, denied) naming the username, with the client's address.
- **The page**: the sign-in form's page, answered 429, with a sentence saying for how long.

Unlock early with axes' commands: ``manage.py axes_reset_username <name>`` (or
``axes_reset_ip``, ``axes_reset``).
"""

from __future__ import annotations

from typing import Any

from axes.backends import AxesStandaloneBackend
from axes.signals import user_locked_out
from django.conf import settings
from django.contrib.auth.forms import AuthenticationForm
from django.contrib.auth.models import AnonymousUser
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render

from dashboard.access import audit, sso
from dashboard.models import AuditEntry

__all__ = ["LockoutBackend", "connect", "lockout_response", "minutes_locked"]

ACTION = "login_locked_out"


class LockoutBackend(AxesStandaloneBackend):  # type: ignore[misc]  # untyped library
    """axes' check before every other backend: a locked-out pair goes no further."""

    def authenticate(self, request: HttpRequest | None, *args: Any, **kwargs: Any) -> None:
        # Raises PermissionDenied for a locked-out pair; never authenticates anyone itself.
        if request is not None:
            super().authenticate(request, *args, **kwargs)


def minutes_locked() -> int:
    return max(1, round(settings.AXES_COOLOFF_TIME.total_seconds() / 60))


def lockout_response(
    request: HttpRequest, original_response: Any = None, credentials: Any = None
) -> HttpResponse:
    """The sign-in page again, 429, saying why and for how long (``AXES_LOCKOUT_CALLABLE``)."""
    minutes = minutes_locked()
    message = (
        "Too many failed sign-ins: this account is locked from your address for "
        f"{minutes} minute{'s' if minutes != 1 else ''}. Try again later, or ask an "
        "administrator to unlock it."
    )
    context = {
        "form": AuthenticationForm(request),
        "locked_out": message,
        "sso_enabled": sso.enabled(),
        "sso_provider": sso.provider_name(),
        "sso_error": "",
    }
    return render(request, "registration/login.html", context, status=429)


def _audit(sender: Any, request: HttpRequest, username: str | None, **kwargs: Any) -> None:
    audit.record(
        AnonymousUser(),
        ACTION,
        outcome=AuditEntry.DENIED,
        target=(username or "")[:300],
        details={
            "username": (username or "")[:150],
            "failures": getattr(request, "axes_failures_since_start", None),
            "path": request.path[:200],
        },
    )


def connect() -> None:
    """Audit every lockout (called once, from ``DashboardConfig.ready``)."""
    user_locked_out.connect(_audit, dispatch_uid="superstep-audit-lockout")
