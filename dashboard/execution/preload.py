"""What a Celery worker's main process loads before it forks its pool of child processes.

A prefork child starts as a copy of its parent. What the parent has not loaded, every child
loads for itself, and it does so in the middle of its first run: MAF's OpenAI clients import
the openai SDK, its HTTP stack and its resources at their first call, and the SDK builds the
pydantic schemas of the Responses API's events the first time it parses one (its models are
defined with deferred schemas). Measured on this project's machine, a child's first streamed
reply cost 0.8 s of CPU against 50 ms for each later one, most of it at the reply's first and
last events, so that twenty children starting their first replies together held every word of
them up by seconds (``tests/bench/stream_bench.py``). Loaded once in the parent, the children
share it: the first reply costs about 0.1 s.

Only what is installed is loaded: a deployment without MAF's OpenAI package loads nothing.
"""

from __future__ import annotations

import importlib
import importlib.util
import logging
import platform
from typing import Any

__all__ = ["preload_agent_clients"]

logger = logging.getLogger(__name__)

# The modules MAF's OpenAI clients import at their first streamed request (found by comparing
# ``sys.modules`` before and after one); a name a later SDK no longer has is skipped.
_MODULES = (
    "agent_framework.openai",
    "agent_framework._mcp",
    "openai.resources.responses.responses",
    "openai.resources.chat.completions",
    "openai.lib.streaming.responses",
    "openai.lib.streaming.chat",
    "openai._event_handler",
    "openai.pagination",
    "anyio._backends._asyncio",
    "httpcore2",
    "h11",
    "truststore",
    "opentelemetry.propagate",
)
# The packages whose models the SDK parses every streamed event into.
_MODEL_PACKAGES = ("openai.types.responses", "openai.types.chat")


def preload_agent_clients(**_: Any) -> None:
    """Import MAF's OpenAI clients and build the SDK's event models, when they are installed
    (Celery's ``worker_init``, in the main process before the pool forks)."""
    if importlib.util.find_spec("agent_framework_openai") is None:
        return
    for name in _MODULES:
        try:
            importlib.import_module(name)
        except ImportError:
            continue
    try:
        from pydantic import BaseModel

        for package in _MODEL_PACKAGES:
            for value in vars(importlib.import_module(package)).values():
                if isinstance(value, type) and issubclass(value, BaseModel):
                    value.model_rebuild()
    except Exception:  # an SDK that moved things: the children load them as before
        logger.warning("could not preload the agent clients", exc_info=True)
        return
    # The SDK names the platform in every request's headers; the standard library keeps it.
    platform.platform()
