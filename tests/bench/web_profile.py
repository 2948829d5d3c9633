"""``load_bench.py --profile DIR``: each web server process profiles itself (cProfile, every
thread: the event loop and the views) from its first request on, writing ``DIR/web-<pid>.prof``
and a line of CPU per request every 500 requests. The server loads it through
``web_profile_settings`` (the production settings with this middleware first). Not a test
module, and never part of a deployment."""

from __future__ import annotations

import cProfile
import os
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

FOLDER = Path(os.environ.get("SUPERSTEP_WEB_PROFILE_DIR", "."))
_lock = threading.Lock()
_state: dict[str, Any] = {"profile": None, "requests": 0, "cpu": 0.0}


class Profiled:
    def __init__(self, get_response: Callable[[Any], Any]) -> None:
        self.get_response = get_response

    def __call__(self, request: Any) -> Any:
        with _lock:
            if _state["profile"] is None:
                # Since Python 3.12 a profiler sees every thread of the process.
                _state["profile"], _state["cpu"] = cProfile.Profile(), time.process_time()
                _state["profile"].enable()
        try:
            return self.get_response(request)
        finally:
            with _lock:
                _state["requests"] += 1
                if _state["requests"] % 500 == 0:
                    _dump()


def _dump() -> None:
    profile: cProfile.Profile = _state["profile"]
    profile.disable()
    profile.dump_stats(FOLDER / f"web-{os.getpid()}.prof")
    profile.enable()
    per_request = (time.process_time() - _state["cpu"]) / _state["requests"] * 1000
    (FOLDER / f"web-{os.getpid()}.txt").write_text(
        f"{_state['requests']} requests, {per_request:.1f} ms of process CPU each (profiled)\n"
    )
