"""What the integration tests (and the benchmark) ask of a production-configured process.

Run with the environment of the processes under test (``DATABASE_URL``, ``REDIS_URL``...) and
``DJANGO_SETTINGS_MODULE=dashboard.config.settings``; prints one JSON value on its last line::

    python integration_driver.py user NAME ROLE...        # -> an API token for a new user
    python integration_driver.py person NAME PASSWORD ROLE...
        # -> an API token for a new user who can also sign in through the login page
    python integration_driver.py session NAME             # -> a signed-in session id for NAME
    python integration_driver.py sweep                    # -> run ids enqueued again
    python integration_driver.py decide REQUEST_ID N TOKEN
        # -> N HTTP status codes: N threads, each with its own database connection, POST the
        #    same approval through the whole API stack (token auth, JSON, services) at once.

Not a test module (pytest collects ``test_*.py`` only).
"""

from __future__ import annotations

import json
import sys
import threading
from typing import Any

import django


def user(name: str, *roles: str) -> str:
    from django.contrib.auth import get_user_model
    from django.contrib.auth.models import Group

    from dashboard.access.tokens import create_token

    account = get_user_model().objects.create_user(name)
    account.groups.add(*Group.objects.filter(name__in=roles))
    return create_token(account, "integration")


def person(name: str, password: str, *roles: str) -> str:
    from django.contrib.auth import get_user_model

    token = user(name, *roles)
    account = get_user_model().objects.get(username=name)
    account.set_password(password)
    account.save()
    return token


def session(name: str) -> str:
    from django.contrib.auth import get_user_model
    from django.test import Client

    client = Client()
    client.force_login(get_user_model().objects.get(username=name))
    return str(client.cookies["sessionid"].value)


def sweep() -> list[str]:
    from dashboard import services

    return services.runs_sweep()


def decide(request_id: str, count: str, token: str) -> list[int]:
    from django.db import connections
    from django.test import Client

    statuses: list[int] = []
    barrier = threading.Barrier(int(count))

    def one() -> None:
        client = Client(HTTP_HOST="127.0.0.1")
        try:
            barrier.wait(timeout=30)
            response = client.post(
                f"/api/approvals/{request_id}/decide/",
                json.dumps({"decision": "approve", "response": {"discount_percent": 5}}),
                content_type="application/json",
                headers={"Authorization": f"Bearer {token}"},
                secure=True,
            )
            statuses.append(response.status_code)
        finally:
            connections.close_all()

    threads = [threading.Thread(target=one) for _ in range(int(count))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    return sorted(statuses)


COMMANDS: dict[str, Any] = {
    "user": user,
    "person": person,
    "session": session,
    "sweep": sweep,
    "decide": decide,
}

if __name__ == "__main__":
    django.setup()
    command, *arguments = sys.argv[1:]
    print(json.dumps(COMMANDS[command](*arguments)))
