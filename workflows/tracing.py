"""OpenTelemetry traces of runs: a span per run, per superstep and per executor invocation.

OpenTelemetry is optional. Without the ``opentelemetry-api`` package, or while no real tracer
provider is set (the API's default, or ``NoOpTracerProvider``), a run creates no span at all:
the engine checks once per run and then tests one ``None`` per superstep and per invocation.

Span names and the attributes they share with Microsoft Agent Framework follow its names
(``workflow.run``, ``executor.process``, ``workflow.name``, ``executor.id``,
``executor.type``); ours add the superstep (``workflow.superstep``) and the ``superstep.*``
attributes: the lineage (``superstep.run_id``), the iteration and the checkpoint written.

A run's trace outlives its process: the first run span's context is kept in every checkpoint
of the lineage (``metadata["trace"]``, W3C ``traceparent``), and a resume, days later in
another worker, starts its run span as a child of it, so the whole run is one trace. A span
is never made "current" across the engine's own ``yield``s (an async generator may be
resumed from another context); each executor invocation's span is current while its handler
runs, so spans the handler opens nest under it.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Mapping
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from opentelemetry.context import Context
    from opentelemetry.trace import Span, Tracer

__all__ = [
    "TRACE_KEY",
    "RunTrace",
    "SuperstepTrace",
    "start_run",
    "trace_id_of",
]

TRACER_NAME = "superstep.workflows"
# The checkpoint metadata key holding the lineage's trace context.
TRACE_KEY = "trace"

_api: Any = None  # the opentelemetry.trace module once imported; False when not installed


def _trace_api() -> Any:
    global _api
    if _api is None:
        try:
            from opentelemetry import trace
        except ImportError:
            _api = False
        else:
            _api = trace
    return _api


def _tracer() -> Tracer | None:
    """The tracer for a run starting now, or None when nothing would record its spans."""
    api = _trace_api()
    if api is False:
        return None
    provider = api.get_tracer_provider()
    if isinstance(provider, (api.NoOpTracerProvider, api.ProxyTracerProvider)):
        return None
    tracer = provider.get_tracer(TRACER_NAME)
    if isinstance(tracer, api.NoOpTracer):
        return None
    return tracer  # type: ignore[no-any-return]


def start_run(
    *,
    workflow_name: str,
    run_id: str,
    carrier: Mapping[str, str] | None,
    resumed_from: str | None,
) -> RunTrace | None:
    """The run span of this invocation, or None when tracing is off.

    ``carrier`` is the lineage's stored trace context (from a checkpoint): the span continues
    that trace. Without one, the span is a child of whatever span is current (the caller's
    request or task), or a new trace.
    """
    tracer = _tracer()
    if tracer is None:
        return None
    api = _api
    from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator

    propagator = TraceContextTextMapPropagator()
    parent = propagator.extract(dict(carrier)) if carrier else None
    attributes: dict[str, Any] = {
        "workflow.name": workflow_name,
        "workflow.id": workflow_name,
        "superstep.run_id": run_id,
    }
    if resumed_from:
        attributes["superstep.resumed_from"] = resumed_from
    span = tracer.start_span("workflow.run", context=parent, attributes=attributes)
    stored: dict[str, str] = dict(carrier) if carrier else {}
    if not stored:
        propagator.inject(stored, context=api.set_span_in_context(span))
    return RunTrace(tracer, span, stored)


class RunTrace:
    """One invocation's run span, and the lineage's trace context to keep in checkpoints."""

    __slots__ = ("_context", "_span", "_tracer", "carrier")

    def __init__(self, tracer: Tracer, span: Span, carrier: dict[str, str]) -> None:
        self._tracer = tracer
        self._span = span
        self._context: Context = _api.set_span_in_context(span)
        self.carrier = carrier

    def superstep(self, iteration: int) -> SuperstepTrace:
        span = self._tracer.start_span(
            "workflow.superstep",
            context=self._context,
            attributes={"superstep.iteration": iteration},
        )
        return SuperstepTrace(self._tracer, span)

    def checkpoint(self, checkpoint_id: str | None) -> None:
        if checkpoint_id is not None:
            self._span.set_attribute("superstep.last_checkpoint_id", checkpoint_id)

    def end(self, state: str, error: BaseException | None = None) -> None:
        self._span.set_attribute("workflow.state", state)
        if error is not None:
            _fail(self._span, error)
        self._span.end()


class SuperstepTrace:
    """One superstep's span; executor invocations open their spans under it."""

    __slots__ = ("_context", "_span", "_tracer")

    def __init__(self, tracer: Tracer, span: Span) -> None:
        self._tracer = tracer
        self._span = span
        self._context: Context = _api.set_span_in_context(span)

    @contextlib.contextmanager
    def executor(self, executor_id: str, executor_type: str) -> Iterator[None]:
        """The invocation's span, current while the handler runs (its own spans nest)."""
        span = self._tracer.start_span(
            "executor.process",
            context=self._context,
            attributes={"executor.id": executor_id, "executor.type": executor_type},
        )
        with _api.use_span(
            span, end_on_exit=True, record_exception=False, set_status_on_exception=False
        ):
            try:
                yield
            except BaseException as error:
                _fail(span, error)
                raise

    def end(self, checkpoint_id: str | None, error: BaseException | None = None) -> None:
        if checkpoint_id is not None:
            self._span.set_attribute("superstep.checkpoint_id", checkpoint_id)
        if error is not None:
            _fail(self._span, error)
        self._span.end()


def _fail(span: Span, error: BaseException) -> None:
    from opentelemetry.trace import Status, StatusCode

    span.record_exception(error)
    span.set_status(Status(StatusCode.ERROR, f"{type(error).__name__}: {error}"))


def trace_id_of(carrier: Mapping[str, Any] | None) -> str | None:
    """The 32-hex trace id in a stored trace context, None when there is none (no parsing
    library needed: the dashboard links runs to traces with it)."""
    if not isinstance(carrier, Mapping):
        return None
    parent = carrier.get("traceparent")
    if not isinstance(parent, str):
        return None
    parts = parent.split("-")
    if len(parts) != 4 or len(parts[1]) != 32 or parts[1] == "0" * 32:
        return None
    try:
        int(parts[1], 16)
    except ValueError:
        return None
    return parts[1]
