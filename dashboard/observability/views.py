"""``/metrics``: for a scraper with the metrics token, or a signed-in staff user.

A request with an ``Authorization`` header is judged by its token alone (a wrong one is 403
even beside a staff session); without one, the session decides.
"""

from __future__ import annotations

from django.conf import settings
from django.http import HttpRequest, HttpResponse
from django.views.decorators.http import require_safe

from dashboard.observability import exposition
from dashboard.observability.access import CHALLENGE, Refusal, token_refusal

__all__ = ["metrics"]


@require_safe
def metrics(request: HttpRequest) -> HttpResponse:
    refusal = _refusal(request)
    if refusal is not None:
        response = HttpResponse(
            refusal.message + "\n", status=refusal.status, content_type="text/plain; charset=utf-8"
        )
        if refusal.status == 401:
            response["WWW-Authenticate"] = CHALLENGE
        return response
    body, content_type = exposition.render(request.headers.get("Accept", ""))
    response = HttpResponse(body, content_type=content_type)
    response["Cache-Control"] = "no-store"
    return response


def _refusal(request: HttpRequest) -> Refusal | None:
    header = request.headers.get("Authorization")
    if header is not None:
        return token_refusal(header, settings.SUPERSTEP_METRICS_TOKEN)
    user = request.user
    if user.is_authenticated and user.is_active and user.is_staff:
        return None
    if user.is_authenticated:
        return Refusal(403, "metrics are for staff users and the metrics token")
    return Refusal(401, "sign in as a staff user or send Authorization: Bearer <token>")
