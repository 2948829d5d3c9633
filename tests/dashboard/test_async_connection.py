"""dashboard/async_connection.py: PostgreSQL statements on the caller's event loop.

What ``DjangoCheckpointStorage`` relies on for its saves: the alias's own settings, Django's
exception types, a connection per event loop, a killed connection replaced, and nothing left
open once closed (or the test database could not be dropped).
"""

from __future__ import annotations

import asyncio
import gc
from collections.abc import AsyncIterator

import pytest
from asgiref.sync import sync_to_async
from django.db import (
    DatabaseError,
    IntegrityError,
    NotSupportedError,
    ProgrammingError,
    connections,
)

from dashboard.async_connection import AsyncDatabase, close_all

pytestmark = [pytest.mark.postgres, pytest.mark.django_db(databases=["pg"], transaction=True)]

TABLE = "async_connection_probe"


@pytest.fixture
async def database() -> AsyncIterator[AsyncDatabase]:
    database = AsyncDatabase("pg")
    await database.execute(f"CREATE TABLE IF NOT EXISTS {TABLE} (id int PRIMARY KEY)", [])
    yield database
    await database.execute(f"DROP TABLE IF EXISTS {TABLE}", [])
    database.close()
    await sync_to_async(connections.close_all)()


def _only(database: AsyncDatabase) -> object:
    (connection,) = database._connections.values()
    return connection


async def test_a_statement_commits_on_its_own(database: AsyncDatabase) -> None:
    await database.execute(f"INSERT INTO {TABLE} (id) VALUES (%s)", [1])

    def seen_by_django() -> int:
        with connections["pg"].cursor() as cursor:
            cursor.execute(f"SELECT count(*) FROM {TABLE}")
            return int(cursor.fetchone()[0])

    assert await sync_to_async(seen_by_django)() == 1


async def test_errors_come_out_as_djangos_database_exceptions(database: AsyncDatabase) -> None:
    await database.execute(f"INSERT INTO {TABLE} (id) VALUES (%s)", [1])

    with pytest.raises(IntegrityError):
        await database.execute(f"INSERT INTO {TABLE} (id) VALUES (%s)", [1])
    with pytest.raises(ProgrammingError, match="no_such_table"):
        await database.execute("SELECT * FROM no_such_table", [])
    # The connection is still good after a failed statement.
    await database.execute(f"INSERT INTO {TABLE} (id) VALUES (%s)", [2])


async def test_a_killed_connection_is_replaced_and_the_statement_sent_again(
    database: AsyncDatabase,
) -> None:
    killed = _only(database).info.backend_pid  # type: ignore[attr-defined]

    def kill() -> None:
        with connections["pg"].cursor() as cursor:
            cursor.execute("SELECT pg_terminate_backend(%s)", [killed])

    await sync_to_async(kill)()
    await database.execute(f"INSERT INTO {TABLE} (id) VALUES (%s)", [7])

    assert _only(database).info.backend_pid != killed  # type: ignore[attr-defined]


async def test_close_closes_every_connection_it_opened(database: AsyncDatabase) -> None:
    connection = _only(database)

    close_all()

    assert connection.closed  # type: ignore[attr-defined]
    await database.execute(f"INSERT INTO {TABLE} (id) VALUES (%s)", [3])  # reopens on demand


def test_a_connection_closes_with_the_event_loop_that_opened_it() -> None:
    database = AsyncDatabase("pg")
    loop = asyncio.new_event_loop()
    loop.run_until_complete(database.execute("SELECT 1", []))
    (connection,) = database._connections.values()
    loop.close()

    del loop
    gc.collect()

    assert connection.closed
    connections.close_all()


async def test_a_sqlite_alias_is_refused_by_name() -> None:
    with pytest.raises(NotSupportedError, match="'default' is sqlite"):
        await AsyncDatabase("default").execute("SELECT 1", [])


def test_database_errors_share_djangos_base_class() -> None:
    assert issubclass(IntegrityError, DatabaseError)
