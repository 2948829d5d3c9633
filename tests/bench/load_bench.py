"""``tests/bench/load_bench.py [--users 50] [--duration 300]``: operators browsing a deployment.

Starts the documented production recipe on this machine (README, "Production") and drives it
the way a room of operators would: each signed-in user clicks through the runs list, run
pages, the event log, checkpoints, the approval inbox, the storage page and the JSON API, with
0.2–1 s of thought between clicks, while runs keep starting (through the API) and executing on
a real Celery worker. Prints requests, errors and p50/p95/p99 per page and overall.

What it starts, and removes again: a PostgreSQL database of its own on the server
``SUPERSTEP_BENCH_POSTGRES_URL`` points at (default the local one; that URL's database is never
touched), a ``redis-server`` on a free port, one ``celery -A dashboard worker`` and the HTTP
server: ``--server uvicorn`` (the recipe, ``--web-workers`` processes) or ``--server daphne``
(one process, the recipe before) for comparison.

The load comes from aiohttp on one event loop, so the client costs little CPU beside the
server it measures (two cores shared by everything above). Sessions are created in the
database rather than by posting the login form, whose password hashing would only measure
PBKDF2. This process never loads Django: a child with the deployment's environment prepares
the database (``--prepare``).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import random
import secrets
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import aiohttp  # noqa: E402
from cpu_shares import CpuShares  # noqa: E402
from load_traffic import Tally, Targets, browse, listen, start_runs  # noqa: E402
from scratch_database import create_database, drop_database  # noqa: E402

SERVER_URL = os.environ.get(
    "SUPERSTEP_BENCH_POSTGRES_URL", "postgres://postgres@127.0.0.1:5432/postgres"
)
SEEDED_RUNS = 2_000


def _environment(
    database_url: str, redis_url: str, logs: Path, pool: int, profile: Path | None = None
) -> dict[str, str]:
    """Production settings as the README's table sets them: DEBUG off, both service URLs
    (with ``profile``, the web server profiles itself into that folder: web_profile.py)."""
    profiling = (
        {
            "DJANGO_SETTINGS_MODULE": "web_profile_settings",
            "PYTHONPATH": os.pathsep.join(
                filter(
                    None, [str(Path(__file__).resolve().parent), os.environ.get("PYTHONPATH", "")]
                )
            ),
            "SUPERSTEP_WEB_PROFILE_DIR": str(profile),
        }
        if profile
        else {}
    )
    return {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "dashboard.config.settings",
        "DEBUG": "0",
        "SECRET_KEY": secrets.token_urlsafe(50),
        "DATABASE_URL": database_url,
        "REDIS_URL": redis_url,
        "ALLOWED_HOSTS": "127.0.0.1,localhost",
        "SECURE_SSL_REDIRECT": "0",
        "SUPERSTEP_DEMO": "1",
        # Fifty operators from one address, signing in at once and browsing as fast as they
        # can: the rate limits would measure themselves, not the pages.
        "SUPERSTEP_RATE_SIGNIN_ADDRESS": "off",
        "SUPERSTEP_RATE_SIGNIN_ACCOUNT": "off",
        "SUPERSTEP_RATE_API_TOKEN": "off",
        "SUPERSTEP_RATE_API_USER": "off",
        "LOG_LEVEL": "WARNING",
        "STATIC_ROOT": str(logs / "static"),
        "DATABASE_POOL_SIZE": str(pool),
        **profiling,
    }


def _server_command(args: argparse.Namespace, port: int) -> list[str]:
    """The HTTP server as the README's production recipe runs it."""
    if args.server == "daphne":
        return [
            sys.executable,
            "-m",
            "daphne",
            "--proxy-headers",
            "-b",
            "127.0.0.1",
            "-p",
            str(port),
            "dashboard.config.asgi:application",
        ]
    return [
        sys.executable,
        "-m",
        "uvicorn",
        "--host",
        "127.0.0.1",
        "--port",
        str(port),
        "--workers",
        str(args.web_workers),
        "--proxy-headers",
        "--ws",
        "websockets-sansio",
        "--ws-max-size",
        "65536",
        "--lifespan",
        "off",
        "--no-access-log",
        "dashboard.config.asgi:application",
    ]


def _prepare(users: int, seed: int) -> dict[str, Any]:
    """In the child: the recipe's migrate and collectstatic, then finished runs and the
    signed-in operators; returns their cookies and an API token."""
    import django

    django.setup()
    from django.conf import settings
    from django.core.management import call_command
    from pages_bench import seed_runs

    call_command("migrate", interactive=False, verbosity=0)
    call_command("collectstatic", interactive=False, verbosity=0)
    seed_runs(seed)
    return {
        "cookies": [f"{settings.SESSION_COOKIE_NAME}={key}" for key in _operator_sessions(users)],
        "token": _api_token(),
    }


def _operator_sessions(count: int) -> list[str]:
    """``count`` users in the Operator role, each signed in: their session keys."""
    from django.contrib.auth import (
        BACKEND_SESSION_KEY,
        HASH_SESSION_KEY,
        SESSION_KEY,
        get_user_model,
    )
    from django.contrib.auth.models import Group
    from django.contrib.sessions.backends.db import SessionStore

    role = Group.objects.get(name="Operator")
    keys = []
    for index in range(count):
        user = get_user_model().objects.create_user(f"load-operator-{index}")
        user.groups.add(role)
        session = SessionStore()
        session[SESSION_KEY] = str(user.pk)
        session[BACKEND_SESSION_KEY] = "django.contrib.auth.backends.ModelBackend"
        session[HASH_SESSION_KEY] = user.get_session_auth_hash()
        session.create()
        assert session.session_key is not None
        keys.append(session.session_key)
    return keys


