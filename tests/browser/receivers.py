"""The webhook endpoint an alert rule in a browser test tells: a local HTTP server that keeps
each payload, verified with the rule's secret (``SECRET``); the ``receiver`` fixture
(tests/browser/conftest.py) starts one per test."""

from __future__ import annotations

import json
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from standardwebhooks import Webhook

from tests.browser.deadlines import wait_until

__all__ = ["SECRET", "Receiver"]

SECRET = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"


class Receiver:
    """The webhook endpoint of the rule: keeps each verified payload."""

    def __init__(self) -> None:
        self.payloads: list[dict[str, Any]] = []
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers["Content-Length"]))
                receiver.payloads.append(Webhook(SECRET).verify(body, dict(self.headers)))
                self.send_response(200)
                self.end_headers()

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/superstep-alerts"

    def wait_for(self, event: str, timeout: float = 60) -> dict[str, Any]:
        """The first payload of ``event``, within ``seconds(timeout)``."""

        def first() -> dict[str, Any] | None:
            return next((p for p in self.payloads if p["event"] == event), None)

        try:
            return wait_until(first, timeout=timeout, what=f"no {event}", every=0.1)
        except AssertionError as missing:
            raise AssertionError(f"{missing}: {json.dumps(self.payloads)}") from None
