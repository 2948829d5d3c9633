"""Superstep's Django settings, read only from the environment.

The project package (``dashboard/config/``) holds this module, the test settings, the ASGI
application, the Celery app and the root URLconf. Two modes share this one file:

* **Embedded** (neither ``DATABASE_URL`` nor ``REDIS_URL`` set): a SQLite file under ``var/``,
  the in-memory channel layer, and Celery tasks run on a thread pool inside the web process
  (``dashboard.execution.embedded``). ``DEBUG`` defaults on, so a fresh checkout runs with no
  setup, and so does demo mode (the ``dashboard.demo`` app and its workflows).
* **Production** (``DATABASE_URL`` and/or ``REDIS_URL`` set): PostgreSQL, Celery workers on
  Redis, channels-redis. ``DEBUG`` defaults off, which switches on every HTTPS/cookie/HSTS
  setting below and makes ``SECRET_KEY`` mandatory: at least 50 characters, not a default.

Environment variables: ``DATABASE_URL``, ``REDIS_URL``, ``SECRET_KEY``, ``DEBUG``,
``ALLOWED_HOSTS``, ``CSRF_TRUSTED_ORIGINS`` (comma-separated), ``TRUST_X_FORWARDED_PROTO``,
``SECURE_SSL_REDIRECT``, ``SECURE_HSTS_SECONDS``, ``SECURE_HSTS_PRELOAD``, ``STATIC_ROOT``,
``DATABASE_CONN_MAX_AGE``, ``DATABASE_POOL_SIZE``, ``LOG_LEVEL``, ``SUPERSTEP_EMBEDDED_WORKERS``,
``SUPERSTEP_BACKGROUND_SERVICES``, ``SUPERSTEP_LEASE_SECONDS``, ``SUPERSTEP_DEMO``,
``SUPERSTEP_WORKFLOWS`` (comma-separated modules of workflows), ``SUPERSTEP_TRACE_FILE`` and
``SUPERSTEP_TRACE_URL`` (traces of runs), ``SUPERSTEP_METRICS_TOKEN``,
``SUPERSTEP_METRICS_REAP_DEAD_PROCESSES`` and ``PROMETHEUS_MULTIPROC_DIR`` (Prometheus metrics),
``SUPERSTEP_BASE_URL`` (absolute links in alerts), ``SUPERSTEP_OUTBOUND_ALLOW`` (internal
targets the server may call), ``SUPERSTEP_RATE_*`` (rate limits), ``SUPERSTEP_LOGIN_*`` (login
lockout), and single sign-on's ``SUPERSTEP_OIDC_*`` (client id and secret, issuer, endpoints,
roles, groups claim, default role, provider name).

Variables are read with ``environs`` and ``DATABASE_URL`` is parsed by ``dj-database-url``. Ours
on top, and why: ``env_bool`` keeps the documented four words a side (environs would also read
"y"/"t"/"n"/"f") and turns any refusal into ``ImproperlyConfigured`` naming the variable;
``env_int`` keeps a blank value meaning the default; ``database_from_url`` adds what the parser
does not do (see its docstring).
"""

from __future__ import annotations

import datetime as _dt
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl, urlsplit

import dj_database_url
from django.core.exceptions import ImproperlyConfigured
from environs import Env, EnvError

from dashboard.web import csp as _web_csp

# The repository: manage.py, templates/, static/ and var/ live here (this file is
# dashboard/config/).
BASE_DIR = Path(__file__).resolve().parent.parent.parent

# Only the process environment: no .env file is read (deployments inject variables; a stray
# file in the working directory must not change a production setting).
env = Env(eager=True)


def _spellings(words: tuple[str, ...]) -> set[str]:
    return {spelling for word in words for spelling in (word, word.upper(), word.title())}


# environs' own vocabulary also accepts "y"/"n"/"t"/"f"; ours stays the documented four words
# a side (an empty value is "off"), so a one-letter typo is refused rather than read.
_TRUE = _spellings(("1", "true", "yes", "on"))
_FALSE = _spellings(("0", "false", "no", "off")) | {""}


