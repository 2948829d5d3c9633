"""Fixtures of the fault tests, each of the module's own: ``cluster``, a PostgreSQL cluster;
``logs``, the folder of its processes' logs; ``redis``, a Redis server, for the tests that kill
it (the others have ``own_deployment`` start one). Tests that define one of these themselves
shadow it."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.helpers.stack import PostgresCluster, RedisServer, postgres_cluster, redis_server


@pytest.fixture(scope="module")
def cluster() -> Iterator[PostgresCluster]:
    """A cluster on a free port that the module's tests may stop and start."""
    with postgres_cluster() as own:
        yield own


@pytest.fixture(scope="module")
def logs(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp(request.module.__name__.rsplit(".", 1)[-1])


@pytest.fixture(scope="module")
def redis(logs: Path) -> Iterator[RedisServer]:
    """On a free port, without persistence: killed, it comes back empty."""
    with redis_server(logs) as own:
        yield own
