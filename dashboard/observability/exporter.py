"""The metrics of a host that runs Celery workers and no web process: a small WSGI server
(``manage.py serve_metrics``) over the host's ``PROMETHEUS_MULTIPROC_DIR``, behind the same
metrics token as ``/metrics``.

Without it the workers' histograms (superstep durations, checkpoint sizes) would be written
to files nobody reads. The run gauges are left out: they come from the database, and the web
processes already serve them. The standard library's server is enough for one scraper
every few seconds; prometheus_client's own ``start_http_server`` has no bearer tokens.
"""

from __future__ import annotations

import http
from collections.abc import Iterable
from socketserver import ThreadingMixIn
from wsgiref.simple_server import WSGIRequestHandler, WSGIServer, make_server
from wsgiref.types import StartResponse, WSGIEnvironment

from django.conf import settings

from dashboard.observability import exposition
from dashboard.observability.access import CHALLENGE, token_refusal

__all__ = ["exporter", "serve"]


def exporter(environ: WSGIEnvironment, start_response: StartResponse) -> Iterable[bytes]:
    if environ.get("PATH_INFO") != "/metrics":
        return _plain(start_response, 404, "the metrics are at /metrics")
    method = environ.get("REQUEST_METHOD", "GET")
    if method not in ("GET", "HEAD"):
        return _plain(start_response, 405, "only GET", [("Allow", "GET, HEAD")])
    refusal = token_refusal(environ.get("HTTP_AUTHORIZATION", ""), settings.SUPERSTEP_METRICS_TOKEN)
    if refusal is not None:
        extra = [("WWW-Authenticate", CHALLENGE)] if refusal.status == 401 else []
        return _plain(start_response, refusal.status, refusal.message, extra)
    body, content_type = exposition.render(environ.get("HTTP_ACCEPT", ""), runs=False)
    start_response(
        "200 OK",
        [
            ("Content-Type", content_type),
            ("Content-Length", str(len(body))),
            ("Cache-Control", "no-store"),
        ],
    )
    return [b""] if method == "HEAD" else [body]


def _plain(
    start_response: StartResponse,
    status: int,
    message: str,
    headers: list[tuple[str, str]] | None = None,
) -> list[bytes]:
    body = (message + "\n").encode()
    start_response(
        f"{status} {http.HTTPStatus(status).phrase}",
        [
            ("Content-Type", "text/plain; charset=utf-8"),
            ("Content-Length", str(len(body))),
            *(headers or []),
        ],
    )
    return [body]


class _Server(ThreadingMixIn, WSGIServer):
    daemon_threads = True  # a scraper that hangs up mid-answer does not hold the exit


class _QuietHandler(WSGIRequestHandler):
    def log_message(self, format: str, *args: object) -> None:
        """One line per scrape every few seconds would drown the worker's own logs."""


def serve(host: str, port: int) -> WSGIServer:
    """A server bound to ``host:port``; the caller runs ``serve_forever()``."""
    return make_server(host, port, exporter, server_class=_Server, handler_class=_QuietHandler)
