"""``manage.py serve_metrics [--bind ADDRESS] [--port N]``: serve ``/metrics`` for the worker
processes of a host that runs no web process (``dashboard.observability.exporter``)."""

from __future__ import annotations

import contextlib
from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError, CommandParser

from dashboard.instruments import processes
from dashboard.observability import exporter


class Command(BaseCommand):
    help = (
        "Serve this host's worker metrics (PROMETHEUS_MULTIPROC_DIR) at /metrics, for a scraper "
        "with the metrics token."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--bind", default="0.0.0.0", help="the address to listen on")
        parser.add_argument("--port", type=int, default=9808)

    def handle(self, *args: Any, bind: str, port: int, **options: Any) -> None:
        try:
            path = processes.multiprocess_dir()
        except RuntimeError as exc:
            raise CommandError(str(exc)) from None
        if path is None:
            raise CommandError(
                f"{processes.VARIABLE} is not set: this exporter serves the directory the host's "
                "worker processes share their metrics in"
            )
        if not settings.SUPERSTEP_METRICS_TOKEN:
            raise CommandError(
                "SUPERSTEP_METRICS_TOKEN is not set: the exporter answers only to it"
            )
        server = exporter.serve(bind, port)
        self.stdout.write(
            f"serving the metrics of {path} on http://{bind}:{server.server_port}/metrics"
        )
        self.stdout.flush()
        with server, contextlib.suppress(KeyboardInterrupt):
            server.serve_forever()
