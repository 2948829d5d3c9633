"""Websocket routes, mounted by dashboard/config/asgi.py behind origin and authentication checks."""

from __future__ import annotations

from django.urls import URLPattern, URLResolver, path

from dashboard.live.consumers import ApprovalsConsumer, RunConsumer, RunsConsumer

websocket_urlpatterns: list[URLPattern | URLResolver] = [
    path("ws/runs/", RunsConsumer.as_asgi()),
    path("ws/runs/<uuid:run_id>/", RunConsumer.as_asgi()),
    path("ws/approvals/", ApprovalsConsumer.as_asgi()),
]