def env_bool(name: str, default: bool) -> bool:
    """Read a boolean; a typo such as ``DEBUG=flase`` is an error, not silently "off"."""
    try:
        # environs hands extra keywords to its marshmallow Boolean field; its stubs omit them.
        value: bool = env.bool(name, default, truthy=_TRUE, falsy=_FALSE)  # type: ignore[call-overload]
    except EnvError as exc:
        raise ImproperlyConfigured(
            f"{name}={env.str(name)!r} is not a boolean (use 1/0, true/false)"
        ) from exc
    return value


def env_int(name: str, default: int) -> int:
    """Read an integer; unset or blank means ``default``, anything else must be a whole number."""
    if not env.str(name, "").strip():
        return default
    try:
        value: int = env.int(name)
    except EnvError as exc:
        raise ImproperlyConfigured(f"{name}={env.str(name)!r} is not an integer") from exc
    return value


def env_list(name: str, default: list[str]) -> list[str]:
    """Read a comma-separated list; items are stripped and empty ones dropped."""
    items: list[str] = env.list(name, default)
    return [item.strip() for item in items if item.strip()]


# SQLite serves web requests and background runs from several threads at once. WAL lets
# readers proceed while one writer commits; IMMEDIATE transactions take the write lock up
# front, so two writers queue on the busy timeout instead of failing with "database is
# locked" when a read transaction tries to upgrade. synchronous stays FULL: a checkpoint
# reported as saved must survive a power cut.
SQLITE_OPTIONS: dict[str, Any] = {
    "init_command": "PRAGMA journal_mode=WAL;",
    "transaction_mode": "IMMEDIATE",
    "timeout": 20,
}


def _prepare_threshold(url: str) -> int | None:
    """psycopg's ``prepare_threshold`` from the URL's query: a whole number (default 0) or none.

    Django turns prepared statements off for the sake of old connection poolers. Its own
    queries bind parameters client-side and never use them; the checkpoint save does, so
    PostgreSQL parses and plans it once per connection instead of once per superstep. Behind
    a pooler that cannot keep them (PgBouncer before 1.21 in transaction mode), add
    ``?prepare_threshold=none`` to the URL.

    Read from the raw query, before the URL parser sees it: that parser turns digit-like
    values into numbers and fails on some ("²") with no word about which option was wrong.
    """
    query = dict(parse_qsl(urlsplit(url).query))
    threshold = query.get("prepare_threshold", "0").strip().lower()
    if threshold == "none":
        return None
    if threshold.isdecimal() and threshold.isascii():
        return int(threshold)
    raise ImproperlyConfigured(
        f"DATABASE_URL: prepare_threshold must be a whole number or 'none', not {threshold!r}"
    )


def database_from_url(url: str, *, conn_max_age: int = 0, pool_size: int = 0) -> dict[str, Any]:
    """Translate ``DATABASE_URL`` into a ``DATABASES`` entry (parsed by ``dj-database-url``).

    ``postgres://user:password@host:port/name?sslmode=require`` (query parameters become
    libpq options) and ``sqlite:///relative/path`` or ``sqlite:////absolute/path``. What is
    ours on top of the parser: only the two engines the dashboard runs on, a database name is
    required (the parser reads ``sqlite://`` as in-memory and accepts an empty name), relative
    SQLite paths are relative to the repository rather than the working directory, the SQLite
    options above, and ``prepare_threshold`` as a number or ``none``.
    """
    scheme = url.partition("://")[0]
    if scheme not in {"postgres", "postgresql", "sqlite"}:
        raise ImproperlyConfigured(
            f"DATABASE_URL scheme {scheme!r} is not supported (postgres:// or sqlite://)"
        )
    if scheme == "sqlite" and not url.removeprefix("sqlite://").removeprefix("/"):
        raise ImproperlyConfigured(f"DATABASE_URL names no SQLite file: {url!r}")
    threshold = _prepare_threshold(url) if scheme != "sqlite" else None
    try:
        parsed: dict[str, Any] = dict(dj_database_url.parse(url))
    except ValueError as exc:
        raise ImproperlyConfigured(
            f"DATABASE_URL is not a valid {scheme}:// URL (percent-encode special characters)"
        ) from exc
    if scheme == "sqlite":
        name = str(parsed["NAME"])
        return {
            "ENGINE": "django.db.backends.sqlite3",
            # sqlite:///var/db.sqlite3 is relative to the repository, sqlite:////tmp/x absolute.
            "NAME": name if name == ":memory:" else str(BASE_DIR / name),
            "OPTIONS": dict(SQLITE_OPTIONS),
        }
    if not parsed.get("NAME"):
        raise ImproperlyConfigured(f"DATABASE_URL names no database: {url!r}")
    pool = _pool_options(pool_size, conn_max_age)
    return {
        "ENGINE": "django.db.backends.postgresql",
        "NAME": parsed["NAME"],
        "USER": parsed.get("USER") or "",
        "PASSWORD": parsed.get("PASSWORD") or "",
        "HOST": parsed.get("HOST") or "",
        "PORT": str(parsed.get("PORT") or ""),
        # libpq options, as the URL's query gave them.
        "OPTIONS": {**(parsed.get("OPTIONS") or {}), "prepare_threshold": threshold, **pool},
        "CONN_MAX_AGE": conn_max_age,
        # A pooled connection may have died with a restarted server; test before use.
        "CONN_HEALTH_CHECKS": conn_max_age != 0,
    }


