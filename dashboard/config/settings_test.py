"""Settings for the test suite (pytest's ``DJANGO_SETTINGS_MODULE``, set in pyproject.toml).

Deterministic whatever the shell exports: embedded mode, the in-memory channel layer, no
background threads, and these databases:

* ``default``: a SQLite *file* with the production options (WAL, busy timeout, IMMEDIATE).
  Not Django's in-memory test database: that one runs in shared-cache mode, whose table
  locks ignore the busy timeout, so tests running tasks on background threads would see
  "database table is locked" errors that production never shows.
  ``SUPERSTEP_TEST_DATABASE=postgres`` makes ``default`` PostgreSQL for the whole run.
* ``pg``: PostgreSQL, defined only when the server answers, so the same tests can also run
  there in one pytest run (see tests/dashboard/conftest.py, fixture ``db_alias``).

Test databases are named per process so concurrent pytest runs on one machine don't drop
each other's database. The server comes from ``SUPERSTEP_TEST_POSTGRES_URL``
(default ``postgres://postgres@127.0.0.1:5432/superstep_test``).
"""

from __future__ import annotations

import os
import tempfile

import psycopg

# dashboard.config.settings refuses to load without SECRET_KEY once DEBUG is off, which an
# exported DATABASE_URL or REDIS_URL implies. The key is replaced below; tests of that refusal run
# manage.py in a subprocess with an environment of their own.
os.environ.setdefault("SECRET_KEY", "superstep-tests-only-secret-key-0123456789-abcdefghijklmn")

from dashboard.config.settings import *
from dashboard.config.settings import database_from_url

_pid = os.getpid()
POSTGRES_TEST_URL = os.environ.get(
    "SUPERSTEP_TEST_POSTGRES_URL", "postgres://postgres@127.0.0.1:5432/superstep_test"
)


def _postgres_database() -> dict[str, object]:
    database = database_from_url(POSTGRES_TEST_URL)
    # No dependency on "default": selecting only PostgreSQL tests must not make Django see a
    # circular creation order between the two test databases.
    database["TEST"] = {"NAME": f"{database['NAME']}_{_pid}", "DEPENDENCIES": []}
    return database


def _postgres_answers() -> bool:
    database = database_from_url(POSTGRES_TEST_URL)
    try:
        # The maintenance database: the test database does not exist yet.
        with psycopg.connect(
            dbname="postgres",
            user=database["USER"],
            password=database["PASSWORD"],
            host=database["HOST"],
            port=database["PORT"] or None,
            connect_timeout=3,
        ):
            return True
    except psycopg.Error:
        return False


_sqlite = database_from_url("sqlite:///var/superstep.sqlite3")  # NAME unused in tests
_sqlite["TEST"] = {"NAME": os.path.join(tempfile.gettempdir(), f"superstep-test-{_pid}.sqlite3")}

if os.environ.get("SUPERSTEP_TEST_DATABASE", "sqlite") == "postgres":
    DATABASES = {"default": _postgres_database()}
else:
    DATABASES = {"default": _sqlite}
if _postgres_answers():
    # Same TEST NAME as a PostgreSQL default, so Django creates that database only once.
    DATABASES["pg"] = _postgres_database()

DEBUG = False
SECRET_KEY = "superstep-tests-only-secret-key-0123456789-abcdefghijklmnopqrstuvwxyz"
ALLOWED_HOSTS = ["testserver", "localhost", "127.0.0.1"]
SUPERSTEP_EMBEDDED = True
# The suite runs the demo workflows whatever the environment says (DEBUG is off here).
SUPERSTEP_DEMO = True
INSTALLED_APPS = list(dict.fromkeys([*INSTALLED_APPS, "dashboard.demo"]))  # once, at the end
# The demo's workflows come with SUPERSTEP_DEMO; none from a SUPERSTEP_WORKFLOWS the shell exports.
SUPERSTEP_WORKFLOW_MODULES = []
SUPERSTEP_WORKFLOWS = {}
SUPERSTEP_BACKGROUND_SERVICES = False
# The tests' webhook receivers and fake providers listen on this machine: admitted on purpose,
# as an operator would admit an internal host. The outbound tests take this away.
SUPERSTEP_OUTBOUND_ALLOW = ["127.0.0.0/8", "::1", "localhost"]
# Every test signs in from 127.0.0.1 and many sign in a dozen times a minute; the rate-limit
# tests narrow these.
SUPERSTEP_RATE_API_TOKEN = SUPERSTEP_RATE_API_USER = "off"
SUPERSTEP_RATE_SIGNIN_ADDRESS = SUPERSTEP_RATE_SIGNIN_ACCOUNT = "off"
CELERY_BROKER_URL = "memory://"
CHANNEL_LAYERS = {"default": {"BACKEND": "channels.layers.InMemoryChannelLayer"}}
SECURE_SSL_REDIRECT = False
SESSION_COOKIE_SECURE = False
CSRF_COOKIE_SECURE = False
SECURE_HSTS_SECONDS = 0
# Static files come from the source folders, as under DEBUG: no collectstatic in tests.
WHITENOISE_AUTOREFRESH = True
WHITENOISE_USE_FINDERS = True
STORAGES = {
    **STORAGES,
    "staticfiles": {"BACKEND": "django.contrib.staticfiles.storage.StaticFilesStorage"},
}
# Hashing with the production hasher costs ~0.3 s per login in tests.
PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
