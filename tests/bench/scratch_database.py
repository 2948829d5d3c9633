"""A throwaway PostgreSQL database for a benchmark, on the server a URL points at.

The database the URL names is only used to reach the server (through its maintenance
database, ``postgres``), never touched: a ``DATABASE_URL`` exported for the dashboard is safe.
"""

from __future__ import annotations

import os
import secrets
from urllib.parse import urlsplit

import psycopg
from psycopg import sql

__all__ = ["create_database", "drop_database"]


def _maintenance_url(url: str) -> str:
    return urlsplit(url)._replace(path="/postgres").geturl()


def create_database(server_url: str, prefix: str) -> str:
    """A new, empty database named ``<prefix>_<pid>_<random>``; returns its URL."""
    name = f"{prefix}_{os.getpid()}_{secrets.token_hex(3)}"
    with psycopg.connect(_maintenance_url(server_url), autocommit=True) as conn:
        conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
    return urlsplit(server_url)._replace(path=f"/{name}").geturl()


def drop_database(url: str) -> None:
    """Drop the database ``url`` names, closing whatever is still connected to it."""
    name = urlsplit(url).path.lstrip("/")
    with psycopg.connect(_maintenance_url(url), autocommit=True) as conn:
        conn.execute(
            sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name))
        )
