"""dashboard/execution/preload.py: what a worker's main process loads for its children."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from celery.signals import worker_init

from dashboard.execution.preload import preload_agent_clients

ROOT = Path(__file__).resolve().parents[3]

# In a fresh interpreter: how much of MAF's OpenAI client stack is loaded, before and after.
_PROBE = """
import json, sys
import openai.types.responses as responses
from pydantic import BaseModel

def state():
    deferred = [
        name for name, value in vars(responses).items()
        if isinstance(value, type) and issubclass(value, BaseModel)
        and not value.__pydantic_complete__
    ]
    resource = "openai.resources.responses.responses" in sys.modules
    return {"deferred": len(deferred), "resource": resource}

before = state()
from dashboard.execution.preload import preload_agent_clients
preload_agent_clients()
print(json.dumps({"before": before, "after": state()}))
"""


def test_preload_loads_the_openai_clients_and_builds_their_event_models() -> None:
    done = subprocess.run(
        [sys.executable, "-c", _PROBE], cwd=ROOT, capture_output=True, text=True, check=True
    )
    states = json.loads(done.stdout.splitlines()[-1])

    # What a child would otherwise load and build in the middle of its first streamed reply.
    assert states["before"]["deferred"] > 0 and not states["before"]["resource"]
    assert states["after"] == {"deferred": 0, "resource": True}


def test_preload_runs_in_the_worker_main_process_before_it_forks() -> None:
    import dashboard.config.celery  # noqa: F401 - connects the signals

    assert preload_agent_clients in [ref() for _, ref in worker_init.receivers]
