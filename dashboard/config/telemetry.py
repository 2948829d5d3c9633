"""Where the engine's traces go in a deployment (the spans themselves: ``workflows.tracing``).

``configure_tracing()`` runs once per process when Django starts (``DashboardConfig.ready``):
with ``OTEL_EXPORTER_OTLP_ENDPOINT`` or ``OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`` set it installs
an SDK tracer provider exporting over OTLP/HTTP in batches (the exporter reads the other
``OTEL_*`` variables itself); with ``settings.SUPERSTEP_TRACE_FILE`` it appends every span to
that file as one JSON line. With neither, or without the ``tracing`` extra installed, nothing
is installed and runs make no spans at all. A provider some other code installed first (an
``opentelemetry-instrument`` wrapper) is left alone: the engine uses whatever is set.

The batch exporter's thread is restarted by the SDK in forked children (Celery's prefork pool).
"""

from __future__ import annotations

import json
import logging
import os
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, cast

from django.conf import settings

if TYPE_CHECKING:
    from opentelemetry.sdk.trace.export import SpanExporter

__all__ = ["JsonLinesSpanExporter", "configure_tracing"]

logger = logging.getLogger(__name__)

_configured = False


def configure_tracing() -> bool:
    """Install the deployment's tracer provider; True when runs will be traced."""
    global _configured
    if _configured:
        return True
    otlp = os.environ.get("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") or os.environ.get(
        "OTEL_EXPORTER_OTLP_ENDPOINT"
    )
    path = settings.SUPERSTEP_TRACE_FILE
    if not otlp and not path:
        return False
    try:
        from opentelemetry import trace
        from opentelemetry.sdk.resources import Resource
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import BatchSpanProcessor, SimpleSpanProcessor
    except ImportError:
        logger.warning(
            "tracing is configured (%s) but OpenTelemetry is not installed: "
            "pip install 'superstep[tracing]'",
            "OTLP endpoint" if otlp else "SUPERSTEP_TRACE_FILE",
        )
        return False
    if not isinstance(trace.get_tracer_provider(), trace.ProxyTracerProvider):
        _configured = True
        return True  # someone set one already (auto-instrumentation): use theirs
    resource = Resource.create({"service.name": os.environ.get("OTEL_SERVICE_NAME", "superstep")})
    provider = TracerProvider(resource=resource)
    if otlp:
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter

        provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter()))
    if path:
        # One synchronous write per span: a test reads the file while processes still run.
        exporter = cast("SpanExporter", JsonLinesSpanExporter(path))
        provider.add_span_processor(SimpleSpanProcessor(exporter))
    trace.set_tracer_provider(provider)
    _configured = True
    return True


class JsonLinesSpanExporter:
    """Appends each span as one JSON line: names, ids (hex), parent, attributes, status.

    One ``write`` per line on a file opened for appending, so several processes can share
    the file without mixing lines. A ``SpanExporter`` by its methods (the SDK's base class is
    not imported here: this module loads without OpenTelemetry).
    """

    def __init__(self, path: str) -> None:
        self._path = path

    def export(self, spans: Sequence[Any]) -> Any:
        from opentelemetry.sdk.trace.export import SpanExportResult

        lines = "".join(json.dumps(_span_dict(span), default=str) + "\n" for span in spans)
        fd = os.open(self._path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
        try:
            os.write(fd, lines.encode())
        finally:
            os.close(fd)
        return SpanExportResult.SUCCESS

    def shutdown(self) -> None:
        return None

    def force_flush(self, timeout_millis: int = 30_000) -> bool:
        return True  # every export is already written


def _span_dict(span: Any) -> dict[str, Any]:
    context = span.get_span_context()
    return {
        "name": span.name,
        "trace_id": f"{context.trace_id:032x}",
        "span_id": f"{context.span_id:016x}",
        "parent_span_id": f"{span.parent.span_id:016x}" if span.parent is not None else None,
        "attributes": dict(span.attributes or {}),
        "status": span.status.status_code.name,
        "pid": os.getpid(),
    }
