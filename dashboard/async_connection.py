"""An asyncio PostgreSQL connection made from a Django database alias.

Django's ORM is synchronous: from an event loop every query hops to a thread and back, and
on a small checkpoint that hop costs as much as the write itself. ``AsyncDatabase`` gives
code that lives on an event loop (``DjangoCheckpointStorage.save``) a psycopg
``AsyncConnection`` opened with the alias's own settings (name, host, credentials, OPTIONS,
``assume_role``), in autocommit: each statement is its own transaction, committed when
``execute`` returns. Errors come out as Django's database exceptions, as they would from a
Django cursor, so callers catch one family whichever path wrote.

A connection belongs to the event loop that opened it (one per loop, never shared across
threads) and is closed when that loop is garbage-collected or ``close()`` is called.
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


def _finish(connection: psycopg.AsyncConnection[Any]) -> None:
    # libpq's PQfinish: a synchronous close that needs no event loop (the loop may be gone).
    connection.pgconn.finish()


_instances: weakref.WeakSet[AsyncDatabase] = weakref.WeakSet()


def close_all() -> None:
    """Close every connection any ``AsyncDatabase`` has open: what ``connections.close_all()``
    is to Django's own (before dropping a database, at shutdown)."""
    for database in list(_instances):
        database.close()


class AsyncDatabase:
    """Statements on a Django PostgreSQL alias, run on the caller's event loop."""

    def __init__(self, using: str = "default") -> None:
        _instances.add(self)
        self.using = using
        self._connections: weakref.WeakKeyDictionary[
            asyncio.AbstractEventLoop, psycopg.AsyncConnection[Any]
        ] = weakref.WeakKeyDictionary()
        self._lock = threading.Lock()
        self._finalizers: list[weakref.finalize[Any, Any]] = []

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
        with self._lock:
            connection = self._connections.get(loop)
        if connection is not None and not connection.closed:
            return connection
        connection = await self._connect()
        with self._lock:
            self._connections[loop] = connection
            # The finalizer holds the connection, so it is closed (not merely dropped with a
            # ResourceWarning) when the loop goes away.
            self._finalizers = [f for f in self._finalizers if f.alive]
            self._finalizers.append(weakref.finalize(loop, _finish, connection))
        return connection

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
            if role := wrapper.settings_dict["OPTIONS"].get("assume_role"):
                await connection.execute(sql.SQL("SET ROLE {}").format(sql.Identifier(role)))
        except psycopg.Error as exc:
            raise as_django_error(exc) from exc
        return connection

    def _forget(
        self, loop: asyncio.AbstractEventLoop, connection: psycopg.AsyncConnection[Any]
    ) -> None:
        with self._lock:
            if self._connections.get(loop) is connection:
                del self._connections[loop]
        _finish(connection)

    def close(self) -> None:
        """Close every connection this object opened (from any thread; no loop needed)."""
        with self._lock:
            finalizers, self._finalizers = self._finalizers, []
            self._connections.clear()
        for finalizer in finalizers:
            finalizer()
