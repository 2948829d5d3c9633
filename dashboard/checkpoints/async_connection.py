"""An asyncio PostgreSQL connection made from a Django database alias.

Django's ORM is synchronous: from an event loop every query hops to a thread and back, and
on a small checkpoint that hop costs as much as the write itself. ``AsyncDatabase`` gives
code that lives on an event loop (``DjangoCheckpointStorage.save``) a psycopg
``AsyncConnection`` opened with the alias's own settings (name, host, credentials, OPTIONS,
``assume_role``, time zone), in autocommit: each statement is its own transaction, committed
when ``execute`` returns. Errors come out as Django's database exceptions, as they would from
a Django cursor, so callers catch one family whichever path wrote.

A connection belongs to the event loop that opened it, one per loop. It is closed when its
loop is found closed (at the next use of the object from any loop), by ``close()``, or when
the object is garbage-collected. A connection whose loop still runs is closed *on* that loop,
never under a statement in flight.
"""

from __future__ import annotations

import asyncio
import threading
import weakref
from typing import Any

import psycopg
from django.db import connections
from django.db import utils as django_errors
from psycopg import sql

__all__ = ["AsyncDatabase", "close_all"]

# Most specific first, as Django's DatabaseErrorWrapper maps them.
_ERROR_TYPES: tuple[type[django_errors.Error], ...] = (
    django_errors.DataError,
    django_errors.OperationalError,
    django_errors.IntegrityError,
    django_errors.InternalError,
    django_errors.ProgrammingError,
    django_errors.NotSupportedError,
    django_errors.DatabaseError,
    django_errors.InterfaceError,
    django_errors.Error,
)


def as_django_error(exc: psycopg.Error) -> django_errors.Error:
    for django_type in _ERROR_TYPES:
        if isinstance(exc, getattr(psycopg, django_type.__name__)):
            error = django_type(*exc.args)
            error.__cause__ = exc
            return error
    return django_errors.Error(*exc.args)  # psycopg.Error itself


_Entry = tuple["weakref.ref[asyncio.AbstractEventLoop]", "psycopg.AsyncConnection[Any]"]


def _close(loop: asyncio.AbstractEventLoop | None, connection: psycopg.AsyncConnection[Any]) -> None:
    """Close ``connection`` without pulling it from under a statement of its loop."""
    if connection.closed:
        return
    if loop is None or loop.is_closed() or not loop.is_running():
        # Nothing can be running on it: libpq's synchronous close needs no loop.
        connection.pgconn.finish()
        return
    try:
        running = asyncio.get_running_loop()
    except RuntimeError:
        running = None
    try:
        if running is loop:
            loop.create_task(connection.close())
        else:
            asyncio.run_coroutine_threadsafe(connection.close(), loop)
    except RuntimeError:  # the loop closed meanwhile
        connection.pgconn.finish()


def _close_entries(entries: list[_Entry]) -> None:
    for loop_ref, connection in entries:
        _close(loop_ref(), connection)


def _close_all_of(table: dict[int, _Entry]) -> None:
    # A finalizer: it holds the table, never the AsyncDatabase.
    entries = list(table.values())
    table.clear()
    _close_entries(entries)


_instances: weakref.WeakSet[AsyncDatabase] = weakref.WeakSet()
_instances_lock = threading.Lock()


def close_all() -> None:
    """Close every connection any ``AsyncDatabase`` has open: what ``connections.close_all()``
    is to Django's own (before dropping a database, at shutdown)."""
    with _instances_lock:
        databases = list(_instances)
    for database in databases:
        database.close()


class AsyncDatabase:
    """Statements on a Django PostgreSQL alias, run on the caller's event loop."""

    def __init__(self, using: str = "default") -> None:
        self.using = using
        # id(loop) -> (weak loop, connection). Not a WeakKeyDictionary: psycopg's lock can
        # hold the loop, and a value holding its key would never be dropped.
        self._connections: dict[int, _Entry] = {}
        self._lock = threading.Lock()
        with _instances_lock:
            _instances.add(self)
        weakref.finalize(self, _close_all_of, self._connections)

    async def execute(self, statement: str, params: list[Any]) -> None:
        """Run one statement in its own transaction; prepared once per connection (unless the
        alias's OPTIONS set ``prepare_threshold`` to None).

        A connection found broken (server restart, network) is replaced and the statement
        sent once more: callers pass statements that are safe to repeat (upserts).

        Raises:
            django.db.Error: the statement failed (IntegrityError, DataError, ...).
        """
        loop = asyncio.get_running_loop()
        for attempt in (1, 2):
            connection = await self._connection(loop)
            try:
                await connection.execute(statement, params, prepare=True)
                return
            except psycopg.Error as exc:
                if attempt == 1 and connection.broken:
                    self._forget(loop, connection)
                    continue
                raise as_django_error(exc) from exc

    async def _connection(self, loop: asyncio.AbstractEventLoop) -> psycopg.AsyncConnection[Any]:
        entry = self._connections.get(id(loop))  # the common case, once per superstep
        if entry is not None and entry[0]() is loop and not entry[1].closed:
            return entry[1]
        # A loop new to this object: the time to close what closed loops left behind.
        with self._lock:
            stale = self._sweep()
        _close_entries(stale)
        connection = await self._connect()
        with self._lock:
            entry = self._connections.get(id(loop))
            if entry is not None and entry[0]() is loop and not entry[1].closed:
                winner = entry[1]  # another task of this loop connected first
            else:
                winner = connection
                self._connections[id(loop)] = (weakref.ref(loop), connection)
        if winner is not connection:
            await connection.close()
        return winner

    def _sweep(self) -> list[_Entry]:
        """Entries whose loop is gone or closed (call with the lock held)."""
        stale = [
            (key, entry)
            for key, entry in self._connections.items()
            if (loop := entry[0]()) is None or loop.is_closed() or entry[1].closed
        ]
        for key, _ in stale:
            del self._connections[key]
        return [entry for _, entry in stale]

    async def _connect(self) -> psycopg.AsyncConnection[Any]:
        wrapper = connections[self.using]
        if wrapper.vendor != "postgresql":
            raise django_errors.NotSupportedError(
                f"database {self.using!r} is {wrapper.vendor}, not PostgreSQL"
            )
        params = wrapper.get_connection_params()
        params.pop("cursor_factory", None)  # Django's synchronous cursor class
        try:
            connection = await psycopg.AsyncConnection.connect(**params, autocommit=True)
        except psycopg.Error as exc:
            raise as_django_error(exc) from exc
        try:
            # What Django does to each of its own connections (see _configure_connection).
            zone = wrapper.timezone_name
            if zone and connection.info.parameter_status("TimeZone") != zone:
                await connection.execute(wrapper.ops.set_time_zone_sql(), [zone])
            if role := wrapper.settings_dict["OPTIONS"].get("assume_role"):
                await connection.execute(sql.SQL("SET ROLE {}").format(sql.Identifier(role)))
        except BaseException as exc:
            await connection.close()
            if isinstance(exc, psycopg.Error):
                raise as_django_error(exc) from exc
            raise
        return connection

    def _forget(
        self, loop: asyncio.AbstractEventLoop, connection: psycopg.AsyncConnection[Any]
    ) -> None:
        with self._lock:
            entry = self._connections.get(id(loop))
            if entry is not None and entry[1] is connection:
                del self._connections[id(loop)]
        connection.pgconn.finish()  # already broken; nothing is running on it

    def close(self) -> None:
        """Close every connection this object opened (from any thread)."""
        with self._lock:
            _close_all_of(self._connections)
