"""Fixtures for the Django side. How the suite chooses its databases:

* Django is configured by pytest-django from ``DJANGO_SETTINGS_MODULE =
  "dashboard.config.settings_test"`` in pyproject.toml. The engine tests share the process but never
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

import contextlib
import os
import secrets
import string
from collections.abc import Callable, Iterator
from typing import Any

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
    """Like ``db_alias``, with real transactions (committed data is visible to threads).

    The database is emptied between tests, so the blobs this process remembers storing are
    forgotten too: a save must not skip a blob that only an earlier test's database held."""
    from dashboard.checkpoints.writes import forget_known_blobs

    forget_known_blobs()
    alias: str = request.param
    return alias


@pytest.fixture
def secret_key() -> str:
    """A fresh production-grade SECRET_KEY (50 random characters)."""
    alphabet = string.ascii_letters + string.digits + "!@#%^&*(-_=+)"
    return "".join(secrets.choice(alphabet) for _ in range(50))


@pytest.fixture(scope="session")
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
        env["DJANGO_SETTINGS_MODULE"] = "dashboard.config.settings"
        env["PYTHONUNBUFFERED"] = "1"
        for key, value in overrides.items():
            if value is None:
                env.pop(key, None)
            else:
                env[key] = value
        return env

    return build


@pytest.fixture(scope="session")
def migrated_postgres(
    subprocess_env: Callable[..., dict[str, str]],
) -> Iterator[Callable[[str], contextlib.AbstractContextManager[str]]]:
    """``with migrated_postgres("superstep_x") as url``: a new PostgreSQL database, already
    migrated, dropped on leaving. Each is a copy of one template migrated once per session:
    migrating costs a Django start and seconds of CPU, copying a fraction of a second."""
    from urllib.parse import urlsplit

    from tests.conftest import require_service, scratch_postgres_database
    from tests.helpers.stack import manage, production_env

    require_service("postgres")
    with scratch_postgres_database("superstep_template") as template_url:
        env = production_env(subprocess_env, database_url=template_url, redis_url="")
        env.pop("REDIS_URL")
        manage(env, "migrate", "--noinput")
        template = urlsplit(template_url).path.lstrip("/")

        def copy(prefix: str) -> contextlib.AbstractContextManager[str]:
            return scratch_postgres_database(prefix, template=template)

        yield copy


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


# ------------------------------------------------------------ services on either database
#
# Services, the worker and the embedded task threads use Django's ``default`` alias (they take
# no ``using``). These fixtures run a test once on SQLite and once on PostgreSQL by making
# ``default`` answer with the ``pg`` database for the duration of the test: in this thread the
# ``pg`` connection itself answers to ``default`` (so a non-transactional test still rolls
# back), and threads started meanwhile (the test's own, and a fresh embedded task pool) open a
# connection of alias ``pg`` when they ask for ``default``. asgiref's one thread for
# ``sync_to_async`` (the worker's database calls) lives for the whole session, so its
# ``default`` connection is dropped on the way in and on the way out.


@contextlib.contextmanager
def _default_answers_with(alias: str) -> Iterator[None]:
    from django.db import connections

    from dashboard.execution import embedded

    if alias == "default":
        yield
        return
    assert embedded.wait_for_background_tasks(60), "background tasks of an earlier test still run"
    saved_connection = connections["default"]
    saved_pool = embedded._pool
    create = connections.create_connection
    connections.create_connection = lambda name: create(alias if name == "default" else name)  # type: ignore[method-assign]
    connections["default"] = connections[alias]
    embedded._pool = None  # fresh task threads, which have no SQLite connection yet
    _forget_default_in_sync_to_async_thread()
    try:
        yield
    finally:
        finished = embedded.wait_for_background_tasks(60)
        # The pool whose threads hold ``alias`` connections stays idle for good.
        embedded._pool = saved_pool
        _forget_default_in_sync_to_async_thread()
        connections["default"] = saved_connection
        del connections.create_connection
        assert finished, "background tasks still running at the end of the test"


