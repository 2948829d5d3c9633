"""One scrape: this process's instruments, or every process's from the shared directory, and
the run gauges from the database, in the format the scraper asked for."""

from __future__ import annotations

from django.conf import settings
from prometheus_client import CollectorRegistry
from prometheus_client.exposition import choose_encoder
from prometheus_client.multiprocess import MultiProcessCollector

from dashboard.instruments import metrics, processes
from dashboard.observability.collector import RunsCollector

__all__ = ["render", "scrape_registry"]


def scrape_registry(*, runs: bool = True) -> CollectorRegistry:
    """A registry built for one scrape (cheap: collectors are read when it is rendered).

    ``runs``: with the run gauges from the database, which the web processes serve; a host's
    worker exporter leaves them out, or every host would report the same runs again.
    """
    registry = CollectorRegistry()
    path = processes.multiprocess_dir()
    if path is None:
        registry.register(metrics.INSTRUMENTS)
    else:
        if settings.SUPERSTEP_METRICS_REAP_DEAD_PROCESSES:
            processes.reap_dead_processes(path)
        # The files hold this process's values too: INSTRUMENTS would count them twice.
        MultiProcessCollector(registry, path=path)  # type: ignore[no-untyped-call]
    if runs:
        registry.register(RunsCollector())
    return registry


def render(accept: str, *, runs: bool = True) -> tuple[bytes, str]:
    """The scrape's body and content type: OpenMetrics when ``accept`` asks for it, else the
    Prometheus text format."""
    encode, content_type = choose_encoder(accept)
    return encode(scrape_registry(runs=runs)), content_type
