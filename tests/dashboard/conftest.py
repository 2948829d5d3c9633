"""Fixtures for the Django side. How the suite chooses its databases:

* Django is configured by pytest-django from ``DJANGO_SETTINGS_MODULE =
  "dashboard.settings_test"`` in pyproject.toml. The engine tests share the process but never
  touch Django; the test proving ``import workflows`` does not import Django runs a fresh
  interpreter (``subprocess``), which is the only honest way to check it anyway.
* ``@pytest.mark.django_db`` tests use the ``default`` database: a SQLite file, or PostgreSQL
  for the whole run with ``SUPERSTEP_TEST_DATABASE=postgres``.
* Tests that must hold on **both** databases (storage, constraints, concurrency) take the
  ``db_alias`` fixture instead of a ``django_db`` marker: they run once as ``[sqlite]`` on
  ``default`` and once as ``[postgres]`` on the ``pg`` alias (marked ``postgres``: skipped
  when the server is down, failed in CI). Query with ``.using(db_alias)``,
  ``transaction.atomic(using=db_alias)``, ``Model.objects.db_manager(db_alias)``; the test is
  only allowed that one database, so a query that forgets ``using`` fails loudly.
  ``transactional_db_alias`` is the same with real commits (threads, ``on_commit``,
  ``select_for_update`` races).

The ``pg`` alias exists only when PostgreSQL answered while the settings loaded; a skipped
``[postgres]`` test never reaches the database setup, and pytest-django creates the ``pg``
test database only when some selected test uses it.
"""

from __future__ import annotations

import os
import secrets
import string
from collections.abc import Callable

import pytest


def _on_each_database(*, transaction: bool) -> list[object]:
    return [
        pytest.param("default", id="sqlite", marks=pytest.mark.django_db(transaction=transaction)),
        pytest.param(
            "pg",
            id="postgres",
            marks=[
                pytest.mark.postgres,
                pytest.mark.django_db(databases=["pg"], transaction=transaction),
            ],
        ),
    ]


@pytest.fixture(params=_on_each_database(transaction=False))
def db_alias(request: pytest.FixtureRequest) -> str:
    """The database alias this test runs on; each test runs on SQLite and on PostgreSQL."""
    alias: str = request.param
    return alias


@pytest.fixture(params=_on_each_database(transaction=True))
def transactional_db_alias(request: pytest.FixtureRequest) -> str:
    """Like ``db_alias``, with real transactions (committed data is visible to threads)."""
    alias: str = request.param
    return alias


@pytest.fixture
def secret_key() -> str:
    """A fresh production-grade SECRET_KEY (50 random characters)."""
    alphabet = string.ascii_letters + string.digits + "!@#%^&*(-_=+)"
    return "".join(secrets.choice(alphabet) for _ in range(50))


@pytest.fixture
def subprocess_env() -> Callable[..., dict[str, str]]:
    """Build the environment for a ``manage.py``/``celery``/``daphne`` child process.

    Starts from this process's environment minus everything that configures Superstep (the
    test settings module, service URLs, keys), then applies the keyword overrides; a value
    of ``None`` removes the variable.
    """

    def build(**overrides: str | None) -> dict[str, str]:
        env = {
            key: value
            for key, value in os.environ.items()
            if key not in _CONFIGURATION_VARIABLES and not key.startswith("SUPERSTEP_")
        }
        env["DJANGO_SETTINGS_MODULE"] = "dashboard.settings"
        env["PYTHONUNBUFFERED"] = "1"
        for key, value in overrides.items():
            if value is None:
                env.pop(key, None)
            else:
                env[key] = value
        return env

    return build


_CONFIGURATION_VARIABLES = frozenset(
    {
        "DJANGO_SETTINGS_MODULE",
        "DATABASE_URL",
        "REDIS_URL",
        "SECRET_KEY",
        "DEBUG",
        "ALLOWED_HOSTS",
        "CSRF_TRUSTED_ORIGINS",
        "TRUST_X_FORWARDED_PROTO",
        "SECURE_SSL_REDIRECT",
        "SECURE_HSTS_SECONDS",
        "SECURE_HSTS_PRELOAD",
        "STATIC_ROOT",
        "DATABASE_CONN_MAX_AGE",
    }
)
