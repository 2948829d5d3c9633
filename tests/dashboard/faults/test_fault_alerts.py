"""Redis killed and started again (empty) while the workers evaluate alert rules.

PostgreSQL and Redis are the test's own; two ``celery worker``s and ``celery beat``
(``evaluate-alerts`` every 15 s, ``retry-notifications`` every 30 s) run with the production
settings. A rule tells a webhook and a Slack URL, both served by a receiver on 127.0.0.1 here,
about failed runs, and eight runs have failed.

Beat's evaluation, on one worker, is held as it opens its fourth incident (``held_at``): three
incidents committed with their six notifications, queued for delivery; the other worker in the
middle of delivering one (the receiver holds its answer). Redis is killed there, with the
other five deliveries in its queue; the evaluation goes on and opens the other five incidents
while Redis is down (their ten deliveries cannot be queued); then Redis is started again,
empty.

Exactly one notification per incident and channel reaches the receiver: eight incidents, each
announced once on the webhook (one ``webhook-id``, signed) and once on Slack, every
notification row sent, one ``alert_opened`` audit entry per incident. The fifteen whose
message was lost or never queued are sent by the retry sweep, and none twice.
"""

from __future__ import annotations

import collections
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from standardwebhooks import Webhook

from tests.browser.deadlines import seconds
from tests.dashboard.services.test_alerts import Receiver
from tests.helpers.alert_driver import SECRET
from tests.helpers.stack import (
    PostgresCluster,
    RedisServer,
    Stack,
    held_at,
    own_deployment,
    wait_for,
)

pytestmark = [
    pytest.mark.slow,
    pytest.mark.postgres,
    pytest.mark.redis,
    pytest.mark.timeout(seconds(200)),
]

INCIDENTS = 8
HELD = 4
DRIVER = "alert_driver.py"


@pytest.fixture(scope="module")
def receiver() -> Iterator[Receiver]:
    with Receiver() as running:
        yield running


@pytest.fixture(scope="module")
def stack(
    cluster: PostgresCluster,
    redis: RedisServer,
    receiver: Receiver,
    logs: Path,
    subprocess_env: Callable[..., dict[str, str]],
) -> Iterator[Stack]:
    """Workers ``w1`` and ``w2`` and beat; the rule and its failed runs."""
    with own_deployment(cluster, logs, subprocess_env, redis=redis) as deployment:
        seeded = deployment.driver("seed", str(INCIDENTS), receiver.url, script=DRIVER)
        assert seeded == {"failed": INCIDENTS}
        deployment.worker("w1")
        deployment.worker("w2")
        deployment.beat()
        yield deployment


def notifications(stack: Stack) -> list[dict[str, Any]]:
    return stack.query(
        "SELECT id, kind, incident_id, sent_at, claim_token, attempts FROM dashboard_notification"
    )


def incidents(stack: Stack) -> list[dict[str, Any]]:
    return stack.query("SELECT id FROM dashboard_alertincident")


def sent(stack: Stack) -> int:
    rows = stack.query("SELECT count(*) AS n FROM dashboard_notification WHERE sent_at IS NOT NULL")
    return int(rows[0]["n"])


def evaluating(stack: Stack) -> bool:
    """Whether an ``evaluate-alerts`` pass has claimed its period and not finished."""
    rows = stack.query(
        "SELECT count(*) AS n FROM dashboard_periodicjobrun"
        " WHERE job = 'evaluate-alerts' AND finished_at IS NULL"
    )
    return bool(rows[0]["n"])


def test_each_incident_is_notified_once_when_redis_restarts_during_the_evaluation(
    stack: Stack, redis: RedisServer, receiver: Receiver
) -> None:
    pids = {name: process.pid for name, process in stack.processes.items()}
    receiver.answering.clear()  # the free worker stays in its first delivery: the rest queue up
    with held_at(stack, "dashboard_alertincident", "TRUE", HELD) as gate:
        try:
            gate.wait(f"beat's evaluation to open incident {HELD}")
            wait_for(lambda: len(receiver.posts) == 1, "the other worker to deliver", stack.log)
            redis.kill()  # with the other five deliveries of the first incidents queued in it
        finally:
            receiver.answering.set()
        gate.release()
        wait_for(
            lambda: not evaluating(stack) and len(incidents(stack)) == INCIDENTS,
            "the evaluation to open every incident while Redis is down",
            stack.log,
        )
        wait_for(lambda: sent(stack) == 1, "the delivery in flight to be sent", stack.log)
        (back,) = stack.query("SELECT now() AS at")
        redis.start()  # the same port, empty

    wait_for(
        lambda: sent(stack) == 2 * INCIDENTS,
        "every notification to be sent",
        lambda: f"{notifications(stack)}\n{stack.log()}",
    )

    rows = notifications(stack)
    opened_incidents = incidents(stack)
    assert len(opened_incidents) == INCIDENTS
    assert collections.Counter((n["incident_id"], n["kind"]) for n in rows) == {
        (i["id"], kind): 1 for i in opened_incidents for kind in ("webhook", "slack")
    }
    assert all(n["claim_token"] == "" for n in rows)  # no attempt left in flight: none to come
    hooks = [(headers, body) for path, headers, body in receiver.posts if path == "/webhook"]
    slacks = receiver.bodies("/slack")
    per_incident = collections.Counter(
        Webhook(SECRET).verify(b, h)["incident_id"] for h, b in hooks
    )
    assert per_incident == {i["id"]: 1 for i in opened_incidents}, per_incident
    assert len({h["webhook-id"] for h, _ in hooks}) == INCIDENTS
    assert len(slacks) == len({s["text"] for s in slacks}) == INCIDENTS, slacks
    opened = stack.query(
        "SELECT count(*) AS n FROM dashboard_auditentry WHERE action = 'alert_opened'"
    )
    assert opened[0]["n"] == INCIDENTS
    # Lost with the queue (five) or never queued (ten): sent by the retry sweep.
    sent_after = sum(n["sent_at"] > back["at"] for n in rows)
    assert sent_after == 2 * INCIDENTS - 1, sent_after
    assert not stack.exited(), stack.log()
    assert {name: process.pid for name, process in stack.processes.items()} == pids
    print(
        f"\n{INCIDENTS} incidents, {len(rows)} notifications each sent once;"
        f" {sent_after} of them after Redis was back"
    )