def _pool_options(size: int, conn_max_age: int) -> dict[str, Any]:
    """Django's PostgreSQL connection pool of at most ``size`` connections (0: none).

    Under ASGI every request runs on a thread of its own, so a persistent connection is never
    reused and without a pool each request opens a connection: a server backend started and
    authenticated for a few queries. A pooled connection goes back to the pool at the end of
    the request instead. Django refuses a pool beside persistent connections.
    """
    if size <= 0:
        return {}
    if conn_max_age:
        raise ImproperlyConfigured(
            "DATABASE_POOL_SIZE and DATABASE_CONN_MAX_AGE exclude each other: set one"
        )
    return {"pool": {"min_size": 1, "max_size": size, "timeout": 10}}


# ------------------------------------------------------------------------------ mode, secrets

DATABASE_URL: str | None = env.str("DATABASE_URL", "") or None
REDIS_URL: str | None = env.str("REDIS_URL", "") or None

# Embedded mode: no Redis, so no Celery workers and no shared channel layer. Read by
# dashboard.execution.embedded.enqueue at call time (tests override it with override_settings).
SUPERSTEP_EMBEDDED = REDIS_URL is None

# Debug only by default on a machine configured for nothing; any service URL means a
# deployment, and a deployment must opt into DEBUG explicitly.
DEBUG = env_bool("DEBUG", DATABASE_URL is None and REDIS_URL is None)

_DEV_SECRET_KEY = "django-insecure-superstep-development-key-never-use-in-production"
_MAKE_A_KEY = 'generate one with: python -c "import secrets; print(secrets.token_urlsafe(50))"'


def secret_key_weakness(key: str) -> str | None:
    """Why ``key`` must not sign production sessions, or None when it may.

    The same bar as Django's ``check --deploy`` (security.W009), which only warns: a deployment
    that ignores the warning signs sessions and password resets with a guessable key.
    """
    if key == _DEV_SECRET_KEY or key.startswith("django-insecure"):
        return "is a development default"
    if len(key) < 50:
        return f"is {len(key)} characters long (at least 50 are needed)"
    if len(set(key)) < 5:
        return f"has {len(set(key))} distinct characters (at least 5 are needed)"
    return None


SECRET_KEY: str = env.str("SECRET_KEY", "")
if not SECRET_KEY:
    if not DEBUG:
        raise ImproperlyConfigured(f"SECRET_KEY must be set when DEBUG is off ({_MAKE_A_KEY})")
    SECRET_KEY = _DEV_SECRET_KEY
elif not DEBUG and (weakness := secret_key_weakness(SECRET_KEY)) is not None:
    raise ImproperlyConfigured(
        f"SECRET_KEY {weakness}; it must be a long random secret when DEBUG is off ({_MAKE_A_KEY})"
    )

ALLOWED_HOSTS = env_list("ALLOWED_HOSTS", ["localhost", "127.0.0.1", "[::1]"] if DEBUG else [])
CSRF_TRUSTED_ORIGINS = env_list("CSRF_TRUSTED_ORIGINS", [])

# ------------------------------------------------------------------------------ applications

INSTALLED_APPS = [
    # Daphne first: its runserver (ASGI, websockets) must shadow staticfiles' WSGI one.
    "daphne",
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "channels",
    # Login lockout (dashboard/access/lockout.py).
    "axes",
    "dashboard",
]

