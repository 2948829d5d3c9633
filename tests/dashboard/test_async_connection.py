"""dashboard/checkpoints/async_connection.py: PostgreSQL statements on the caller's event loop.

What ``DjangoCheckpointStorage`` relies on for its saves: the alias's own settings, Django's
exception types, a connection per event loop, a killed connection replaced, and nothing left
open once closed (or the test database could not be dropped).
"""

from __future__ import annotations

import asyncio
import gc
import threading
from collections.abc import AsyncIterator
from typing import Any

import pytest
from asgiref.sync import sync_to_async
from django.db import (
    DatabaseError,
    IntegrityError,
    NotSupportedError,
    ProgrammingError,
    connections,
)

from dashboard.checkpoints.async_connection import AsyncDatabase, close_all

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


def _only(database: AsyncDatabase) -> Any:
    ((_, connection),) = database._connections.values()
    return connection


async def _closed_soon(connection: Any) -> bool:
    for _ in range(100):
        if connection.closed:
            return True
        await asyncio.sleep(0.01)
    return False


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
    killed = _only(database).info.backend_pid

    def kill() -> None:
        with connections["pg"].cursor() as cursor:
            cursor.execute("SELECT pg_terminate_backend(%s)", [killed])

    await sync_to_async(kill)()
    await database.execute(f"INSERT INTO {TABLE} (id) VALUES (%s)", [7])

    assert _only(database).info.backend_pid != killed


async def test_close_closes_every_connection_it_opened(database: AsyncDatabase) -> None:
    connection = _only(database)

    close_all()  # from a coroutine of the connection's own loop: closed on that loop

    assert await _closed_soon(connection)
    await database.execute(f"INSERT INTO {TABLE} (id) VALUES (%s)", [3])  # reopens on demand


def test_close_from_another_thread_closes_on_the_connections_loop() -> None:
    database = AsyncDatabase("pg")
    loop = asyncio.new_event_loop()
    running = threading.Thread(target=loop.run_forever)
    running.start()
    try:
        asyncio.run_coroutine_threadsafe(database.execute("SELECT 1", []), loop).result(30)
        connection = _only(database)

        database.close()

        assert asyncio.run_coroutine_threadsafe(_closed_soon(connection), loop).result(30)
    finally:
        loop.call_soon_threadsafe(loop.stop)
        running.join(30)
        loop.close()
        connections.close_all()


def test_a_connection_whose_loop_closed_is_closed_at_the_next_use() -> None:
    database = AsyncDatabase("pg")
    first = asyncio.new_event_loop()
    first.run_until_complete(database.execute("SELECT 1", []))
    stale = _only(database)
    first.close()

    asyncio.run(database.execute("SELECT 1", []))  # a new loop, as async_to_sync makes

    assert stale.closed
    assert _only(database) is not stale
    database.close()
    connections.close_all()


def test_connections_close_when_the_object_is_collected() -> None:
    database = AsyncDatabase("pg")
    asyncio.run(database.execute("SELECT 1", []))
    connection = _only(database)

    del database
    gc.collect()

    assert connection.closed
    connections.close_all()


async def test_two_first_statements_on_one_loop_share_one_connection() -> None:
    database = AsyncDatabase("pg")
    try:
        await asyncio.gather(*(database.execute("SELECT pg_sleep(0.05)", []) for _ in range(3)))

        assert len(database._connections) == 1
    finally:
        database.close()
        await sync_to_async(connections.close_all)()


async def test_a_sqlite_alias_is_refused_by_name() -> None:
    with pytest.raises(NotSupportedError, match="'default' is sqlite"):
        await AsyncDatabase("default").execute("SELECT 1", [])


def test_database_errors_share_djangos_base_class() -> None:
    assert issubclass(IntegrityError, DatabaseError)
