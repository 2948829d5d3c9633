"""Rate limits (dashboard/access/rate_limits.py): per token and per user on the JSON API, per
address and per account on the sign-in page; refused with 429, ``Retry-After`` and a sentence
(the API's JSON error format, the sign-in page's error box); counted under digests only."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest
from django.core.cache import cache
from django.core.exceptions import ImproperlyConfigured
from django.test import Client, override_settings

from dashboard.access import rate_limits
from dashboard.access.tokens import create_token

PASSWORD = "a long enough password 1"


@pytest.fixture(autouse=True)
def fresh_counters(db: Any) -> Iterator[None]:
    """The test settings' local-memory cache: counters of another test's minute are gone."""
    cache.clear()
    yield
    cache.clear()


@pytest.fixture
def ops(role_user: Callable[..., Any]) -> Any:
    user = role_user("ops-rate", "Operator")
    user.set_password(PASSWORD)
    user.save()
    return user


def bearer(token: str) -> Any:
    return Client().get("/api/runs/", headers={"Authorization": f"Bearer {token}"})


@pytest.mark.parametrize(
    ("text", "limit"),
    [
        ("600/min", rate_limits.Limit(600, 60)),
        ("10/s", rate_limits.Limit(10, 1)),
        ("100/5min", rate_limits.Limit(100, 300)),
        (" 3 / hour ", rate_limits.Limit(3, 3600)),
        ("off", None),
        ("", None),
    ],
)
def test_rates_read_as_a_count_per_period(text: str, limit: rate_limits.Limit | None) -> None:
    assert rate_limits.parse_rate(text) == limit


@pytest.mark.parametrize("text", ["600", "ten/min", "5/fortnight", "-1/min"])
def test_a_rate_that_does_not_read_is_a_configuration_error(text: str) -> None:
    with pytest.raises(ImproperlyConfigured, match="SUPERSTEP_RATE_API_USER"):
        rate_limits.parse_rate(text, "SUPERSTEP_RATE_API_USER")


@override_settings(SUPERSTEP_RATE_API_TOKEN="3/min")
def test_a_token_over_its_limit_is_refused_with_429_and_when_to_retry(ops: Any) -> None:
    token, other = create_token(ops, "script"), create_token(ops, "another script")

    assert [bearer(token).status_code for _ in range(3)] == [200, 200, 200]
    refused = bearer(token)

    assert refused.status_code == 429
    assert refused.json()["error"].startswith("too many requests with this token; try again in")
    assert 1 <= int(refused["Retry-After"]) <= 60
    assert bearer(other).status_code == 200  # a limit per token: the other one is untouched


@override_settings(SUPERSTEP_RATE_API_TOKEN="3/min")
def test_a_loop_with_a_wrong_token_is_refused_before_the_token_is_looked_up() -> None:
    assert [bearer("sst_wrong").status_code for _ in range(3)] == [401, 401, 401]
    assert bearer("sst_wrong").status_code == 429


@override_settings(SUPERSTEP_RATE_API_USER="4/min")
def test_a_users_tokens_and_session_share_the_users_limit(ops: Any) -> None:
    session = Client()
    session.force_login(ops)
    token_a, token_b = create_token(ops, "a"), create_token(ops, "b")

    codes = [bearer(token_a).status_code, bearer(token_b).status_code]
    codes += [session.get("/api/runs/").status_code, bearer(token_a).status_code]
    assert codes == [200, 200, 200, 200]
    refused = session.get("/api/runs/")
    assert refused.status_code == 429 and "API requests from you" in refused.json()["error"]
    assert bearer(token_b).status_code == 429


def test_the_counters_hold_no_token_and_no_name(ops: Any) -> None:
    token = create_token(ops, "secret-script")
    with override_settings(SUPERSTEP_RATE_API_TOKEN="100/min", SUPERSTEP_RATE_API_USER="100/min"):
        assert bearer(token).status_code == 200
    keys = " ".join(str(key) for key in cache._cache)  # type: ignore[attr-defined]
    assert "superstep:rate:api-token:" in keys and "superstep:rate:api-user:" in keys
    assert token not in keys and token[4:20] not in keys


def sign_in(client: Client, username: str, password: str) -> Any:
    return client.post("/login/", {"username": username, "password": password})


@override_settings(SUPERSTEP_RATE_SIGNIN_ACCOUNT="2/min")
def test_an_account_guessed_at_too_often_is_refused_even_with_its_password(ops: Any) -> None:
    client = Client()
    assert [sign_in(client, "ops-rate", "guess").status_code for _ in range(2)] == [200, 200]

    refused = sign_in(client, "OPS-rate", PASSWORD)  # the name's case does not reset the count

    assert refused.status_code == 429 and int(refused["Retry-After"]) >= 1
    assert "Too many sign-in attempts for this account; try again in" in refused.text
    assert "_auth_user_id" not in client.session
    assert sign_in(Client(), "someone-else", "guess").status_code == 200  # per account


@override_settings(SUPERSTEP_RATE_SIGNIN_ADDRESS="3/min")
def test_one_address_trying_many_accounts_is_refused(ops: Any) -> None:
    client = Client()
    codes = [sign_in(client, f"user-{n}", "guess").status_code for n in range(3)]
    assert codes == [200, 200, 200]
    refused = sign_in(client, "ops-rate", PASSWORD)
    assert refused.status_code == 429
    assert "Too many sign-in attempts from your address" in refused.text
    other_address = Client(REMOTE_ADDR="203.0.113.9")
    assert sign_in(other_address, "ops-rate", PASSWORD).status_code == 302


HITS = """
import django, sys
django.setup()
from dashboard.access import rate_limits
for _ in range(int(sys.argv[2])):
    try:
        rate_limits.hit("api-token", sys.argv[1], "SUPERSTEP_RATE_API_TOKEN", "requests")
        print("ok")
    except rate_limits.RateLimited as exc:
        print(f"refused {exc.retry_after}")
"""


@pytest.mark.redis
@pytest.mark.slow
def test_two_processes_share_one_counter_through_redis(
    redis_url: str, subprocess_env: Callable[..., dict[str, str]], tmp_path: Any
) -> None:
    """Production counts in Redis: a token's requests to two web processes add up to one
    limit (five per window here, a window far longer than the test)."""
    import subprocess
    import sys
    import uuid

    from tests.helpers.stack import BASE_DIR, production_env

    env = production_env(
        subprocess_env, database_url=f"sqlite:///{tmp_path / 'unused.sqlite3'}", redis_url=redis_url
    )
    env["SUPERSTEP_RATE_API_TOKEN"] = "5/1000d"
    token = f"sst_{uuid.uuid4().hex}"

    def process(hits: int) -> list[str]:
        done = subprocess.run(
            [sys.executable, "-c", HITS, token, str(hits)],
            cwd=BASE_DIR,
            env=env,
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
        assert done.returncode == 0, done.stderr[-2000:]
        return done.stdout.split("\n")[:-1]

    assert process(3) == ["ok", "ok", "ok"]
    second = process(3)
    assert second[:2] == ["ok", "ok"] and second[2].startswith("refused ")
