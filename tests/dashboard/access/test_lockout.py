"""Login lockout (django-axes, ``dashboard.access.lockout``): five failed passwords for one
username from one address lock it out of the sign-in page and the admin, its right password
too, with a sentence and an audit entry; its API tokens keep working."""

from __future__ import annotations

import datetime as dt
from typing import Any

import pytest
from django.contrib.auth.models import Group, User
from django.test import Client
from django.utils import timezone

from dashboard.access import tokens
from dashboard.models import AuditEntry

pytestmark = pytest.mark.django_db

PASSWORD = "the-right-password-1"
LOCKED = "locked from your address for 15 minutes"


@pytest.fixture
def lee() -> User:
    user = User.objects.create_user("lee", password=PASSWORD, is_staff=True, is_superuser=True)
    user.groups.add(Group.objects.get(name="Operator"))
    return user


def sign_in(client: Client, password: str, path: str = "/login/") -> Any:
    return client.post(path, {"username": "lee", "password": password}, REMOTE_ADDR="10.0.0.7")


def fail(client: Client, times: int, path: str = "/login/") -> list[int]:
    return [sign_in(client, f"wrong-{n}", path).status_code for n in range(times)]


def test_lockout_after_five_failures_refuses_the_right_password_with_a_sentence(
    client: Client, lee: User
) -> None:
    assert fail(client, 4) == [200] * 4  # the form again, with its error
    locked = sign_in(client, "wrong-5")
    right = sign_in(client, PASSWORD)

    assert locked.status_code == right.status_code == 429
    assert LOCKED in right.content.decode()
    assert "_auth_user_id" not in client.session
    entries = AuditEntry.objects.filter(action="login_locked_out")
    assert entries.count() == 2  # the lockout, and the sign-in refused during it
    entry = entries.order_by("id").first()
    assert entry is not None
    assert (entry.outcome, entry.target, entry.actor_name) == (
        AuditEntry.DENIED,
        "lee",
        "anonymous",
    )
    assert entry.ip == "10.0.0.7" and entry.details["failures"] == 5


def test_lockout_covers_the_admins_sign_in(client: Client, lee: User) -> None:
    statuses = fail(client, 5, "/admin/login/")
    right = sign_in(client, PASSWORD, "/admin/login/")

    assert statuses[-1] == right.status_code == 429
    assert client.get("/admin/").status_code == 302  # still signed out
    assert AuditEntry.objects.filter(action="login_locked_out", target="lee").exists()


def test_lockout_leaves_the_api_tokens_of_a_locked_out_user_working(
    client: Client, lee: User
) -> None:
    secret = tokens.create_token(lee, name="ci")
    fail(client, 5)

    answer = Client().get("/api/runs/", headers={"authorization": f"Bearer {secret}"})

    assert sign_in(client, PASSWORD).status_code == 429
    assert answer.status_code == 200, answer.content


def test_lockout_is_per_address_and_ends_after_the_cool_off(client: Client, lee: User) -> None:
    fail(client, 5)
    elsewhere = Client().post(
        "/login/", {"username": "lee", "password": PASSWORD}, REMOTE_ADDR="10.0.0.8"
    )
    assert elsewhere.status_code == 302  # signed in from another address

    from axes.models import AccessAttempt

    AccessAttempt.objects.update(attempt_time=timezone.now() - dt.timedelta(minutes=16))
    assert sign_in(client, PASSWORD).status_code == 302


def test_lockout_count_is_reset_by_a_success(client: Client, lee: User) -> None:
    fail(client, 4)
    assert sign_in(client, PASSWORD).status_code == 302
    client.logout()

    assert fail(client, 4) == [200] * 4
    assert sign_in(client, PASSWORD).status_code == 302