MIDDLEWARE = [
    # /healthz and /readyz, before the host check and HTTPS redirect that would refuse probes.
    "dashboard.observability.health.HealthProbes",
    "django.middleware.security.SecurityMiddleware",
    # Right after SecurityMiddleware so static files skip sessions and auth entirely.
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    # request.htmx: whether a request came from htmx, and its target, current URL...
    "django_htmx.middleware.HtmxMiddleware",
    # Client address and user agent for the audit entries services write during the request.
    "dashboard.access.audit.RequestMeta",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    # Django's CSP middleware plus this host's ws(s):// origin in connect-src.
    "dashboard.web.csp.ContentSecurityPolicyMiddleware",
    # Last, as django-axes requires: answers a locked-out sign-in with its page.
    "axes.middleware.AxesMiddleware",
]

ROOT_URLCONF = "dashboard.config.urls"
ASGI_APPLICATION = "dashboard.config.asgi.application"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
                # {{ csp_nonce }}: without it the policy's nonce blocks every <script>.
                "django.template.context_processors.csp",
                "dashboard.web.context_processors.pending_approvals",
                "dashboard.web.context_processors.pinned_views",
            ],
        },
    },
]

# ------------------------------------------------------------------------------ database

_DEFAULT_SQLITE_URL = "sqlite:///var/superstep.sqlite3"
if DATABASE_URL is None:
    # SQLite does not create missing directories; var/ is git-ignored.
    (BASE_DIR / "var").mkdir(exist_ok=True)

DATABASES = {
    "default": database_from_url(
        DATABASE_URL or _DEFAULT_SQLITE_URL,
        # 0 (a connection per request/task) unless asked: under ASGI each request may run
        # on a different thread, and persistent connections there outlive their usefulness.
        conn_max_age=env_int("DATABASE_CONN_MAX_AGE", 0),
        pool_size=env_int("DATABASE_POOL_SIZE", 0),
    )
}
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

# ------------------------------------------------------------------------------ auth

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.UserAttributeSimilarityValidator"},
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
    {"NAME": "django.contrib.auth.password_validation.NumericPasswordValidator"},
]
LOGIN_URL = "/login/"
LOGIN_REDIRECT_URL = "/"
LOGOUT_REDIRECT_URL = "login"
CSRF_FAILURE_VIEW = "dashboard.api.errors.csrf_failure"

# ------------------------------------------------------------------------------ i18n, static

LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = True
USE_TZ = True

STATIC_URL = "/static/"
STATICFILES_DIRS = [BASE_DIR / "static"]
STATIC_ROOT = Path(env.str("STATIC_ROOT", "") or BASE_DIR / "var" / "staticfiles")
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    # Production serves hashed, compressed files with far-future caching (after
    # `manage.py collectstatic`); DEBUG serves straight from the source folders.
    "staticfiles": {
        "BACKEND": (
            "django.contrib.staticfiles.storage.StaticFilesStorage"
            if DEBUG
            else "whitenoise.storage.CompressedManifestStaticFilesStorage"
        )
    },
}

# ------------------------------------------------------------------------------ security

# Django's default, stated so nobody raises it: request bodies are read into memory.
DATA_UPLOAD_MAX_MEMORY_SIZE = 2_621_440
DATA_UPLOAD_MAX_NUMBER_FIELDS = 1000

SESSION_COOKIE_SECURE = not DEBUG
CSRF_COOKIE_SECURE = not DEBUG
SESSION_COOKIE_HTTPONLY = True
# The token travels in a header rendered into the page (hx-headers), so scripts never need
# to read the cookie.
CSRF_COOKIE_HTTPONLY = True
SESSION_COOKIE_SAMESITE = "Lax"
CSRF_COOKIE_SAMESITE = "Lax"

SECURE_SSL_REDIRECT = env_bool("SECURE_SSL_REDIRECT", not DEBUG)
SECURE_HSTS_SECONDS = env_int("SECURE_HSTS_SECONDS", 0 if DEBUG else 31_536_000)
SECURE_HSTS_INCLUDE_SUBDOMAINS = SECURE_HSTS_SECONDS > 0
SECURE_HSTS_PRELOAD = env_bool("SECURE_HSTS_PRELOAD", SECURE_HSTS_SECONDS > 0)
SECURE_CONTENT_TYPE_NOSNIFF = True
SECURE_REFERRER_POLICY = "same-origin"
SECURE_CROSS_ORIGIN_OPENER_POLICY = "same-origin"
X_FRAME_OPTIONS = "DENY"
if env_bool("TRUST_X_FORWARDED_PROTO", False):
    # Only behind a proxy that sets this header itself: a client could otherwise claim
    # HTTPS. Without it, SECURE_SSL_REDIRECT behind a TLS-terminating proxy loops forever.
    SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")