def _forget_default_in_sync_to_async_thread() -> None:
    from asgiref.sync import SyncToAsync
    from django.db import connections

    def forget() -> None:
        connections.close_all()
        with contextlib.suppress(AttributeError):
            del connections["default"]

    SyncToAsync.single_thread_executor.submit(forget).result()


@pytest.fixture(params=_on_each_database(transaction=False))
def services_db(request: pytest.FixtureRequest) -> Iterator[str]:
    """Run the test on SQLite and on PostgreSQL *through the services* (which use ``default``);
    yields the real alias. Like ``db``: each test rolls back."""
    with _default_answers_with(request.param):
        yield request.param


@pytest.fixture(params=_on_each_database(transaction=True))
def services_transactional_db(request: pytest.FixtureRequest) -> Iterator[str]:
    """``services_db`` with real commits: ``on_commit`` work runs on the embedded task threads,
    and threads the test starts see committed data."""
    with _default_answers_with(request.param):
        yield request.param


@pytest.fixture(
    params=[
        pytest.param(
            "pg",
            id="postgres",
            marks=[pytest.mark.postgres, pytest.mark.django_db(databases=["pg"], transaction=True)],
        )
    ]
)
def services_postgres_transactional_db(request: pytest.FixtureRequest) -> Iterator[str]:
    """Real commits on PostgreSQL only (races that need row locks SQLite does not have)."""
    with _default_answers_with(request.param):
        yield request.param


