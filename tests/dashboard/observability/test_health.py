"""dashboard/observability/health.py: ``/healthz`` and ``/readyz`` through Django's test client.

PostgreSQL stopped under a real Daphne is tests/dashboard/faults/test_fault_health.py.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator
from typing import Any

import pytest
from django.db import connection
from django.db.migrations.recorder import MigrationRecorder
from django.test import Client
from django.test.utils import CaptureQueriesContext

from dashboard.observability import health
from tests.helpers.stack import free_port


@pytest.fixture(autouse=True)
def fresh_migration_check() -> Iterator[None]:
    health.forget_migration_check()
    yield
    health.forget_migration_check()


def probe(path: str, **headers: Any) -> tuple[int, dict[str, Any]]:
    response = Client().get(path, **headers)
    assert response["Content-Type"] == "application/json"
    assert response["Cache-Control"] == "no-store"
    return response.status_code, json.loads(response.content)


def test_healthz_answers_ok_without_touching_the_database() -> None:
    # No django_db mark: any query would fail the test.
    assert probe("/healthz") == (200, {"status": "ok", "checks": {}})


def test_probes_answer_a_pod_address_over_plain_http_without_a_session(settings: Any) -> None:
    settings.SECURE_SSL_REDIRECT = True
    settings.ALLOWED_HOSTS = ["dashboard.example.com"]
    response = Client().get("/healthz", HTTP_HOST="10.1.2.3:8000")
    assert response.status_code == 200
    assert not response.cookies
    assert Client().get("/runs/", HTTP_HOST="10.1.2.3:8000").status_code == 400  # others still


def test_head_answers_without_a_body() -> None:
    response = Client().head("/healthz")
    assert response.status_code == 200
    assert response.content == b""


@pytest.mark.django_db
def test_readyz_answers_ok_when_the_database_answers_and_migrations_are_applied() -> None:
    assert probe("/readyz") == (
        200,
        {"status": "ok", "checks": {"database": "ok", "migrations": "ok"}},
    )


@pytest.mark.django_db
def test_readyz_is_unavailable_while_a_migration_is_unapplied() -> None:
    last = MigrationRecorder.Migration.objects.filter(app="dashboard").order_by("-id").first()
    assert last is not None
    last.delete()

    status, body = probe("/readyz")

    assert status == 503
    assert body == {
        "status": "unavailable",
        "checks": {"database": "ok", "migrations": "unavailable"},
    }


@pytest.mark.django_db
def test_readyz_reads_the_migrations_once_per_period() -> None:
    with CaptureQueriesContext(connection) as first:
        assert probe("/readyz")[0] == 200
    with CaptureQueriesContext(connection) as second:
        assert probe("/readyz")[0] == 200

    assert any("django_migrations" in q["sql"] for q in first.captured_queries)
    assert [q["sql"] for q in second.captured_queries] == ["SELECT 1"]


@pytest.mark.django_db
def test_readyz_names_an_unreachable_redis_without_its_address(
    settings: Any, caplog: pytest.LogCaptureFixture
) -> None:
    port = free_port()  # nothing listens there
    url = f"redis://127.0.0.1:{port}/0"
    settings.SUPERSTEP_EMBEDDED = False
    settings.CACHES = {
        "default": {"BACKEND": "django.core.cache.backends.redis.RedisCache", "LOCATION": url}
    }
    settings.CHANNEL_LAYERS = {
        "default": {"BACKEND": "channels_redis.core.RedisChannelLayer", "CONFIG": {"hosts": [url]}}
    }

    with caplog.at_level(logging.WARNING, logger="dashboard.observability.health"):
        response = Client().get("/readyz")

    assert response.status_code == 503
    assert json.loads(response.content) == {
        "status": "unavailable",
        "checks": {
            "database": "ok",
            "migrations": "ok",
            "cache": "unavailable",
            "channel_layer": "unavailable",
        },
    }
    assert str(port) not in response.content.decode()
    logged = [r.getMessage() for r in caplog.records]
    assert any("cache" in m for m in logged) and any("channel_layer" in m for m in logged)


@pytest.mark.redis
@pytest.mark.django_db
def test_readyz_checks_redis_when_it_is_configured(settings: Any, redis_url: str) -> None:
    settings.SUPERSTEP_EMBEDDED = False
    settings.CACHES = {
        "default": {"BACKEND": "django.core.cache.backends.redis.RedisCache", "LOCATION": redis_url}
    }
    settings.CHANNEL_LAYERS = {
        "default": {
            "BACKEND": "channels_redis.core.RedisChannelLayer",
            "CONFIG": {"hosts": [redis_url]},
        }
    }

    assert probe("/readyz") == (
        200,
        {
            "status": "ok",
            "checks": {"database": "ok", "migrations": "ok", "cache": "ok", "channel_layer": "ok"},
        },
    )