# Django 6's built-in CSP; the policy is defined next to the templates it has to fit.
SECURE_CSP = _web_csp.SECURE_CSP

# ------------------------------------------------------------------------------ channels

# channels-redis counts its capacity per web process, not per socket: every socket a process
# holds shares one queue in Redis, and a message past the capacity is dropped without a word.
# Its default of 100 is a quarter of a second of twenty runs streaming to two processes' pages
# (tests/bench/stream_bench.py lost whole replies to it on a busy machine).
# A consumer waits for its next message with BZPOPMIN, five seconds at a time
# (channels-redis's brpop_timeout), and redis-py's default socket timeout is five seconds too:
# a socket quiet for five seconds raced its own wait, and when the timeout won the consumer
# died ("Timeout reading from ...") and its page lost the stream until it reconnected.
CHANNEL_LAYERS: dict[str, dict[str, Any]] = {
    "default": (
        {
            "BACKEND": "channels_redis.core.RedisChannelLayer",
            "CONFIG": {
                "hosts": [{"address": REDIS_URL, "socket_timeout": 15}],
                "capacity": 2000,
            },
        }
        if REDIS_URL
        # One process serves every socket in embedded mode, so in-memory groups suffice.
        else {"BACKEND": "channels.layers.InMemoryChannelLayer"}
    )
}

# Agents' replies while they stream (dashboard.broadcast.replies_so_far): what a browser that
# connects mid-reply is sent first. Every web and worker process must share it, so Redis in
# production; embedded mode is one process.
CACHES: dict[str, dict[str, Any]] = {
    "default": (
        {
            "BACKEND": "django.core.cache.backends.redis.RedisCache",
            "LOCATION": REDIS_URL,
            # JSON, never pickle: a value read back from Redis must not be able to run code.
            "OPTIONS": {"serializer": "dashboard.core.cache_json.JSONSerializer"},
        }
        if REDIS_URL
        else {"BACKEND": "django.core.cache.backends.locmem.LocMemCache"}
    )
}

# ------------------------------------------------------------------------------ celery

# A message only says "run R may have work"; the database row is the truth (reliability.md
# 1.4). So: at-least-once delivery, one message per worker process at a time, JSON only.
# Embedded mode never publishes (dashboard.execution.embedded runs tasks in-process); the memory
# transport only keeps `celery` tooling from dialing a default AMQP broker.
CELERY_BROKER_URL = REDIS_URL or "memory://"
CELERY_BROKER_CONNECTION_RETRY_ON_STARTUP = True
CELERY_BROKER_TRANSPORT_OPTIONS = {
    # Redis re-delivers an unacknowledged message after this long. A task that legitimately
    # runs longer is delivered twice, and the second copy finds the run's lease held and
    # exits; a dead worker's runs are recovered sooner by the lease sweeper, not by this.
    "visibility_timeout": 3600,
}
CELERY_TASK_SERIALIZER = "json"
CELERY_RESULT_SERIALIZER = "json"
CELERY_ACCEPT_CONTENT = ["json"]
CELERY_RESULT_ACCEPT_CONTENT = ["json"]
CELERY_TASK_IGNORE_RESULT = True
CELERY_TASK_ACKS_LATE = True
CELERY_TASK_REJECT_ON_WORKER_LOST = True
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
# After a broker disconnect a late-ack task can no longer be acknowledged and will be
# re-delivered anyway; cancelling it stops two copies from running side by side.
CELERY_WORKER_CANCEL_LONG_RUNNING_TASKS_ON_CONNECTION_LOSS = True
CELERY_TIMEZONE = TIME_ZONE

# ------------------------------------------------------------------------------ superstep

