"""``manage.py demo``: migrate, create the demo users, seed demo runs, serve with Daphne.

Its first lines are the URL and the logins: the seeding runs with the engine's INFO lines
held back, and the catalog logs graph-validation notes at DEBUG
(``dashboard.catalog.build_notes``).

The server is a real Daphne process (this command ``exec``s it), the same ASGI application
production runs; dashboard/config/asgi.py starts the background services inside it.
"""

from __future__ import annotations

import contextlib
import importlib
import importlib.util
import logging
import os
import sys
from collections.abc import Iterator
from typing import Any

from django.conf import settings
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group
from django.core.management import call_command
from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.db import transaction

# username -> (password, is_superuser). Each non-admin demo user gets the role of its name.
DEMO_USERS: dict[str, tuple[str, bool]] = {
    "admin": ("admin", True),
    "operator": ("operator", False),
    "approver": ("approver", False),
    "viewer": ("viewer", False),
}
DEMO_ROLES = {"operator": "Operator", "approver": "Approver", "viewer": "Viewer", "admin": "Admin"}
DEMO_DATA_MODULE = "dashboard.demo.data"
# OWASP's bound on inbound websocket messages; our sockets are server -> client anyway.
WEBSOCKET_MAX_MESSAGE_BYTES = 64 * 1024


class Command(BaseCommand):
    help = "Set up a demo database and serve Superstep with Daphne (embedded mode)."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--host", default="127.0.0.1", help="address to bind")
        parser.add_argument("--port", type=int, default=8000, help="port to listen on")
        parser.add_argument("--no-serve", action="store_true", help="prepare everything, then exit")

    def handle(self, *args: Any, host: str, port: int, no_serve: bool, **options: Any) -> None:
        if not settings.DEBUG:
            # The demo users have well-known passwords; never create them in a deployment.
            raise CommandError("demo refuses to run with DEBUG off: it creates known logins")
        call_command("migrate", interactive=False, verbosity=0)
        created = create_demo_users()
        with quiet_engine():
            seeded = seed_demo_data()
        self.print_welcome(host, port, created, seeded)
        if not no_serve:
            serve(host, port)

    def print_welcome(self, host: str, port: int, created: list[str], seeded: bool) -> None:
        url = f"http://{'localhost' if host in {'127.0.0.1', '0.0.0.0'} else host}:{port}/"
        self.stdout.write(self.style.SUCCESS("Superstep demo is ready."))
        self.stdout.write(f"  Dashboard: {url}")
        self.stdout.write(f"  Admin:     {url}admin/")
        self.stdout.write("  Logins (username / password):")
        for username, (password, _) in DEMO_USERS.items():
            note = "" if username in created else "  (existing user, password unchanged)"
            self.stdout.write(f"    {username:<9} / {password}{note}")
        if not seeded:
            self.stdout.write("  (no demo runs: dashboard.demo.data is not installed)")
        self.stdout.flush()


def create_demo_users() -> list[str]:
    """Create missing demo users; existing ones are left exactly as they are."""
    user_model = get_user_model()
    created: list[str] = []
    with transaction.atomic():
        for username, (password, is_superuser) in DEMO_USERS.items():
            if user_model.objects.filter(username=username).exists():
                continue
            if is_superuser:
                user = user_model.objects.create_superuser(username, password=password)
            else:
                user = user_model.objects.create_user(username, password=password)
            role = Group.objects.filter(name=DEMO_ROLES[username]).first()
            if role is not None:  # the roles come from a data migration
                user.groups.add(role)
            created.append(username)
    return created


@contextlib.contextmanager
def quiet_engine() -> Iterator[None]:
    """The engine's INFO lines about the seeded runs ("awaiting user input"...) are not for
    the newcomer reading the start: warnings still show."""
    engine = logging.getLogger("workflows")
    level = engine.level
    engine.setLevel(max(level, logging.WARNING))
    try:
        yield
    finally:
        engine.setLevel(level)


def seed_demo_data() -> bool:
    """Call ``dashboard.demo.data.seed()`` when that module exists."""
    if importlib.util.find_spec(DEMO_DATA_MODULE) is None:
        return False
    importlib.import_module(DEMO_DATA_MODULE).seed()
    return True


def serve(host: str, port: int) -> None:
    """Replace this process with Daphne serving dashboard.config.asgi (never returns)."""
    sys.stdout.flush()
    sys.stderr.flush()
    argv = [
        sys.executable,
        "-m",
        "daphne",
        "--bind",
        host,
        "--port",
        str(port),
        "--websocket-max-message-size",
        str(WEBSOCKET_MAX_MESSAGE_BYTES),
        "dashboard.config.asgi:application",
    ]
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "dashboard.config.settings")
    os.chdir(settings.BASE_DIR)  # `python -m daphne` imports dashboard from the cwd
    os.execv(sys.executable, argv)
