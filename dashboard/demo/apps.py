"""App config of the demo: its own label, no models, nothing started."""

from __future__ import annotations

from django.apps import AppConfig


class DemoConfig(AppConfig):
    name = "dashboard.demo"
    label = "superstep_demo"
    verbose_name = "Superstep demo"