def _api_token() -> str:
    """A bearer token of an operator, for the client that keeps starting runs."""
    from django.contrib.auth import get_user_model

    from dashboard.access.tokens import create_token

    return create_token(get_user_model().objects.get(username="load-operator-0"), "load bench")


@contextlib.contextmanager
def _deployment(args: argparse.Namespace, logs: Path) -> Iterator[tuple[str, str, dict[str, Any]]]:
    """The database, Redis, the worker and the HTTP server; yields the server's and the
    database's URLs and what ``_prepare`` made."""
    from tests.helpers.stack import RedisServer, Stack, answers, free_port, wait_for

    database_url = create_database(SERVER_URL, "superstep_load")
    redis = RedisServer(logs)
    stack: Stack | None = None
    try:
        redis.start()
        stack = Stack(
            _environment(database_url, redis.url, logs, args.pool, args.profile), database_url, logs
        )
        prepared = subprocess.run(
            [sys.executable, __file__, "--prepare", str(args.users), str(args.seed_runs)],
            env=stack.env,
            cwd=ROOT,
            capture_output=True,
            text=True,
            timeout=600,
            check=False,
        )
        if prepared.returncode != 0:
            raise RuntimeError(f"preparing the database failed:\n{prepared.stderr[-3000:]}")
        worker = stack.start(
            "worker",
            sys.executable,
            "-m",
            "celery",
            "-A",
            "dashboard",
            "worker",
            "--concurrency",
            "1",
            "--loglevel",
            "WARNING",
            "--without-mingle",
            "--without-gossip",
        )
        port = free_port()
        web = stack.start("web", *_server_command(args, port))
        base_url = f"http://127.0.0.1:{port}"
        wait_for(lambda: answers(base_url), "the HTTP server to answer", stack.log, 120)
        prepared_data = json.loads(prepared.stdout.splitlines()[-1])
        roots = {"web server": web.pid, "celery worker": worker.pid}
        yield base_url, database_url, {**prepared_data, "roots": roots}
    finally:
        if stack is not None:
            stack.stop_all()
        redis.stop()
        drop_database(database_url)


async def _load(
    args: argparse.Namespace, base_url: str, database_url: str, prepared: dict[str, Any]
) -> Tally:
    tally = Tally()
    targets = Targets(database_url)
    await targets.refresh()
    deadline = time.monotonic() + args.duration
    connector = aiohttp.TCPConnector(limit=0)
    timeout = aiohttp.ClientTimeout(total=args.timeout)
    async with (
        aiohttp.ClientSession(base_url, connector=connector, timeout=timeout) as client,
        asyncio.TaskGroup() as group,
    ):
        group.create_task(targets.keep_fresh(deadline))
        group.create_task(
            start_runs(client, prepared["token"], deadline, args.start_every, targets)
        )
        for index, cookie in enumerate(prepared["cookies"]):
            group.create_task(listen(client, cookie, base_url, deadline, tally))
            group.create_task(
                browse(
                    client, cookie, random.Random(index), deadline, targets, tally, think=args.think
                )
            )
    return tally


def _arguments(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--users", type=int, default=50, help="operators at once (default 50)")
    parser.add_argument("--duration", type=float, default=300, help="seconds (default 300)")
    parser.add_argument(
        "--think",
        type=float,
        nargs=2,
        default=(0.2, 1.0),
        metavar=("MIN", "MAX"),
        help="seconds between one user's clicks (default 0.2 1.0)",
    )
    parser.add_argument(
        "--server",
        choices=("uvicorn", "daphne"),
        default="uvicorn",
        help="uvicorn: the production recipe; daphne: one process, as before",
    )
    parser.add_argument(
        "--web-workers",
        type=int,
        default=os.cpu_count() or 2,
        help="uvicorn worker processes (default: one per CPU)",
    )
    parser.add_argument(
        "--pool",
        type=int,
        default=8,
        help="DATABASE_POOL_SIZE of every process (default 8, the recipe's; 0: none)",
    )
    parser.add_argument(
        "--seed-runs",
        type=int,
        default=SEEDED_RUNS,
        help=f"finished runs in the database first (default {SEEDED_RUNS})",
    )
    parser.add_argument(
        "--start-every",
        type=float,
        default=2.0,
        help="seconds between runs started through the API meanwhile (default 2)",
    )
    parser.add_argument("--timeout", type=float, default=30.0, help="per request, seconds")
    parser.add_argument(
        "--profile",
        type=Path,
        default=None,
        metavar="DIR",
        help="each web process writes its cProfile stats here (web_profile.py)",
    )
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["--prepare"]:
        print(json.dumps(_prepare(int(argv[1]), int(argv[2]))))
        return 0
    args = _arguments(argv)
    with (
        tempfile.TemporaryDirectory(prefix="superstep-load-") as folder,
        _deployment(args, Path(folder)) as (base_url, database_url, prepared),
    ):
        server = f"uvicorn x{args.web_workers}" if args.server == "uvicorn" else "daphne"
        server += f", database pool {args.pool}" if args.pool else ", no database pool"
        print(
            f"{args.users} users for {args.duration:.0f} s against {server} at {base_url}",
            flush=True,
        )
        shares = CpuShares(prepared["roots"])
        shares.start()
        tally = asyncio.run(_load(args, base_url, database_url, prepared))
        shares.report(sys.stdout)
    tally.report(sys.stdout, args.duration)
    if tally.error_rate() > 0:
        print("\nfirst errors:\n" + "\n".join(tally.error_samples()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