# Where the workflows come from (dashboard.catalog.sources, which imports them when Django
# starts): installed packages' "superstep.workflows" entry points; the modules named by
# the SUPERSTEP_WORKFLOWS variable (comma-separated), each declaring a module-level
# WORKFLOWS = {"name": builder} dict; this setting, name -> dotted path of a builder, for a
# settings module of one's own; and the demo app's, in demo mode. A name claimed twice is an error.
# Single sign-on with OpenID Connect (dashboard/access/sso.py, on mozilla-django-oidc): on when
# SUPERSTEP_OIDC_CLIENT_ID is set. The provider's endpoints are discovered from the issuer's
# /.well-known/openid-configuration at the first sign-in (not at startup, so a provider that is
# down cannot stop the server from starting); any of the four given explicitly wins over
# discovery. Local passwords keep working.
SUPERSTEP_OIDC_ENABLED = bool(env.str("SUPERSTEP_OIDC_CLIENT_ID", "").strip())
# The name on the sign-in button ("Sign in with Okta").
SUPERSTEP_OIDC_PROVIDER_NAME: str = env.str("SUPERSTEP_OIDC_PROVIDER_NAME", "") or "single sign-on"
# The "iss" every ID token must carry (mozilla-django-oidc itself checks neither it nor "aud").
SUPERSTEP_OIDC_ISSUER: str = env.str("SUPERSTEP_OIDC_ISSUER", "")
# The claim that lists the user's groups at the provider, and which of them grant which role:
# "platform-admins=Admin,payments-ops=Operator,finance=Approver,staff=Viewer". A user with no
# mapped group may not sign in, unless SUPERSTEP_OIDC_DEFAULT_ROLE names a role for them.
SUPERSTEP_OIDC_GROUPS_CLAIM: str = env.str("SUPERSTEP_OIDC_GROUPS_CLAIM", "") or "groups"
SUPERSTEP_OIDC_ROLES: list[str] = env_list("SUPERSTEP_OIDC_ROLES", [])
SUPERSTEP_OIDC_DEFAULT_ROLE: str = env.str("SUPERSTEP_OIDC_DEFAULT_ROLE", "")
OIDC_RP_CLIENT_ID: str = env.str("SUPERSTEP_OIDC_CLIENT_ID", "")
OIDC_RP_CLIENT_SECRET: str = env.str("SUPERSTEP_OIDC_CLIENT_SECRET", "")
OIDC_OP_AUTHORIZATION_ENDPOINT: str = env.str("SUPERSTEP_OIDC_AUTHORIZATION_URL", "")
OIDC_OP_TOKEN_ENDPOINT: str = env.str("SUPERSTEP_OIDC_TOKEN_URL", "")
OIDC_OP_USER_ENDPOINT: str = env.str("SUPERSTEP_OIDC_USERINFO_URL", "")
OIDC_OP_JWKS_ENDPOINT: str = env.str("SUPERSTEP_OIDC_JWKS_URL", "")
OIDC_RP_SIGN_ALGO: str = env.str("SUPERSTEP_OIDC_SIGN_ALGO", "") or "RS256"
OIDC_RP_SCOPES = "openid email profile"
OIDC_USE_PKCE = True
# The library waits forever by default: a provider that hangs would hold a server thread.
OIDC_TIMEOUT = 10
LOGIN_REDIRECT_URL_FAILURE = "/login/"
if SUPERSTEP_OIDC_ENABLED:
    _missing = [
        name
        for name, value in (
            ("SUPERSTEP_OIDC_CLIENT_SECRET", OIDC_RP_CLIENT_SECRET),
            ("SUPERSTEP_OIDC_ISSUER", SUPERSTEP_OIDC_ISSUER),
        )
        if not value
    ]
    if _missing:
        raise ImproperlyConfigured(
            "SUPERSTEP_OIDC_CLIENT_ID is set, so single sign-on also needs " + ", ".join(_missing)
        )
AUTHENTICATION_BACKENDS = [
    # First: a username locked out from this address goes no further (django-axes).
    "dashboard.access.lockout.LockoutBackend",
    # Permissions only: a user's own and their roles' in one query
    # (dashboard/access/permissions.py).
    "dashboard.access.permissions.RolePermissions",
    "django.contrib.auth.backends.ModelBackend",
    # Does nothing unless single sign-on is on and the request is the provider's callback.
    "dashboard.access.sso.ProviderBackend",
]

