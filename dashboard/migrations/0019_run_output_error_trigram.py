"""Trigram indexes for the runs list's search in outputs and error messages, on PostgreSQL.

The search matches a run's input, output or error text (``selectors.runs._run_search``); like
the input's (0005), each is an ``icontains`` that PostgreSQL runs as ``UPPER(x) LIKE``, a
sequential scan without an index on that expression. Where ``pg_trgm`` is unavailable the
search stays unindexed rather than failing the deployment; SQLite keeps its scan.
"""

from __future__ import annotations

import logging
from typing import Any

from django.db import DatabaseError, migrations, transaction

logger = logging.getLogger(__name__)

INDEXES = {
    "run_output_trgm": "UPPER(output::text)",
    "run_error_message_trgm": "UPPER(error_message::text)",
}


def create_indexes(apps: Any, schema_editor: Any) -> None:
    connection = schema_editor.connection
    if connection.vendor != "postgresql":
        return
    try:
        with transaction.atomic(using=connection.alias):
            schema_editor.execute("CREATE EXTENSION IF NOT EXISTS pg_trgm")
            for name, expression in INDEXES.items():
                schema_editor.execute(
                    f"CREATE INDEX IF NOT EXISTS {name} ON dashboard_workflowrun "
                    f"USING gin (({expression}) gin_trgm_ops)"
                )
    except DatabaseError as exc:
        logger.warning("runs list search in outputs and errors stays unindexed: %s", exc)


def drop_indexes(apps: Any, schema_editor: Any) -> None:
    if schema_editor.connection.vendor == "postgresql":
        for name in INDEXES:
            schema_editor.execute(f"DROP INDEX IF EXISTS {name}")


class Migration(migrations.Migration):
    dependencies = [("dashboard", "0018_saved_views")]

    operations = [migrations.RunPython(create_indexes, drop_indexes)]
