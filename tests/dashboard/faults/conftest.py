"""Fixtures of the fault tests: ``cluster``, a PostgreSQL cluster of the module's own."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.helpers.stack import PostgresCluster, postgres_cluster


@pytest.fixture(scope="module")
def cluster() -> Iterator[PostgresCluster]:
    """A cluster on a free port that the module's tests may stop and start (tests that
    define a ``cluster`` of their own shadow this one)."""
    with postgres_cluster() as own:
        yield own
