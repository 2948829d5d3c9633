"""Websocket routes, mounted by dashboard/config/asgi.py behind origin and authentication checks."""

from __future__ import annotations

from django.urls import URLPattern, URLResolver, path

from dashboard.web.live.consumers import ApprovalsConsumer, RunConsumer, RunsConsumer

# django-stubs types path() for HTTP views only; channels' URLRouter routes ASGI applications
# with the same patterns (as its documentation does), hence the ignores.
websocket_urlpatterns: list[URLPattern | URLResolver] = [
    path("ws/runs/", RunsConsumer.as_asgi()),  # type: ignore[arg-type]
    path("ws/runs/<uuid:run_id>/", RunConsumer.as_asgi()),  # type: ignore[arg-type]
    path("ws/approvals/", ApprovalsConsumer.as_asgi()),  # type: ignore[arg-type]
]
