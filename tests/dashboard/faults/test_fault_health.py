"""``/readyz`` of a real Daphne while PostgreSQL stops and starts again.

A PostgreSQL cluster of the test's own (never the shared one on 5432), migrated, and Daphne with
the production settings and persistent connections on it: ``/readyz`` answers 200, turns 503
once the cluster is stopped (``pg_ctl stop -m fast``: every connection cut) while ``/healthz``
stays 200, and answers 200 again once the cluster is back, with no process restarted.
"""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator

import pytest

from tests.helpers.stack import (
    PostgresCluster,
    Stack,
    deployed,
    production_env,
    wait_for,
)

pytestmark = [pytest.mark.slow, pytest.mark.postgres, pytest.mark.redis]

READY = {"database": "ok", "migrations": "ok", "cache": "ok", "channel_layer": "ok"}


@pytest.fixture(scope="module")
def stack(
    cluster: PostgresCluster,
    redis_url: str,
    subprocess_env: Callable[..., dict[str, str]],
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[Stack]:
    """Daphne alone (no worker), on the module's cluster and the suite's Redis."""
    logs = tmp_path_factory.mktemp("fault-health")
    db_url = cluster.create_database("superstep")
    env = production_env(subprocess_env, database_url=db_url, redis_url=redis_url)
    with deployed(env, db_url, logs) as deployment:
        deployment.daphne()
        yield deployment


def probe(stack: Stack, path: str) -> tuple[int, dict[str, object]]:
    try:
        with urllib.request.urlopen(stack.base_url + path, timeout=10) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as error:
        return error.code, json.loads(error.read())


def test_readyz_turns_503_while_postgres_is_stopped_and_200_once_it_is_back(
    stack: Stack, cluster: PostgresCluster
) -> None:
    assert probe(stack, "/readyz") == (200, {"status": "ok", "checks": READY})

    cluster.stop("fast")
    try:
        wait_for(lambda: probe(stack, "/readyz")[0] == 503, "/readyz to answer 503", stack.log)
        status, body = probe(stack, "/readyz")
        assert status == 503
        assert body == {
            "status": "unavailable",
            "checks": {**READY, "database": "unavailable", "migrations": "unavailable"},
        }
        assert probe(stack, "/healthz") == (200, {"status": "ok", "checks": {}})
    finally:
        cluster.start()

    wait_for(lambda: probe(stack, "/readyz")[0] == 200, "/readyz to answer 200", stack.log)
    assert probe(stack, "/readyz") == (200, {"status": "ok", "checks": READY})
    assert not stack.exited(), stack.log()
