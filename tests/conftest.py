"""Suite-wide test plumbing: external services. Nothing here imports Django.

Markers ``@pytest.mark.postgres`` and ``@pytest.mark.redis`` (declared in pyproject.toml)
say a test needs that server. When it does not answer, the test is skipped with the reason,
except in CI (``CI=true`` or ``CI=1``), where the test *fails*: CI must run every test.

Fixtures ``postgres_db_url`` (a fresh, empty database for the session, dropped afterwards)
and ``redis_url`` (a Redis database emptied before the session) hand URLs to tests that start
real processes (``celery worker``, ``daphne``). They apply the same skip-or-fail rule.

Servers: ``SUPERSTEP_TEST_POSTGRES_URL`` (default postgres://postgres@127.0.0.1:5432/...;
only user, password, host and port are used here) and ``SUPERSTEP_TEST_REDIS_URL``
(default redis://127.0.0.1:6379/15, a database index nobody else should be using).

Fixture ``stop_process`` ends a child process a test started (``daphne``, ``celery``, ``manage.py
demo``): terminate, and kill what does not stop within 20 s.
"""

from __future__ import annotations

import contextlib
import functools
import os
import secrets
import subprocess
from collections.abc import Callable, Iterator
from urllib.parse import unquote, urlsplit

import psycopg
import pytest
import redis
from psycopg import sql

POSTGRES_URL = os.environ.get(
    "SUPERSTEP_TEST_POSTGRES_URL", "postgres://postgres@127.0.0.1:5432/superstep_test"
)
REDIS_URL = os.environ.get("SUPERSTEP_TEST_REDIS_URL", "redis://127.0.0.1:6379/15")


def in_ci() -> bool:
    return os.environ.get("CI", "").strip().lower() in {"1", "true"}


def _postgres_server_url(dbname: str) -> str:
    """POSTGRES_URL pointing at another database on the same server."""
    parts = urlsplit(POSTGRES_URL)
    return parts._replace(path=f"/{dbname}", query="").geturl()


def _postgres_connect(dbname: str = "postgres") -> psycopg.Connection[tuple[object, ...]]:
    parts = urlsplit(POSTGRES_URL)
    return psycopg.connect(
        dbname=dbname,
        user=unquote(parts.username or ""),
        password=unquote(parts.password or ""),
        host=parts.hostname or "",
        port=parts.port,
        connect_timeout=3,
        autocommit=True,
    )


@functools.cache
def postgres_unavailable() -> str | None:
    """Why PostgreSQL cannot be used, or None when it answers."""
    try:
        with _postgres_connect() as connection:
            connection.execute("SELECT 1")
    except psycopg.Error as exc:
        return f"PostgreSQL at {_postgres_server_url('')} does not answer: {exc}"
    return None


@functools.cache
def redis_unavailable() -> str | None:
    """Why Redis cannot be used, or None when it answers."""
    try:
        client = redis.Redis.from_url(REDIS_URL, socket_connect_timeout=3)
        with client:
            client.ping()
    except redis.RedisError as exc:
        return f"Redis at {REDIS_URL} does not answer: {exc}"
    return None


SERVICE_PROBES: dict[str, Callable[[], str | None]] = {
    "postgres": postgres_unavailable,
    "redis": redis_unavailable,
}


def require_service(name: str) -> None:
    """Skip the current test if the service is down, or fail it when running in CI."""
    reason = SERVICE_PROBES[name]()
    if reason is None:
        return
    if in_ci():
        pytest.fail(f"{reason} (CI is set, so this test may not be skipped)", pytrace=False)
    pytest.skip(reason)


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item: pytest.Item) -> None:
    # Before any fixture runs: a skipped PostgreSQL test must not try to create a database.
    for name in SERVICE_PROBES:
        if item.get_closest_marker(name) is not None:
            require_service(name)


@contextlib.contextmanager
def scratch_postgres_database(
    prefix: str = "superstep_it", *, template: str | None = None
) -> Iterator[str]:
    """URL of a new database on the shared PostgreSQL server, dropped on leaving: empty, or a
    copy of the database named ``template`` (which nobody may be connected to)."""
    name = f"{prefix}_{os.getpid()}_{secrets.token_hex(3)}"
    create = sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name))
    if template is not None:
        create += sql.SQL(" TEMPLATE {}").format(sql.Identifier(template))
    with _postgres_connect() as connection:
        connection.execute(create)
    try:
        yield _postgres_server_url(name)
    finally:
        with _postgres_connect() as connection:
            connection.execute(
                sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name))
            )


@pytest.fixture(scope="session")
def postgres_db_url() -> Iterator[str]:
    """URL of a new empty PostgreSQL database, dropped when the session ends."""
    require_service("postgres")
    with scratch_postgres_database() as url:
        yield url


@pytest.fixture(scope="session")
def redis_url() -> str:
    """URL of a Redis database, emptied first so no message from an earlier run lingers."""
    require_service("redis")
    client = redis.Redis.from_url(REDIS_URL)
    with client:
        client.flushdb()
    return REDIS_URL


def _stop_process(process: subprocess.Popen[bytes]) -> None:
    process.terminate()
    try:
        process.wait(timeout=20)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()


@pytest.fixture(scope="session")
def stop_process() -> Callable[[subprocess.Popen[bytes]], None]:
    """Ends a child process: terminate, then kill if it has not stopped within 20 s."""
    return _stop_process
