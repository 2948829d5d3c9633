"""``/metrics``, without a trailing slash: Prometheus' default ``metrics_path``."""

from __future__ import annotations

from django.urls import URLPattern, path

from dashboard.observability import views

urlpatterns: list[URLPattern] = [
    path("metrics", views.metrics, name="metrics"),
]
