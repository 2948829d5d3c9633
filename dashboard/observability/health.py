"""``/healthz`` and ``/readyz``: what a load balancer or an orchestrator probes.

* ``/healthz``: the process is alive and serving. It touches nothing else, so a database outage
  never makes an orchestrator restart every web process at once.
* ``/readyz``: this process can do its work now: the database answers, no migration is
  unapplied, and, where Redis is configured (not embedded mode), the cache and the channel
  layer answer. 503 when any of them does not.

Both answer a short JSON body, ``{"status": "ok"|"unavailable", "checks": {name: ...}}``,
naming each check and nothing else: no host, no error text (the process logs those at
WARNING), since probes are unauthenticated.

``HealthProbes`` serves them as the first middleware, ahead of ``SecurityMiddleware``:
orchestrators probe a pod by its IP address over plain HTTP, which ``ALLOWED_HOSTS`` and
``SECURE_SSL_REDIRECT`` would otherwise answer with 400 or a redirect; sessions, CSRF and
sign-in never see a probe. The migration check reads the migration files, so its result is
kept for ``MIGRATIONS_CHECKED_FOR`` seconds; the other checks run on every probe.
"""

from __future__ import annotations

import json
import logging
import threading
import time
from collections.abc import Callable
from typing import Any

from asgiref.sync import async_to_sync
from django.conf import settings
from django.core.cache import caches
from django.db import DEFAULT_DB_ALIAS, connections
from django.db.migrations.executor import MigrationExecutor
from django.http import HttpRequest, HttpResponse
from django.utils.deprecation import MiddlewareMixin

__all__ = ["MIGRATIONS_CHECKED_FOR", "HealthProbes", "forget_migration_check", "readiness"]

logger = logging.getLogger(__name__)

MIGRATIONS_CHECKED_FOR = 10.0  # seconds
_PROBE_KEY = "superstep:readyz"

_migrations_lock = threading.Lock()
_migrations_checked: tuple[float, bool] | None = None  # (monotonic time, all applied)


def _database() -> bool:
    connection = connections[DEFAULT_DB_ALIAS]
    with connection.cursor() as cursor:
        cursor.execute("SELECT 1")
        return bool(cursor.fetchone() == (1,))


def _migrations() -> bool:
    global _migrations_checked
    with _migrations_lock:
        if _migrations_checked is not None:
            at, applied = _migrations_checked
            if time.monotonic() - at < MIGRATIONS_CHECKED_FOR:
                return applied
        executor = MigrationExecutor(connections[DEFAULT_DB_ALIAS])
        applied = not executor.migration_plan(executor.loader.graph.leaf_nodes())
        _migrations_checked = (time.monotonic(), applied)
        return applied


def forget_migration_check() -> None:
    """The next ``/readyz`` reads the migrations again (after ``migrate``, in tests)."""
    global _migrations_checked
    with _migrations_lock:
        _migrations_checked = None


def _cache() -> bool:
    caches["default"].get(_PROBE_KEY)  # a miss is an answer; an unreachable Redis raises
    return True


def _channel_layer() -> bool:
    from channels.layers import get_channel_layer

    layer: Any = get_channel_layer()
    if not hasattr(layer, "connection"):
        return True  # a layer without a server (in memory) answers whenever we do

    async def ping_every_host() -> bool:
        for index in range(layer.ring_size):  # channels_redis: one connection per host
            await layer.connection(index).ping()
        return True

    return async_to_sync(ping_every_host)()


def _checks() -> dict[str, Callable[[], bool]]:
    checks: dict[str, Callable[[], bool]] = {"database": _database, "migrations": _migrations}
    if not settings.SUPERSTEP_EMBEDDED:
        checks |= {"cache": _cache, "channel_layer": _channel_layer}
    return checks


def readiness() -> dict[str, str]:
    """Each check's name and ``"ok"`` or ``"unavailable"``; the reason goes to the log only."""
    results: dict[str, str] = {}
    for name, check in _checks().items():
        if name == "migrations" and results.get("database") != "ok":
            results[name] = "unavailable"  # unknowable without the database
            continue
        try:
            passed = check()
        except Exception as exc:  # noqa: BLE001 - any failure is "not ready", said in the log
            logger.warning("readiness check %s failed: %s: %s", name, type(exc).__name__, exc)
            passed = False
        results[name] = "ok" if passed else "unavailable"
    if results.get("database") != "ok":
        # A connection the outage broke must not be offered to the next request or probe.
        connections[DEFAULT_DB_ALIAS].close_if_unusable_or_obsolete()
    return results


def _answer(checks: dict[str, str]) -> HttpResponse:
    ready = all(result == "ok" for result in checks.values())
    body = {"status": "ok" if ready else "unavailable", "checks": checks}
    response = HttpResponse(
        json.dumps(body) + "\n", status=200 if ready else 503, content_type="application/json"
    )
    # Ahead of SecurityMiddleware and the CSP middleware: the headers a JSON answer needs.
    response["Cache-Control"] = "no-store"
    response["X-Content-Type-Options"] = "nosniff"
    response["Content-Security-Policy"] = "default-src 'none'; frame-ancestors 'none'"
    return response


class HealthProbes(MiddlewareMixin):
    """Answer ``GET``/``HEAD`` of ``/healthz`` and ``/readyz``; pass every other request on.
    A ``MiddlewareMixin`` as Django's own are, so it runs in an async server's chain as they do."""

    def process_request(self, request: HttpRequest) -> HttpResponse | None:
        probe = _PROBES.get(request.path_info)
        if probe is None or request.method not in ("GET", "HEAD"):
            return None
        response = probe()
        if request.method == "HEAD":
            response.content = b""
        return response


_PROBES: dict[str, Callable[[], HttpResponse]] = {
    "/healthz": lambda: _answer({}),
    "/readyz": lambda: _answer(readiness()),
}