SUPERSTEP_WORKFLOW_MODULES = env_list("SUPERSTEP_WORKFLOWS", [])
SUPERSTEP_WORKFLOWS: dict[str, str | list[str]] = {}
# Demo mode: the demo app (its workflows, seed data and `manage.py demo`) is installed. On by
# default exactly where DEBUG is (a machine configured for nothing); production leaves it out.
SUPERSTEP_DEMO = env_bool("SUPERSTEP_DEMO", DEBUG)
if SUPERSTEP_DEMO:
    INSTALLED_APPS.append("dashboard.demo")
# How long a worker owns a run without renewing (it renews every third of it); a dead worker's
# run is taken over this long after its last renewal.
SUPERSTEP_LEASE_SECONDS = env_int("SUPERSTEP_LEASE_SECONDS", 30)
SUPERSTEP_MAX_ATTEMPTS = 3
# Threads that run tasks in embedded mode. SQLite has one writer, so more rarely helps.
SUPERSTEP_EMBEDDED_WORKERS = env_int("SUPERSTEP_EMBEDDED_WORKERS", 2)
# Whether dashboard.config.asgi starts the periodic jobs (lease sweeper...) on threads of the
# server process: by default in embedded mode only, since production runs them from Celery beat
# (`celery -A dashboard beat`). Turning it on beside beat is safe: each period runs once.
SUPERSTEP_BACKGROUND_SERVICES = env_bool("SUPERSTEP_BACKGROUND_SERVICES", SUPERSTEP_EMBEDDED)
# Where operators reach this dashboard ("https://superstep.example.com"): alert emails, Slack
# messages and webhooks link to a run there. Empty: they carry the page's path only.
SUPERSTEP_BASE_URL: str = env.str("SUPERSTEP_BASE_URL", "").strip().rstrip("/")
if SUPERSTEP_BASE_URL and not SUPERSTEP_BASE_URL.startswith(("https://", "http://")):
    raise ImproperlyConfigured(
        f"SUPERSTEP_BASE_URL={SUPERSTEP_BASE_URL!r} must start with https:// or http://"
    )

# Internal hosts, addresses or networks (``10.20.0.0/16``) the server may call on purpose: alert
# and approval webhooks, Slack and single sign-on refuse every other non-public address
# (dashboard/outbound.py says why).
SUPERSTEP_OUTBOUND_ALLOW: list[str] = env_list("SUPERSTEP_OUTBOUND_ALLOW", [])

# How often one caller may knock (dashboard/access/rate_limits.py): a count per period such as
# "600/min", "10/s" or "100/5min"; "off" lifts a limit. Generous for operators and their scripts,
# tight for sign-in. Counted in the cache: Redis in production, shared by every web process.
SUPERSTEP_RATE_API_TOKEN = env.str("SUPERSTEP_RATE_API_TOKEN", "600/min")
SUPERSTEP_RATE_API_USER = env.str("SUPERSTEP_RATE_API_USER", "1200/min")
SUPERSTEP_RATE_SIGNIN_ADDRESS = env.str("SUPERSTEP_RATE_SIGNIN_ADDRESS", "30/min")
SUPERSTEP_RATE_SIGNIN_ACCOUNT = env.str("SUPERSTEP_RATE_SIGNIN_ACCOUNT", "10/min")

# The longest an API token may live, in days (dashboard/access/tokens.py): the Tokens page
# refuses a longer expiry, and a token created without one lives this long.
SUPERSTEP_TOKEN_MAX_DAYS = env_int("SUPERSTEP_TOKEN_MAX_DAYS", 90)

# ------------------------------------------------------------------------------ login lockout

# django-axes (dashboard/access/lockout.py): SUPERSTEP_LOGIN_FAILURE_LIMIT failed passwords for
# one username from one address lock that pair out of the sign-in page and /admin/ for
# SUPERSTEP_LOGIN_LOCKOUT_MINUTES; a success resets the count. API tokens are not affected.
# Behind a proxy the address is uvicorn's --proxy-headers one (FORWARDED_ALLOW_IPS).
AXES_ENABLED = env_bool("SUPERSTEP_LOGIN_LOCKOUT", True)
AXES_FAILURE_LIMIT = env_int("SUPERSTEP_LOGIN_FAILURE_LIMIT", 5)
AXES_COOLOFF_TIME = _dt.timedelta(minutes=env_int("SUPERSTEP_LOGIN_LOCKOUT_MINUTES", 15))
AXES_LOCKOUT_PARAMETERS = [["username", "ip_address"]]
AXES_RESET_ON_SUCCESS = True
# Failures only: axes' log of every successful sign-in would grow with no retention, and the
# audit log is where lockouts are read.
AXES_DISABLE_ACCESS_LOG = True
AXES_LOCKOUT_CALLABLE = "dashboard.access.lockout.lockout_response"
if AXES_FAILURE_LIMIT < 1 or AXES_COOLOFF_TIME.total_seconds() < 60:
    raise ImproperlyConfigured(
        "SUPERSTEP_LOGIN_FAILURE_LIMIT must be at least 1 and SUPERSTEP_LOGIN_LOCKOUT_MINUTES"
        " at least 1"
    )

