"""``manage.py create_api_token <username> [--name NAME] [--scopes read,operate] [--days N]``:
print a new JSON API token once.

By default the token has every scope its user's roles give now and lives the longest an Admin
allows (``SUPERSTEP_TOKEN_MAX_DAYS``); ``services.token_create`` checks and audits, as for the
Tokens page.
"""

from __future__ import annotations

from typing import Any

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError, CommandParser

from dashboard import services
from dashboard.access import tokens


class Command(BaseCommand):
    help = "Create a bearer token for the JSON API; it is printed once and stored only as a hash."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("username")
        parser.add_argument("--name", default="", help="what the token is for")
        parser.add_argument(
            "--scopes",
            default="",
            help=f"comma-separated, of {', '.join(tokens.SCOPES)}; default: all the roles give",
        )
        parser.add_argument(
            "--days", type=int, default=None, help="days until it expires; default: the longest"
        )

    def handle(
        self, *args: Any, username: str, name: str, scopes: str, days: int | None, **options: Any
    ) -> None:
        user = get_user_model().objects.filter(username=username, is_active=True).first()
        if user is None:
            raise CommandError(f"no active user named {username!r}")
        chosen = [s.strip() for s in scopes.split(",") if s.strip()] or services.allowed_scopes(
            user
        )
        try:
            _, text = services.token_create(
                user,
                name=name or "command line",
                scopes=chosen,
                days=tokens.max_days() if days is None else days,
                user=None,
            )
        except services.ServiceError as exc:
            problems = "; ".join(f"{field}: {message}" for field, message in exc.errors.items())
            raise CommandError(f"{exc.message} {problems}".strip()) from exc
        self.stdout.write(text)
