"""What the engine says while it builds a graph, said once per workflow version, at DEBUG.

The engine logs its graph-validation notes on every build, as Microsoft Agent Framework does
(a self-loop, the graph's ends, "building a Magentic workflow"): right for a script that builds
its workflow once, and kept for every user of the engine. The dashboard builds each workflow
again for every run, every version lookup and every page that describes one, so the same notes
would fill the log of every process, and the demo's start, with lines that say nothing new.

``built`` calls a builder with the notes of ``NOTE_LOGGERS`` collected instead of emitted (a
filter on those loggers, active only in the context of the call, so other threads log as
usual), then logs them through ``dashboard.catalog`` at DEBUG the first time this process
builds that workflow's version. Refusals (``WorkflowValidationError``) are raised as ever.
"""

from __future__ import annotations

import contextvars
import logging
import threading
from typing import Any

from dashboard.catalog.sources import Builder
from workflows import Workflow

__all__ = ["NOTE_LOGGERS", "built", "forget"]

logger = logging.getLogger("dashboard.catalog")

# The engine's loggers that speak while a graph is built.
NOTE_LOGGERS = ("workflows.validation", "workflows.orchestrations.magentic_builder")

_collecting: contextvars.ContextVar[list[logging.LogRecord] | None] = contextvars.ContextVar(
    "superstep_build_notes", default=None
)
_seen: set[tuple[str, str]] = set()
_seen_lock = threading.Lock()


class _Collect(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        notes = _collecting.get()
        if notes is None:
            return True
        notes.append(record)
        return False


_FILTER = _Collect()
for _name in NOTE_LOGGERS:
    logging.getLogger(_name).addFilter(_FILTER)


def built(name: str, builder: Builder, **arguments: Any) -> Workflow:
    """``builder(**arguments)``, its build notes logged once for this version of ``name``."""
    notes: list[logging.LogRecord] = []
    token = _collecting.set(notes)
    try:
        workflow = builder(**arguments)
    finally:
        _collecting.reset(token)
    version = workflow.graph_signature_hash
    with _seen_lock:
        first = (name, version) not in _seen
        _seen.add((name, version))
    if first:
        for note in notes:
            logger.debug("workflow %r, version %s: %s", name, version[:12], note.getMessage())
    return workflow


def forget() -> None:
    """Log every version's notes again at its next build (tests)."""
    with _seen_lock:
        _seen.clear()