@pytest.fixture(autouse=True)
def _no_sensitive_value_leaves(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Every response the test client receives is scanned for the sensitive values the test
    put in play (``tests/helpers/sensitive_scan.py``); one that shows any fails the test."""
    from django.test.client import Client

    from tests.helpers import sensitive_scan

    request = Client.request

    def scanned(self: Client, **environ: Any) -> Any:
        response = request(self, **environ)
        if not sensitive_scan.IN_PLAY:
            return response
        if getattr(response, "streaming", False):
            body = b"".join(response.streaming_content)
            response.streaming_content = [body]
        else:
            body = response.content
        url = str(environ.get("PATH_INFO", ""))
        shown = sensitive_scan.leaked(url, body)
        assert not shown, f"{url} answered with sensitive values {shown}"
        return response

    monkeypatch.setattr(Client, "request", scanned)
    yield
    sensitive_scan.IN_PLAY.clear()


@pytest.fixture
def role_user() -> Callable[..., Any]:
    """``role_user("ann", "Approver", is_staff=False)``: a user in one of the role groups.

    The groups come from a data migration; a transactional test's flush removes them, so they
    are created again here from the migration's own table when missing.
    """
    import importlib

    from django.contrib.auth.models import Group, Permission, User

    roles = dict(
        importlib.import_module("dashboard.migrations.0003_roles_and_append_only_audit").ROLES
    )
    sensitive = importlib.import_module("dashboard.migrations.0025_sensitive_data")
    revealing = f"dashboard.{sensitive.PERMISSION}"
    roles["Admin"] = [*roles["Admin"], revealing]
    roles[sensitive.ROLE] = [revealing]

    def group(name: str) -> Any:
        found, created = Group.objects.get_or_create(name=name)
        if created:
            for code in roles[name]:
                app_label, codename = code.split(".")
                found.permissions.add(
                    Permission.objects.get(content_type__app_label=app_label, codename=codename)
                )
        return found

    def make(username: str, *role_names: str, is_staff: bool = False) -> Any:
        user = User.objects.create_user(username, password=username, is_staff=is_staff)
        for name in role_names:
            user.groups.add(group(name))
        return user

    make.group = group  # type: ignore[attr-defined]
    return make


# ------------------------------------------------------------------------ dashboard pages
# For tests/dashboard/web/: signed-in clients by role, runs written straight to the
# database for list pages, and real runs driven through the services and the worker.


@pytest.fixture
def client_as(role_user: Callable[..., Any]) -> Callable[..., Any]:
    """``client_as("Operator")``: a test client signed in as a new user with those roles
    (``client_as("Operator", "Approver", username="ann")``); ``client_as()`` has no role."""
    from django.test import Client

    def make(*roles: str, username: str | None = None) -> Any:
        name = username or ("-".join(roles).lower() or "nobody")
        client = Client()
        client.user = role_user(name, *roles)  # type: ignore[attr-defined]
        client.force_login(client.user)  # type: ignore[attr-defined]
        return client

    return make


# One fixture per role, under one name per meaning: ``<role>_user`` is a ``User`` holding that
# role (for services and the API), ``<role>_client`` a test ``Client`` signed in as one (for
# pages). The Admin role's are ``admin_role_*``: pytest-django's ``admin_user`` and
# ``admin_client`` are a superuser, which holds every permission without any role.


@pytest.fixture
def operator_user(role_user: Callable[..., Any]) -> Any:
    return role_user("olga", "Operator")


@pytest.fixture
def operator_client(client_as: Callable[..., Any]) -> Any:
    return client_as("Operator", username="olga")


@pytest.fixture
def operator_approver_user(role_user: Callable[..., Any]) -> Any:
    """An operator who may also decide approvals (the API and version tests do both)."""
    return role_user("olga", "Operator", "Approver")


@pytest.fixture
def operator_approver_client(client_as: Callable[..., Any]) -> Any:
    return client_as("Operator", "Approver", username="olga")


@pytest.fixture
def approver_user(role_user: Callable[..., Any]) -> Any:
    return role_user("ann", "Approver")


@pytest.fixture
def approver_client(client_as: Callable[..., Any]) -> Any:
    return client_as("Approver", username="ann")


@pytest.fixture
def viewer_user(role_user: Callable[..., Any]) -> Any:
    return role_user("vic", "Viewer")


@pytest.fixture
def viewer_client(client_as: Callable[..., Any]) -> Any:
    return client_as("Viewer", username="vic")


@pytest.fixture
def admin_role_user(role_user: Callable[..., Any]) -> Any:
    return role_user("ada", "Admin")


@pytest.fixture
def admin_role_client(client_as: Callable[..., Any]) -> Any:
    return client_as("Admin", username="ada")


@pytest.fixture
def make_run() -> Callable[..., Any]:
    """``make_run(status="waiting", workflow_name="squares", ...)``: a run row, no engine."""
    import datetime as dt
    import uuid

    from django.utils import timezone

    from dashboard.models import TERMINAL_RUN_STATUSES, WorkflowRun

    def make(**fields: Any) -> Any:
        status = fields.setdefault("status", "completed")
        fields.setdefault("workflow_name", "squares")
        fields.setdefault("input", {"limit": 3})
        fields.setdefault("engine_run_id", uuid.uuid4().hex)
        created = fields.setdefault("created_at", timezone.now())
        if status != "queued":
            fields.setdefault("started_at", created + dt.timedelta(seconds=1))
        if status in TERMINAL_RUN_STATUSES:
            fields.setdefault("finished_at", created + dt.timedelta(seconds=5))
        if status == "failed":
            fields.setdefault("error_message", "boom")
        return WorkflowRun.objects.create(**fields)

    return make


@pytest.fixture
def drive() -> Callable[..., Any]:
    """``drive(services.run_start, workflow_name=..., input=..., user=...)``: call a service
    and wait for the background work it queued (transactional tests only); returns the
    refreshed run."""
    from dashboard.execution import embedded
    from dashboard.models import WorkflowRun

    def call(service: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        result = service(*args, **kwargs)
        assert embedded.wait_for_background_tasks(60), "the run did not settle in 60 s"
        run_id = getattr(result, "run_id", None) or result.pk
        return WorkflowRun.objects.get(pk=run_id)

    return call
