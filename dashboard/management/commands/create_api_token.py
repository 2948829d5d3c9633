"""``manage.py create_api_token <username> [--name NAME]``: print a new JSON API token once."""

from __future__ import annotations

from typing import Any

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError, CommandParser

from dashboard.access.tokens import create_token


class Command(BaseCommand):
    help = "Create a bearer token for the JSON API; it is printed once and stored only as a hash."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("username")
        parser.add_argument("--name", default="", help="what the token is for")

    def handle(self, *args: Any, username: str, name: str, **options: Any) -> None:
        user = get_user_model().objects.filter(username=username, is_active=True).first()
        if user is None:
            raise CommandError(f"no active user named {username!r}")
        self.stdout.write(create_token(user, name))
