"""Watching the agents of a run from outside it: every streamed chunk and every finished reply.

A workflow's event stream follows MAF's rules: only output executors' replies appear in it, and
a streaming agent's reply arrives as one event per chunk. A host that runs workflows for
operators (the dashboard's worker) needs more and less than that: each agent's reply as it is
written, whether or not the agent is an output executor, to show it live; and each finished
reply once, with the token usage its model reported, to count and price it. An observer gets
exactly that, without changing the stream MAF users compare against.

The observer is a context variable: ``with observing(observer): ...`` around a run makes every
agent executor of that run (and of its sub-workflows, whose tasks inherit the context) report
to it. This module imports nothing of ``agent_framework``: the calls carry MAF's
``AgentResponseUpdate`` and ``AgentResponse`` as they are.
"""

from __future__ import annotations

import contextvars
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any, Protocol

__all__ = ["AgentObserver", "current_observer", "observing"]


class AgentObserver(Protocol):
    """What a host hears from the agents of the runs it observes. Calls come from the run's
    event loop and must not block it; an observer that raises is the host's bug and fails the
    handler, as any handler error does."""

    def reply_update(self, executor_id: str, update: Any) -> None:
        """One streamed chunk (an ``AgentResponseUpdate``) of an agent's reply."""

    def reply_done(self, executor_id: str, response: Any, model: str) -> None:
        """An agent's finished reply (an ``AgentResponse``), once per call of the agent,
        including a reply that stops to ask for approval; ``model`` names the model that
        wrote it ("" when neither the response nor the agent's client says)."""


_observer: contextvars.ContextVar[AgentObserver | None] = contextvars.ContextVar(
    "workflows_agent_observer", default=None
)


def current_observer() -> AgentObserver | None:
    """The observer of the run this code runs in, if any."""
    return _observer.get()


@contextmanager
def observing(observer: AgentObserver) -> Iterator[AgentObserver]:
    """Report the agents of runs started (or iterated) inside the block to ``observer``."""
    token = _observer.set(observer)
    try:
        yield observer
    finally:
        _observer.reset(token)