# A file each Celery worker touches every few seconds and removes when it stops, for an
# orchestrator's probe (dashboard/execution/heartbeat.py). Empty: none.
SUPERSTEP_WORKER_HEARTBEAT_FILE: str = env.str("SUPERSTEP_WORKER_HEARTBEAT_FILE", "").strip()

# ------------------------------------------------------------------------------ tracing

# OpenTelemetry traces of runs (workflows/tracing.py; needs the "tracing" extra). Exported with
# OTLP over HTTP when the standard OTEL_EXPORTER_OTLP_ENDPOINT (or ..._TRACES_ENDPOINT) is set,
# the OTEL_* variables configuring the exporter as usual; SUPERSTEP_TRACE_FILE writes spans as
# JSON lines instead (a test or a quick look). See dashboard/config/telemetry.py.
SUPERSTEP_TRACE_FILE: str = env.str("SUPERSTEP_TRACE_FILE", "")
# A link from a run page to its trace: "{trace_id}" is replaced by the 32-hex trace id, e.g.
# "https://grafana.example/explore?traceId={trace_id}" or "http://jaeger:16686/trace/{trace_id}".
SUPERSTEP_TRACE_URL: str = env.str("SUPERSTEP_TRACE_URL", "")
if SUPERSTEP_TRACE_URL and "{trace_id}" not in SUPERSTEP_TRACE_URL:
    raise ImproperlyConfigured(
        "SUPERSTEP_TRACE_URL must contain {trace_id}, where the run's trace id goes"
    )

# ------------------------------------------------------------------------------ metrics

# Prometheus metrics at /metrics (dashboard/observability): for a scraper sending
# "Authorization: Bearer <SUPERSTEP_METRICS_TOKEN>", or a signed-in staff user. Empty: staff
# only. Processes share values through prometheus_client's PROMETHEUS_MULTIPROC_DIR
# (dashboard/instruments/processes.py); each scrape drops the live gauges of writers that no
# longer exist, which needs them in its PID namespace: turn that off when they are not.
SUPERSTEP_METRICS_TOKEN: str = env.str("SUPERSTEP_METRICS_TOKEN", "")
SUPERSTEP_METRICS_REAP_DEAD_PROCESSES = env_bool("SUPERSTEP_METRICS_REAP_DEAD_PROCESSES", True)

# ------------------------------------------------------------------------------ logging

LOG_LEVEL: str = env.str("LOG_LEVEL", "INFO").upper()
# "json": one JSON object per line, with the run's id, workflow, superstep and trace id where
# known (dashboard/core/logs.py), for a log pipeline; "plain" text lines by default.
SUPERSTEP_LOG_FORMAT: str = env.str("SUPERSTEP_LOG_FORMAT", "plain").strip().lower() or "plain"
if SUPERSTEP_LOG_FORMAT not in ("plain", "json"):
    raise ImproperlyConfigured(
        f"SUPERSTEP_LOG_FORMAT={SUPERSTEP_LOG_FORMAT!r}: use plain (the default) or json"
    )
LOGGING: dict[str, Any] = {
    "version": 1,
    "disable_existing_loggers": False,
    "formatters": {
        "plain": {"format": "%(asctime)s %(levelname)s %(name)s: %(message)s"},
        "json": {"()": "dashboard.core.logs.JsonFormatter"},
    },
    # Containers collect stderr; Django's default mails errors to ADMINS, which we lack.
    "handlers": {"console": {"class": "logging.StreamHandler", "formatter": SUPERSTEP_LOG_FORMAT}},
    "root": {"handlers": ["console"], "level": "WARNING"},
    "loggers": {
        "dashboard": {"level": LOG_LEVEL},
        "workflows": {"level": LOG_LEVEL},
    },
}
