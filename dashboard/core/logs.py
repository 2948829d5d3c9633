"""Log lines as JSON objects, with the run they are about.

``SUPERSTEP_LOG_FORMAT=json`` (settings ``LOGGING``, and Celery's own handlers through
``dashboard.config.celery``) formats each record as one JSON object on one line: ``time`` (UTC,
ISO 8601), ``level``, ``logger``, ``message``, ``exception`` when there is one, and the fields
``bind`` set for the code that is running: ``run_id``, ``workflow``, ``superstep`` and
``trace_id`` while a worker drives a run. A ``trace_id`` not bound is read from the current
OpenTelemetry span where one is recording. The plain text format stays the default.

The fields live in a ``ContextVar``, so each run's thread or task sees its own, and asyncio tasks
a handler starts inherit them. The stdlib's ``logging.Formatter`` is all this needs: a library
(python-json-logger) would add a dependency for a dozen lines.
"""

from __future__ import annotations

import contextvars
import datetime as dt
import json
import logging
import sys
from collections.abc import Mapping
from types import MappingProxyType
from typing import Any

__all__ = ["JsonFormatter", "bind", "bound", "unbind"]

_fields: contextvars.ContextVar[Mapping[str, Any]] = contextvars.ContextVar(
    "superstep_log_fields", default=MappingProxyType({})
)


def bind(**fields: Any) -> contextvars.Token[Mapping[str, Any]]:
    """Add ``fields`` to every record logged from this context on; ``unbind`` the token to go
    back to the fields before. A field given as None is removed."""
    merged = {**_fields.get(), **fields}
    return _fields.set(
        MappingProxyType({key: value for key, value in merged.items() if value is not None})
    )


def unbind(token: contextvars.Token[Mapping[str, Any]]) -> None:
    _fields.reset(token)


def bound() -> dict[str, Any]:
    """The fields bound in this context."""
    return dict(_fields.get())


def _current_trace_id() -> str | None:
    trace = sys.modules.get("opentelemetry.trace")  # never imported for this: it is optional
    if trace is None:
        return None
    context = trace.get_current_span().get_span_context()
    return f"{context.trace_id:032x}" if context.is_valid else None


class JsonFormatter(logging.Formatter):
    """One JSON object per record, on one line."""

    def format(self, record: logging.LogRecord) -> str:
        entry: dict[str, Any] = {
            "time": dt.datetime.fromtimestamp(record.created, dt.UTC).isoformat(
                timespec="milliseconds"
            ),
            "level": record.levelname,
            "logger": record.name,
            "message": record.getMessage(),
            **_fields.get(),
        }
        if "trace_id" not in entry and (trace_id := _current_trace_id()):
            entry["trace_id"] = trace_id
        if record.exc_info:
            entry["exception"] = self.formatException(record.exc_info)
        if record.stack_info:
            entry["stack"] = self.formatStack(record.stack_info)
        return json.dumps(entry, ensure_ascii=False, default=str)
