"""dashboard/config/settings.py: configured only from the environment, safe by default.

Each mode is loaded in a child process with an environment of its own, because settings are
read once per process and this one runs on the test settings.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from channels_redis.core import RedisChannelLayer
from channels_redis.utils import create_pool
from django.core.exceptions import ImproperlyConfigured
from django.db import connection

from dashboard.config.settings import BASE_DIR, database_from_url, env_bool, env_int, env_list

EnvBuilder = Callable[..., dict[str, str]]

PRODUCTION = {
    "DEBUG": "0",
    "DATABASE_URL": "postgres://postgres@127.0.0.1:5432/superstep",
    "REDIS_URL": "redis://127.0.0.1:6379/0",
    "ALLOWED_HOSTS": "example.com",
}

PRINT_SETTINGS = """
import json, django
django.setup()
from django.conf import settings
names = [
    "DEBUG", "ALLOWED_HOSTS", "DATABASES", "CHANNEL_LAYERS", "CACHES", "SUPERSTEP_EMBEDDED",
    "SECURE_SSL_REDIRECT", "SESSION_COOKIE_SECURE", "CSRF_COOKIE_SECURE", "SECURE_HSTS_SECONDS",
    "CELERY_BROKER_URL", "CELERY_TASK_SERIALIZER", "CELERY_RESULT_SERIALIZER",
    "CELERY_ACCEPT_CONTENT", "CELERY_TASK_ACKS_LATE", "CELERY_WORKER_PREFETCH_MULTIPLIER",
    "CELERY_TASK_REJECT_ON_WORKER_LOST", "CELERY_TASK_IGNORE_RESULT",
    "CELERY_BROKER_TRANSPORT_OPTIONS", "DATA_UPLOAD_MAX_MEMORY_SIZE", "SUPERSTEP_WORKFLOWS",
    "INSTALLED_APPS",
]
loaded = {name: getattr(settings, name) for name in names}
# What the catalog found at startup (demo, modules, entry points): name -> builder.
from dashboard import catalog
loaded["REGISTERED_WORKFLOWS"] = {name: r.target for name, r in catalog.load().items()}
print(json.dumps(loaded, default=str))
"""


def run_manage(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(BASE_DIR / "manage.py"), *args],
        check=False,
        env=env,
        cwd=BASE_DIR,
        capture_output=True,
        text=True,
        timeout=120,
    )


def load_settings(env: dict[str, str]) -> dict[str, Any]:
    result = subprocess.run(
        [sys.executable, "-c", PRINT_SETTINGS],
        check=False,
        env=env,
        cwd=BASE_DIR,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr
    loaded: dict[str, Any] = json.loads(result.stdout.strip().splitlines()[-1])
    return loaded


def test_settings_production_check_deploy_is_clean(
    subprocess_env: EnvBuilder, secret_key: str
) -> None:
    env = subprocess_env(**PRODUCTION, SECRET_KEY=secret_key)

    result = run_manage(env, "check", "--deploy", "--fail-level", "WARNING")

    assert result.returncode == 0, result.stdout + result.stderr
    assert "System check identified no issues" in result.stdout


def test_settings_production_refuses_to_start_without_secret_key(
    subprocess_env: EnvBuilder,
) -> None:
    result = run_manage(subprocess_env(**PRODUCTION), "check")

    assert result.returncode != 0
    assert "SECRET_KEY must be set when DEBUG is off" in result.stderr


@pytest.mark.parametrize(
    ("key", "why"),
    [
        ("x", "is 1 characters long"),
        ("a-49-character-key-is-one-too-short-0123456789abc", "is 49 characters long"),
        ("ab" * 40, "has 2 distinct characters"),
        ("django-insecure-" + "k3y-m4t3r1al-" * 4, "is a development default"),
        (
            "django-insecure-superstep-development-key-never-use-in-production",
            "is a development default",
        ),
    ],
)
def test_settings_production_refuses_a_weak_secret_key(
    subprocess_env: EnvBuilder, key: str, why: str
) -> None:
    result = run_manage(subprocess_env(**PRODUCTION, SECRET_KEY=key), "check")

    assert result.returncode != 0
    assert "ImproperlyConfigured" in result.stderr
    assert f"SECRET_KEY {why}" in result.stderr
    assert "secrets.token_urlsafe(50)" in result.stderr  # says how to make a good one


def test_settings_secret_key_weakness_is_the_deploy_check_bar(secret_key: str) -> None:
    from dashboard.config.settings import secret_key_weakness

    assert secret_key_weakness(secret_key) is None
    assert secret_key_weakness("k" * 49 + "0123") is None  # 53 characters, 5 distinct
    assert secret_key_weakness("k" * 60 + "012") is not None  # 4 distinct
    assert secret_key_weakness("") is not None


def test_settings_debug_accepts_a_short_secret_key(subprocess_env: EnvBuilder) -> None:
    loaded = load_settings(subprocess_env(DEBUG="1", SECRET_KEY="x"))

    assert loaded["DEBUG"] is True


def test_settings_any_service_url_turns_debug_off_by_default(
    subprocess_env: EnvBuilder, secret_key: str
) -> None:
    env = subprocess_env(REDIS_URL="redis://127.0.0.1:6379/0", SECRET_KEY=secret_key)

    loaded = load_settings(env)

    assert loaded["DEBUG"] is False
    assert loaded["SESSION_COOKIE_SECURE"] is True
    assert loaded["CSRF_COOKIE_SECURE"] is True
    assert loaded["SECURE_SSL_REDIRECT"] is True
    assert loaded["SECURE_HSTS_SECONDS"] >= 31_536_000


def test_settings_default_is_embedded_mode_on_sqlite_with_debug(
    subprocess_env: EnvBuilder,
) -> None:
    loaded = load_settings(subprocess_env())

    assert loaded["DEBUG"] is True
    assert loaded["SUPERSTEP_EMBEDDED"] is True
    database = loaded["DATABASES"]["default"]
    assert database["ENGINE"] == "django.db.backends.sqlite3"
    assert Path(database["NAME"]) == BASE_DIR / "var" / "superstep.sqlite3"
    assert "journal_mode=WAL" in database["OPTIONS"]["init_command"]
    assert database["OPTIONS"]["timeout"] >= 5
    assert loaded["CHANNEL_LAYERS"]["default"]["BACKEND"] == (
        "channels.layers.InMemoryChannelLayer"
    )
    assert loaded["DATA_UPLOAD_MAX_MEMORY_SIZE"] == 2_621_440


def test_settings_production_uses_postgres_redis_and_json_only_celery(
    subprocess_env: EnvBuilder, secret_key: str
) -> None:
    loaded = load_settings(subprocess_env(**PRODUCTION, SECRET_KEY=secret_key))

    assert loaded["SUPERSTEP_EMBEDDED"] is False
    database = loaded["DATABASES"]["default"]
    assert database["ENGINE"] == "django.db.backends.postgresql"
    assert (database["NAME"], database["HOST"], database["PORT"]) == (
        "superstep",
        "127.0.0.1",
        "5432",
    )
    layer = loaded["CHANNEL_LAYERS"]["default"]
    assert layer["BACKEND"] == "channels_redis.core.RedisChannelLayer"
    [host] = layer["CONFIG"]["hosts"]
    assert host["address"] == "redis://127.0.0.1:6379/0"
    # A consumer's blocking wait for its next message must end before its socket times out.
    pool = create_pool(host)
    assert pool.connection_kwargs["socket_timeout"] > RedisChannelLayer.brpop_timeout
    cache = loaded["CACHES"]["default"]
    assert cache["BACKEND"] == "django.core.cache.backends.redis.RedisCache"
    assert cache["OPTIONS"]["serializer"] == "dashboard.core.cache_json.JSONSerializer"  # no pickle
    assert loaded["CELERY_BROKER_URL"] == "redis://127.0.0.1:6379/0"
    assert loaded["CELERY_TASK_SERIALIZER"] == loaded["CELERY_RESULT_SERIALIZER"] == "json"
    assert loaded["CELERY_ACCEPT_CONTENT"] == ["json"]
    assert loaded["CELERY_TASK_ACKS_LATE"] is True
    assert loaded["CELERY_TASK_REJECT_ON_WORKER_LOST"] is True
    assert loaded["CELERY_WORKER_PREFETCH_MULTIPLIER"] == 1
    assert loaded["CELERY_TASK_IGNORE_RESULT"] is True
    assert loaded["CELERY_BROKER_TRANSPORT_OPTIONS"]["visibility_timeout"] >= 600
    # Streaming replies are read by whichever web process holds a page's socket.
    assert loaded["CACHES"]["default"]["LOCATION"] == "redis://127.0.0.1:6379/0"


def test_settings_registry_names_every_demo_workflow(subprocess_env: EnvBuilder) -> None:
    registry = load_settings(subprocess_env())["REGISTERED_WORKFLOWS"]

    assert set(registry) == {
        "refund",
        "squares",
        "research-report",
        "support-refund",
        "handoff-triage",
        "product-brief",
        "order-pipeline",
        "fan-out-fan-in",
        "fail-at-step",
        "return-replace",
        "expense-claim",
        "card-dispute",
    }
    assert all(
        path.startswith(
            (
                "dashboard.demo.workflows:",
                "dashboard.demo.agents:",
                "dashboard.demo.functional:",
                "dashboard.demo.disputes:",
            )
        )
        for path in registry.values()
    )


def test_settings_production_leaves_the_demo_app_and_its_workflows_out(
    subprocess_env: EnvBuilder, secret_key: str
) -> None:
    production = load_settings(subprocess_env(**PRODUCTION, SECRET_KEY=secret_key))
    embedded = load_settings(subprocess_env())
    asked = load_settings(subprocess_env(**PRODUCTION, SECRET_KEY=secret_key, SUPERSTEP_DEMO="1"))

    assert production["REGISTERED_WORKFLOWS"] == {}
    assert "dashboard.demo" not in production["INSTALLED_APPS"]
    assert "dashboard.demo" in embedded["INSTALLED_APPS"]
    assert "dashboard.demo" in asked["INSTALLED_APPS"]
    assert embedded["REGISTERED_WORKFLOWS"]
    assert asked["REGISTERED_WORKFLOWS"] == embedded["REGISTERED_WORKFLOWS"]


def test_settings_lease_seconds_come_from_the_environment(subprocess_env: EnvBuilder) -> None:
    script = (
        "import django; django.setup(); from django.conf import settings; "
        "print(settings.SUPERSTEP_LEASE_SECONDS)"
    )

    def lease(**env: str | None) -> str:
        result = subprocess.run(
            [sys.executable, "-c", script],
            env=subprocess_env(**env),
            cwd=BASE_DIR,
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
        assert result.returncode == 0, result.stderr
        return result.stdout.strip().splitlines()[-1]

    assert lease() == "30"
    assert lease(SUPERSTEP_LEASE_SECONDS="3") == "3"


def test_database_from_url_reads_a_postgres_url() -> None:
    database = database_from_url("postgres://app:p%40ss@db.internal:6543/superstep?sslmode=require")

    assert database["ENGINE"] == "django.db.backends.postgresql"
    assert database["NAME"] == "superstep"
    assert (database["USER"], database["PASSWORD"]) == ("app", "p@ss")
    assert (database["HOST"], database["PORT"]) == ("db.internal", "6543")
    # Prepared on first use: only the checkpoint save binds server-side (see test_storage).
    assert database["OPTIONS"] == {"sslmode": "require", "prepare_threshold": 0}


@pytest.mark.parametrize(
    ("query", "threshold"), [("none", None), ("None", None), ("5", 5), ("0", 0)]
)
def test_a_postgres_url_may_set_or_turn_off_prepared_statements(
    query: str, threshold: int | None
) -> None:
    database = database_from_url(f"postgres://app@db/superstep?prepare_threshold={query}")

    assert database["OPTIONS"] == {"prepare_threshold": threshold}


@pytest.mark.parametrize("value", ["often", "-1", "²", "1.5"])
def test_a_postgres_url_with_a_bad_prepare_threshold_is_refused_with_its_value(value: str) -> None:
    with pytest.raises(ImproperlyConfigured, match=f"prepare_threshold.*'{value}'"):
        database_from_url(f"postgres://app@db/superstep?prepare_threshold={value}")


def test_database_from_url_reads_relative_and_absolute_sqlite_paths() -> None:
    relative = database_from_url("sqlite:///var/other.sqlite3")
    absolute = database_from_url("sqlite:////tmp/elsewhere.sqlite3")

    assert relative["NAME"] == str(BASE_DIR / "var" / "other.sqlite3")
    assert absolute["NAME"] == "/tmp/elsewhere.sqlite3"
    assert relative["OPTIONS"]["transaction_mode"] == "IMMEDIATE"


@pytest.mark.parametrize(
    "url", ["mysql://root@localhost/superstep", "postgres://localhost:5432/", "sqlite://"]
)
def test_database_from_url_refuses_what_it_cannot_serve(url: str) -> None:
    with pytest.raises(ImproperlyConfigured):
        database_from_url(url)


def test_env_bool_refuses_a_typo_instead_of_reading_it_as_false(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("DEBUG", "flase")

    with pytest.raises(ImproperlyConfigured, match="not a boolean"):
        env_bool("DEBUG", True)


@pytest.mark.django_db
def test_sqlite_connections_use_wal_and_a_busy_timeout() -> None:
    if connection.vendor != "sqlite":
        pytest.skip("the default test database is PostgreSQL in this run")
    with connection.cursor() as cursor:
        cursor.execute("PRAGMA journal_mode")
        (journal_mode,) = cursor.fetchone()
        cursor.execute("PRAGMA busy_timeout")
        (busy_timeout_ms,) = cursor.fetchone()

    assert journal_mode == "wal"
    assert busy_timeout_ms >= 5000


# ------------------------------------------------------------------ environs and dj-database-url


def test_settings_run_periodic_threads_in_embedded_mode_only_by_default(
    subprocess_env: EnvBuilder, secret_key: str
) -> None:
    # Production runs the periodic jobs from Celery beat; a deployment may add the threads.
    script = (
        "import django; django.setup(); from django.conf import settings; "
        "print(settings.SUPERSTEP_BACKGROUND_SERVICES, 'django_htmx.middleware.HtmxMiddleware' "
        "in settings.MIDDLEWARE)"
    )

    def services(**env: str) -> str:
        result = subprocess.run(
            [sys.executable, "-c", script],
            env=subprocess_env(**env),
            cwd=BASE_DIR,
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
        assert result.returncode == 0, result.stderr
        return result.stdout.strip().splitlines()[-1]

    assert services() == "True True"
    assert services(**PRODUCTION, SECRET_KEY=secret_key) == "False True"
    asked = services(**PRODUCTION, SECRET_KEY=secret_key, SUPERSTEP_BACKGROUND_SERVICES="1")
    assert asked == "True True"


def test_settings_refuse_a_mistyped_boolean_at_startup(subprocess_env: EnvBuilder) -> None:
    result = run_manage(subprocess_env(DEBUG="flase"), "check")

    assert result.returncode != 0
    assert "DEBUG='flase' is not a boolean" in result.stderr


@pytest.mark.parametrize(
    ("raw", "expected"),
    [("1", True), ("TRUE", True), ("Yes", True), ("on", True), ("", False), ("Off", False)],
)
def test_env_bool_reads_the_documented_words_in_any_usual_case(
    monkeypatch: pytest.MonkeyPatch, raw: str, expected: bool
) -> None:
    monkeypatch.setenv("SUPERSTEP_TEST_FLAG", raw)

    assert env_bool("SUPERSTEP_TEST_FLAG", not expected) is expected


@pytest.mark.parametrize("raw", ["y", "n", "2", "enable"])
def test_env_bool_refuses_words_outside_the_documented_ones(
    monkeypatch: pytest.MonkeyPatch, raw: str
) -> None:
    monkeypatch.setenv("SUPERSTEP_TEST_FLAG", raw)

    with pytest.raises(ImproperlyConfigured, match=f"SUPERSTEP_TEST_FLAG='{raw}' is not a boolean"):
        env_bool("SUPERSTEP_TEST_FLAG", False)


def test_env_int_reads_numbers_defaults_when_blank_and_refuses_the_rest(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("SUPERSTEP_TEST_INT", raising=False)
    unset = env_int("SUPERSTEP_TEST_INT", 7)
    monkeypatch.setenv("SUPERSTEP_TEST_INT", "  ")
    blank = env_int("SUPERSTEP_TEST_INT", 7)
    monkeypatch.setenv("SUPERSTEP_TEST_INT", "42")
    given = env_int("SUPERSTEP_TEST_INT", 7)

    assert (unset, blank, given) == (7, 7, 42)
    for bad in ("1.5", "ten"):
        monkeypatch.setenv("SUPERSTEP_TEST_INT", bad)
        with pytest.raises(ImproperlyConfigured, match=f"'{bad}' is not an integer"):
            env_int("SUPERSTEP_TEST_INT", 7)


def test_env_list_strips_items_and_drops_empty_ones(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("SUPERSTEP_TEST_LIST", raising=False)
    unset = env_list("SUPERSTEP_TEST_LIST", ["localhost"])
    monkeypatch.setenv("SUPERSTEP_TEST_LIST", " example.com, ,api.example.com ,")
    given = env_list("SUPERSTEP_TEST_LIST", ["localhost"])
    monkeypatch.setenv("SUPERSTEP_TEST_LIST", "")
    empty = env_list("SUPERSTEP_TEST_LIST", ["localhost"])

    assert (unset, given, empty) == (["localhost"], ["example.com", "api.example.com"], [])


def test_every_libpq_query_parameter_reaches_the_connection_options() -> None:
    database = database_from_url(
        "postgresql://app@db/superstep?sslmode=verify-full&sslrootcert=/etc/ca.pem"
        "&application_name=superstep&options=-c%20statement_timeout%3D5000"
        "&prepare_threshold=none",
        conn_max_age=60,
    )

    assert database["OPTIONS"] == {
        "sslmode": "verify-full",
        "sslrootcert": "/etc/ca.pem",
        "application_name": "superstep",
        "options": "-c statement_timeout=5000",
        "prepare_threshold": None,
    }
    assert (database["CONN_MAX_AGE"], database["CONN_HEALTH_CHECKS"]) == (60, True)
    assert database["PORT"] == ""


def test_a_malformed_database_url_is_refused_as_configuration() -> None:
    with pytest.raises(ImproperlyConfigured, match="not a valid postgres:// URL"):
        database_from_url("postgres://app@db:port/superstep")


def test_an_in_memory_sqlite_url_stays_in_memory() -> None:
    assert database_from_url("sqlite:///:memory:")["NAME"] == ":memory:"
