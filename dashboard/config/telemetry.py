"""Where the engine's traces go in a deployment (the spans themselves: ``workflows.tracing``).

``configure_tracing()`` runs once per process when Django starts (``DashboardConfig.ready``):
with ``OTEL_EXPORTER_OTLP_ENDPOINT`` or ``OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`` set it installs
an SDK tracer provider exporting over OTLP/HTTP in batches (the exporter reads the other
``OTEL_*`` variables itself); with ``settings.SUPERSTEP_TRACE_FILE`` it appends every span to
that file as one JSON line. With neither, or without the ``tracing`` extra installed, nothing
is installed and runs make no spans at all. A provider some other code installed first (an
``opentelemetry-instrument`` wrapper) is left alone: the engine uses whatever is set.

The service name: ``OTEL_SERVICE_NAME``, else ``service.name`` in ``OTEL_RESOURCE_ATTRIBUTES``,
else ``superstep``. Our default goes under the operator's variables, never over them (the SDK's
``Resource.create`` puts the attributes it is given over the environment's, so the default is
merged first and the environment's detector after it).

With the tracer provider installed, the Django, Celery and psycopg instrumentations of the
``tracing`` extra are switched on too (any of them missing is skipped with a warning; the
standard ``OTEL_PYTHON_DISABLED_INSTRUMENTATIONS=django,celery,psycopg`` leaves any of them
off). So a request that starts a run, the Celery task that executes it (the publish carries
the trace context in the message headers) and the SQL of both are one trace, into which the
engine's ``workflow.run`` span nests as a child of the task's. Django's must be switched on
before the first request builds the middleware chain: ``DashboardConfig.ready`` is early enough.

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

__all__ = ["DEFAULT_SERVICE_NAME", "JsonLinesSpanExporter", "configure_tracing", "resource"]

logger = logging.getLogger(__name__)

_configured = False

DEFAULT_SERVICE_NAME = "superstep"
# The instrumentations switched on with tracing: name in OTEL_PYTHON_DISABLED_INSTRUMENTATIONS
# -> (module, instrumentor class).
INSTRUMENTATIONS = {
    "django": ("opentelemetry.instrumentation.django", "DjangoInstrumentor"),
    "celery": ("opentelemetry.instrumentation.celery", "CeleryInstrumentor"),
    "psycopg": ("opentelemetry.instrumentation.psycopg", "PsycopgInstrumentor"),
}


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
    provider = TracerProvider(resource=resource())
    if otlp:
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter

        provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter()))
    if path:
        # One synchronous write per span: a test reads the file while processes still run.
        exporter = cast("SpanExporter", JsonLinesSpanExporter(path))
        provider.add_span_processor(SimpleSpanProcessor(exporter))
    trace.set_tracer_provider(provider)
    instrument()
    _configured = True
    return True


def resource() -> Any:
    """The process's OpenTelemetry resource: the SDK's defaults, our service name over them,
    then the operator's ``OTEL_RESOURCE_ATTRIBUTES`` and ``OTEL_SERVICE_NAME`` over ours."""
    from opentelemetry.sdk.resources import OTELResourceDetector, Resource

    ours = Resource.create({"service.name": DEFAULT_SERVICE_NAME})
    return ours.merge(OTELResourceDetector().detect())


def instrument() -> list[str]:
    """Switch on the Django, Celery and psycopg instrumentations that are installed and not
    disabled; the names of those switched on (each at most once per process)."""
    import importlib

    disabled = {
        name.strip()
        for name in os.environ.get("OTEL_PYTHON_DISABLED_INSTRUMENTATIONS", "").split(",")
    }
    switched_on = []
    for name, (module_name, class_name) in INSTRUMENTATIONS.items():
        if name in disabled:
            continue
        try:
            instrumentor = getattr(importlib.import_module(module_name), class_name)()
        except ImportError:
            logger.warning(
                "tracing without %s spans: %s is not installed (pip install 'superstep[tracing]')",
                name,
                module_name,
            )
            continue
        if not instrumentor.is_instrumented_by_opentelemetry:
            instrumentor.instrument()
        switched_on.append(name)
    return switched_on


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
